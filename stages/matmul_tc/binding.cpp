// Tensor-core matrix product, CUDA C stage, host side: forward and backward on bfloat16 or float16 tensors with
// kernel.cu's v5 or v4 (wgmma) where the GPU has it and v3 elsewhere, plus forward_v1 (the naive
// kernel), forward_v2 (v2's mma kernel), forward_v3, _v4 and _v5 for brrr bench to time beside forward. Backward runs the same mma kernel on the tensors as they are: which operand is
// stored transposed is a template argument of kernel.cu's launcher, not a copy.
#include <cstdint>
#include <limits>
#include <tuple>

#include "brrr.cuh"

// Defined in kernel.cu for E = __nv_bfloat16 and __half. Each writes c [m, n] row-major.
template <class E>
void matmul_tc_naive(const E* a, const E* b, E* c, int64_t m, int64_t k, int64_t n, cudaStream_t stream);
template <bool AKContig, bool BKContig, class E>
void matmul_tc_mma(const E* a, int64_t lda, const E* b, int64_t ldb, E* c, int64_t m, int64_t k, int64_t n,
                   cudaStream_t stream);
// v3: false (nothing launched) when c has more tiles than a 1-D grid counts.
template <bool AKContig, bool BKContig, class E>
bool matmul_tc_pipelined(const E* a, int64_t lda, const E* b, int64_t ldb, E* c, int64_t m, int64_t k, int64_t n,
                         cudaStream_t stream);
// v5 (wgmma fed by the tensor memory accelerator, sm_90a only): the same contract as v3.
template <bool AKContig, bool BKContig, class E>
bool matmul_tc_tma(const E* a, int64_t lda, const E* b, int64_t ldb, E* c, int64_t m, int64_t k, int64_t n,
                   cudaStream_t stream);
// Where the GPU has wgmma: v5, v4 or v3 by the product's shape and operands (kernel.cu says which).
template <bool AKContig, bool BKContig, class E>
bool matmul_tc_fastest(const E* a, int64_t lda, const E* b, int64_t ldb, E* c, int64_t m, int64_t k, int64_t n,
                       cudaStream_t stream);
// v4 (wgmma, sm_90a only): the same contract as v3.
template <bool AKContig, bool BKContig, class E>
bool matmul_tc_wgmma(const E* a, int64_t lda, const E* b, int64_t ldb, E* c, int64_t m, int64_t k, int64_t n,
                     cudaStream_t stream);

constexpr int64_t kTile = 128;          // kernel.cu's kTileMN: v2's gridDim.y counts column tiles of c
constexpr int64_t kNaiveTile = 16;     // kernel.cu's kNaiveTile: v1's gridDim.y counts 16-column tiles
constexpr int64_t kMaxGridY = 65535;

static void check_operands(const at::Tensor& a, const at::Tensor& b) {
    brrr::check_input(a, "a");
    brrr::check_compatible(a, b, "a", "b");
    TORCH_CHECK(a.scalar_type() == at::kBFloat16 || a.scalar_type() == at::kHalf,
                "matmul_tc computes on the tensor cores in bfloat16 or float16, got ", a.scalar_type());
    TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(0), "matmul_tc needs a [M, K] and b [K, N], got ",
                a.sizes(), " and ", b.sizes());
}

// c [m, n], allocated; false when there is nothing to launch (c empty).
static bool make_output(at::Tensor& c, const at::Tensor& like, int64_t m, int64_t n) {
    c = at::empty({m, n}, like.options());
    return m > 0 && n > 0;  // k = 0 still launches: the kernel writes the zeros of an empty sum
}

enum class Version { Pipelined, Wgmma, Tma, Fastest };

// Where the GPU has wgmma and the tensor memory accelerator, compute capability 9.0 exactly (brrr
// builds it as sm_90a; the CPU execution reports 9.0 and emulates both): matmul_tc_fastest; v3 on
// every other GPU.
static Version fastest() {
    int device = 0, major = 0, minor = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
    return major == 9 && minor == 0 ? Version::Fastest : Version::Pipelined;
}

// v3's or v4's launch, refused with the sizes when c has more tiles than a 1-D grid counts.
template <bool AKContig, bool BKContig>
static void pipelined(const at::Tensor& a, int64_t lda, const at::Tensor& b, int64_t ldb, at::Tensor& c, int64_t k,
                      Version version = fastest()) {
    const int64_t m = c.size(0), n = c.size(1);
    bool launched = false;
    AT_DISPATCH_REDUCED_FLOATING_TYPES(a.scalar_type(), "matmul_tc", [&] {
        using E = typename brrr::Device<scalar_t>::type;
        auto* launch = version == Version::Fastest ? matmul_tc_fastest<AKContig, BKContig, E>
                       : version == Version::Tma   ? matmul_tc_tma<AKContig, BKContig, E>
                       : version == Version::Wgmma ? matmul_tc_wgmma<AKContig, BKContig, E>
                                                   : matmul_tc_pipelined<AKContig, BKContig, E>;
        launched = launch(brrr::data<scalar_t>(a), lda, brrr::data<scalar_t>(b), ldb, brrr::data<scalar_t>(c), m, k, n,
                          brrr::stream());
    });
    TORCH_CHECK(launched, "matmul_tc: a ", m, " x ", n, " product has more tiles than a grid counts (or, v5, sizes past "
                "int32 or a tensor map the driver refused)");
    BRRR_CHECK_LAUNCH();
}

// c = a @ b by `version`; row-major A is K-contiguous, row-major B is B^T stored MN-contiguous.
static at::Tensor product(const at::Tensor& a, const at::Tensor& b, Version version) {
    check_operands(a, b);
    BRRR_DEVICE_GUARD(a);
    auto ac = a.contiguous();
    auto bc = b.contiguous();
    const int64_t m = ac.size(0), k = ac.size(1), n = bc.size(1);
    at::Tensor c;
    if (make_output(c, ac, m, n)) pipelined<true, false>(ac, k, bc, n, c, k, version);
    return c;
}

at::Tensor forward(at::Tensor a, at::Tensor b) { return product(a, b, fastest()); }

// v3 on any GPU, for brrr bench beside v4.
at::Tensor forward_v3(at::Tensor a, at::Tensor b) { return product(a, b, Version::Pipelined); }

// A first version that needs sm_90a, refused with a message on other GPUs.
static at::Tensor hopper(const at::Tensor& a, const at::Tensor& b, Version version, const char* name) {
    TORCH_CHECK(fastest() == Version::Fastest, "matmul_tc ", name, " needs a compute capability 9.0 GPU (sm_90a)");
    return product(a, b, version);
}

// v4 (wgmma fed by every thread's cp.async; v3 for operands whose rows are not whole 16-byte chunks).
at::Tensor forward_v4(at::Tensor a, at::Tensor b) { return hopper(a, b, Version::Wgmma, "forward_v4"); }

// v5 (the tensor memory accelerator and a producer warp feeding v4's products; v3 as v4).
at::Tensor forward_v5(at::Tensor a, at::Tensor b) { return hopper(a, b, Version::Tma, "forward_v5"); }

// v2 (kernel.cu's mma_kernel), for brrr bench: its grid counts column tiles in gridDim.y.
at::Tensor forward_v2(at::Tensor a, at::Tensor b) {
    check_operands(a, b);
    BRRR_DEVICE_GUARD(a);
    auto ac = a.contiguous();
    auto bc = b.contiguous();
    const int64_t m = ac.size(0), k = ac.size(1), n = bc.size(1);
    at::Tensor c;
    if (make_output(c, ac, m, n)) {
        TORCH_CHECK((n + kTile - 1) / kTile <= kMaxGridY, "matmul_tc: ", n, " columns exceed the grid's ", kMaxGridY,
                    " column tiles of ", kTile);
        TORCH_CHECK((m + kTile - 1) / kTile <= std::numeric_limits<int32_t>::max(), "matmul_tc: ", m,
                    " rows exceed the grid");
        AT_DISPATCH_REDUCED_FLOATING_TYPES(ac.scalar_type(), "matmul_tc_v2", [&] {
            matmul_tc_mma<true, false>(brrr::data<scalar_t>(ac), k, brrr::data<scalar_t>(bc), n, brrr::data<scalar_t>(c),
                                       m, k, n, brrr::stream());
        });
        BRRR_CHECK_LAUNCH();
    }
    return c;
}

at::Tensor forward_v1(at::Tensor a, at::Tensor b) {
    check_operands(a, b);
    BRRR_DEVICE_GUARD(a);
    auto ac = a.contiguous();
    auto bc = b.contiguous();
    const int64_t m = ac.size(0), k = ac.size(1), n = bc.size(1);
    at::Tensor c;
    if (make_output(c, ac, m, n)) {
        TORCH_CHECK((n + kNaiveTile - 1) / kNaiveTile <= kMaxGridY, "matmul_tc: ", n, " columns exceed the naive grid's ",
                    kMaxGridY, " column tiles of ", kNaiveTile);
        AT_DISPATCH_REDUCED_FLOATING_TYPES(ac.scalar_type(), "matmul_tc_v1", [&] {
            matmul_tc_naive(brrr::data<scalar_t>(ac), brrr::data<scalar_t>(bc), brrr::data<scalar_t>(c), m, k, n,
                            brrr::stream());
        });
        BRRR_CHECK_LAUNCH();
    }
    return c;
}

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
    at::Tensor grad_a, grad_b;
    // grad_a [m, k] = grad_c [m, n] @ b^T: grad_c is K-contiguous (its rows run along n), and the MN x K
    // operand b^T^T = b is stored row-major, K-contiguous too.
    if (make_output(grad_a, ac, m, k)) pipelined<true, true>(gc, n, bc, n, grad_a, n);
    // grad_b [k, n] = a^T [k, m] @ grad_c [m, n]: a^T is stored as a, MN-contiguous; grad_c as B, MN-contiguous.
    if (make_output(grad_b, bc, k, n)) pipelined<false, false>(ac, k, gc, n, grad_b, m);
    return {grad_a, grad_b};
}

BRRR_BIND(m) {
    m.def("forward", &forward);
    m.def("backward", &backward);
    m.def("forward_v1", &forward_v1);
    m.def("forward_v2", &forward_v2);
    m.def("forward_v3", &forward_v3);
    m.def("forward_v4", &forward_v4);
    m.def("forward_v5", &forward_v5);
}
