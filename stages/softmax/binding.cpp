// Softmax over the last dim, CUDA C stage, host side: forward and backward on torch tensors (the
// functions every stage defines), plus forward_v1 (the first, one-block-per-row kernel, kept for
// `brrr bench` to time beside forward), checking inputs, allocating outputs and calling
// kernel.cu's launchers.
#include <cstdint>
#include <limits>

#include "brrr.cuh"

// Defined in kernel.cu for float, double, __half and __nv_bfloat16.
template <typename T> void softmax_forward(const T* x, T* y, int64_t rows, int64_t cols, cudaStream_t stream);
template <typename T> void softmax_forward_v1(const T* x, T* y, int64_t rows, int64_t cols, cudaStream_t stream);
template <typename T>
void softmax_backward(const T* grad_y, const T* y, T* grad_x, int64_t rows, int64_t cols, cudaStream_t stream);

static void check_rows(const at::Tensor& t, const char* name) {
    TORCH_CHECK(t.dim() == 2, name, " must be [rows, cols], got shape ", t.sizes());
    // v1 launches one block per row, and the register path at most that many: the grid's x limit.
    TORCH_CHECK(t.size(0) <= std::numeric_limits<int32_t>::max(), name, ": at most 2^31 - 1 rows, got ", t.size(0));
}

static at::Tensor forward_with(const at::Tensor& x, bool v1) {
    brrr::check_input(x, "x");
    check_rows(x, "x");
    BRRR_DEVICE_GUARD(x);
    auto xc = x.contiguous();
    auto y = at::empty_like(xc);
    const int64_t rows = xc.size(0), cols = xc.size(1);
    if (xc.numel() == 0) return y;
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "softmax_forward", [&] {
        if (v1) {
            softmax_forward_v1(brrr::data<scalar_t>(xc), brrr::data<scalar_t>(y), rows, cols, brrr::stream());
        } else {
            softmax_forward(brrr::data<scalar_t>(xc), brrr::data<scalar_t>(y), rows, cols, brrr::stream());
        }
    });
    BRRR_CHECK_LAUNCH();
    return y;
}

at::Tensor forward(at::Tensor x) { return forward_with(x, false); }

at::Tensor forward_v1(at::Tensor x) { return forward_with(x, true); }

at::Tensor backward(at::Tensor grad_y, at::Tensor y) {
    brrr::check_input(grad_y, "grad_y");
    brrr::check_same(grad_y, y, "grad_y", "y");
    check_rows(y, "y");
    BRRR_DEVICE_GUARD(y);
    auto gc = grad_y.contiguous();
    auto yc = y.contiguous();
    auto grad_x = at::empty_like(yc);
    const int64_t rows = yc.size(0), cols = yc.size(1);
    if (yc.numel() == 0) return grad_x;
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, yc.scalar_type(), "softmax_backward", [&] {
        softmax_backward(brrr::data<scalar_t>(gc), brrr::data<scalar_t>(yc), brrr::data<scalar_t>(grad_x), rows, cols,
                         brrr::stream());
    });
    BRRR_CHECK_LAUNCH();
    return grad_x;
}

BRRR_BIND(m) {
    m.def("forward", &forward);
    m.def("forward_v1", &forward_v1);
    m.def("backward", &backward);
}
