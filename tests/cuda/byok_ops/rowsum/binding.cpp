// Row sums, host side.
#include "brrr.cuh"

template <typename T> void row_sum(T* out, const T* x, int64_t rows, int64_t cols, cudaStream_t stream);

at::Tensor forward(at::Tensor x) {
    brrr::check_input(x, "x");
    TORCH_CHECK(x.dim() == 2, "x must be a matrix");
    BRRR_DEVICE_GUARD(x);
    auto xc = x.contiguous();
    auto out = at::empty({xc.size(0)}, xc.options());
    if (xc.numel() == 0) return out.zero_();
    AT_DISPATCH_FLOATING_TYPES(xc.scalar_type(), "row_sum", [&] {
        row_sum(brrr::data<scalar_t>(out), brrr::data<scalar_t>(xc), xc.size(0), xc.size(1), brrr::stream());
    });
    BRRR_CHECK_LAUNCH();
    return out;
}

BRRR_BIND(m) {
    m.def("forward", &forward);
}
