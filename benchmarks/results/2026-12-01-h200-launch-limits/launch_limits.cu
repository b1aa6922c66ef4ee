// What a GPU does with the two launches brrr's CPU execution now refuses: a block past the kernel's
// __launch_bounds__, and 48 KiB of dynamic shared memory beside static __shared__ without the opt-in.
#include <cstdio>
__global__ void __launch_bounds__(32) bounded(int* out) { out[threadIdx.x] = 1; }
__global__ void with_static(int* out) {
    __shared__ int slots[64];
    extern __shared__ float dyn[];
    slots[threadIdx.x] = 1;
    dyn[threadIdx.x] = 2;
    __syncthreads();
    out[threadIdx.x] = slots[63 - threadIdx.x] + (int)dyn[threadIdx.x];
}
static void report(const char* what) {
    cudaError_t e = cudaGetLastError();
    cudaError_t s = cudaDeviceSynchronize();
    std::printf("%-60s launch: %s; sync: %s\n", what, cudaGetErrorString(e), cudaGetErrorString(s));
}
int main() {
    int* out;
    cudaMalloc(&out, 1024 * sizeof(int));
    bounded<<<1, 32>>>(out); report("__launch_bounds__(32), 32 threads");
    bounded<<<1, 64>>>(out); report("__launch_bounds__(32), 64 threads");
    with_static<<<1, 64, 49152 - 256>>>(out); report("256 static + 48896 dynamic, no opt-in");
    with_static<<<1, 64, 49152 - 128>>>(out); report("256 static + 49024 dynamic, no opt-in");
    with_static<<<1, 64, 60000>>>(out); report("256 static + 60000 dynamic, no opt-in");
    cudaFuncSetAttribute(with_static, cudaFuncAttributeMaxDynamicSharedMemorySize, 60000);
    with_static<<<1, 64, 60000>>>(out); report("256 static + 60000 dynamic, opted in to 60000");
    with_static<<<1, 64, 70000>>>(out); report("256 static + 70000 dynamic, opted in to 60000");
    return 0;
}
