// Device printf, 16-bit and double atomics, __half2/__nv_bfloat162 arithmetic, __ldg and the bit
// intrinsics on the CPU (tests/cuda/test_cpu_runtime_extras.py).
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

extern "C" void brrr_cpu_keep_printed(int keep);
extern "C" size_t brrr_cpu_take_printed(char* out, size_t capacity);

__global__ void says(int n) {
    const int t = static_cast<int>(threadIdx.x);
    if (t < n) printf("value %d of block %d\n", t * 10, static_cast<int>(blockIdx.x));
    if (t == 0 && blockIdx.x == 1) std::printf("two\nlines");
}

__global__ void adds(__half* h, __nv_bfloat16* b, __half2* h2, __nv_bfloat162* b2, double* d) {
    atomicAdd(h, __float2half(1.0f));
    atomicAdd(b, __float2bfloat16(0.5f));
    atomicAdd(h2, __floats2half2_rn(1.0f, 2.0f));
    atomicAdd(b2, __floats2bfloat162_rn(0.5f, 1.0f));
    atomicAdd(d, 0.125);
}

// Each pair operation next to the scalar operations on its halves: 16-bit patterns, 4 per op.
template <typename P, typename S>
__device__ void pair_ops(const P* a, const P* b, const P* c, unsigned short* out, int64_t i) {
    const P x = __ldg(a + i), y = __ldg(b + i), z = c[i];
    const P r[] = {__hadd2(x, y), __hsub2(x, y), __hmul2(x, y), __h2div(x, y), __hfma2(x, y, z), __hneg2(x),
                   __habs2(y), __hmax2(x, y), __hmin2(x, y), x + y, x - y, x * y, x / y, -x, __hlt2(x, y),
                   __lowhigh2highlow(x)};
    const S s[] = {__hadd(x.x, y.x), __hadd(x.y, y.y), __hsub(x.x, y.x), __hsub(x.y, y.y), __hmul(x.x, y.x),
                   __hmul(x.y, y.y), __hdiv(x.x, y.x), __hdiv(x.y, y.y), __hfma(x.x, y.x, z.x),
                   __hfma(x.y, y.y, z.y), __hneg(x.x), __hneg(x.y), __habs(y.x), __habs(y.y),
                   __hmax(x.x, y.x), __hmax(x.y, y.y), __hmin(x.x, y.x), __hmin(x.y, y.y)};
    unsigned short* o = out + i * 70;
    for (int k = 0; k < 16; ++k) {
        std::memcpy(o + 2 * k, &r[k].x, 2);
        std::memcpy(o + 2 * k + 1, &r[k].y, 2);
    }
    for (int k = 0; k < 18; ++k) std::memcpy(o + 32 + k, &s[k], 2);
    std::memcpy(o + 50, &x, 4);
    std::memcpy(o + 52, &y, 4);
    o[54] = __hbeq2(x, x) + 2 * __hbgt2(x, y) + 4 * (x == y) + 8 * (x != y);
}

template <typename P, typename S>
__global__ void pairs(const P* a, const P* b, const P* c, unsigned short* out) {
    pair_ops<P, S>(a, b, c, out, static_cast<int64_t>(threadIdx.x));
}

__global__ void bits(const unsigned* x, long long* out) {
    const int64_t i = threadIdx.x;
    const unsigned v = __ldg(x + i), w = x[(i + 1) % 32];
    const unsigned s = static_cast<unsigned>(i * 3);  // 0 to 93: past 32, the shifts differ
    long long* o = out + i * 9;
    o[0] = __popc(v);
    o[1] = __clz(static_cast<int>(v));
    o[2] = __ffs(static_cast<int>(v));
    o[3] = __brev(v);
    o[4] = __funnelshift_l(v, w, s);
    o[5] = __funnelshift_r(v, w, s);
    o[6] = __funnelshift_lc(v, w, s);
    o[7] = __funnelshift_rc(v, w, s);
    o[8] = __popcll(static_cast<unsigned long long>(v) << 32 | w) * 100 + __clzll(static_cast<long long>(w)) ;
}

static std::vector<float> numbers(int n, float scale, float shift) {
    std::vector<float> v(n);
    for (int i = 0; i < n; ++i) v[i] = static_cast<float>((i * 7919 + 13) % 211) * scale + shift;
    return v;
}

template <typename P, typename S, typename Make>
static void run_pairs(Make make) {
    const int n = 64;
    const std::vector<float> fa = numbers(2 * n, 0.37f, -30.0f), fb = numbers(2 * n, -0.11f, 9.0f),
                             fc = numbers(2 * n, 0.05f, 1.0f);
    std::vector<P> a, b, c;
    for (int i = 0; i < n; ++i) {
        a.push_back(make(fa[2 * i], fa[2 * i + 1]));
        b.push_back(make(fb[2 * i], fb[2 * i + 1]));
        c.push_back(make(fc[2 * i], fc[2 * i + 1]));
    }
    std::vector<unsigned short> out(n * 70);
    pairs<P, S><<<1, n>>>(a.data(), b.data(), c.data(), out.data());
    for (unsigned short o : out) std::printf("%u ", o);
    std::printf("\n");
}

int main(int argc, char** argv) {
    const std::string c = argc > 1 ? argv[1] : "";
    try {
        if (c == "printf") {
            says<<<2, 3>>>(2);
            std::printf("after the launch\n");
        } else if (c == "printf_kept") {
            brrr_cpu_keep_printed(1);
            says<<<2, 3>>>(1);
            std::printf("nothing printed yet\n");
            std::string kept(brrr_cpu_take_printed(nullptr, 0), '\0');
            brrr_cpu_take_printed(kept.data(), kept.size());
            std::printf("kept: %s", kept.c_str());
            std::printf("left: %zu\n", brrr_cpu_take_printed(nullptr, 0));
        } else if (c == "atomics") {
            __half h = __float2half(0.0f);
            __nv_bfloat16 b = __float2bfloat16(0.0f);
            __half2 h2 = __floats2half2_rn(0.0f, 0.0f);
            __nv_bfloat162 b2 = __floats2bfloat162_rn(0.0f, 0.0f);
            double d = 0;
            adds<<<4, 32>>>(&h, &b, &h2, &b2, &d);
            std::printf("%g %g %g %g %g %g %g\n", __half2float(h), __bfloat162float(b), __low2float(h2),
                        __high2float(h2), __bfloat162float(b2.x), __bfloat162float(b2.y), d);
        } else if (c == "half2") {
            run_pairs<__half2, __half>([](float x, float y) { return __floats2half2_rn(x, y); });
        } else if (c == "bfloat162") {
            run_pairs<__nv_bfloat162, __nv_bfloat16>([](float x, float y) { return __floats2bfloat162_rn(x, y); });
        } else if (c == "bits") {
            std::vector<unsigned> x(32);
            for (unsigned i = 0; i < 32; ++i) x[i] = i == 5 ? 0u : (0x9e3779b9u * (i + 1)) >> (i % 7);
            std::vector<long long> out(32 * 9);
            bits<<<1, 32>>>(x.data(), out.data());
            for (unsigned v : x) std::printf("%u ", v);
            std::printf("\n");
            for (long long o : out) std::printf("%lld ", o);
            std::printf("\n");
        } else if (c == "versions") {
#if defined(CUDA_VERSION) && defined(CUDART_VERSION)
            std::printf("%d %d\n", CUDA_VERSION, CUDART_VERSION);
#else
            std::printf("undefined\n");
#endif
        } else {
            std::printf("unknown case %s\n", c.c_str());
            return 2;
        }
    } catch (const std::exception& e) {
        std::printf("FAULT: %s\n", e.what());
    }
    return 0;
}
