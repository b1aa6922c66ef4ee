// Warp intrinsics on the CPU with operands that differ from lane to lane (tests/cuda/test_cpu_runtime_warp.py).
// `prog CASE` runs one case and prints one line of numbers per thread.
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdio>
#include <string>
#include <vector>

// A value per lane that every type holds exactly, different in each lane (and, for the 8-byte
// types, in both halves of the word, so a value moved in part shows).
template <typename T> T encode(int lane);
template <> int encode<int>(int lane) { return -1000 * (lane + 1); }
template <> unsigned encode<unsigned>(int lane) { return 0x80000000u + static_cast<unsigned>(lane); }
template <> long long encode<long long>(int lane) { return (static_cast<long long>(lane + 1) << 40) + lane; }
template <> float encode<float>(int lane) { return static_cast<float>(lane) + 0.25f; }
template <> double encode<double>(int lane) { return lane + 1.0 / 3.0; }
template <> __half encode<__half>(int lane) { return __float2half(lane + 0.5f); }
template <> __nv_bfloat16 encode<__nv_bfloat16>(int lane) { return __float2bfloat16(lane + 0.5f); }

// Every shuffle, with a source lane, delta or lane mask computed in each lane.
template <typename T>
__global__ void gather(double* out) {
    const int lane = threadIdx.x % 32;
    const int src = (lane * 5 + 3) % 32;
    const T v = encode<T>(lane);
    double* o = out + static_cast<int64_t>(threadIdx.x) * 8;
    o[0] = static_cast<double>(__shfl_sync(0xffffffffu, v, src));
    o[1] = static_cast<double>(__shfl_sync(0xffffffffu, v, src, 8));
    o[2] = static_cast<double>(__shfl_up_sync(0xffffffffu, v, src % 7));
    o[3] = static_cast<double>(__shfl_up_sync(0xffffffffu, v, src % 5, 16));
    o[4] = static_cast<double>(__shfl_down_sync(0xffffffffu, v, src % 7));
    o[5] = static_cast<double>(__shfl_down_sync(0xffffffffu, v, src % 3, 4));
    o[6] = static_cast<double>(__shfl_xor_sync(0xffffffffu, v, src));
    o[7] = static_cast<double>(__shfl_xor_sync(0xffffffffu, v, src, 16));
}

// Votes, matches and reductions with operands per lane, over the whole warp and over its halves.
__global__ void votes(long long* out) {
    const int lane = threadIdx.x % 32;
    const unsigned half = lane < 16 ? 0x0000ffffu : 0xffff0000u;
    const int src = (lane * 5 + 3) % 32;
    long long* o = out + static_cast<int64_t>(threadIdx.x) * 10;
    o[0] = __match_any_sync(0xffffffffu, src % 4);
    int pred = -1;
    o[1] = __match_all_sync(half, lane < 16 ? 7 : src, &pred);
    o[2] = pred;
    o[3] = __ballot_sync(0xffffffffu, src % 4 == 1);
    o[4] = __any_sync(half, src == 3) + 2 * __all_sync(half, src % 2 == 1);
    o[5] = __reduce_min_sync(0xffffffffu, static_cast<unsigned>(src + 7));
    o[6] = __reduce_max_sync(half, -src);
    o[7] = __reduce_xor_sync(0xffffffffu, static_cast<unsigned>(src) << (lane % 4));
    o[8] = __reduce_add_sync(half, src);
    o[9] = static_cast<long long>(__reduce_and_sync(half, 0xf0u | static_cast<unsigned>(src))) * 1000 +
           __reduce_or_sync(0xffffffffu, 1u << (src % 8));
}

template <typename T>
static void print_gather() {
    std::vector<double> out(64 * 8);
    gather<T><<<1, 64>>>(out.data());
    for (double x : out) std::printf("%.17g ", x);
    std::printf("\n");
}

int main(int argc, char** argv) {
    const std::string c = argc > 1 ? argv[1] : "";
    try {
        if (c == "gather_int") print_gather<int>();
        else if (c == "gather_unsigned") print_gather<unsigned>();
        else if (c == "gather_long_long") print_gather<long long>();
        else if (c == "gather_float") print_gather<float>();
        else if (c == "gather_double") print_gather<double>();
        else if (c == "gather_half") print_gather<__half>();
        else if (c == "gather_bfloat16") print_gather<__nv_bfloat16>();
        else if (c == "votes") {
            std::vector<long long> out(64 * 10);
            votes<<<1, 64>>>(out.data());
            for (long long x : out) std::printf("%lld ", x);
            std::printf("\n");
        } else {
            std::printf("unknown case %s\n", c.c_str());
            return 2;
        }
    } catch (const std::exception& e) {
        std::printf("FAULT: %s\n", e.what());
    }
    return 0;
}
