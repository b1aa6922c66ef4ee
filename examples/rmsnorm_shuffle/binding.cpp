// rmsnorm_shuffle, CUDA C stage, host side: forward and backward on torch tensors (the functions every
// stage defines), checking their inputs, allocating outputs and calling kernel.cu's launchers.
// Nothing to fill in here unless the op's shapes differ from x [rows, cols] with weight [cols].
#include <cstdint>
#include <limits>
#include <tuple>

#include "brrr.cuh"

// Defined in kernel.cu for float and double.
template <typename T>
void rmsnorm_shuffle_forward(const T* x, const T* weight, T* y, double* rstd, int64_t rows, int64_t cols, double eps,
                     cudaStream_t stream);
template <typename T>
void rmsnorm_shuffle_backward(const T* grad_y, const T* x, const T* weight, const double* rstd, T* grad_x, T* grad_weight,
                      int64_t rows, int64_t cols, cudaStream_t stream);

static void check_shapes(const at::Tensor& x, const at::Tensor& weight, const char* xn) {
    TORCH_CHECK(x.dim() == 2, xn, " must be [rows, cols], got shape ", x.sizes());
    TORCH_CHECK(x.size(0) <= std::numeric_limits<int32_t>::max(), xn,
                ": one block per row allows at most 2^31 - 1 rows, got ", x.size(0));
    TORCH_CHECK(weight.dim() == 1 && weight.size(0) == x.size(1), "weight must be [cols] = [", x.size(1),
                "], got shape ", weight.sizes());
    brrr::check_compatible(x, weight, xn, "weight");
}

std::tuple<at::Tensor, at::Tensor> forward(at::Tensor x, at::Tensor weight, double eps) {
    brrr::check_input(x, "x");
    check_shapes(x, weight, "x");
    BRRR_DEVICE_GUARD(x);
    auto xc = x.contiguous();
    auto wc = weight.contiguous();
    const int64_t rows = xc.size(0), cols = xc.size(1);
    auto y = at::empty_like(xc);
    auto rstd = at::empty({rows}, xc.options().dtype(at::kDouble));
    if (xc.numel() == 0) return {y, rstd};
    AT_DISPATCH_FLOATING_TYPES(xc.scalar_type(), "rmsnorm_shuffle_forward", [&] {
        rmsnorm_shuffle_forward(brrr::data<scalar_t>(xc), brrr::data<scalar_t>(wc), brrr::data<scalar_t>(y),
                        rstd.data_ptr<double>(), rows, cols, eps, brrr::stream());
    });
    BRRR_CHECK_LAUNCH();
    return {y, rstd};
}

std::tuple<at::Tensor, at::Tensor> backward(at::Tensor grad_y, at::Tensor x, at::Tensor weight, at::Tensor rstd, double eps) {
    (void)eps;  // every stage function takes the params; this backward has it in rstd already
    brrr::check_input(x, "x");
    check_shapes(x, weight, "x");
    check_shapes(grad_y, weight, "grad_y");
    brrr::check_compatible(x, grad_y, "x", "grad_y");
    TORCH_CHECK(grad_y.sizes() == x.sizes(), "grad_y must have x's shape ", x.sizes(), ", got ", grad_y.sizes());
    TORCH_CHECK(rstd.scalar_type() == at::kDouble && rstd.numel() == x.size(0), "rstd must be float64 [rows]");
    BRRR_DEVICE_GUARD(x);
    auto gc = grad_y.contiguous();
    auto xc = x.contiguous();
    auto wc = weight.contiguous();
    auto rc = rstd.contiguous();
    const int64_t rows = xc.size(0), cols = xc.size(1);
    auto grad_x = at::empty_like(xc);
    auto grad_weight = at::empty_like(wc);
    if (xc.numel() == 0) return {grad_x, grad_weight.zero_()};
    AT_DISPATCH_FLOATING_TYPES(xc.scalar_type(), "rmsnorm_shuffle_backward", [&] {
        rmsnorm_shuffle_backward(brrr::data<scalar_t>(gc), brrr::data<scalar_t>(xc), brrr::data<scalar_t>(wc), 
                         rc.data_ptr<double>(), brrr::data<scalar_t>(grad_x), brrr::data<scalar_t>(grad_weight), rows,
                         cols, brrr::stream());
    });
    BRRR_CHECK_LAUNCH();
    return {grad_x, grad_weight};
}

BRRR_BIND(m) {
    m.def("forward", &forward);
    m.def("backward", &backward);
}
