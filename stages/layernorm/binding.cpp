// Layer norm, CUDA C stage, host side: forward and backward on torch tensors (the functions every
// stage defines), checking their inputs, allocating outputs and calling kernel.cu's launchers.
// forward_v1 is forward through the first kernel (kernel.cu's header says how they differ), so
// brrr bench can time both.
#include <cstdint>
#include <limits>
#include <type_traits>

#include "brrr.cuh"

// Defined in kernel.cu for (float, double), (double, double), (bfloat16, float) and (half, float): S,
// the type of the statistics, is double for float and double, float for the 16-bit types (kernel.cu's
// Stat says why).
template <typename T, typename S>
void layernorm_forward(const T* x, const T* weight, const T* bias, T* y, S* mean, S* rstd, int64_t rows, int64_t cols,
                       double eps, cudaStream_t stream);
template <typename T, typename S>
void layernorm_forward_v1(const T* x, const T* weight, const T* bias, T* y, S* mean, S* rstd, int64_t rows,
                          int64_t cols, double eps, cudaStream_t stream);
template <typename T, typename S>
void layernorm_backward(const T* grad_y, const T* x, const T* weight, const S* mean, const S* rstd, T* grad_x,
                        T* grad_weight, T* grad_bias, S* scratch, int64_t rows, int64_t cols, cudaStream_t stream);
template <typename T>
int64_t layernorm_backward_scratch(int64_t rows, int64_t cols);

template <typename scalar_t>
using stat_t = std::conditional_t<std::is_same_v<scalar_t, at::BFloat16> || std::is_same_v<scalar_t, at::Half>, float, double>;

static void check_shapes(const at::Tensor& x, const at::Tensor& weight, const char* xn) {
    TORCH_CHECK(x.dim() == 2, xn, " must be [rows, cols], got shape ", x.sizes());
    TORCH_CHECK(x.size(0) <= std::numeric_limits<int32_t>::max(), xn,
                ": one block per row allows at most 2^31 - 1 rows, got ", x.size(0));
    TORCH_CHECK(weight.dim() == 1 && weight.size(0) == x.size(1), "weight must be [cols] = [", x.size(1), "], got shape ",
                weight.sizes());
    TORCH_CHECK(x.device() == weight.device(), xn, " and weight must be on one device: ", x.device(), " vs ", weight.device());
    TORCH_CHECK(x.scalar_type() == weight.scalar_type(), xn, " and weight must have one dtype: ", x.scalar_type(), " vs ",
                weight.scalar_type());
}

template <bool kV1>
static std::tuple<at::Tensor, at::Tensor, at::Tensor> forward_impl(const at::Tensor& x, const at::Tensor& weight,
                                                                   const at::Tensor& bias, double eps) {
    brrr::check_input(x, "x");
    brrr::check_input(weight, "weight");
    brrr::check_same(weight, bias, "weight", "bias");
    check_shapes(x, weight, "x");
    TORCH_CHECK(eps >= 0, "eps must be >= 0, got ", eps);
    BRRR_DEVICE_GUARD(x);
    auto xc = x.contiguous();
    auto wc = weight.contiguous();
    auto bc = bias.contiguous();
    const int64_t rows = xc.size(0), cols = xc.size(1);
    auto y = at::empty_like(xc);
    at::Tensor mean, rstd;
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "layernorm_forward", [&] {
        using S = stat_t<scalar_t>;
        const auto stat_options = xc.options().dtype(c10::CppTypeToScalarType<S>::value);
        mean = at::empty({rows}, stat_options);
        rstd = at::empty({rows}, stat_options);
        if (xc.numel() == 0) return;
        const auto launch = kV1 ? &layernorm_forward_v1<typename brrr::Device<scalar_t>::type, S>
                                : &layernorm_forward<typename brrr::Device<scalar_t>::type, S>;
        launch(brrr::data<scalar_t>(xc), brrr::data<scalar_t>(wc), brrr::data<scalar_t>(bc), brrr::data<scalar_t>(y),
               mean.data_ptr<S>(), rstd.data_ptr<S>(), rows, cols, eps, brrr::stream());
        BRRR_CHECK_LAUNCH();
    });
    return {y, mean, rstd};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> forward(at::Tensor x, at::Tensor weight, at::Tensor bias, double eps) {
    return forward_impl<false>(x, weight, bias, eps);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> forward_v1(at::Tensor x, at::Tensor weight, at::Tensor bias, double eps) {
    return forward_impl<true>(x, weight, bias, eps);
}

// eps is already inside rstd; backward takes it because every stage function takes the params.
std::tuple<at::Tensor, at::Tensor, at::Tensor> backward(at::Tensor grad_y, at::Tensor x, at::Tensor weight, at::Tensor mean,
                                                        at::Tensor rstd, double /*eps*/) {
    brrr::check_input(grad_y, "grad_y");
    brrr::check_same(grad_y, x, "grad_y", "x");
    brrr::check_input(weight, "weight");
    check_shapes(x, weight, "x");
    brrr::check_input(mean, "mean");
    brrr::check_same(mean, rstd, "mean", "rstd");
    TORCH_CHECK(mean.dim() == 1 && mean.size(0) == x.size(0), "mean and rstd must be [rows] = [", x.size(0), "], got shape ",
                mean.sizes());
    TORCH_CHECK(mean.device() == x.device(), "mean and x must be on one device: ", mean.device(), " vs ", x.device());
    BRRR_DEVICE_GUARD(x);
    auto gc = grad_y.contiguous();
    auto xc = x.contiguous();
    auto wc = weight.contiguous();
    auto mc = mean.contiguous();
    auto rc = rstd.contiguous();
    const int64_t rows = xc.size(0), cols = xc.size(1);
    auto grad_x = at::empty_like(xc);
    auto grad_weight = at::empty_like(wc);
    auto grad_bias = at::empty_like(wc);
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "layernorm_backward", [&] {
        using S = stat_t<scalar_t>;
        TORCH_CHECK(mc.scalar_type() == c10::CppTypeToScalarType<S>::value, "mean and rstd must be ",
                    c10::CppTypeToScalarType<S>::value, " for ", xc.scalar_type(), " x (as forward makes them), got ",
                    mc.scalar_type());
        using D = typename brrr::Device<scalar_t>::type;
        // v2's per-block column sums (kernel.cu's layernorm_backward_scratch; none where v1 runs).
        const int64_t scratch_size = layernorm_backward_scratch<D>(rows, cols);
        at::Tensor scratch = at::empty({scratch_size}, mc.options());
        layernorm_backward(brrr::data<scalar_t>(gc), brrr::data<scalar_t>(xc), brrr::data<scalar_t>(wc), mc.data_ptr<S>(),
                           rc.data_ptr<S>(), brrr::data<scalar_t>(grad_x), brrr::data<scalar_t>(grad_weight),
                           brrr::data<scalar_t>(grad_bias), scratch_size > 0 ? scratch.data_ptr<S>() : nullptr, rows, cols,
                           brrr::stream());
        BRRR_CHECK_LAUNCH();
    });
    return {grad_x, grad_weight, grad_bias};
}

BRRR_BIND(m) {
    m.def("forward", &forward);
    m.def("forward_v1", &forward_v1);
    m.def("backward", &backward);
}
