// Square, CUDA C stage, host side: forward and backward on torch tensors (the functions every
// stage defines), checking that they are matrices, allocating outputs and calling kernel.cu's
// launchers with the matrix's rows and columns.
#include "brrr.cuh"

// Defined in kernel.cu for float, double, __half and __nv_bfloat16.
template <typename T> void square_forward(const T* x, T* y, int64_t rows, int64_t cols, cudaStream_t stream);
template <typename T>
void square_backward(const T* grad_y, const T* x, T* grad_x, int64_t rows, int64_t cols, cudaStream_t stream);

static void check_matrix(const at::Tensor& x, const char* name) {
    TORCH_CHECK(x.dim() == 2, name, " must be a 2-D matrix, got shape ", x.sizes());
}

at::Tensor forward(at::Tensor x) {
    brrr::check_input(x, "x");
    check_matrix(x, "x");
    BRRR_DEVICE_GUARD(x);
    auto xc = x.contiguous();
    auto y = at::empty_like(xc);
    if (xc.numel() == 0) return y;
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "square_forward", [&] {
        square_forward(brrr::data<scalar_t>(xc), brrr::data<scalar_t>(y), xc.size(0), xc.size(1), brrr::stream());
    });
    BRRR_CHECK_LAUNCH();
    return y;
}

at::Tensor backward(at::Tensor grad_y, at::Tensor x) {
    brrr::check_input(grad_y, "grad_y");
    brrr::check_same(grad_y, x, "grad_y", "x");
    check_matrix(x, "x");
    BRRR_DEVICE_GUARD(x);
    auto gc = grad_y.contiguous();
    auto xc = x.contiguous();
    auto grad_x = at::empty_like(xc);
    if (xc.numel() == 0) return grad_x;
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "square_backward", [&] {
        square_backward(brrr::data<scalar_t>(gc), brrr::data<scalar_t>(xc), brrr::data<scalar_t>(grad_x), xc.size(0),
                        xc.size(1), brrr::stream());
    });
    BRRR_CHECK_LAUNCH();
    return grad_x;
}

BRRR_BIND(m) {
    m.def("forward", &forward);
    m.def("backward", &backward);
}
