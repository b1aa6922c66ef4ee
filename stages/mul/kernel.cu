// Mul, CUDA C stage: numba_kernel.py's math plus the half types, one 16-byte pack per thread,
// 64-bit indices (tensors above 2^31 elements exist).
#include "brrr.cuh"

#include <ATen/OpMathType.h>

#include <tuple>

// opmath_t is float for Half and BFloat16 and the type itself otherwise: the product of two
// halves is exact in float (11 + 11 significant bits < 24), so the one rounding is the store.
//
// Each thread moves one pack of W elements (W = 16 / sizeof(T): one 16-byte access) on
// 16-byte aligned tensors, W = 1 otherwise; the thread owning the last, partial pack finishes
// it element by element. On an H100 the one-element-per-thread first version of this file
// reached 91% of copy bandwidth forward (benchmarks/results/2026-11-23-h100-bench).
template <typename scalar_t, int W>
__global__ void mul_forward_kernel(const scalar_t* __restrict__ a, const scalar_t* __restrict__ b,
                                   scalar_t* __restrict__ y, int64_t n) {
    using opmath_t = at::opmath_type<scalar_t>;
    using P = brrr::Pack<scalar_t, W>;
    const int64_t base = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * W;
    if (base >= n) return;
    if (base + W <= n) {
        const P pa = *reinterpret_cast<const P*>(a + base);
        const P pb = *reinterpret_cast<const P*>(b + base);
        P out;
#pragma unroll
        for (int k = 0; k < W; ++k)
            out.v[k] = static_cast<scalar_t>(static_cast<opmath_t>(pa.v[k]) * static_cast<opmath_t>(pb.v[k]));
        *reinterpret_cast<P*>(y + base) = out;
    } else {
        for (int64_t i = base; i < n; ++i)
            y[i] = static_cast<scalar_t>(static_cast<opmath_t>(a[i]) * static_cast<opmath_t>(b[i]));
    }
}

// Both gradients in one pass: grad_y is read once instead of once per gradient.
template <typename scalar_t, int W>
__global__ void mul_backward_kernel(const scalar_t* __restrict__ grad_y, const scalar_t* __restrict__ a,
                                    const scalar_t* __restrict__ b, scalar_t* __restrict__ grad_a,
                                    scalar_t* __restrict__ grad_b, int64_t n) {
    using opmath_t = at::opmath_type<scalar_t>;
    using P = brrr::Pack<scalar_t, W>;
    const int64_t base = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * W;
    if (base >= n) return;
    if (base + W <= n) {
        const P pg = *reinterpret_cast<const P*>(grad_y + base);
        const P pa = *reinterpret_cast<const P*>(a + base);
        const P pb = *reinterpret_cast<const P*>(b + base);
        P ga, gb;
#pragma unroll
        for (int k = 0; k < W; ++k) {
            const opmath_t g = static_cast<opmath_t>(pg.v[k]);
            ga.v[k] = static_cast<scalar_t>(g * static_cast<opmath_t>(pb.v[k]));
            gb.v[k] = static_cast<scalar_t>(g * static_cast<opmath_t>(pa.v[k]));
        }
        *reinterpret_cast<P*>(grad_a + base) = ga;
        *reinterpret_cast<P*>(grad_b + base) = gb;
    } else {
        for (int64_t i = base; i < n; ++i) {
            const opmath_t g = static_cast<opmath_t>(grad_y[i]);
            grad_a[i] = static_cast<scalar_t>(g * static_cast<opmath_t>(b[i]));
            grad_b[i] = static_cast<scalar_t>(g * static_cast<opmath_t>(a[i]));
        }
    }
}

constexpr int kThreads = 256;

at::Tensor forward(at::Tensor a, at::Tensor b) {
    brrr::check_input(a, "a");
    brrr::check_same(a, b, "a", "b");
    auto ac = a.contiguous();
    auto bc = b.contiguous();
    auto y = at::empty_like(ac);
    const int64_t n = ac.numel();
    if (n == 0) return y;
    const bool packed = brrr::aligned16(ac) && brrr::aligned16(bc) && brrr::aligned16(y);
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, ac.scalar_type(), "mul_forward", [&] {
        constexpr int W = 16 / sizeof(scalar_t);
        if (packed) {
            mul_forward_kernel<scalar_t, W><<<brrr::blocks_for((n + W - 1) / W, kThreads), kThreads, 0, brrr::stream()>>>(
                ac.data_ptr<scalar_t>(), bc.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), n);
        } else {
            mul_forward_kernel<scalar_t, 1><<<brrr::blocks_for(n, kThreads), kThreads, 0, brrr::stream()>>>(
                ac.data_ptr<scalar_t>(), bc.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), n);
        }
    });
    BRRR_CHECK_LAUNCH();
    return y;
}

std::tuple<at::Tensor, at::Tensor> backward(at::Tensor grad_y, at::Tensor a, at::Tensor b) {
    brrr::check_input(grad_y, "grad_y");
    brrr::check_same(grad_y, a, "grad_y", "a");
    brrr::check_same(a, b, "a", "b");
    auto gc = grad_y.contiguous();
    auto ac = a.contiguous();
    auto bc = b.contiguous();
    auto grad_a = at::empty_like(ac);
    auto grad_b = at::empty_like(bc);
    const int64_t n = ac.numel();
    if (n == 0) return {grad_a, grad_b};
    const bool packed = brrr::aligned16(gc) && brrr::aligned16(ac) && brrr::aligned16(bc) &&
                        brrr::aligned16(grad_a) && brrr::aligned16(grad_b);
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, ac.scalar_type(), "mul_backward", [&] {
        constexpr int W = 16 / sizeof(scalar_t);
        if (packed) {
            mul_backward_kernel<scalar_t, W><<<brrr::blocks_for((n + W - 1) / W, kThreads), kThreads, 0, brrr::stream()>>>(
                gc.data_ptr<scalar_t>(), ac.data_ptr<scalar_t>(), bc.data_ptr<scalar_t>(), grad_a.data_ptr<scalar_t>(),
                grad_b.data_ptr<scalar_t>(), n);
        } else {
            mul_backward_kernel<scalar_t, 1><<<brrr::blocks_for(n, kThreads), kThreads, 0, brrr::stream()>>>(
                gc.data_ptr<scalar_t>(), ac.data_ptr<scalar_t>(), bc.data_ptr<scalar_t>(), grad_a.data_ptr<scalar_t>(),
                grad_b.data_ptr<scalar_t>(), n);
        }
    });
    BRRR_CHECK_LAUNCH();
    return {grad_a, grad_b};
}

BRRR_BIND(m) {
    m.def("forward", &forward);
    m.def("backward", &backward);
}
