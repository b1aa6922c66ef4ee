// Mul, CUDA C stage: numba_kernel.py's math plus the half types, one 16-byte pack per thread,
// 64-bit indices (tensors above 2^31 elements exist).
//
// Each thread moves one pack of W elements (W = 16 / sizeof(T): one 16-byte access) on
// 16-byte aligned tensors, W = 1 otherwise; the thread owning the last, partial pack finishes
// it element by element.
//
// Napkin math: forward reads two tensors and writes one, 12 bytes per float32 element, so
// 2^28 elements move 3 GiB, 1.09 ms at the 2.96 TB/s an H100 copies. Measured on an H100
// (benchmarks/results/2026-11-23-h100-bench, 2026-11-23-h100-final):
//   v1, one element per thread, as in numba_kernel.py:  1.192 ms forward (91% of copy)
//   v2, one 16-byte pack per thread (this file):        1.113 ms forward (97%), fwd+bwd 98.6%;
//                                                       bfloat16 99% forward, 97.8% fwd+bwd
#include "brrr_kernel.cuh"

// acc_t is float for __half and __nv_bfloat16 and the type itself otherwise: the product of two
// halves is exact in float (11 + 11 significant bits < 24), so the one rounding is the store.
template <typename T>
__device__ __forceinline__ T product(T a, T b) {
    return brrr::from_acc<T>(brrr::to_acc(a) * brrr::to_acc(b));
}

template <typename T, int W>
__global__ void mul_forward_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ y, int64_t n) {
    using P = brrr::Pack<T, W>;
    const int64_t base = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * W;
    if (base >= n) return;
    if (base + W <= n) {
        const P pa = *reinterpret_cast<const P*>(a + base);
        const P pb = *reinterpret_cast<const P*>(b + base);
        P out;
#pragma unroll
        for (int k = 0; k < W; ++k) out.v[k] = product(pa.v[k], pb.v[k]);
        *reinterpret_cast<P*>(y + base) = out;
    } else {
        for (int64_t i = base; i < n; ++i) y[i] = product(a[i], b[i]);
    }
}

// Both gradients in one pass: grad_y is read once instead of once per gradient.
template <typename T, int W>
__global__ void mul_backward_kernel(const T* __restrict__ grad_y, const T* __restrict__ a, const T* __restrict__ b,
                                    T* __restrict__ grad_a, T* __restrict__ grad_b, int64_t n) {
    using P = brrr::Pack<T, W>;
    const int64_t base = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * W;
    if (base >= n) return;
    if (base + W <= n) {
        const P pg = *reinterpret_cast<const P*>(grad_y + base);
        const P pa = *reinterpret_cast<const P*>(a + base);
        const P pb = *reinterpret_cast<const P*>(b + base);
        P ga, gb;
#pragma unroll
        for (int k = 0; k < W; ++k) {
            ga.v[k] = product(pg.v[k], pb.v[k]);
            gb.v[k] = product(pg.v[k], pa.v[k]);
        }
        *reinterpret_cast<P*>(grad_a + base) = ga;
        *reinterpret_cast<P*>(grad_b + base) = gb;
    } else {
        for (int64_t i = base; i < n; ++i) {
            grad_a[i] = product(grad_y[i], b[i]);
            grad_b[i] = product(grad_y[i], a[i]);
        }
    }
}

constexpr int kThreads = 256;

// The launchers binding.cpp calls, one per kernel: 16-byte packs when every pointer allows.
template <typename T>
void mul_forward(const T* a, const T* b, T* y, int64_t n, cudaStream_t stream) {
    constexpr int W = 16 / sizeof(T);
    if (brrr::aligned16(a) && brrr::aligned16(b) && brrr::aligned16(y)) {
        mul_forward_kernel<T, W><<<brrr::blocks_for((n + W - 1) / W, kThreads), kThreads, 0, stream>>>(a, b, y, n);
    } else {
        mul_forward_kernel<T, 1><<<brrr::blocks_for(n, kThreads), kThreads, 0, stream>>>(a, b, y, n);
    }
}

template <typename T>
void mul_backward(const T* grad_y, const T* a, const T* b, T* grad_a, T* grad_b, int64_t n, cudaStream_t stream) {
    constexpr int W = 16 / sizeof(T);
    if (brrr::aligned16(grad_y) && brrr::aligned16(a) && brrr::aligned16(b) && brrr::aligned16(grad_a) &&
        brrr::aligned16(grad_b)) {
        mul_backward_kernel<T, W><<<brrr::blocks_for((n + W - 1) / W, kThreads), kThreads, 0, stream>>>(
            grad_y, a, b, grad_a, grad_b, n);
    } else {
        mul_backward_kernel<T, 1><<<brrr::blocks_for(n, kThreads), kThreads, 0, stream>>>(grad_y, a, b, grad_a, grad_b, n);
    }
}

// The dtypes binding.cpp dispatches to.
template void mul_forward(const float*, const float*, float*, int64_t, cudaStream_t);
template void mul_forward(const double*, const double*, double*, int64_t, cudaStream_t);
template void mul_forward(const __half*, const __half*, __half*, int64_t, cudaStream_t);
template void mul_forward(const __nv_bfloat16*, const __nv_bfloat16*, __nv_bfloat16*, int64_t, cudaStream_t);
template void mul_backward(const float*, const float*, const float*, float*, float*, int64_t, cudaStream_t);
template void mul_backward(const double*, const double*, const double*, double*, double*, int64_t, cudaStream_t);
template void mul_backward(const __half*, const __half*, const __half*, __half*, __half*, int64_t, cudaStream_t);
template void mul_backward(const __nv_bfloat16*, const __nv_bfloat16*, const __nv_bfloat16*, __nv_bfloat16*,
                           __nv_bfloat16*, int64_t, cudaStream_t);
