// CUB's block and warp collectives on the CPU (tests/cuda/test_cpu_runtime_cub.py): kernels written
// as public CUDA code writes them, each printing what it computed or the fault its launch threw.
#include <cub/cub.cuh>
#include <cuda_runtime.h>

#include <cstdio>
#include <string>
#include <vector>

// Sum and max of a 1-D block of 128, over all threads and over the first num_valid.
__global__ void block_reduce_1d(const float* x, float* out, int num_valid) {
    using BlockReduce = cub::BlockReduce<float, 128>;
    __shared__ typename BlockReduce::TempStorage temp;
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const float sum = BlockReduce(temp).Sum(x[i]);
    __syncthreads();
    const float most = BlockReduce(temp).Reduce(x[i], cub::Max());
    __syncthreads();
    const float part = BlockReduce(temp).Sum(x[i], num_valid);
    __syncthreads();
    const float least = BlockReduce(temp).Reduce(x[i], cub::Min(), num_valid);
    if (threadIdx.x == 0) {
        out[blockIdx.x * 4 + 0] = sum;
        out[blockIdx.x * 4 + 1] = most;
        out[blockIdx.x * 4 + 2] = part;
        out[blockIdx.x * 4 + 3] = least;
    }
}

// A (16, 8) block of ints, 4 items a thread, a union of temporary storages.
__global__ void block_reduce_2d(const int* x, long long* out) {
    using BlockReduce = cub::BlockReduce<int, 16, cub::BLOCK_REDUCE_WARP_REDUCTIONS, 8>;
    using BlockScan = cub::BlockScan<int, 16, cub::BLOCK_SCAN_RAKING, 8>;
    __shared__ union {
        typename BlockReduce::TempStorage reduce;
        typename BlockScan::TempStorage scan;
    } temp;
    const int tid = threadIdx.x + 16 * threadIdx.y;
    int items[4];
    for (int k = 0; k < 4; ++k) items[k] = x[tid * 4 + k];
    const int total = BlockReduce(temp.reduce).Sum(items);
    __syncthreads();
    int prefix = 0;
    BlockScan(temp.scan).ExclusiveSum(items[0], prefix);
    out[tid] = prefix;
    if (tid == 0) out[128] = total;
}

// vLLM's form: BlockReduce<float, 1024> in a smaller block, num_valid = blockDim.x.
__global__ void block_reduce_smaller_block(const float* x, float* out) {
    using BlockReduce = cub::BlockReduce<float, 1024>;
    __shared__ typename BlockReduce::TempStorage temp;
    const float v = BlockReduce(temp).Reduce(x[threadIdx.x], cub::Sum{}, blockDim.x);
    if (threadIdx.x == 0) *out = v;
}

// Every thread writes the aggregate: defined in thread 0 only.
__global__ void aggregate_everywhere(const float* x, float* out, int* iout) {
    using BlockReduce = cub::BlockReduce<float, 64>;
    using IntReduce = cub::BlockReduce<int, 64>;
    __shared__ typename BlockReduce::TempStorage temp;
    __shared__ typename IntReduce::TempStorage itemp;
    out[threadIdx.x] = BlockReduce(temp).Sum(x[threadIdx.x]);
    iout[threadIdx.x] = IntReduce(itemp).Sum(static_cast<int>(threadIdx.x));
}

// Warp reductions: full warps of 32, logical warps of 8 with 5 valid lanes, max, in a block of 64.
__global__ void warp_reduce(const int* x, long long* out) {
    using WarpReduce = cub::WarpReduce<int>;
    using WarpReduce8 = cub::WarpReduce<int, 8>;
    __shared__ typename WarpReduce::TempStorage temp[2];
    __shared__ typename WarpReduce8::TempStorage temp8[8];
    const int t = threadIdx.x;
    out[t * 4 + 0] = WarpReduce(temp[t / 32]).Sum(x[t]);
    out[t * 4 + 1] = WarpReduce8(temp8[t / 8]).Sum(x[t], 5);
    out[t * 4 + 2] = WarpReduce8(temp8[t / 8]).Reduce(x[t], cub::Max());
    out[t * 4 + 3] = WarpReduce(temp[t / 32]).Reduce(x[t], cuda::maximum<>{}, 20);
}

// Scans of a block of 96 ints: inclusive, exclusive with the aggregate, with an initial value
// and max, without one, and 3 items a thread in place.
__global__ void block_scan(const int* x, long long* out) {
    using BlockScan = cub::BlockScan<int, 96>;
    __shared__ typename BlockScan::TempStorage temp;
    const int t = threadIdx.x;
    int inc = 0, exc = 0, agg = 0, init = 0, noinit = 0;
    BlockScan(temp).InclusiveSum(x[t], inc);
    __syncthreads();
    BlockScan(temp).ExclusiveSum(x[t], exc, agg);
    __syncthreads();
    BlockScan(temp).ExclusiveScan(x[t], init, -50, cub::Max());
    __syncthreads();
    BlockScan(temp).ExclusiveScan(x[t], noinit, cub::Min());
    __syncthreads();
    int items[3] = {x[t], 2 * x[t], t};
    BlockScan(temp).InclusiveSum(items, items);
    long long* o = out + static_cast<int64_t>(t) * 8;
    o[0] = inc;
    o[1] = exc;
    o[2] = agg;
    o[3] = init;
    o[4] = noinit;
    o[5] = items[0];
    o[6] = items[1];
    o[7] = items[2];
}

// BlockLoad and BlockStore with a union of their storages: a full load, a guarded one (items past
// n keep the thread's own fill, which the transposes move), one with a default of -7, a full store
// and a guarded one. TILE = X*Y*Z*IPT; loaded holds the three loads in turn, stored the two stores.
template <cub::BlockLoadAlgorithm L, cub::BlockStoreAlgorithm S, int X, int Y, int Z, int IPT>
__global__ void load_store(const int* x, int n, int* loaded, int* stored) {
    using BlockLoad = cub::BlockLoad<int, X, IPT, L, Y, Z>;
    using BlockStore = cub::BlockStore<int, X, IPT, S, Y, Z>;
    constexpr int TILE = X * Y * Z * IPT;
    __shared__ union {
        typename BlockLoad::TempStorage load;
        typename BlockStore::TempStorage store;
    } temp;
    const int tid = threadIdx.x + X * (threadIdx.y + Y * threadIdx.z);
    int items[IPT];
    for (int i = 0; i < IPT; ++i) items[i] = 500000 + tid * 100 + i;
    BlockLoad(temp.load).Load(x, items);
    for (int i = 0; i < IPT; ++i) loaded[tid * IPT + i] = items[i];
    __syncthreads();
    for (int i = 0; i < IPT; ++i) items[i] = 500000 + tid * 100 + i;
    BlockLoad(temp.load).Load(x, items, n);
    for (int i = 0; i < IPT; ++i) loaded[TILE + tid * IPT + i] = items[i];
    __syncthreads();
    BlockLoad(temp.load).Load(x, items, n, -7);
    for (int i = 0; i < IPT; ++i) loaded[2 * TILE + tid * IPT + i] = items[i];
    __syncthreads();
    for (int i = 0; i < IPT; ++i) items[i] = tid * 100 + i;
    BlockStore(temp.store).Store(stored, items);
    __syncthreads();
    for (int i = 0; i < IPT; ++i) items[i] = -(tid * 100 + i);
    BlockStore(temp.store).Store(stored + TILE, items, n);
}

// The free functions in a (16, 4) block, with CUB's documented linear id.
__global__ void direct_functions(const int* x, int n, int* out) {
    const int tid = threadIdx.y * blockDim.x + threadIdx.x;
    int a[3], b[3], c[3] = {-1, -2, -3};
    cub::LoadDirectStriped<64>(tid, x, a, n, -3);
    cub::StoreDirectBlocked(tid, out, a);
    cub::LoadDirectBlocked(tid, x, b);
    cub::StoreDirectStriped<64>(tid, out + 192, b, n);
    cub::LoadDirectBlocked(tid, x, c, n);
    cub::StoreDirectStriped<64>(tid, out + 384, c);
    cub::LoadDirectStriped<64>(tid, x, a);
    cub::StoreDirectBlocked(tid, out + 576, a, n);
    cub::LoadDirectBlocked(tid, x, b, n, 99);
    cub::StoreDirectBlocked(tid, out + 768, b);
}

// Dynamic shared memory sized by sizeof the union, 3 blocks over a ragged 1300 floats.
using DynLoad = cub::BlockLoad<float, 128, 4, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
using DynStore = cub::BlockStore<float, 128, 4, cub::BLOCK_STORE_TRANSPOSE>;
union DynTemp {
    DynLoad::TempStorage load;
    DynStore::TempStorage store;
};
__global__ void load_store_dynamic_smem(const float* x, float* out, int n) {
    extern __shared__ __align__(16) unsigned char smem[];
    DynTemp& temp = reinterpret_cast<DynTemp&>(smem);  // causal-conv1d's form: the array named as the union
    const int base = blockIdx.x * 512;
    float items[4];
    DynLoad(temp.load).Load(x + base, items, n - base, 0.5f);
    for (int i = 0; i < 4; ++i) items[i] = items[i] * 2.0f + 1.0f;
    __syncthreads();
    DynStore(temp.store).Store(out + base, items, n - base);
}

// 16-byte vectors, one a thread, through a float[4] as vLLM-style kernels do; default constructors.
struct __align__(16) vec_t {
    float v[4];
};
__global__ void vector_load(const float* x, float* out) {
    using BlockLoad = cub::BlockLoad<vec_t, 32, 1, cub::BLOCK_LOAD_VECTORIZE>;
    using BlockStore = cub::BlockStore<vec_t, 32, 1, cub::BLOCK_STORE_DIRECT>;
    __align__(16) float array[4];
    const vec_t* src = reinterpret_cast<const vec_t*>(x) + blockIdx.x * 32;
    BlockLoad().Load(src, reinterpret_cast<vec_t(&)[1]>(array));
    for (int k = 0; k < 4; ++k) array[k] = array[k] * static_cast<float>(k + 1);
    BlockStore().Store(reinterpret_cast<vec_t*>(out) + blockIdx.x * 32, reinterpret_cast<vec_t(&)[1]>(array));
}

__global__ void transpose_in_smaller_block(const int* x, int* out) {
    using BlockLoad = cub::BlockLoad<int, 64, 2, cub::BLOCK_LOAD_TRANSPOSE>;
    __shared__ typename BlockLoad::TempStorage temp;
    int items[2];
    BlockLoad(temp).Load(x, items);  // bug: 48 of 64 threads
    out[threadIdx.x] = items[0];
}

__global__ void load_reused_without_sync(const int* x, int* out) {
    using BlockLoad = cub::BlockLoad<int, 64, 2, cub::BLOCK_LOAD_TRANSPOSE>;
    __shared__ typename BlockLoad::TempStorage temp;
    int a[2], b[2];
    BlockLoad(temp).Load(x, a);  // bug: reused load storage, first use
    BlockLoad(temp).Load(x + 128, b);  // no __syncthreads before
    out[threadIdx.x] = a[0] + b[1];
}

// The planted bugs.
__global__ void reuse_without_sync(const float* x, float* out) {
    using BlockReduce = cub::BlockReduce<float, 64>;
    __shared__ typename BlockReduce::TempStorage temp;
    const float a = BlockReduce(temp).Sum(x[threadIdx.x]);  // bug: reused storage, first use
    const float b = BlockReduce(temp).Reduce(x[threadIdx.x], cub::Max());  // no __syncthreads before
    if (threadIdx.x == 0) out[0] = a + b;
}

__global__ void reduce_in_a_branch(const float* x, float* out) {
    using BlockReduce = cub::BlockReduce<float, 64>;
    __shared__ typename BlockReduce::TempStorage temp;
    float v = 0.0f;
    if (threadIdx.x < 32) v = BlockReduce(temp).Sum(x[threadIdx.x]);
    if (threadIdx.x == 0) out[0] = v;
}

__global__ void block_larger_than_declared(const float* x, float* out) {
    using BlockReduce = cub::BlockReduce<float, 64>;
    __shared__ typename BlockReduce::TempStorage temp;
    const float v = BlockReduce(temp).Sum(x[threadIdx.x], 64);  // bug: block larger
    if (threadIdx.x == 0) out[0] = v;
}

__global__ void full_reduce_in_smaller_block(const float* x, float* out) {
    using BlockReduce = cub::BlockReduce<float, 256>;
    __shared__ typename BlockReduce::TempStorage temp;
    const float v = BlockReduce(temp).Sum(x[threadIdx.x]);  // bug: no num_valid
    if (threadIdx.x == 0) out[0] = v;
}

__global__ void warp_lane_returns(const float* x, float* out) {
    using WarpReduce = cub::WarpReduce<float>;
    __shared__ typename WarpReduce::TempStorage temp;
    if (threadIdx.x == 7) return;
    const float v = WarpReduce(temp).Sum(x[threadIdx.x]);  // bug: lane 7 returned
    if (threadIdx.x == 0) out[0] = v;
}

template <typename T>
static std::vector<T> pattern(int n) {
    std::vector<T> v(n);
    for (int i = 0; i < n; ++i) v[i] = static_cast<T>((i * 7919) % 1001 - 500);
    return v;
}

template <typename T>
static void print(const std::vector<T>& v) {
    for (T x : v) std::printf("%.17g ", static_cast<double>(x));
    std::printf("\n");
}

template <cub::BlockLoadAlgorithm L, cub::BlockStoreAlgorithm S, int X, int Y, int Z, int IPT>
static void run_load_store(int n) {
    constexpr int TILE = X * Y * Z * IPT;
    std::vector<int> x = pattern<int>(TILE);
    std::vector<int> loaded(3 * TILE), stored(2 * TILE, -9);
    load_store<L, S, X, Y, Z, IPT><<<1, dim3(X, Y, Z)>>>(x.data(), n, loaded.data(), stored.data());
    print(loaded);
    print(stored);
}

// "load_store/ALGORITHM/SHAPE": the load and store algorithms of one name, in one block shape.
template <cub::BlockLoadAlgorithm L, cub::BlockStoreAlgorithm S>
static bool load_store_shape(const std::string& shape) {
    if (shape == "64x1x1") run_load_store<L, S, 64, 1, 1, 8>(308);
    else if (shape == "16x4x1") run_load_store<L, S, 16, 4, 1, 3>(116);
    else if (shape == "8x2x4") run_load_store<L, S, 8, 2, 4, 5>(193);
    else return false;
    return true;
}

static bool load_store_case(const std::string& c) {
    const std::string prefix = "load_store/";
    if (c.rfind(prefix, 0) != 0) return false;
    const size_t slash = c.find('/', prefix.size());
    const std::string algorithm = c.substr(prefix.size(), slash - prefix.size()), shape = c.substr(slash + 1);
    if (algorithm == "DIRECT") return load_store_shape<cub::BLOCK_LOAD_DIRECT, cub::BLOCK_STORE_DIRECT>(shape);
    if (algorithm == "STRIPED") return load_store_shape<cub::BLOCK_LOAD_STRIPED, cub::BLOCK_STORE_STRIPED>(shape);
    if (algorithm == "VECTORIZE") return load_store_shape<cub::BLOCK_LOAD_VECTORIZE, cub::BLOCK_STORE_VECTORIZE>(shape);
    if (algorithm == "TRANSPOSE") return load_store_shape<cub::BLOCK_LOAD_TRANSPOSE, cub::BLOCK_STORE_TRANSPOSE>(shape);
    if (algorithm == "WARP_TRANSPOSE") {
        return load_store_shape<cub::BLOCK_LOAD_WARP_TRANSPOSE, cub::BLOCK_STORE_WARP_TRANSPOSE>(shape);
    }
    if (algorithm == "WARP_TRANSPOSE_TIMESLICED") {
        return load_store_shape<cub::BLOCK_LOAD_WARP_TRANSPOSE_TIMESLICED, cub::BLOCK_STORE_WARP_TRANSPOSE_TIMESLICED>(
            shape);
    }
    return false;
}

int main(int argc, char** argv) {
    const std::string c = argc > 1 ? argv[1] : "";
    try {
        std::vector<float> xf(1024);
        for (int i = 0; i < 1024; ++i) xf[i] = static_cast<float>(((i * 7919) % 1001) / 7.0 - 70.0);
        if (c == "block_reduce_1d") {
            std::vector<float> out(12);
            block_reduce_1d<<<3, 128>>>(xf.data(), out.data(), 77);
            print(out);
        } else if (c == "block_reduce_2d") {
            std::vector<int> x = pattern<int>(512);
            std::vector<long long> out(129);
            block_reduce_2d<<<1, dim3(16, 8)>>>(x.data(), out.data());
            print(out);
        } else if (c == "block_reduce_smaller_block") {
            std::vector<float> out(1);
            block_reduce_smaller_block<<<1, 200>>>(xf.data(), out.data());
            print(out);
        } else if (c == "aggregate_everywhere") {
            std::vector<float> out(64);
            std::vector<int> iout(64);
            aggregate_everywhere<<<1, 64>>>(xf.data(), out.data(), iout.data());
            print(out);
            print(iout);
        } else if (c == "warp_reduce") {
            std::vector<int> x = pattern<int>(64);
            std::vector<long long> out(64 * 4);
            warp_reduce<<<1, 64>>>(x.data(), out.data());
            print(out);
        } else if (c == "block_scan") {
            std::vector<int> x = pattern<int>(96);
            std::vector<long long> out(96 * 8);
            block_scan<<<1, 96>>>(x.data(), out.data());
            print(out);
        } else if (load_store_case(c)) {
        } else if (c == "direct_functions") {
            std::vector<int> x = pattern<int>(192);
            std::vector<int> out(960, -9);
            direct_functions<<<1, dim3(16, 4)>>>(x.data(), 150, out.data());
            print(out);
        } else if (c == "temp_storage_sizes") {
            std::printf("%zu %zu %zu %zu %zu %zu %zu\n", sizeof(DynLoad::TempStorage), sizeof(DynStore::TempStorage),
                        sizeof(DynTemp), sizeof(cub::BlockLoad<int, 64, 8, cub::BLOCK_LOAD_TRANSPOSE>::TempStorage),
                        sizeof(cub::BlockLoad<int, 128, 4, cub::BLOCK_LOAD_WARP_TRANSPOSE_TIMESLICED>::TempStorage),
                        sizeof(cub::BlockLoad<int, 128, 4>::TempStorage),
                        sizeof(cub::BlockStore<double, 64, 2, cub::BLOCK_STORE_STRIPED>::TempStorage));
        } else if (c == "load_store_dynamic_smem") {
            std::vector<float> x(1300), out(1536, -9.0f);
            for (int i = 0; i < 1300; ++i) x[i] = static_cast<float>(i % 97) * 0.25f - 3.0f;
            load_store_dynamic_smem<<<3, 128, sizeof(DynTemp)>>>(x.data(), out.data(), 1300);
            print(out);
        } else if (c == "vector_load") {
            std::vector<float> out(256);
            vector_load<<<2, 32>>>(xf.data(), out.data());
            print(out);
        } else if (c == "transpose_in_smaller_block") {
            std::vector<int> x = pattern<int>(128);
            std::vector<int> out(48);
            transpose_in_smaller_block<<<1, 48>>>(x.data(), out.data());
        } else if (c == "load_reused_without_sync") {
            std::vector<int> x = pattern<int>(256);
            std::vector<int> out(64);
            load_reused_without_sync<<<1, 64>>>(x.data(), out.data());
        } else if (c == "reuse_without_sync") {
            std::vector<float> out(1);
            reuse_without_sync<<<1, 64>>>(xf.data(), out.data());
        } else if (c == "reduce_in_a_branch") {
            std::vector<float> out(1);
            reduce_in_a_branch<<<1, 64>>>(xf.data(), out.data());
        } else if (c == "block_larger_than_declared") {
            std::vector<float> out(1);
            block_larger_than_declared<<<1, 96>>>(xf.data(), out.data());
        } else if (c == "full_reduce_in_smaller_block") {
            std::vector<float> out(1);
            full_reduce_in_smaller_block<<<1, 128>>>(xf.data(), out.data());
        } else if (c == "warp_lane_returns") {
            std::vector<float> out(1);
            warp_lane_returns<<<1, 32>>>(xf.data(), out.data());
        } else {
            std::printf("unknown case %s\n", c.c_str());
            return 2;
        }
    } catch (const std::exception& e) {
        std::printf("FAULT: %s\n", e.what());
    }
    return 0;
}
