// CPU stand-in for CUDA's <mma.h>: nvcuda::wmma, warp matrix functions on the CPU (brrr_cpu_mma.h).
//
// Fragments exist for the shapes and types CUDA documents with floating-point inputs: m16n16k16,
// m32n8k16 and m8n32k16 with __half or __nv_bfloat16 inputs and float (or __half) accumulators, and
// m16n16k8 with precision::tf32 inputs and float accumulators; num_elements is CUDA's for each.
//
// Which elements of the matrix a lane's x[] holds is unspecified by CUDA. A kernel that reads or
// writes x[i] by position gets the mapping observed on sm_80 and later GPUs for m16n16k16 (and
// m16n16k8): the mma.sync m16n8k16 (m16n8k8 tf32) fragment layout of the PTX ISA, composed twice
// side by side for B and the accumulator. m32n8k16's accumulator stacks two m16 tiles of the same
// layout and m8n32k16's is its transpose, as an H100 stores them (benchmarks/tensor_core_agreement.py,
// benchmarks/results/2026-11-25-h100-tensor-cores), and so are their A and B fragments (m8n32k16's B
// is m32n8k16's A transposed). Where
// CUDA's fragment has more elements than the lane's share of the matrix (__half A and B), x[i]
// and x[i % share] are the same element: loads fill both, mma_sync reads the first.
//
// load_matrix_sync, store_matrix_sync and mma_sync are warp-collective: every lane of the warp must
// reach the same call, or the launch fails naming the line (as a GPU's would hang or be undefined).
// A load or store checks what CUDA requires: a 256-bit aligned pointer and ldm a multiple of 16
// bytes. mma_sync multiplies as brrr_cpu_mma.h says: exact products, float32 accumulation in k order.
#pragma once
#include "brrr_cpu_mma.h"

namespace nvcuda {
namespace wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
namespace precision {
struct tf32 {};
}  // namespace precision
enum layout_t { mem_row_major, mem_col_major };

inline float __float_to_tf32(float in) { return brrr_cpu::mma::tf32_round(in); }

namespace detail {
using brrr_cpu::mma::Map;
using brrr_cpu::mma::Type;

template <typename T>
struct element;
template <>
struct element<__half> {
    using storage = __half;
    static constexpr Type type = Type::F16;
};
template <>
struct element<__nv_bfloat16> {
    using storage = __nv_bfloat16;
    static constexpr Type type = Type::BF16;
};
template <>
struct element<precision::tf32> {
    using storage = float;
    static constexpr Type type = Type::TF32;
};
template <>
struct element<float> {
    using storage = float;
    static constexpr Type type = Type::F32;
};

// What each fragment is: the rows and columns of its tile, its layout (brrr_cpu_mma.h) and CUDA's
// num_elements. `ok` is false for what CUDA does not define (or brrr does not emulate: integer,
// double and sub-byte fragments).
template <typename Use, int m, int n, int k, typename T>
struct spec {
    static constexpr bool ok = false;
};
#define BRRR_WMMA_SPEC(USE, M, N, K, T, ROWS, COLS, MAP, ELEMENTS)                     \
    template <>                                                                        \
    struct spec<USE, M, N, K, T> {                                                     \
        static constexpr bool ok = true;                                               \
        static constexpr int rows = ROWS, cols = COLS, elements = ELEMENTS;           \
        static constexpr int share = ROWS * COLS / 32;                                 \
        static constexpr Map map = Map::MAP;                                           \
    };
#define BRRR_WMMA_INPUTS(T, HALF_EXTRA)                                                            \
    BRRR_WMMA_SPEC(matrix_a, 16, 16, 16, T, 16, 16, A16x16, 8 * HALF_EXTRA)                     \
    BRRR_WMMA_SPEC(matrix_b, 16, 16, 16, T, 16, 16, B16x16, 8 * HALF_EXTRA)                     \
    BRRR_WMMA_SPEC(matrix_a, 32, 8, 16, T, 32, 16, A32x16, 16)                                  \
    BRRR_WMMA_SPEC(matrix_b, 32, 8, 16, T, 16, 8, B16x8, HALF_EXTRA == 2 ? 16 : 4)              \
    BRRR_WMMA_SPEC(matrix_a, 8, 32, 16, T, 8, 16, A8x16, HALF_EXTRA == 2 ? 16 : 4)              \
    BRRR_WMMA_SPEC(matrix_b, 8, 32, 16, T, 16, 32, B16x32, 16)
BRRR_WMMA_INPUTS(__half, 2)
BRRR_WMMA_INPUTS(__nv_bfloat16, 1)
#define BRRR_WMMA_ACCUMULATORS(T)                                \
    BRRR_WMMA_SPEC(accumulator, 16, 16, 16, T, 16, 16, C16x16, 8) \
    BRRR_WMMA_SPEC(accumulator, 32, 8, 16, T, 32, 8, C32x8, 8)    \
    BRRR_WMMA_SPEC(accumulator, 8, 32, 16, T, 8, 32, C8x32, 8)
BRRR_WMMA_ACCUMULATORS(float)
BRRR_WMMA_ACCUMULATORS(__half)
BRRR_WMMA_SPEC(matrix_a, 16, 16, 8, precision::tf32, 16, 8, A16x8tf, 4)
BRRR_WMMA_SPEC(matrix_b, 16, 16, 8, precision::tf32, 8, 16, B8x16tf, 4)
BRRR_WMMA_SPEC(accumulator, 16, 16, 8, float, 16, 16, C16x16, 8)
#undef BRRR_WMMA_SPEC
#undef BRRR_WMMA_INPUTS
#undef BRRR_WMMA_ACCUMULATORS

inline float value(__half h) { return __half2float(h); }
inline float value(__nv_bfloat16 h) { return __bfloat162float(h); }
inline float value(float f) { return f; }

// The memory element (r, c) of a tile at p with leading dimension ldm.
constexpr size_t offset(int r, int c, unsigned ldm, bool row_major) {
    return row_major ? static_cast<size_t>(r) * ldm + c : static_cast<size_t>(c) * ldm + r;
}

void check_pointer(const void* p, unsigned ldm, size_t element_size, const char* what, const char* file, int line);

constexpr char kLoad[] = "wmma::load_matrix_sync";
constexpr char kStore[] = "wmma::store_matrix_sync";
constexpr char kMma[] = "wmma::mma_sync";
inline const brrr_cpu::Collective& collective_of(const char* name) {
    static const brrr_cpu::Collective load{kLoad, &brrr_cpu::mma::no_exchange}, store{kStore, &brrr_cpu::mma::no_exchange};
    return name == kLoad ? load : store;
}
}  // namespace detail

template <typename Use, int m, int n, int k, typename T, typename Layout = void>
class alignas(8) fragment {
    using S = detail::spec<Use, m, n, k, T>;
    static_assert(S::ok, "this nvcuda::wmma fragment (use, shape and element type) is not one CUDA defines with "
                         "floating-point inputs, or not one brrr emulates on the CPU (integer, double and sub-byte "
                         "fragments are not)");
    static_assert(std::is_same_v<Use, accumulator> ? std::is_void_v<Layout>
                                                   : std::is_same_v<Layout, row_major> || std::is_same_v<Layout, col_major>,
                  "a matrix_a or matrix_b fragment takes row_major or col_major; an accumulator none");

   public:
    enum { num_elements = S::elements, num_storage_elements = S::elements };
    using element_type = T;
    using storage_element_type = typename detail::element<T>::storage;
    storage_element_type x[num_elements];
};

template <typename Use, int m, int n, int k, typename T, typename Layout, typename V>
void fill_fragment(fragment<Use, m, n, k, T, Layout>& f, const V& v) {
    using F = fragment<Use, m, n, k, T, Layout>;
    const typename F::storage_element_type s(v);
    for (int i = 0; i < F::num_elements; ++i) f.x[i] = s;
}

// A matrix_a or matrix_b fragment from memory laid out as its Layout says.
template <typename Use, int m, int n, int k, typename T, typename Layout, typename P>
BRRR_CPU_ENTRY void load_matrix_sync(fragment<Use, m, n, k, T, Layout>& f, const P* p, unsigned ldm, BRRR_CPU_HERE) {
    using F = fragment<Use, m, n, k, T, Layout>;
    using S = detail::spec<Use, m, n, k, T>;
    static_assert(!std::is_same_v<Use, accumulator>, "loading an accumulator fragment takes a layout_t (mem_row_major or mem_col_major)");
    static_assert(std::is_same_v<std::remove_cv_t<P>, typename F::storage_element_type>,
                  "wmma::load_matrix_sync reads the fragment's element type (float for precision::tf32)");
    detail::check_pointer(p, ldm, sizeof(P), detail::kLoad, brrr_file, brrr_line);
    const int lane = brrr_cpu::mma::lane();
    const void* pc = __builtin_return_address(0);
    for (int i = 0; i < S::share; ++i) {
        const auto [r, c] = brrr_cpu::mma::at(S::map, lane, i);
        const P* e = p + detail::offset(r, c, ldm, std::is_same_v<Layout, row_major>);
        brrr_cpu::mma::check_access(e, sizeof(P), false, pc);
        f.x[i] = *e;
    }
    for (int i = S::share; i < F::num_elements; ++i) f.x[i] = f.x[i % S::share];
    brrr_cpu::mma::meet(detail::collective_of(detail::kLoad), nullptr, brrr_file, brrr_line);
}

// An accumulator fragment, from memory in row-major or column-major order.
template <int m, int n, int k, typename T, typename P>
BRRR_CPU_ENTRY void load_matrix_sync(fragment<accumulator, m, n, k, T>& f, const P* p, unsigned ldm, layout_t layout,
                                     BRRR_CPU_HERE) {
    using S = detail::spec<accumulator, m, n, k, T>;
    static_assert(std::is_same_v<std::remove_cv_t<P>, T>, "wmma::load_matrix_sync reads the accumulator's element type");
    detail::check_pointer(p, ldm, sizeof(P), detail::kLoad, brrr_file, brrr_line);
    const int lane = brrr_cpu::mma::lane();
    const void* pc = __builtin_return_address(0);
    for (int i = 0; i < S::share; ++i) {
        const auto [r, c] = brrr_cpu::mma::at(S::map, lane, i);
        const P* e = p + detail::offset(r, c, ldm, layout == mem_row_major);
        brrr_cpu::mma::check_access(e, sizeof(P), false, pc);
        f.x[i] = *e;
    }
    brrr_cpu::mma::meet(detail::collective_of(detail::kLoad), nullptr, brrr_file, brrr_line);
}

template <int m, int n, int k, typename T, typename P>
BRRR_CPU_ENTRY void store_matrix_sync(P* p, const fragment<accumulator, m, n, k, T>& f, unsigned ldm, layout_t layout,
                                      BRRR_CPU_HERE) {
    using S = detail::spec<accumulator, m, n, k, T>;
    static_assert(std::is_same_v<P, T>, "wmma::store_matrix_sync writes the accumulator's element type");
    detail::check_pointer(p, ldm, sizeof(P), detail::kStore, brrr_file, brrr_line);
    const int lane = brrr_cpu::mma::lane();
    const void* pc = __builtin_return_address(0);
    for (int i = 0; i < S::share; ++i) {
        const auto [r, c] = brrr_cpu::mma::at(S::map, lane, i);
        P* e = p + detail::offset(r, c, ldm, layout == mem_row_major);
        brrr_cpu::mma::check_access(e, sizeof(P), true, pc);
        *e = f.x[i];
    }
    brrr_cpu::mma::meet(detail::collective_of(detail::kStore), nullptr, brrr_file, brrr_line);
}

namespace detail {
struct MmaLane {
    const void* a;
    const void* b;
    const void* c;
    void* d;
};

template <int m, int n, int k, typename TA, typename TC, typename TD, typename LA, typename LB, bool Satf>
struct MmaOf {
    using FA = fragment<matrix_a, m, n, k, TA, LA>;
    using FB = fragment<matrix_b, m, n, k, TA, LB>;
    using FC = fragment<accumulator, m, n, k, TC>;
    using FD = fragment<accumulator, m, n, k, TD>;
    using SA = spec<matrix_a, m, n, k, TA>;
    using SB = spec<matrix_b, m, n, k, TA>;
    using SC = spec<accumulator, m, n, k, TC>;
    static constexpr Type type = element<TA>::type;

    static BRRR_CPU_UNCHECKED void complete(void* const* lanes, unsigned) {
        float A[m * k], B[k * n], C[m * n], D[m * n];
        for (int l = 0; l < 32; ++l) {
            const MmaLane* p = static_cast<const MmaLane*>(lanes[l]);
            const FA* a = static_cast<const FA*>(p->a);
            const FB* b = static_cast<const FB*>(p->b);
            const FC* c = static_cast<const FC*>(p->c);
            for (int i = 0; i < SA::share; ++i) {
                const auto [r, col] = brrr_cpu::mma::at(SA::map, l, i);
                const float v = value(a->x[i]);
                A[r * k + col] = type == Type::TF32 ? brrr_cpu::mma::tf32_truncate(v) : v;
            }
            for (int i = 0; i < SB::share; ++i) {
                const auto [r, col] = brrr_cpu::mma::at(SB::map, l, i);
                const float v = value(b->x[i]);
                B[r * n + col] = type == Type::TF32 ? brrr_cpu::mma::tf32_truncate(v) : v;
            }
            for (int i = 0; i < SC::share; ++i) {
                const auto [r, col] = brrr_cpu::mma::at(SC::map, l, i);
                C[r * n + col] = value(c->x[i]);
            }
        }
        brrr_cpu::mma::multiply(m, n, k, A, B, C, D, Satf);
        for (int l = 0; l < 32; ++l) {
            const MmaLane* p = static_cast<const MmaLane*>(lanes[l]);
            FD* d = static_cast<FD*>(p->d);
            for (int i = 0; i < SC::share; ++i) {
                const auto [r, col] = brrr_cpu::mma::at(SC::map, l, i);
                d->x[i] = TD(D[r * n + col]);
            }
        }
    }
};
}  // namespace detail

template <int m, int n, int k, typename TA, typename LA, typename LB, typename TC, typename TD>
BRRR_CPU_ENTRY void mma_sync(fragment<accumulator, m, n, k, TD>& d, const fragment<matrix_a, m, n, k, TA, LA>& a,
                             const fragment<matrix_b, m, n, k, TA, LB>& b, const fragment<accumulator, m, n, k, TC>& c,
                             bool satf = false, BRRR_CPU_HERE) {
    using Plain = detail::MmaOf<m, n, k, TA, TC, TD, LA, LB, false>;
    using Saturated = detail::MmaOf<m, n, k, TA, TC, TD, LA, LB, true>;
    static const brrr_cpu::Collective plain{detail::kMma, &Plain::complete}, saturated{detail::kMma, &Saturated::complete};
    // c and d may be the same fragment: d is written only after every lane's c has been read.
    detail::MmaLane lane{&a, &b, &c, &d};
    brrr_cpu::mma::meet(satf ? saturated : plain, &lane, brrr_file, brrr_line);
}

namespace detail {
inline void check_pointer(const void* p, unsigned ldm, size_t element_size, const char* what, const char* file, int line) {
    if (reinterpret_cast<uintptr_t>(p) % 32) {
        brrr_cpu::fault("misaligned address", std::string(what) + ": the matrix pointer must be 256-bit (32-byte) aligned",
                        file, line);
    }
    if ((static_cast<size_t>(ldm) * element_size) % 16) {
        brrr_cpu::fault("wmma", std::string(what) + ": ldm " + std::to_string(ldm) + " is not a multiple of 16 bytes (" +
                                    std::to_string(16 / element_size) + " elements)", file, line);
    }
}
}  // namespace detail

}  // namespace wmma
}  // namespace nvcuda
