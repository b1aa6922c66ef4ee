// Matrix product, CUDA C stage, host side: forward and backward on torch tensors (the functions
// every stage defines), plus forward_v1 .. _v4, the earlier kernels, for brrr bench to time
// beside forward. The strides that let backward reuse the forward kernels on b^T and a^T are
// worked out here and passed to kernel.cu's launchers as plain integers.
#include <cstdint>
#include <limits>
#include <tuple>

#include "brrr.cuh"

// Defined in kernel.cu for float, double, __half and __nv_bfloat16. Each computes c [m, n] =
// A [m, k] @ B [k, n], with A and B read from flat storage through (row, column) strides and c
// written row-major.
#define MATMUL_LAUNCHER(name)                                                                         \
    template <typename T>                                                                             \
    void name(const T* a, int64_t a_rs, int64_t a_cs, const T* b, int64_t b_rs, int64_t b_cs, T* c, \
              int64_t m, int64_t k, int64_t n, cudaStream_t stream);
MATMUL_LAUNCHER(matmul_naive)    // v1: one thread an element, no shared memory
MATMUL_LAUNCHER(matmul_tiled)    // v2: 16x16 shared-memory tiles
MATMUL_LAUNCHER(matmul_blocked)  // v3 (128x128 tiles, 8x8 a thread) where it applies, v2 otherwise
MATMUL_LAUNCHER(matmul_prefetched)  // v4 (v3's tiles, k-steps of 16 double-buffered) where it applies, v2 otherwise
MATMUL_LAUNCHER(matmul_product)  // the best kernel for the dtype and shape
#undef MATMUL_LAUNCHER

enum class Version { naive, tiled, blocked, prefetched, best };

static at::Tensor product(const at::Tensor& a, int64_t a_rs, int64_t a_cs, const at::Tensor& b, int64_t b_rs,
                          int64_t b_cs, int64_t m, int64_t k, int64_t n, Version version = Version::best) {
    auto c = at::empty({m, n}, a.options());
    // K = 0 still launches: the kernel writes the zeros of an empty sum.
    if (m == 0 || n == 0) return c;
    // The grid's x dimension counts 16-column tiles (at most; v3's are 128 wide).
    TORCH_CHECK((n + 15) / 16 <= std::numeric_limits<int32_t>::max(), "matmul: ", n, " columns exceed the grid");
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, a.scalar_type(), "matmul_product", [&] {
        const auto* ap = brrr::data<scalar_t>(a);
        const auto* bp = brrr::data<scalar_t>(b);
        auto* cp = brrr::data<scalar_t>(c);
        switch (version) {
            case Version::naive: matmul_naive(ap, a_rs, a_cs, bp, b_rs, b_cs, cp, m, k, n, brrr::stream()); break;
            case Version::tiled: matmul_tiled(ap, a_rs, a_cs, bp, b_rs, b_cs, cp, m, k, n, brrr::stream()); break;
            case Version::blocked: matmul_blocked(ap, a_rs, a_cs, bp, b_rs, b_cs, cp, m, k, n, brrr::stream()); break;
            case Version::prefetched:
                matmul_prefetched(ap, a_rs, a_cs, bp, b_rs, b_cs, cp, m, k, n, brrr::stream());
                break;
            case Version::best: matmul_product(ap, a_rs, a_cs, bp, b_rs, b_cs, cp, m, k, n, brrr::stream()); break;
        }
    });
    BRRR_CHECK_LAUNCH();
    return c;
}

// brrr::check_same also asks for one shape, which a and b do not share: device and dtype here.
static void check_operands(const at::Tensor& a, const at::Tensor& b) {
    brrr::check_input(a, "a");
    brrr::check_compatible(a, b, "a", "b");
    TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(0), "matmul needs a [M, K] and b [K, N], got ",
                a.sizes(), " and ", b.sizes());
}

static at::Tensor forward_with(const at::Tensor& a, const at::Tensor& b, Version version) {
    check_operands(a, b);
    BRRR_DEVICE_GUARD(a);
    auto ac = a.contiguous();
    auto bc = b.contiguous();
    const int64_t m = ac.size(0), k = ac.size(1), n = bc.size(1);
    return product(ac, k, 1, bc, n, 1, m, k, n, version);
}

at::Tensor forward(at::Tensor a, at::Tensor b) { return forward_with(a, b, Version::best); }
at::Tensor forward_v1(at::Tensor a, at::Tensor b) { return forward_with(a, b, Version::naive); }
at::Tensor forward_v2(at::Tensor a, at::Tensor b) { return forward_with(a, b, Version::tiled); }
at::Tensor forward_v3(at::Tensor a, at::Tensor b) { return forward_with(a, b, Version::blocked); }
at::Tensor forward_v4(at::Tensor a, at::Tensor b) { return forward_with(a, b, Version::prefetched); }

std::tuple<at::Tensor, at::Tensor> backward(at::Tensor grad_c, at::Tensor a, at::Tensor b) {
    check_operands(a, b);
    brrr::check_compatible(a, grad_c, "a", "grad_c");
    const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
    TORCH_CHECK(grad_c.dim() == 2 && grad_c.size(0) == m && grad_c.size(1) == n, "grad_c must be [", m, ", ", n,
                "], got ", grad_c.sizes());
    BRRR_DEVICE_GUARD(a);
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
    m.def("forward_v1", &forward_v1);
    m.def("forward_v2", &forward_v2);
    m.def("forward_v3", &forward_v3);
    m.def("forward_v4", &forward_v4);
}
