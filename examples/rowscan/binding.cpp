// rowscan, CUDA C stage, host side: forward and backward on torch tensors (the functions every
// stage defines), checking their inputs, allocating outputs and calling kernel.cu's launchers.
// Nothing to fill in here unless the op's shapes differ from x [rows, cols] -> y [rows, cols].
#include <cstdint>
#include <limits>

#include "brrr.cuh"

// Defined in kernel.cu for float and double.
template <typename T> void rowscan_forward(const T* x, T* y, int64_t rows, int64_t cols, cudaStream_t stream);
template <typename T>
void rowscan_backward(const T* grad_y, const T* x, T* grad_x, int64_t rows, int64_t cols, cudaStream_t stream);

static void check_rows(const at::Tensor& t, const char* name) {
    TORCH_CHECK(t.dim() == 2, name, " must be [rows, cols], got shape ", t.sizes());
    TORCH_CHECK(t.size(0) <= std::numeric_limits<int32_t>::max(), name,
                ": one block per row allows at most 2^31 - 1 rows, got ", t.size(0));
}

at::Tensor forward(at::Tensor x) {
    brrr::check_input(x, "x");
    check_rows(x, "x");
    BRRR_DEVICE_GUARD(x);
    auto ac = x.contiguous();
    auto y = at::empty_like(ac);
    if (ac.numel() == 0) return y;
    AT_DISPATCH_FLOATING_TYPES(ac.scalar_type(), "rowscan_forward", [&] {
        rowscan_forward(brrr::data<scalar_t>(ac), brrr::data<scalar_t>(y), ac.size(0), ac.size(1), brrr::stream());
    });
    BRRR_CHECK_LAUNCH();
    return y;
}

at::Tensor backward(at::Tensor grad_y, at::Tensor x) {
    brrr::check_input(x, "x");
    check_rows(x, "x");
    brrr::check_same(x, grad_y, "x", "grad_y");
    BRRR_DEVICE_GUARD(x);
    auto gc = grad_y.contiguous();
    auto ac = x.contiguous();
    auto grad_x = at::empty_like(ac);
    if (ac.numel() == 0) return grad_x;
    AT_DISPATCH_FLOATING_TYPES(ac.scalar_type(), "rowscan_backward", [&] {
        rowscan_backward(brrr::data<scalar_t>(gc), brrr::data<scalar_t>(ac), brrr::data<scalar_t>(grad_x), ac.size(0),
                         ac.size(1), brrr::stream());
    });
    BRRR_CHECK_LAUNCH();
    return grad_x;
}

BRRR_BIND(m) {
    m.def("forward", &forward);
    m.def("backward", &backward);
}
