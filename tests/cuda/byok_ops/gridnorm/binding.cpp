// gridnorm's torch side: the scratch for the blocks' partial sums, and the cooperative launch's error.
#include "brrr.cuh"

template <typename T> int gridnorm_blocks();
template <typename T>
cudaError_t gridnorm(const T* x, T* y, T* partial, int64_t n, double eps, int blocks, cudaStream_t stream);

at::Tensor forward(at::Tensor x, double eps) {
    brrr::check_input(x, "x");
    BRRR_DEVICE_GUARD(x);
    auto xc = x.contiguous();
    auto y = at::empty_like(xc);
    if (xc.numel() == 0) return y;
    AT_DISPATCH_FLOATING_TYPES(xc.scalar_type(), "gridnorm", [&] {
        const int blocks = gridnorm_blocks<scalar_t>();
        auto partial = at::empty({blocks}, xc.options());
        const cudaError_t e = gridnorm(brrr::data<scalar_t>(xc), brrr::data<scalar_t>(y), brrr::data<scalar_t>(partial),
                                       xc.numel(), eps, blocks, brrr::stream());
        TORCH_CHECK(e == cudaSuccess, "gridnorm: cooperative launch of ", blocks, " blocks: ", cudaGetErrorString(e));
    });
    BRRR_CHECK_LAUNCH();
    return y;
}

BRRR_BIND(m) { m.def("forward", &forward); }
