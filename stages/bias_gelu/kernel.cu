// Bias + GELU (tanh form), CUDA C stage. The math is numba_kernel.py's; the thread layout is
// not: numba gives each element its own thread, here each thread owns a tile of kPack
// consecutive columns by rows_per_thread consecutive rows, in the forward and the backward
// alike (spec.py's cuda_layout names the thread for any element). The tile buys three things:
//   - bias is read once per thread and kept in registers for all of its rows;
//   - rows whose start is 16-byte aligned are read and written as 16-byte vectors, with
//     scalar accesses for the last, partial pack of a row and for unaligned rows;
//   - the backward kernel sums grad_x over its rows as it goes, so the bias gradient needs
//     no second pass over grad_x: a block adds up its threads' sums in a fixed order and
//     writes one partial sum per column, and a small kernel adds those partials, again in a
//     fixed order. No atomics: the result is the same bit for bit on every run.
// Half and bfloat16 compute in float (at::opmath_type); every sum is accumulated in double.
#include "brrr.cuh"

#include <ATen/OpMathType.h>

#include <algorithm>
#include <cstdint>
#include <tuple>

constexpr double kBeta = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kKappa = 0.044715;

constexpr int kPack = 8;        // columns a thread owns: 16 bytes of half, 32 of float, 64 of double
constexpr int kBlockX = 32;     // packs a block row: a warp spans 256 consecutive columns
constexpr int kBlockY = 8;      // row groups a block
constexpr int64_t kRowsPerThread = 4;
constexpr int64_t kMaxGridY = 65535;
constexpr int kFinalizeThreads = 256;

// Eight elements as one aligned unit, so a copy of it compiles to 16-byte loads and stores.
template <typename scalar_t>
struct alignas(16) Pack {
    scalar_t v[kPack];
};

// sigmoid(2z) and sigmoid(-2z), z = kBeta (u + kKappa u^3): (1 + tanh z)/2 and its complement,
// from one exp of a non-positive number, which cannot overflow.
template <typename T>
__device__ __forceinline__ void sigmoids(T u, T& s, T& s_neg) {
    const T z = T(kBeta) * (u + T(kKappa) * u * u * u);
    const T e = exp(T(-2) * fabs(z));
    const T big = T(1) / (T(1) + e);
    const T small = e / (T(1) + e);
    s = z >= T(0) ? big : small;
    s_neg = z >= T(0) ? small : big;
}

// The first `width` (at most kPack) elements at p, widened to T; one vector access when `vector`.
// The unrolled loops with constant indices keep the arrays in registers.
template <typename scalar_t, typename T>
__device__ __forceinline__ void load_pack(const scalar_t* __restrict__ p, bool vector, int width, T (&out)[kPack]) {
    if (vector) {
        const Pack<scalar_t> pack = *reinterpret_cast<const Pack<scalar_t>*>(p);
#pragma unroll
        for (int k = 0; k < kPack; ++k) out[k] = static_cast<T>(pack.v[k]);
    } else {
#pragma unroll
        for (int k = 0; k < kPack; ++k) out[k] = k < width ? static_cast<T>(p[k]) : T(0);
    }
}

template <typename scalar_t, typename T>
__device__ __forceinline__ void store_pack(scalar_t* __restrict__ p, bool vector, int width, const T (&in)[kPack]) {
    if (vector) {
        Pack<scalar_t> pack;
#pragma unroll
        for (int k = 0; k < kPack; ++k) pack.v[k] = static_cast<scalar_t>(in[k]);
        *reinterpret_cast<Pack<scalar_t>*>(p) = pack;
    } else {
#pragma unroll
        for (int k = 0; k < kPack; ++k) {
            if (k < width) p[k] = static_cast<scalar_t>(in[k]);
        }
    }
}

// Where a thread's tile starts and how wide it is; col0 >= cols means the thread has no columns.
struct Tile {
    int64_t col0, row0, row1;
    int width;
};

__device__ __forceinline__ Tile tile_of(int64_t rows, int64_t cols, int64_t rows_per_thread) {
    Tile t;
    t.col0 = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kPack;
    t.row0 = (static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y) * rows_per_thread;
    t.row1 = t.row0 + rows_per_thread < rows ? t.row0 + rows_per_thread : rows;
    t.width = t.col0 < cols ? static_cast<int>(cols - t.col0 < kPack ? cols - t.col0 : kPack) : 0;
    return t;
}

template <typename scalar_t>
__global__ void bias_gelu_forward_kernel(const scalar_t* __restrict__ x, const scalar_t* __restrict__ bias,
                                         scalar_t* __restrict__ y, int64_t rows, int64_t cols, int64_t rows_per_thread,
                                         bool aligned) {
    using opmath_t = at::opmath_type<scalar_t>;
    const Tile t = tile_of(rows, cols, rows_per_thread);
    if (t.width == 0) return;
    const bool vector = aligned && t.width == kPack;
    opmath_t b[kPack];
    load_pack(bias + t.col0, false, t.width, b);
    for (int64_t r = t.row0; r < t.row1; ++r) {
        opmath_t u[kPack], out[kPack];
        load_pack(x + r * cols + t.col0, vector, t.width, u);
#pragma unroll
        for (int k = 0; k < kPack; ++k) {
            u[k] += b[k];
            opmath_t s, s_neg;
            sigmoids(u[k], s, s_neg);
            out[k] = u[k] * s;
        }
        store_pack(y + r * cols + t.col0, vector, t.width, out);
    }
}

// grad_x for the thread's tile, and per block one partial column sum of grad_x over the block's
// rows: partial[blockIdx.y * cols + col]. The sums use grad_x before its rounding to scalar_t.
template <typename scalar_t>
__global__ void bias_gelu_backward_kernel(const scalar_t* __restrict__ grad_y, const scalar_t* __restrict__ x,
                                          const scalar_t* __restrict__ bias, scalar_t* __restrict__ grad_x,
                                          double* __restrict__ partial, int64_t rows, int64_t cols,
                                          int64_t rows_per_thread, bool aligned) {
    using opmath_t = at::opmath_type<scalar_t>;
    // [row group][column in pack][pack]: the warp's 32 threads write 32 consecutive doubles.
    __shared__ double sums[kBlockY][kPack][kBlockX];
    const Tile t = tile_of(rows, cols, rows_per_thread);
    double acc[kPack];
#pragma unroll
    for (int k = 0; k < kPack; ++k) acc[k] = 0.0;
    // No early return: every thread of the block must reach __syncthreads below.
    if (t.width > 0) {
        const bool vector = aligned && t.width == kPack;
        opmath_t b[kPack];
        load_pack(bias + t.col0, false, t.width, b);
        for (int64_t r = t.row0; r < t.row1; ++r) {
            opmath_t g[kPack], u[kPack], out[kPack];
            load_pack(grad_y + r * cols + t.col0, vector, t.width, g);
            load_pack(x + r * cols + t.col0, vector, t.width, u);
#pragma unroll
            for (int k = 0; k < kPack; ++k) {
                u[k] += b[k];
                opmath_t s, s_neg;
                sigmoids(u[k], s, s_neg);
                const opmath_t slope = s + opmath_t(2) * u[k] * s * s_neg * opmath_t(kBeta) *
                                               (opmath_t(1) + opmath_t(3 * kKappa) * u[k] * u[k]);
                out[k] = g[k] * slope;
                acc[k] += static_cast<double>(out[k]);
            }
            store_pack(grad_x + r * cols + t.col0, vector, t.width, out);
        }
    }
#pragma unroll
    for (int k = 0; k < kPack; ++k) sums[threadIdx.y][k][threadIdx.x] = acc[k];
    __syncthreads();
    if (threadIdx.y != 0) return;
#pragma unroll
    for (int k = 0; k < kPack; ++k) {
        if (k < t.width) {
            double total = 0.0;
            for (int j = 0; j < kBlockY; ++j) total += sums[j][k][threadIdx.x];  // row groups in order
            partial[static_cast<int64_t>(blockIdx.y) * cols + t.col0 + k] = total;
        }
    }
}

// grad_bias[c] = the sum of partial[j * cols + c] over the `parts` block rows, in order.
template <typename scalar_t>
__global__ void bias_grad_kernel(const double* __restrict__ partial, scalar_t* __restrict__ grad_bias, int64_t parts,
                                 int64_t cols) {
    using opmath_t = at::opmath_type<scalar_t>;
    const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    double acc = 0.0;
    for (int64_t j = 0; j < parts; ++j) acc += partial[j * cols + c];
    grad_bias[c] = static_cast<scalar_t>(static_cast<opmath_t>(acc));
}

struct Tiling {
    dim3 grid, block;
    int64_t rows_per_thread;
};

// More rows per thread only where kRowsPerThread would need more than kMaxGridY blocks in y.
static Tiling tiling(int64_t rows, int64_t cols) {
    const int64_t per_thread = std::max(kRowsPerThread, (rows + kMaxGridY * kBlockY - 1) / (kMaxGridY * kBlockY));
    const int64_t groups = (rows + per_thread - 1) / per_thread;
    const int64_t packs = (cols + kPack - 1) / kPack;
    return {dim3(brrr::blocks_for(packs, kBlockX), brrr::blocks_for(groups, kBlockY)), dim3(kBlockX, kBlockY),
            per_thread};
}

static bool aligned16(const at::Tensor& t) { return reinterpret_cast<std::uintptr_t>(t.data_ptr()) % 16 == 0; }

static void check_inputs(const at::Tensor& x, const at::Tensor& bias) {
    brrr::check_input(x, "x");
    brrr::check_input(bias, "bias");
    TORCH_CHECK(x.device() == bias.device(), "x and bias must be on one device: ", x.device(), " vs ", bias.device());
    TORCH_CHECK(x.scalar_type() == bias.scalar_type(), "x and bias must have one dtype: ", x.scalar_type(), " vs ",
                bias.scalar_type());
    TORCH_CHECK(x.dim() == 2, "x must be a 2-D matrix [rows, cols], got shape ", x.sizes());
    TORCH_CHECK(bias.dim() == 1 && bias.size(0) == x.size(1), "bias must have shape [", x.size(1), "], got ",
                bias.sizes());
}

at::Tensor forward(at::Tensor x, at::Tensor bias) {
    check_inputs(x, bias);
    auto xc = x.contiguous();
    auto bc = bias.contiguous();
    auto y = at::empty_like(xc);
    const int64_t rows = xc.size(0), cols = xc.size(1);
    if (xc.numel() == 0) return y;
    const Tiling tl = tiling(rows, cols);
    // Every row starts on a 16-byte boundary only if the first does and a row is a whole number of 16 bytes.
    const bool aligned = (cols * xc.element_size()) % 16 == 0 && aligned16(xc) && aligned16(y);
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "bias_gelu_forward", [&] {
        bias_gelu_forward_kernel<scalar_t><<<tl.grid, tl.block, 0, brrr::stream()>>>(
            xc.data_ptr<scalar_t>(), bc.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), rows, cols, tl.rows_per_thread,
            aligned);
    });
    BRRR_CHECK_LAUNCH();
    return y;
}

std::tuple<at::Tensor, at::Tensor> backward(at::Tensor grad_y, at::Tensor x, at::Tensor bias) {
    brrr::check_input(grad_y, "grad_y");
    brrr::check_same(grad_y, x, "grad_y", "x");
    check_inputs(x, bias);
    auto gc = grad_y.contiguous();
    auto xc = x.contiguous();
    auto bc = bias.contiguous();
    auto grad_x = at::empty_like(xc);
    auto grad_bias = at::empty_like(bc);
    const int64_t rows = xc.size(0), cols = xc.size(1);
    if (cols == 0) return {grad_x, grad_bias};
    const Tiling tl = tiling(rows, cols);
    const int64_t parts = rows == 0 ? 0 : tl.grid.y;  // with no rows, bias_grad_kernel writes zeros
    auto partial = at::empty({parts, cols}, xc.options().dtype(at::kDouble));
    const bool aligned =
        (cols * xc.element_size()) % 16 == 0 && aligned16(gc) && aligned16(xc) && aligned16(grad_x);
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "bias_gelu_backward", [&] {
        if (parts > 0) {
            bias_gelu_backward_kernel<scalar_t><<<tl.grid, tl.block, 0, brrr::stream()>>>(
                gc.data_ptr<scalar_t>(), xc.data_ptr<scalar_t>(), bc.data_ptr<scalar_t>(), grad_x.data_ptr<scalar_t>(),
                partial.data_ptr<double>(), rows, cols, tl.rows_per_thread, aligned);
            BRRR_CHECK_LAUNCH();
        }
        bias_grad_kernel<scalar_t><<<brrr::blocks_for(cols, kFinalizeThreads), kFinalizeThreads, 0, brrr::stream()>>>(
            partial.data_ptr<double>(), grad_bias.data_ptr<scalar_t>(), parts, cols);
    });
    BRRR_CHECK_LAUNCH();
    return {grad_x, grad_bias};
}

BRRR_BIND(m) {
    m.def("forward", &forward);
    m.def("backward", &backward);
}
