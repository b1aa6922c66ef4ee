// bias_gelu, CUDA C stage, host side: translated from numba_kernel.py by `brrr translate`, line by line
// (same names and order; 64-bit indices). A first version to validate and then tune; `brrr validate`
// checks it against the numba stage and the reference.
#include <array>
#include <climits>
#include <cstdint>
#include <tuple>

#include "brrr.cuh"

// Defined in kernel.cu.
template <typename T> void bias_gelu_forward(dim3 grid, dim3 block, const T* x, const T* bias, T* y, int64_t n, int64_t cols, cudaStream_t stream);
template <typename T> void bias_gelu_backward(dim3 grid, dim3 block, const T* grad_y, const T* x, const T* bias, T* grad_x, int64_t n, int64_t cols, cudaStream_t stream);
template <typename T> void column_sum(dim3 grid, dim3 block, const T* grad_x, T* grad_bias, int64_t rows, int64_t cols, cudaStream_t stream);

constexpr int64_t BLOCK = 32;

static int64_t py_floordiv(int64_t a, int64_t b) {
    const int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static int64_t cdiv(int64_t a, int64_t b) { return py_floordiv(a + b - 1, b); }

// numba's launch geometry (an int or a tuple of up to three) as a dim3, checked rather than truncated.
static dim3 launch_dims(int64_t x, int64_t y = 1, int64_t z = 1) {
    TORCH_CHECK(x >= 1 && y >= 1 && z >= 1 && x <= INT32_MAX && y <= 65535 && z <= 65535, "launch dimensions (", x,
                ", ", y, ", ", z, ") are outside CUDA's limits");
    return dim3(static_cast<unsigned int>(x), static_cast<unsigned int>(y), static_cast<unsigned int>(z));
}

template <size_t N>
static dim3 launch_dims(const std::array<int64_t, N>& d) {
    static_assert(N >= 1 && N <= 3, "a launch geometry has one to three dimensions");
    if constexpr (N == 1) return launch_dims(d[0]);
    else if constexpr (N == 2) return launch_dims(d[0], d[1]);
    else return launch_dims(d[0], d[1], d[2]);
}

// A tensor passed where a kernel takes an n-D array. numba indexes any strides; the translation
// passes the strides of 2-D and higher arrays and indexes 1-D ones directly, so a 1-D one must be dense.
template <typename scalar_t>
static typename brrr::Device<scalar_t>::type* array_arg(const at::Tensor& t, int64_t ndim, const char* what) {
    TORCH_CHECK(t.dim() == ndim, what, " must have ", ndim, " dimension(s) for the kernel, got shape ", t.sizes());
    TORCH_CHECK(ndim != 1 || t.stride(0) == 1 || t.numel() <= 1, what, " must be dense for the kernel, got stride ",
                t.stride(0));
    return brrr::data<scalar_t>(t);
}

// numba_kernel.py:59
static void _check(at::Tensor x, at::Tensor bias) {
    TORCH_CHECK((x.dim() == 2) && (bias.dim() == 1) && (bias.size(0) == x.size(1)), "bias_gelu takes x [rows, cols] and bias [cols], got ", x.sizes(), " and ", bias.sizes());
}

// numba_kernel.py:64
at::Tensor forward(at::Tensor x, at::Tensor bias) {
    brrr::check_input(x, "x");
    brrr::check_compatible(x, bias, "x", "bias");
    BRRR_DEVICE_GUARD(x);
    _check(x, bias);
    x = x.contiguous();
    bias = bias.contiguous();
    auto y = at::empty_like(x);
    int64_t n = x.numel();
    int64_t cols = x.size(1);
    if (n) {
        // launch(bias_gelu_forward_kernel, cdiv(n, BLOCK), BLOCK, x.view(-1), bias, y.view(-1), n, cols)
        AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "bias_gelu_forward_kernel", [&] {
            bias_gelu_forward(launch_dims(cdiv(n, BLOCK)), launch_dims(BLOCK),
                              array_arg<scalar_t>(x.view(-1), 1, "x.view(-1)"),
                              array_arg<scalar_t>(bias, 1, "bias"),
                              array_arg<scalar_t>(y.view(-1), 1, "y.view(-1)"), n, cols, brrr::stream());
        });
        BRRR_CHECK_LAUNCH();
    }
    return y;
}

// numba_kernel.py:74
std::tuple<at::Tensor, at::Tensor> backward(at::Tensor grad_y, at::Tensor x, at::Tensor bias) {
    brrr::check_input(grad_y, "grad_y");
    brrr::check_compatible(grad_y, x, "grad_y", "x");
    brrr::check_compatible(grad_y, bias, "grad_y", "bias");
    BRRR_DEVICE_GUARD(grad_y);
    _check(x, bias);
    TORCH_CHECK(grad_y.sizes() == x.sizes(), "grad_y has shape ", grad_y.sizes(), ", x has ", x.sizes());
    grad_y = grad_y.contiguous();
    x = x.contiguous();
    bias = bias.contiguous();
    auto grad_x = at::empty_like(x);
    auto grad_bias = at::empty_like(bias);
    TORCH_CHECK(x.dim() == 2, "x must have 2 dimensions, got shape ", x.sizes());
    int64_t rows = x.size(0);
    int64_t cols = x.size(1);
    int64_t n = x.numel();
    if (n) {
        // launch(bias_gelu_backward_kernel, cdiv(n, BLOCK), BLOCK, grad_y.view(-1), x.view(-1), bias, grad_x.view(-1), n, cols)
        AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, grad_y.scalar_type(), "bias_gelu_backward_kernel", [&] {
            bias_gelu_backward(launch_dims(cdiv(n, BLOCK)), launch_dims(BLOCK),
                               array_arg<scalar_t>(grad_y.view(-1), 1, "grad_y.view(-1)"),
                               array_arg<scalar_t>(x.view(-1), 1, "x.view(-1)"),
                               array_arg<scalar_t>(bias, 1, "bias"),
                               array_arg<scalar_t>(grad_x.view(-1), 1, "grad_x.view(-1)"), n, cols, brrr::stream());
        });
        BRRR_CHECK_LAUNCH();
    }
    if (cols) {  // with no rows this writes zeros: the sum of nothing
        // launch(column_sum_kernel, cdiv(cols, BLOCK), BLOCK, grad_x.view(-1), grad_bias, rows, cols)
        AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, grad_x.scalar_type(), "column_sum_kernel", [&] {
            column_sum(launch_dims(cdiv(cols, BLOCK)), launch_dims(BLOCK),
                       array_arg<scalar_t>(grad_x.view(-1), 1, "grad_x.view(-1)"),
                       array_arg<scalar_t>(grad_bias, 1, "grad_bias"), rows, cols, brrr::stream());
        });
        BRRR_CHECK_LAUNCH();
    }
    return {grad_x, grad_bias};
}

BRRR_BIND(m) {
    m.def("forward", &forward);
    m.def("backward", &backward);
}
