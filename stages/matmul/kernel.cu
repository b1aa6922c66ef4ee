// Matrix product, CUDA C stage: a line-for-line translation of numba_kernel.py.
// The shared-memory tiled kernel computes c = A @ B for operands read through (row, column)
// strides, so backward reuses it on b^T and a^T without copying them. 64-bit indices throughout:
// row * stride passes 2^31 long before a tensor is too large for the GPU.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <tuple>

#include "brrr.cuh"

constexpr int kTile = 16;            // 16x16 threads a block, two tiles of 1 KiB (float) or 2 KiB (double)
constexpr int64_t kMaxGridY = 65535;  // CUDA's limit on gridDim.y; taller outputs loop over row tiles

template <typename scalar_t>
__global__ void tiled_matmul_kernel(const scalar_t* __restrict__ a, int64_t a_rs, int64_t a_cs,
                                    const scalar_t* __restrict__ b, int64_t b_rs, int64_t b_cs,
                                    scalar_t* __restrict__ c, int64_t m, int64_t k, int64_t n) {
    __shared__ scalar_t a_tile[kTile][kTile];
    __shared__ scalar_t b_tile[kTile][kTile];
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int64_t col = static_cast<int64_t>(blockIdx.x) * kTile + tx;
    // Every thread runs the same trip counts, out-of-range ones too: they load the zeros of
    // boundary tiles and must reach each barrier, so none may return early.
    for (int64_t tile_row = blockIdx.y; tile_row < (m + kTile - 1) / kTile; tile_row += gridDim.y) {
        const int64_t row = tile_row * kTile + ty;
        scalar_t acc = 0;
        for (int64_t k0 = 0; k0 < k; k0 += kTile) {
            const int64_t ka = k0 + tx;
            if (row < m && ka < k) {
                a_tile[ty][tx] = a[row * a_rs + ka * a_cs];
            } else {
                a_tile[ty][tx] = scalar_t(0);  // past the edge, in both tiles: 0 * a stale NaN is NaN
            }
            const int64_t kb = k0 + ty;
            if (kb < k && col < n) {
                b_tile[ty][tx] = b[kb * b_rs + col * b_cs];
            } else {
                b_tile[ty][tx] = scalar_t(0);
            }
            __syncthreads();  // tiles loaded: every thread reads elements others wrote
#pragma unroll
            for (int kk = 0; kk < kTile; ++kk) {
                acc += a_tile[ty][kk] * b_tile[kk][tx];
            }
            __syncthreads();  // tiles used: only now may the next k0 overwrite them
        }
        if (row < m && col < n) {
            c[row * n + col] = acc;
        }
    }
}

// [m, k] @ [k, n] with each operand read from flat storage through (row, column) strides.
static at::Tensor product(const at::Tensor& a, int64_t a_rs, int64_t a_cs, const at::Tensor& b, int64_t b_rs,
                          int64_t b_cs, int64_t m, int64_t k, int64_t n) {
    auto c = at::empty({m, n}, a.options());
    // K = 0 still launches: the kernel writes the zeros of an empty sum.
    if (m == 0 || n == 0) return c;
    const int64_t col_tiles = (n + kTile - 1) / kTile;
    TORCH_CHECK(col_tiles <= std::numeric_limits<int32_t>::max(), "matmul: ", n, " columns exceed the grid");
    const dim3 grid(static_cast<unsigned int>(col_tiles),
                    static_cast<unsigned int>(std::min((m + kTile - 1) / kTile, kMaxGridY)));
    const dim3 block(kTile, kTile);
    AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "matmul_product", [&] {
        tiled_matmul_kernel<scalar_t><<<grid, block, 0, brrr::stream()>>>(
            a.data_ptr<scalar_t>(), a_rs, a_cs, b.data_ptr<scalar_t>(), b_rs, b_cs, c.data_ptr<scalar_t>(), m, k, n);
    });
    BRRR_CHECK_LAUNCH();
    return c;
}

// brrr::check_same also asks for one shape, which a and b do not share: device and dtype here.
static void check_operands(const at::Tensor& a, const at::Tensor& b) {
    brrr::check_input(a, "a");
    brrr::check_input(b, "b");
    TORCH_CHECK(a.device() == b.device(), "a and b must be on one device: ", a.device(), " vs ", b.device());
    TORCH_CHECK(a.scalar_type() == b.scalar_type(), "a and b must have one dtype: ", a.scalar_type(), " vs ",
                b.scalar_type());
    TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(0), "matmul needs a [M, K] and b [K, N], got ",
                a.sizes(), " and ", b.sizes());
}

at::Tensor forward(at::Tensor a, at::Tensor b) {
    check_operands(a, b);
    auto ac = a.contiguous();
    auto bc = b.contiguous();
    const int64_t m = ac.size(0), k = ac.size(1), n = bc.size(1);
    return product(ac, k, 1, bc, n, 1, m, k, n);
}

std::tuple<at::Tensor, at::Tensor> backward(at::Tensor grad_c, at::Tensor a, at::Tensor b) {
    check_operands(a, b);
    brrr::check_input(grad_c, "grad_c");
    const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
    TORCH_CHECK(grad_c.device() == a.device() && grad_c.scalar_type() == a.scalar_type(),
                "grad_c must match a's device and dtype, got ", grad_c.device(), " ", grad_c.scalar_type());
    TORCH_CHECK(grad_c.dim() == 2 && grad_c.size(0) == m && grad_c.size(1) == n, "grad_c must be [", m, ", ", n,
                "], got ", grad_c.sizes());
    auto gc = grad_c.contiguous();
    auto ac = a.contiguous();
    auto bc = b.contiguous();
    // b^T [n, k] is b's storage with the strides swapped: element (j, p) sits at p * n + j.
    // A warp then loads b^T's tile n elements apart, not coalesced: the price of no copy.
    auto grad_a = product(gc, n, 1, bc, 1, n, m, n, k);
    // a^T [k, m] likewise: element (p, i) sits at i * k + p.
    auto grad_b = product(ac, 1, k, gc, n, 1, k, m, n);
    return {grad_a, grad_b};
}

BRRR_BIND(m) {
    m.def("forward", &forward);
    m.def("backward", &backward);
}
