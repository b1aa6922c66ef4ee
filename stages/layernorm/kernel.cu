// Layer norm over the last dim, CUDA C stage: numba_kernel.py's kernels, with each block reduction
// done by warp shuffles plus one shared slot per warp (the simulator has no shuffles, so numba
// takes one slot per thread), and the column sums split over row groups. x is [rows, cols],
// weight and bias [cols]. One block per row; its threads stride over the row, so rows of any
// length fit. 64-bit indices: rows * cols passes 2^31 long before memory runs out.
#include <cstdint>
#include <limits>

#include "brrr.cuh"

constexpr int kThreads = 256;  // a multiple of 32: the reduction works in whole warps
constexpr int kWarps = kThreads / 32;
constexpr int kColumns = 32;   // weight-gradient kernel: a warp reads 32 neighbouring columns of a row
constexpr int kRowGroups = 16; // ... and 16 warps split the rows: each column's walk down them is 16x shorter

// Statistics and sums are double for float and double inputs: a float mean of values near 1e4 is off
// by up to half an ulp (4.9e-4), an error every normalised value inherits divided by the row's std.
// bfloat16 carries 8 bits, so float's 24 leave room to spare. The stats tensors have this dtype.
template <typename scalar_t> struct Acc { using type = double; };
template <> struct Acc<at::BFloat16> { using type = float; };
template <typename scalar_t> using acc_type = typename Acc<scalar_t>::type;

// The sum of `value` over the block, returned to every thread. After the xor butterfly all lanes of
// a warp hold the same value (a + b == b + a exactly), and every thread then adds the per-warp sums
// in one fixed order, so all threads, and all runs, agree bit for bit.
template <typename T>
__device__ T block_sum(T value, T* partial) {
    for (int offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = value;
    __syncthreads();
    T result = partial[0];
    for (int w = 1; w < kWarps; ++w) result += partial[w];
    // No thread may write `partial` for the next reduction until every thread has read this one.
    __syncthreads();
    return result;
}

template <typename scalar_t>
__global__ void layernorm_forward_kernel(const scalar_t* __restrict__ x, const scalar_t* __restrict__ weight,
                                         const scalar_t* __restrict__ bias, scalar_t* __restrict__ y,
                                         acc_type<scalar_t>* __restrict__ mean, acc_type<scalar_t>* __restrict__ rstd,
                                         int64_t cols, acc_type<scalar_t> eps) {
    using acc_t = acc_type<scalar_t>;
    __shared__ acc_t partial[kWarps];
    const int64_t row = blockIdx.x;
    const scalar_t* xr = x + row * cols;
    scalar_t* yr = y + row * cols;
    acc_t total = 0;
    for (int64_t c = threadIdx.x; c < cols; c += kThreads) total += static_cast<acc_t>(xr[c]);
    const acc_t mu = block_sum(total, partial) / cols;
    // Second pass over the row (from L1/L2) for the centred sum of squares: E[x^2] - E[x]^2 would cancel.
    acc_t squares = 0;
    for (int64_t c = threadIdx.x; c < cols; c += kThreads) {
        const acc_t d = static_cast<acc_t>(xr[c]) - mu;
        squares += d * d;
    }
    const acc_t r = acc_t(1) / sqrt(block_sum(squares, partial) / cols + eps);
    for (int64_t c = threadIdx.x; c < cols; c += kThreads) {
        yr[c] = static_cast<scalar_t>((static_cast<acc_t>(xr[c]) - mu) * r * static_cast<acc_t>(weight[c]) +
                                      static_cast<acc_t>(bias[c]));
    }
    if (threadIdx.x == 0) {
        mean[row] = mu;
        rstd[row] = r;
    }
}

template <typename scalar_t>
__global__ void layernorm_backward_x_kernel(const scalar_t* __restrict__ grad_y, const scalar_t* __restrict__ x,
                                            const scalar_t* __restrict__ weight, const acc_type<scalar_t>* __restrict__ mean,
                                            const acc_type<scalar_t>* __restrict__ rstd, scalar_t* __restrict__ grad_x,
                                            int64_t cols) {
    using acc_t = acc_type<scalar_t>;
    __shared__ acc_t partial[kWarps];
    const int64_t row = blockIdx.x;
    const scalar_t* gr = grad_y + row * cols;
    const scalar_t* xr = x + row * cols;
    scalar_t* gxr = grad_x + row * cols;
    const acc_t mu = mean[row];
    const acc_t r = rstd[row];
    acc_t sum_g = 0;
    acc_t sum_gx = 0;
    for (int64_t c = threadIdx.x; c < cols; c += kThreads) {
        const acc_t gxhat = static_cast<acc_t>(gr[c]) * static_cast<acc_t>(weight[c]);
        sum_g += gxhat;
        sum_gx += gxhat * (static_cast<acc_t>(xr[c]) - mu) * r;
    }
    const acc_t mean_g = block_sum(sum_g, partial) / cols;
    const acc_t mean_gx = block_sum(sum_gx, partial) / cols;
    for (int64_t c = threadIdx.x; c < cols; c += kThreads) {
        const acc_t xhat = (static_cast<acc_t>(xr[c]) - mu) * r;
        gxr[c] = static_cast<scalar_t>(r * (static_cast<acc_t>(gr[c]) * static_cast<acc_t>(weight[c]) - mean_g - xhat * mean_gx));
    }
}

// Block (kColumns, kRowGroups): thread (tx, ty) sums rows ty, ty + kRowGroups, ... of column
// blockIdx.x * kColumns + tx, then the ty == 0 thread adds the kRowGroups partials in order. No
// atomics: the same bits on every run.
template <typename scalar_t>
__global__ void layernorm_backward_weight_kernel(const scalar_t* __restrict__ grad_y, const scalar_t* __restrict__ x,
                                                 const acc_type<scalar_t>* __restrict__ mean,
                                                 const acc_type<scalar_t>* __restrict__ rstd,
                                                 scalar_t* __restrict__ grad_weight, scalar_t* __restrict__ grad_bias,
                                                 int64_t rows, int64_t cols) {
    using acc_t = acc_type<scalar_t>;
    __shared__ acc_t partial_w[kRowGroups][kColumns];
    __shared__ acc_t partial_b[kRowGroups][kColumns];
    const int64_t c = static_cast<int64_t>(blockIdx.x) * kColumns + threadIdx.x;
    acc_t gw = 0;
    acc_t gb = 0;
    if (c < cols) {
        for (int64_t row = threadIdx.y; row < rows; row += kRowGroups) {
            const acc_t g = static_cast<acc_t>(grad_y[row * cols + c]);
            gw += g * (static_cast<acc_t>(x[row * cols + c]) - mean[row]) * rstd[row];
            gb += g;
        }
    }
    // Every thread stores, in range or not, so the barrier below is reached by the whole block.
    partial_w[threadIdx.y][threadIdx.x] = gw;
    partial_b[threadIdx.y][threadIdx.x] = gb;
    __syncthreads();
    if (threadIdx.y == 0 && c < cols) {
        for (int k = 1; k < kRowGroups; ++k) {
            gw += partial_w[k][threadIdx.x];
            gb += partial_b[k][threadIdx.x];
        }
        grad_weight[c] = static_cast<scalar_t>(gw);
        grad_bias[c] = static_cast<scalar_t>(gb);
    }
}

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

std::tuple<at::Tensor, at::Tensor, at::Tensor> forward(at::Tensor x, at::Tensor weight, at::Tensor bias, double eps) {
    brrr::check_input(x, "x");
    brrr::check_input(weight, "weight");
    brrr::check_same(weight, bias, "weight", "bias");
    check_shapes(x, weight, "x");
    TORCH_CHECK(eps >= 0, "eps must be >= 0, got ", eps);
    auto xc = x.contiguous();
    auto wc = weight.contiguous();
    auto bc = bias.contiguous();
    const int64_t rows = xc.size(0), cols = xc.size(1);
    auto y = at::empty_like(xc);
    at::Tensor mean, rstd;
    AT_DISPATCH_FLOATING_TYPES_AND(at::kBFloat16, xc.scalar_type(), "layernorm_forward", [&] {
        using acc_t = acc_type<scalar_t>;
        const auto stat_options = xc.options().dtype(c10::CppTypeToScalarType<acc_t>::value);
        mean = at::empty({rows}, stat_options);
        rstd = at::empty({rows}, stat_options);
        if (xc.numel() == 0) return;
        layernorm_forward_kernel<scalar_t><<<static_cast<unsigned int>(rows), kThreads, 0, brrr::stream()>>>(
            xc.data_ptr<scalar_t>(), wc.data_ptr<scalar_t>(), bc.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(),
            mean.data_ptr<acc_t>(), rstd.data_ptr<acc_t>(), cols, static_cast<acc_t>(eps));
        BRRR_CHECK_LAUNCH();
    });
    return {y, mean, rstd};
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
    auto gc = grad_y.contiguous();
    auto xc = x.contiguous();
    auto wc = weight.contiguous();
    auto mc = mean.contiguous();
    auto rc = rstd.contiguous();
    const int64_t rows = xc.size(0), cols = xc.size(1);
    auto grad_x = at::empty_like(xc);
    auto grad_weight = at::empty_like(wc);
    auto grad_bias = at::empty_like(wc);
    AT_DISPATCH_FLOATING_TYPES_AND(at::kBFloat16, xc.scalar_type(), "layernorm_backward", [&] {
        using acc_t = acc_type<scalar_t>;
        TORCH_CHECK(mc.scalar_type() == c10::CppTypeToScalarType<acc_t>::value, "mean and rstd must be ",
                    c10::CppTypeToScalarType<acc_t>::value, " for ", xc.scalar_type(), " x (as forward makes them), got ",
                    mc.scalar_type());
        if (xc.numel() > 0) {
            layernorm_backward_x_kernel<scalar_t><<<static_cast<unsigned int>(rows), kThreads, 0, brrr::stream()>>>(
                gc.data_ptr<scalar_t>(), xc.data_ptr<scalar_t>(), wc.data_ptr<scalar_t>(), mc.data_ptr<acc_t>(),
                rc.data_ptr<acc_t>(), grad_x.data_ptr<scalar_t>(), cols);
            BRRR_CHECK_LAUNCH();
        }
        // With no rows the column sums are empty sums: the kernel writes their zeros.
        if (cols > 0) {
            layernorm_backward_weight_kernel<scalar_t>
                <<<brrr::blocks_for(cols, kColumns), dim3(kColumns, kRowGroups), 0, brrr::stream()>>>(
                    gc.data_ptr<scalar_t>(), xc.data_ptr<scalar_t>(), mc.data_ptr<acc_t>(), rc.data_ptr<acc_t>(),
                    grad_weight.data_ptr<scalar_t>(), grad_bias.data_ptr<scalar_t>(), rows, cols);
            BRRR_CHECK_LAUNCH();
        }
    });
    return {grad_x, grad_weight, grad_bias};
}

BRRR_BIND(m) {
    m.def("forward", &forward);
    m.def("backward", &backward);
}
