// Hopper's tensor memory accelerator and transaction barriers on the CPU: the host's
// cuTensorMapEncodeTiled (the driver API, also through cudaGetDriverEntryPoint), the PTX of
// mbarrier (init, arrive, arrive.expect_tx, expect_tx, try_wait / test_wait, with or without
// .parity), cp.async.bulk.tensor's tiled loads and cp.async.bulk's plain ones into shared memory that
// complete a barrier's transaction bytes, as pipeline/cpu_ptx.py rewrites them.
//
// A barrier's state lives in the runtime, keyed by its shared-memory address (a GPU's 8 bytes there
// are opaque). A copy reads its source (a tensor copy its box: zeros, or NaN with the NaN fill,
// outside the tensor, swizzled as the tensor map says) when it is issued, and writes shared memory
// only when the barrier's phase completes (every arrival made and every expected byte delivered): a
// kernel that reads a tile before waiting on the barrier reads what was there before, and in the
// checked build the bytes in
// flight are a fault naming both lines, as for cp.async.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "brrr_cpu.h"
#include "brrr_cpu_async.h"

// ---- the driver API's tensor maps (cuda.h) -------------------------------------------------------
typedef uint32_t cuuint32_t;
typedef uint64_t cuuint64_t;
enum CUresult_enum { CUDA_SUCCESS = 0, CUDA_ERROR_INVALID_VALUE = 1 };
typedef CUresult_enum CUresult;
enum CUtensorMapDataType_enum {
    CU_TENSOR_MAP_DATA_TYPE_UINT8 = 0, CU_TENSOR_MAP_DATA_TYPE_UINT16, CU_TENSOR_MAP_DATA_TYPE_UINT32,
    CU_TENSOR_MAP_DATA_TYPE_INT32, CU_TENSOR_MAP_DATA_TYPE_UINT64, CU_TENSOR_MAP_DATA_TYPE_INT64,
    CU_TENSOR_MAP_DATA_TYPE_FLOAT16, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
    CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ, CU_TENSOR_MAP_DATA_TYPE_TFLOAT32,
    CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ,
};
typedef CUtensorMapDataType_enum CUtensorMapDataType;
enum CUtensorMapInterleave_enum { CU_TENSOR_MAP_INTERLEAVE_NONE = 0, CU_TENSOR_MAP_INTERLEAVE_16B, CU_TENSOR_MAP_INTERLEAVE_32B };
typedef CUtensorMapInterleave_enum CUtensorMapInterleave;
enum CUtensorMapSwizzle_enum {
    CU_TENSOR_MAP_SWIZZLE_NONE = 0, CU_TENSOR_MAP_SWIZZLE_32B, CU_TENSOR_MAP_SWIZZLE_64B, CU_TENSOR_MAP_SWIZZLE_128B,
};
typedef CUtensorMapSwizzle_enum CUtensorMapSwizzle;
enum CUtensorMapL2promotion_enum {
    CU_TENSOR_MAP_L2_PROMOTION_NONE = 0, CU_TENSOR_MAP_L2_PROMOTION_L2_64B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
    CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
};
typedef CUtensorMapL2promotion_enum CUtensorMapL2promotion;
enum CUtensorMapFloatOOBfill_enum { CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0, CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA };
typedef CUtensorMapFloatOOBfill_enum CUtensorMapFloatOOBfill;

// 128 opaque bytes on a GPU; here the encoded fields (brrr_cpu::tma::Map), checked on use by a magic.
typedef struct CUtensorMap_st {
    alignas(64) unsigned long long opaque[16];
} CUtensorMap;

namespace brrr_cpu::tma {

constexpr uint32_t kMagic = 0x746d6170u;  // "tmap": a map cuTensorMapEncodeTiled wrote
constexpr int kMaxRank = 5;

struct Map {
    uint32_t magic;
    uint8_t rank, elem_bytes, swizzle_bits, nan_fill;  // swizzle_bits: 0 none, 1 32B, 2 64B, 3 128B
    uint32_t box[kMaxRank];
    const char* base;
    uint64_t dim[kMaxRank];
    uint64_t stride[kMaxRank];  // bytes; stride[0] = the element size
};
static_assert(sizeof(Map) <= sizeof(CUtensorMap), "a tensor map's fields fit its 128 bytes");

inline int element_bytes(CUtensorMapDataType t) {
    switch (t) {
        case CU_TENSOR_MAP_DATA_TYPE_UINT8: return 1;
        case CU_TENSOR_MAP_DATA_TYPE_UINT16: case CU_TENSOR_MAP_DATA_TYPE_FLOAT16: case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16: return 2;
        case CU_TENSOR_MAP_DATA_TYPE_UINT64: case CU_TENSOR_MAP_DATA_TYPE_INT64: case CU_TENSOR_MAP_DATA_TYPE_FLOAT64: return 8;
        default: return 4;
    }
}

}  // namespace brrr_cpu::tma

// The driver's checks as its documentation states them, an error code (not a fault) as it returns.
inline CUresult cuTensorMapEncodeTiled(CUtensorMap* map, CUtensorMapDataType type, cuuint32_t rank, void* address,
                                       const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                                       const cuuint32_t* element_strides, CUtensorMapInterleave interleave,
                                       CUtensorMapSwizzle swizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill fill) {
    using brrr_cpu::tma::Map;
    if (!map || rank < 1 || rank > brrr_cpu::tma::kMaxRank || !address || reinterpret_cast<uintptr_t>(address) % 16 ||
        interleave != CU_TENSOR_MAP_INTERLEAVE_NONE) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    Map m{};
    m.magic = brrr_cpu::tma::kMagic;
    m.rank = static_cast<uint8_t>(rank);
    m.elem_bytes = static_cast<uint8_t>(brrr_cpu::tma::element_bytes(type));
    m.swizzle_bits = static_cast<uint8_t>(swizzle);
    m.nan_fill = fill == CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA;
    m.base = static_cast<const char*>(address);
    m.stride[0] = m.elem_bytes;
    for (cuuint32_t d = 0; d < rank; ++d) {
        if (dims[d] < 1 || box[d] < 1 || box[d] > 256 || (element_strides && element_strides[d] != 1)) return CUDA_ERROR_INVALID_VALUE;
        m.dim[d] = dims[d];
        m.box[d] = box[d];
        if (d > 0) {
            if (strides[d - 1] % 16) return CUDA_ERROR_INVALID_VALUE;
            m.stride[d] = strides[d - 1];
        }
    }
    const uint64_t inner = static_cast<uint64_t>(box[0]) * m.elem_bytes;
    if (inner % 16 || (swizzle != CU_TENSOR_MAP_SWIZZLE_NONE && inner > (16u << swizzle))) return CUDA_ERROR_INVALID_VALUE;
    std::memset(map, 0, sizeof(*map));
    std::memcpy(map, &m, sizeof(m));
    return CUDA_SUCCESS;
}

// cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", ...) and its versioned form: how kernels reach the
// driver's function without linking libcuda.
enum cudaDriverEntryPointQueryResult {
    cudaDriverEntryPointSuccess = 0, cudaDriverEntryPointSymbolNotFound = 1, cudaDriverEntryPointVersionNotSufficent = 2,
};
enum cudaGetDriverEntryPointFlags { cudaEnableDefault = 0, cudaEnableLegacyStream = 1, cudaEnablePerThreadDefaultStream = 2 };
inline cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** fn, unsigned int, unsigned long long,
                                                    cudaDriverEntryPointQueryResult* status = nullptr) {
    const bool found = symbol && std::strcmp(symbol, "cuTensorMapEncodeTiled") == 0;
    *fn = found ? reinterpret_cast<void*>(&cuTensorMapEncodeTiled) : nullptr;
    if (status) *status = found ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
    return found ? cudaSuccess : cudaErrorInvalidValue;
}
inline cudaError_t cudaGetDriverEntryPoint(const char* symbol, void** fn, unsigned long long flags = 0,
                                           cudaDriverEntryPointQueryResult* status = nullptr) {
    return cudaGetDriverEntryPointByVersion(symbol, fn, 12000, flags, status);
}
typedef CUresult (*PFN_cuTensorMapEncodeTiled_v12000)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                                      const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                                      const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                                      CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
#define PFN_cuTensorMapEncodeTiled PFN_cuTensorMapEncodeTiled_v12000

// ---- the runtime's side (brrr_cpu_async_impl.h) ------------------------------------------------------
namespace brrr_cpu::mbarrier {
void init(uint64_t address, int count, const char* file, int line);
uint64_t arrive(uint64_t address, int count, int64_t expect_tx, const char* file, int line);
void expect_tx(uint64_t address, int64_t bytes, const char* file, int line);
// Whether the phase of parity `parity` (or of the token an arrive returned) has completed; a false
// lets the block's other threads run first, so a spinning kernel makes progress.
bool test_parity(uint64_t address, uint32_t parity, bool yield_if_not, const char* file, int line);
bool test_token(uint64_t address, uint64_t token, bool yield_if_not, const char* file, int line);
// A wait loop in one asm block: returns when the phase has completed; a deadlock fault when no other
// thread can complete it.
void wait_parity(uint64_t address, uint32_t parity, const char* file, int line);
void tensor_load(uint64_t dst, const CUtensorMap* map, const int32_t* coords, int rank, uint64_t barrier,
                 const void* pc, const char* file, int line);
// cp.async.bulk (no tensor map): `bytes` contiguous bytes from global `src` to shared `dst`, completing
// the barrier's transaction bytes as a tensor copy does.
void bulk_load(uint64_t dst, const void* src, int64_t bytes, uint64_t barrier, const void* pc, const char* file, int line);
// The same copy completing a cuda::barrier's transaction bytes (libcudacxx's
// cuda::device::experimental::cp_async_bulk_tensor_Nd_global_to_shared).
void tensor_store(const CUtensorMap* map, const int32_t* coords, int rank, uint64_t src, const void* pc, const char* file,
                  int line);
void bulk_store(void* dst, uint64_t src, int64_t bytes, const void* pc, const char* file, int line);
void tensor_load_onto(uint64_t dst, const CUtensorMap* map, const int32_t* coords, int rank,
                      brrr_cpu::async::BarrierState* barrier, const void* pc, const char* file, int line);
}  // namespace brrr_cpu::mbarrier

namespace brrr_cpu::ptx {
inline void mbarrier_init(uint64_t a, int count, const char* file, int line) { brrr_cpu::mbarrier::init(a, count, file, line); }
inline uint64_t mbarrier_arrive(uint64_t a, int count, int64_t tx, const char* file, int line) {
    return brrr_cpu::mbarrier::arrive(a, count, tx, file, line);
}
inline void mbarrier_expect_tx(uint64_t a, int64_t tx, const char* file, int line) { brrr_cpu::mbarrier::expect_tx(a, tx, file, line); }
inline uint32_t mbarrier_test_parity(uint64_t a, uint32_t parity, const char* file, int line) {
    return brrr_cpu::mbarrier::test_parity(a, parity, true, file, line) ? 1u : 0u;
}
inline uint32_t mbarrier_test_token(uint64_t a, uint64_t token, const char* file, int line) {
    return brrr_cpu::mbarrier::test_token(a, token, true, file, line) ? 1u : 0u;
}
inline void mbarrier_wait_parity(uint64_t a, uint32_t parity, const char* file, int line) {
    brrr_cpu::mbarrier::wait_parity(a, parity, file, line);
}
// cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes [dst], [map, {c..}], [bar]
template <int Rank>
BRRR_CPU_ENTRY inline void tensor_load(uint64_t dst, uint64_t map, const int32_t (&coords)[Rank], uint64_t barrier,
                                       const char* file, int line) {
    brrr_cpu::mbarrier::tensor_load(dst, reinterpret_cast<const CUtensorMap*>(static_cast<uintptr_t>(map)), coords, Rank,
                                    barrier, __builtin_return_address(0), file, line);
}
// cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [src], size, [bar]
BRRR_CPU_ENTRY inline void bulk_load(uint64_t dst, uint64_t src, int64_t bytes, uint64_t barrier, const char* file, int line) {
    brrr_cpu::mbarrier::bulk_load(dst, reinterpret_cast<const void*>(static_cast<uintptr_t>(src)), bytes, barrier,
                                  __builtin_return_address(0), file, line);
}
// cp.async.bulk.tensor.Nd.global.shared::cta{.tile}.bulk_group [map, {c..}], [src]
template <int Rank>
BRRR_CPU_ENTRY inline void tensor_store(uint64_t map, const int32_t (&coords)[Rank], uint64_t src, const char* file, int line) {
    brrr_cpu::mbarrier::tensor_store(reinterpret_cast<const CUtensorMap*>(static_cast<uintptr_t>(map)), coords, Rank, src,
                                     __builtin_return_address(0), file, line);
}
// cp.async.bulk.global.shared::cta.bulk_group [dst], [src], size
BRRR_CPU_ENTRY inline void bulk_store(uint64_t dst, uint64_t src, int64_t bytes, const char* file, int line) {
    brrr_cpu::mbarrier::bulk_store(reinterpret_cast<void*>(static_cast<uintptr_t>(dst)), src, bytes,
                                   __builtin_return_address(0), file, line);
}
// Hints and fences with nothing to do on the CPU.
inline void no_op(const char*, int) {}
}  // namespace brrr_cpu::ptx
