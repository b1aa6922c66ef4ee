// Does a 16-byte load at a 4-byte aligned address fault on this GPU? C++ float4, inline PTX v4, and a
// 8-byte one, from cudaMalloc and from cudaMallocManaged memory.
#include <cstdio>
#include <cuda_runtime.h>
__global__ void cxx_float4(const float* x, float* out, int off) {
    float4 v = *reinterpret_cast<const float4*>(x + off);
    out[threadIdx.x] = v.x + v.w;
}
__global__ void ptx_v4(const float* x, float* out, int off) {
    float a, b, c, d;
    asm volatile("ld.global.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(a), "=f"(b), "=f"(c), "=f"(d) : "l"(x + off));
    out[threadIdx.x] = a + d;
}
__global__ void ptx_v2(const float* x, float* out, int off) {
    float a, b;
    asm volatile("ld.global.v2.f32 {%0, %1}, [%2];" : "=f"(a), "=f"(b) : "l"(x + off));
    out[threadIdx.x] = a + b;
}
__device__ void ptx_st_v4_body(float* out, int off) {
    asm volatile("st.global.v4.f32 [%0], {%1, %1, %1, %1};" :: "l"(out + off), "f"(1.0f) : "memory");
}
__global__ void st_v4(const float* x, float* out, int off) { ptx_st_v4_body(out, off); }
template <typename K>
void one(const char* name, K kernel, bool managed, int off) {
    float *x, *out;
    if (managed) { cudaMallocManaged(&x, 4096); cudaMallocManaged(&out, 4096); }
    else { cudaMalloc(&x, 4096); cudaMalloc(&out, 4096); }
    cudaMemset(x, 0, 4096);
    kernel<<<1, 32>>>(x, out, off);
    cudaError_t e = cudaDeviceSynchronize();
    std::printf("%-10s %-8s offset %d floats: %s\n", name, managed ? "managed" : "device", off, cudaGetErrorString(e));
    if (e != cudaSuccess) { cudaDeviceReset(); }
    else { cudaFree(x); cudaFree(out); }
}
int main() {
    for (int managed = 0; managed < 2; ++managed)
        for (int off : {0, 1, 2}) {
            one("cxx_float4", cxx_float4, managed, off);
            one("ptx_v4", ptx_v4, managed, off);
            one("ptx_v2", ptx_v2, managed, off);
            one("ptx_st_v4", st_v4, managed, off);
        }
}
