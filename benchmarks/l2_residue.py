"""Do lines read under an L2 evict_last policy outlive a flush, and what clears them?

brrr bench times eager, torch.compile and brrr's op one after the other on the same input sets.
Inductor's kernels load rows they read twice with `eviction_policy="evict_last"` (an L1 priority and
an L2 `createpolicy` cache policy); on 2026-11-30 a kernel timed after such a one ran faster on the
same input. This measures, on one buffer of a third of the L2, after each of these, the mean latency of loads
from a sample of its lines (one 4-byte `ld.global.cg` of every 16th 128-byte line, each thread's
loads a chain, one after another, so that the memory system stays idle: an L2 hit takes a few hundred
cycles, a trip to DRAM more):

- cold: never marked, L2 flushed (normal writes of twice its size);
- hot: the buffer read plainly just before (in L2, nothing flushed);
- marked: read once under evict_last, then flushed;
- marked, flushed x4: the same, flushed four times;
- marked, reset: cudaCtxResetPersistingL2Cache() between the mark and the flush;
- marked, bench's release: brrr bench's release_kept_lines (the driver's cuCtxResetPersistingL2Cache)
  in its place;
- marked, normal: `applypriority.global.L2::evict_normal` on every 128-byte line instead (the PTX
  ISA's way to demote a line's priority), then the flush;
- cold again: both, then the flush (what is left after this script).

A reading near `cold` means the step clears the lines; near `hot`, it leaves them.

    python3 benchmarks/l2_residue.py [--mib 16] [--trials 30]
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable

import torch
from torch.utils.cpp_extension import load_inline

from brrr_kernels.commands.bench import release_kept_lines

CUDA = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__device__ __forceinline__ float4 read_last(const float4* p) {
    float4 v;
    asm volatile(
        "{\n .reg .b64 pol;\n createpolicy.fractional.L2::evict_last.b64 pol, 1.0;\n"
        " ld.global.L1::evict_last.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], pol;\n}\n"
        : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
    return v;
}

template <bool kLast>
__global__ void read_kernel(const float4* __restrict__ a, int64_t n, float* __restrict__ sink) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float4 v = kLast ? read_last(a + i) : a[i];
    // Never true for the uniform(0, 1) values read: keeps the load without a store per thread.
    if (v.x + v.y + v.z + v.w < -1.0f) *sink = v.x;
}

// Mean latency of loads from every `step`-th line: each thread's loads form a chain (the next
// address depends on the last value, through an and with `zero`, which the compiler cannot see), so
// its time over the chain is its count of loads times their mean latency.
__global__ void probe_kernel(const char* __restrict__ a, int64_t lines, int64_t step, unsigned zero,
                             unsigned long long* __restrict__ out) {
    unsigned long long count = 0;
    unsigned dep = 0;
    const long long t0 = clock64();
    for (int64_t j = threadIdx.x * step; j < lines; j += blockDim.x * step) {
        unsigned v;
        asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(a + j * 128 + dep) : "memory");
        dep = v & zero;
        count += 1;
    }
    const long long cycles = clock64() - t0 + dep;
    atomicAdd(out, static_cast<unsigned long long>(cycles));
    atomicAdd(out + 1, count);
}

__global__ void normal_kernel(const char* __restrict__ a, int64_t lines) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < lines) asm volatile("applypriority.global.L2::evict_normal [%0], 128;" ::"l"(a + i * 128));
}

void read_buffer(torch::Tensor a, torch::Tensor sink, bool last) {
    const int64_t n = a.numel() / 4;
    const int blocks = static_cast<int>((n + 255) / 256);
    auto* p = reinterpret_cast<const float4*>(a.data_ptr<float>());
    if (last) read_kernel<true><<<blocks, 256>>>(p, n, sink.data_ptr<float>());
    else read_kernel<false><<<blocks, 256>>>(p, n, sink.data_ptr<float>());
}

void probe(torch::Tensor a, torch::Tensor out) {
    out.zero_();
    probe_kernel<<<1, 256>>>(reinterpret_cast<const char*>(a.data_ptr<float>()), a.numel() * 4 / 128, 16, 0u,
                             reinterpret_cast<unsigned long long*>(out.data_ptr<int64_t>()));
}

void normal_lines(torch::Tensor a) {
    const int64_t lines = a.numel() * 4 / 128;
    normal_kernel<<<static_cast<int>((lines + 255) / 256), 256>>>(reinterpret_cast<const char*>(a.data_ptr<float>()), lines);
}

void reset_persisting() { TORCH_CHECK(cudaCtxResetPersistingL2Cache() == cudaSuccess, "cudaCtxResetPersistingL2Cache failed"); }
"""
CPP = ("void read_buffer(torch::Tensor a, torch::Tensor sink, bool last);\nvoid normal_lines(torch::Tensor a);\n"
       "void probe(torch::Tensor a, torch::Tensor out);\n"
       "void reset_persisting();")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=0, help="buffer size (default: a third of the L2)")
    parser.add_argument("--trials", type=int, default=10)
    args = parser.parse_args()
    functions = ["read_buffer", "normal_lines", "reset_persisting", "probe"]
    ext = load_inline("l2_residue", CPP, cuda_sources=CUDA, functions=functions,
                      extra_cuda_cflags=["-O3", "-gencode=arch=compute_90,code=sm_90"])
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    nbytes = (args.mib << 20) or (l2 // 3) // 4096 * 4096
    a = torch.rand(nbytes // 4, device="cuda")
    sink = torch.zeros(1, device="cuda")
    scrub = torch.empty(2 * l2 // 4, device="cuda")
    flush = scrub.zero_
    counts = torch.zeros(2, dtype=torch.int64, device="cuda")

    def case(name: str, before: list[Callable[[], None]]) -> None:
        latency = []
        for _ in range(args.trials):
            for step in before:
                step()
            ext.probe(a, counts)
            cycles, count = counts.tolist()
            latency.append(cycles / count)
        print(f"{name:<22} {statistics.median(latency):7.0f} cycles a load (median of {args.trials}; "
              f"{min(latency):.0f}-{max(latency):.0f})")

    print(f"{torch.cuda.get_device_name(0)}, L2 {l2 >> 20} MiB, buffer {nbytes >> 20} MiB, "
          f"torch {torch.__version__}, CUDA {torch.version.cuda}")
    mark = lambda: ext.read_buffer(a, sink, True)  # noqa: E731
    case("cold", [flush])
    case("hot", [lambda: ext.read_buffer(a, sink, False)])
    case("marked", [mark, flush])
    case("marked, flushed x4", [mark, flush, flush, flush, flush])
    case("marked, reset", [mark, ext.reset_persisting, flush])
    case("marked, bench's release", [mark, release_kept_lines, flush])
    case("marked, normal", [mark, lambda: ext.normal_lines(a), flush])
    case("cold again", [ext.reset_persisting, lambda: ext.normal_lines(a), flush])


if __name__ == "__main__":
    main()
