// Causal attention, CUDA C stage: o = softmax(q k^T / sqrt(D), causal) v, and its backward, for
// float32, float16 and bfloat16 q, k, v.
//
//   forward:  one block of 4 warps a tile of 16 query rows of one (batch, head); each warp 4 rows, each
//             lane one key of a 32-key tile. K and V tiles are copied global -> shared by cp.async into
//             two buffers (tile s + 1 lands while tile s is used). Each row folds each tile into a
//             running max, sum and output (the online softmax of flash attention), its max and sum
//             reduced over the warp with cg::reduce on a tiled_partition<32>; the T x T scores never
//             exist. It saves each row's logsumexp.
//   backward: delta = rowsum(grad_o * o) (a warp a row, cg::reduce); then grad_q a query tile at a
//             time, as forward, and grad_k, grad_v a 16-key tile at a time over 32-query tiles, each
//             recomputing P = exp(q k / sqrt(D) - lse) from the saved logsumexp.
//
// Head dims up to kMaxD = 64 (binding.cpp checks); lane l owns output dims l and l + 32. Shared rows
// are padded to 65 floats, so the 32 lanes reading 32 different rows at one dim hit 32 banks.
// float32 elements are copied 4 bytes at a time (cp.async.ca's smallest copy), so no row needs any
// alignment; src-size 0 past the last row fills zeros. 64-bit offsets: bh * T * D passes 2^31 in real models.
//
// 16-bit q, k, v, o, grad_o (T = __half, __nv_bfloat16): everything is computed in float, as for
// float32: the shared tiles hold floats, and the scores, the running max and sum, the accumulators,
// lse and delta (float32 tensors whatever T) never see T; each output element is rounded to T once,
// at its store. cp.async cannot convert, and its smallest copy (4 bytes) is two 16-bit elements, which
// an odd D or row start leaves unaligned: so 16-bit elements are staged by plain loads, converted as
// they are written into the same float tiles. Those loads are waited for where each is stored to
// shared, so for 16-bit the next tile's loads do not overlap this tile's work (float32's cp.async do).
//
// This is the readable version of the technique: FlashAttention-2 proper puts q k^T and P v on the
// tensor cores (see stages/matmul_tc) and keeps a row's scores in registers.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "brrr_kernel.cuh"

namespace cg = cooperative_groups;

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kRowsPerWarp = 4;
constexpr int kRows = kWarps * kRowsPerWarp;  // query rows of a forward / grad_q block, keys of a grad_kv block
constexpr int kKeys = 32;                     // a tile's keys (forward, grad_q) or queries (grad_kv): one a lane
constexpr int kMaxD = 64;
constexpr int kStride = kMaxD + 1;
constexpr int kDims = kMaxD / 32;             // output dims a lane owns

__device__ __forceinline__ void copy_async(float* dst, const float* src, bool inside) {
    const uint32_t to = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(to), "l"(src), "r"(inside ? 4 : 0));
}

__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::); }

// Rows row0 .. row0 + rows - 1 of x (t rows of d elements) into tile (rows of kStride floats), zeros
// past row t: float by cp.async, 16-bit by a load converted to float (the header says why).
template <typename T>
__device__ void stage_rows(float* tile, const T* __restrict__ x, int64_t row0, int rows, int64_t t, int64_t d) {
    for (int64_t e = threadIdx.x; e < rows * d; e += kThreads) {
        const int64_t r = e / d;
        const int64_t c = e % d;
        const bool inside = row0 + r < t;
        if constexpr (std::is_same_v<T, float>) {
            copy_async(&tile[r * kStride + c], inside ? x + (row0 + r) * d + c : x, inside);
        } else {
            tile[r * kStride + c] = inside ? brrr::to_acc(x[(row0 + r) * d + c]) : 0.0f;
        }
    }
}

// Scalars (lse, delta) i0 .. i0 + kKeys - 1 of x, zeros past t.
__device__ void stage_scalars(float* tile, const float* __restrict__ x, int64_t i0, int64_t t) {
    if (threadIdx.x < kKeys) {
        const bool inside = i0 + threadIdx.x < t;
        copy_async(&tile[threadIdx.x], inside ? x + i0 + threadIdx.x : x, inside);
    }
}

__device__ __forceinline__ float dot(const float* a, const float* b, int64_t d) {
    float s = 0.0f;
    for (int64_t c = 0; c < d; ++c) s += a[c] * b[c];
    return s;
}

// ---- forward ------------------------------------------------------------------------------------

template <typename T>
__global__ void __launch_bounds__(kThreads)
attention_forward_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v, T* __restrict__ o,
                         float* __restrict__ lse, int64_t t, int64_t d, float scale) {
    __shared__ float q_s[kRows * kStride];
    __shared__ float k_s[2][kKeys * kStride];
    __shared__ float v_s[2][kKeys * kStride];
    __shared__ float p_s[kWarps][kKeys];
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    const int w = warp.meta_group_rank();
    const int lane = warp.thread_rank();
    const int64_t base = static_cast<int64_t>(blockIdx.y) * t * d;
    const int64_t i0 = static_cast<int64_t>(blockIdx.x) * kRows;
    q += base;
    k += base;
    v += base;
    float m[kRowsPerWarp], ell[kRowsPerWarp], acc[kRowsPerWarp][kDims];
    for (int r = 0; r < kRowsPerWarp; ++r) {
        m[r] = -INFINITY;
        ell[r] = 0.0f;
        for (int c = 0; c < kDims; ++c) acc[r][c] = 0.0f;
    }
    // Causal: the block's last query sees keys up to itself, so no tile past it is read.
    const int64_t keys = min(t, i0 + kRows);
    const int64_t tiles = (keys + kKeys - 1) / kKeys;
    stage_rows(q_s, q, i0, kRows, t, d);
    stage_rows(k_s[0], k, 0, kKeys, t, d);
    stage_rows(v_s[0], v, 0, kKeys, t, d);
    commit();
    for (int64_t s = 0; s < tiles; ++s) {
        const int64_t j0 = s * kKeys;
        if (s + 1 < tiles) {  // tile s + 1's copies go out first: they land while tile s is used
            stage_rows(k_s[(s + 1) % 2], k, j0 + kKeys, kKeys, t, d);
            stage_rows(v_s[(s + 1) % 2], v, j0 + kKeys, kKeys, t, d);
        }
        commit();
        asm volatile("cp.async.wait_group 1;\n" ::);  // this thread's copies of tile s have landed ...
        block.sync();                                 // ... and every other thread's
        const float* kt = k_s[s % 2];
        const float* vt = v_s[s % 2];
        for (int r = 0; r < kRowsPerWarp; ++r) {
            const int row = w * kRowsPerWarp + r;
            const int64_t i = i0 + row;
            if (i >= t) break;  // the same for the whole warp: the reductions below see all 32 lanes
            const float x = j0 + lane <= i ? dot(&q_s[row * kStride], &kt[lane * kStride], d) * scale : -INFINITY;
            const float m_new = fmaxf(m[r], cg::reduce(warp, x, cg::greater<float>()));
            const float p = expf(x - m_new);
            const float alpha = expf(m[r] - m_new);  // rescales what the earlier tiles summed
            ell[r] = ell[r] * alpha + cg::reduce(warp, p, cg::plus<float>());
            p_s[w][lane] = p;
            warp.sync();  // every lane's p written before any lane reads them all
            for (int c = 0; c < kDims; ++c) {
                const int64_t dd = lane + 32 * c;
                if (dd < d) {
                    float pv = 0.0f;
                    for (int jj = 0; jj < kKeys; ++jj) pv += p_s[w][jj] * vt[jj * kStride + dd];
                    acc[r][c] = acc[r][c] * alpha + pv;
                }
            }
            warp.sync();  // read before the next row overwrites p_s
            m[r] = m_new;
        }
        block.sync();  // every warp is done with this buffer before tile s + 2's copies overwrite it
    }
    for (int r = 0; r < kRowsPerWarp; ++r) {
        const int64_t i = i0 + w * kRowsPerWarp + r;
        if (i >= t) break;
        for (int c = 0; c < kDims; ++c) {
            const int64_t dd = lane + 32 * c;
            if (dd < d) o[base + i * d + dd] = brrr::from_acc<T>(acc[r][c] / ell[r]);
        }
        if (lane == 0) lse[blockIdx.y * t + i] = m[r] + logf(ell[r]);
    }
}

// ---- backward -----------------------------------------------------------------------------------

// delta[row] = sum(grad_o[row] * o[row]), a warp a row.
template <typename T>
__global__ void __launch_bounds__(kThreads)
attention_delta_kernel(const T* __restrict__ grad_o, const T* __restrict__ o, float* __restrict__ delta, int64_t rows,
                       int64_t d) {
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(cg::this_thread_block());
    const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarps + warp.meta_group_rank();
    if (row >= rows) return;  // the whole warp
    float part = 0.0f;
    for (int64_t c = warp.thread_rank(); c < d; c += 32) part += brrr::to_acc(grad_o[row * d + c]) * brrr::to_acc(o[row * d + c]);
    const float total = cg::reduce(warp, part, cg::plus<float>());
    if (warp.thread_rank() == 0) delta[row] = total;
}

// grad_q = scale * dS k, dS = P (dP - delta), a query tile a block as forward, over the key tiles.
template <typename T>
__global__ void __launch_bounds__(kThreads)
attention_grad_q_kernel(const T* __restrict__ grad_o, const T* __restrict__ q, const T* __restrict__ k,
                        const T* __restrict__ v, const float* __restrict__ lse, const float* __restrict__ delta,
                        T* __restrict__ grad_q, int64_t t, int64_t d, float scale) {
    __shared__ float q_s[kRows * kStride];
    __shared__ float do_s[kRows * kStride];
    __shared__ float k_s[2][kKeys * kStride];
    __shared__ float v_s[2][kKeys * kStride];
    __shared__ float ds_s[kWarps][kKeys];
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    const int w = warp.meta_group_rank();
    const int lane = warp.thread_rank();
    const int64_t base = static_cast<int64_t>(blockIdx.y) * t * d;
    const int64_t i0 = static_cast<int64_t>(blockIdx.x) * kRows;
    grad_o += base;
    q += base;
    k += base;
    v += base;
    lse += blockIdx.y * t;
    delta += blockIdx.y * t;
    float acc[kRowsPerWarp][kDims] = {};
    const int64_t keys = min(t, i0 + kRows);
    const int64_t tiles = (keys + kKeys - 1) / kKeys;
    stage_rows(q_s, q, i0, kRows, t, d);
    stage_rows(do_s, grad_o, i0, kRows, t, d);
    stage_rows(k_s[0], k, 0, kKeys, t, d);
    stage_rows(v_s[0], v, 0, kKeys, t, d);
    commit();
    for (int64_t s = 0; s < tiles; ++s) {
        const int64_t j0 = s * kKeys;
        if (s + 1 < tiles) {
            stage_rows(k_s[(s + 1) % 2], k, j0 + kKeys, kKeys, t, d);
            stage_rows(v_s[(s + 1) % 2], v, j0 + kKeys, kKeys, t, d);
        }
        commit();
        asm volatile("cp.async.wait_group 1;\n" ::);
        block.sync();
        const float* kt = k_s[s % 2];
        const float* vt = v_s[s % 2];
        for (int r = 0; r < kRowsPerWarp; ++r) {
            const int row = w * kRowsPerWarp + r;
            const int64_t i = i0 + row;
            if (i >= t) break;
            float ds = 0.0f;
            if (j0 + lane <= i) {
                const float p = expf(dot(&q_s[row * kStride], &kt[lane * kStride], d) * scale - lse[i]);
                ds = p * (dot(&do_s[row * kStride], &vt[lane * kStride], d) - delta[i]);
            }
            ds_s[w][lane] = ds;
            warp.sync();
            for (int c = 0; c < kDims; ++c) {
                const int64_t dd = lane + 32 * c;
                if (dd < d) {
                    for (int jj = 0; jj < kKeys; ++jj) acc[r][c] += ds_s[w][jj] * kt[jj * kStride + dd];
                }
            }
            warp.sync();
        }
        block.sync();
    }
    for (int r = 0; r < kRowsPerWarp; ++r) {
        const int64_t i = i0 + w * kRowsPerWarp + r;
        if (i >= t) break;
        for (int c = 0; c < kDims; ++c) {
            const int64_t dd = lane + 32 * c;
            if (dd < d) grad_q[base + i * d + dd] = brrr::from_acc<T>(acc[r][c] * scale);
        }
    }
}

// grad_k = scale * dS^T q and grad_v = P^T grad_o: a block a tile of 16 keys (a warp 4), a lane a query
// of each 32-query tile from the first that sees the block's keys.
template <typename T>
__global__ void __launch_bounds__(kThreads)
attention_grad_kv_kernel(const T* __restrict__ grad_o, const T* __restrict__ q, const T* __restrict__ k,
                         const T* __restrict__ v, const float* __restrict__ lse, const float* __restrict__ delta,
                         T* __restrict__ grad_k, T* __restrict__ grad_v, int64_t t, int64_t d, float scale) {
    __shared__ float k_s[kRows * kStride];
    __shared__ float v_s[kRows * kStride];
    __shared__ float q_s[2][kKeys * kStride];
    __shared__ float do_s[2][kKeys * kStride];
    __shared__ float lse_s[2][kKeys];
    __shared__ float delta_s[2][kKeys];
    __shared__ float p_s[kWarps][kKeys];
    __shared__ float ds_s[kWarps][kKeys];
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    const int w = warp.meta_group_rank();
    const int lane = warp.thread_rank();
    const int64_t base = static_cast<int64_t>(blockIdx.y) * t * d;
    const int64_t j0 = static_cast<int64_t>(blockIdx.x) * kRows;
    grad_o += base;
    q += base;
    k += base;
    v += base;
    lse += blockIdx.y * t;
    delta += blockIdx.y * t;
    float dk[kRowsPerWarp][kDims] = {};
    float dv[kRowsPerWarp][kDims] = {};
    // Causal: only queries at or after the block's first key see its keys.
    const int64_t first = j0 / kKeys * kKeys;
    const int64_t tiles = (t - first + kKeys - 1) / kKeys;
    stage_rows(k_s, k, j0, kRows, t, d);
    stage_rows(v_s, v, j0, kRows, t, d);
    stage_rows(q_s[0], q, first, kKeys, t, d);
    stage_rows(do_s[0], grad_o, first, kKeys, t, d);
    stage_scalars(lse_s[0], lse, first, t);
    stage_scalars(delta_s[0], delta, first, t);
    commit();
    for (int64_t s = 0; s < tiles; ++s) {
        const int64_t i0 = first + s * kKeys;
        const int buf = s % 2;
        if (s + 1 < tiles) {
            stage_rows(q_s[1 - buf], q, i0 + kKeys, kKeys, t, d);
            stage_rows(do_s[1 - buf], grad_o, i0 + kKeys, kKeys, t, d);
            stage_scalars(lse_s[1 - buf], lse, i0 + kKeys, t);
            stage_scalars(delta_s[1 - buf], delta, i0 + kKeys, t);
        }
        commit();
        asm volatile("cp.async.wait_group 1;\n" ::);
        block.sync();
        const float* qt = q_s[buf];
        const float* dot_t = do_s[buf];
        for (int r = 0; r < kRowsPerWarp; ++r) {
            const int row = w * kRowsPerWarp + r;
            const int64_t j = j0 + row;
            if (j >= t) break;
            const int64_t i = i0 + lane;
            float p = 0.0f;
            float ds = 0.0f;
            if (j <= i && i < t) {
                p = expf(dot(&qt[lane * kStride], &k_s[row * kStride], d) * scale - lse_s[buf][lane]);
                ds = p * (dot(&dot_t[lane * kStride], &v_s[row * kStride], d) - delta_s[buf][lane]);
            }
            p_s[w][lane] = p;
            ds_s[w][lane] = ds;
            warp.sync();
            for (int c = 0; c < kDims; ++c) {
                const int64_t dd = lane + 32 * c;
                if (dd < d) {
                    for (int ii = 0; ii < kKeys; ++ii) {
                        dv[r][c] += p_s[w][ii] * dot_t[ii * kStride + dd];
                        dk[r][c] += ds_s[w][ii] * qt[ii * kStride + dd];
                    }
                }
            }
            warp.sync();
        }
        block.sync();
    }
    for (int r = 0; r < kRowsPerWarp; ++r) {
        const int64_t j = j0 + w * kRowsPerWarp + r;
        if (j >= t) break;
        for (int c = 0; c < kDims; ++c) {
            const int64_t dd = lane + 32 * c;
            if (dd < d) {
                grad_k[base + j * d + dd] = brrr::from_acc<T>(dk[r][c] * scale);
                grad_v[base + j * d + dd] = brrr::from_acc<T>(dv[r][c]);
            }
        }
    }
}

// ---- launchers ----------------------------------------------------------------------------------

// q, k, v, o [bh, t, d] contiguous, lse [bh, t]; bh, t > 0, d <= kMaxD, bh <= 65535 (binding.cpp checks).
static dim3 grid_for(int64_t bh, int64_t t) {
    return dim3(static_cast<unsigned int>((t + kRows - 1) / kRows), static_cast<unsigned int>(bh));
}

template <typename T>
void attention_forward(const T* q, const T* k, const T* v, T* o, float* lse, int64_t bh, int64_t t, int64_t d,
                       cudaStream_t stream) {
    attention_forward_kernel<<<grid_for(bh, t), kThreads, 0, stream>>>(q, k, v, o, lse, t, d, 1.0f / sqrtf(d));
}

template <typename T>
void attention_backward(const T* grad_o, const T* q, const T* k, const T* v, const T* o, const float* lse,
                        float* delta, T* grad_q, T* grad_k, T* grad_v, int64_t bh, int64_t t, int64_t d,
                        cudaStream_t stream) {
    const float scale = 1.0f / sqrtf(d);
    const auto rows = static_cast<unsigned int>((bh * t + kWarps - 1) / kWarps);
    attention_delta_kernel<<<rows, kThreads, 0, stream>>>(grad_o, o, delta, bh * t, d);
    attention_grad_q_kernel<<<grid_for(bh, t), kThreads, 0, stream>>>(grad_o, q, k, v, lse, delta, grad_q, t, d, scale);
    attention_grad_kv_kernel<<<grid_for(bh, t), kThreads, 0, stream>>>(grad_o, q, k, v, lse, delta, grad_k, grad_v, t, d,
                                                                       scale);
}

#define ATTENTION_INSTANTIATE(T)                                                                                   \
    template void attention_forward(const T*, const T*, const T*, T*, float*, int64_t, int64_t, int64_t,           \
                                    cudaStream_t);                                                                 \
    template void attention_backward(const T*, const T*, const T*, const T*, const T*, const float*, float*, T*, T*, \
                                     T*, int64_t, int64_t, int64_t, cudaStream_t);
ATTENTION_INSTANTIATE(float)
ATTENTION_INSTANTIATE(__half)
ATTENTION_INSTANTIATE(__nv_bfloat16)
