// Sigmoid, CUDA C stage: numba_kernel.py's math, with each thread moving one 16-byte pack
// (4 floats, 2 doubles, 8 halves or bfloat16) instead of one element, and 64-bit indices (tensors
// above 2^31 elements exist). The 16-bit types compute in float (brrr::acc_t) and round once, at
// the store.
//
// Napkin math: forward reads and writes 4 bytes per float32 element, so 2^28 elements move
// 2 GiB, 0.73 ms at the 2.96 TB/s an H100 copies. Measured on an H100 (benchmarks/results/):
//   v1, one element per thread, as in numba_kernel.py:  1.072 ms forward (68% of copy)
//   v2, one 16-byte pack per thread:                    0.731 ms forward (99%), fwd+bwd 98.5%
//   v3, this file: the 16-bit types' exp and reciprocal by the approximate instructions
//       (brrr::exp_for, __fdividef), float and double unchanged. On an H200 v2's bfloat16 forward
//       was 86.0% of copy (292.6 us, torch.compile 251.1 us; benchmarks/results/2026-11-28-h200-perf):
//       a 16-byte pack is 8 elements there, each ~25 instructions of accurate exp and IEEE division,
//       so issue, not memory, set the pace; v3 is ~10 an element.
#include "brrr_kernel.cuh"

// exp(-|v|) lies in (0, 1]: it can neither overflow nor make inf/inf (the reference's form).
// T is the stored type: the 16-bit types take brrr::exp_for's 2-instruction exp and a reciprocal of
// 1 + e in [1, 2] by __fdividef (rcp.approx and a multiply: within 2 ulp of float for a divisor in
// [1, 2], with no subnormal or zero divisor to fix up, which IEEE division checks for on every call),
// float and double the accurate exp and an IEEE division.
template <typename T>
__device__ __forceinline__ brrr::acc_t<T> stable_sigmoid_acc(brrr::acc_t<T> v) {
    using A = brrr::acc_t<T>;
    const A e = brrr::exp_for<T>(-fabs(v));
    A r;
    if constexpr (sizeof(T) == 2) {
        r = __fdividef(A(1), A(1) + e);
    } else {
        r = A(1) / (A(1) + e);
    }
    return v >= A(0) ? r : e * r;
}

template <typename T>
__device__ __forceinline__ T stable_sigmoid(T v) {
    return brrr::from_acc<T>(stable_sigmoid_acc<T>(brrr::to_acc(v)));
}

// g * y * (1 - y) in acc_t, one rounding.
template <typename T>
__device__ __forceinline__ T sigmoid_grad(T g, T y) {
    using A = brrr::acc_t<T>;
    const A s = brrr::to_acc(y);
    return brrr::from_acc<T>(brrr::to_acc(g) * s * (A(1) - s));
}

// W = 16 / sizeof(T) on 16-byte aligned tensors, W = 1 otherwise; thread t owns elements
// [t*W, t*W + W), and the thread owning the last, partial pack finishes it element by element.
template <typename T, int W>
__global__ void sigmoid_forward_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t n) {
    const int64_t base = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * W;
    if (base >= n) return;
    if (base + W <= n) {
        brrr::Pack<T, W> p = *reinterpret_cast<const brrr::Pack<T, W>*>(x + base);
#pragma unroll
        for (int k = 0; k < W; ++k) p.v[k] = stable_sigmoid(p.v[k]);
        *reinterpret_cast<brrr::Pack<T, W>*>(y + base) = p;
    } else {
        for (int64_t i = base; i < n; ++i) y[i] = stable_sigmoid(x[i]);
    }
}

template <typename T, int W>
__global__ void sigmoid_backward_kernel(const T* __restrict__ grad_y, const T* __restrict__ y,
                                        T* __restrict__ grad_x, int64_t n) {
    const int64_t base = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * W;
    if (base >= n) return;
    if (base + W <= n) {
        const brrr::Pack<T, W> g = *reinterpret_cast<const brrr::Pack<T, W>*>(grad_y + base);
        const brrr::Pack<T, W> s = *reinterpret_cast<const brrr::Pack<T, W>*>(y + base);
        brrr::Pack<T, W> out;
#pragma unroll
        for (int k = 0; k < W; ++k) out.v[k] = sigmoid_grad(g.v[k], s.v[k]);
        *reinterpret_cast<brrr::Pack<T, W>*>(grad_x + base) = out;
    } else {
        for (int64_t i = base; i < n; ++i) grad_x[i] = sigmoid_grad(grad_y[i], y[i]);
    }
}

constexpr int kThreads = 256;

// The launchers binding.cpp calls, one per kernel pair: 16-byte packs when every pointer allows.
template <typename T>
void sigmoid_forward(const T* x, T* y, int64_t n, cudaStream_t stream) {
    constexpr int W = 16 / sizeof(T);
    if (brrr::aligned16(x) && brrr::aligned16(y)) {
        sigmoid_forward_kernel<T, W><<<brrr::blocks_for((n + W - 1) / W, kThreads), kThreads, 0, stream>>>(x, y, n);
    } else {
        sigmoid_forward_kernel<T, 1><<<brrr::blocks_for(n, kThreads), kThreads, 0, stream>>>(x, y, n);
    }
}

template <typename T>
void sigmoid_backward(const T* grad_y, const T* y, T* grad_x, int64_t n, cudaStream_t stream) {
    constexpr int W = 16 / sizeof(T);
    if (brrr::aligned16(grad_y) && brrr::aligned16(y) && brrr::aligned16(grad_x)) {
        sigmoid_backward_kernel<T, W><<<brrr::blocks_for((n + W - 1) / W, kThreads), kThreads, 0, stream>>>(grad_y, y, grad_x, n);
    } else {
        sigmoid_backward_kernel<T, 1><<<brrr::blocks_for(n, kThreads), kThreads, 0, stream>>>(grad_y, y, grad_x, n);
    }
}

// The dtypes binding.cpp dispatches to.
template void sigmoid_forward(const float*, float*, int64_t, cudaStream_t);
template void sigmoid_forward(const double*, double*, int64_t, cudaStream_t);
template void sigmoid_backward(const float*, const float*, float*, int64_t, cudaStream_t);
template void sigmoid_backward(const double*, const double*, double*, int64_t, cudaStream_t);
template void sigmoid_forward(const __half*, __half*, int64_t, cudaStream_t);
template void sigmoid_forward(const __nv_bfloat16*, __nv_bfloat16*, int64_t, cudaStream_t);
template void sigmoid_backward(const __half*, const __half*, __half*, int64_t, cudaStream_t);
template void sigmoid_backward(const __nv_bfloat16*, const __nv_bfloat16*, __nv_bfloat16*, int64_t, cudaStream_t);
