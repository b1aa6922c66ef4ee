// Host buffers for the case programs (tests/cuda/*_cases.cu): 64-byte aligned, as torch's are (wmma
// needs 256-bit aligned matrices), and, built by nvcc for a GPU (benchmarks/tensor_core_agreement.py),
// managed memory that host and device both read.
#pragma once
#include <cstdlib>
#include <new>
#include <vector>

template <typename T>
struct Aligned {
    using value_type = T;
    Aligned() = default;
    template <typename U>
    Aligned(const Aligned<U>&) {}
#ifdef BRRR_CPU
    T* allocate(size_t n) { return static_cast<T*>(std::aligned_alloc(64, (n * sizeof(T) + 63) / 64 * 64)); }
    void deallocate(T* p, size_t) { std::free(p); }
#else
    T* allocate(size_t n) {
        void* p = nullptr;
        if (cudaMallocManaged(&p, n * sizeof(T)) != cudaSuccess) throw std::bad_alloc();
        return static_cast<T*>(p);
    }
    void deallocate(T* p, size_t) { cudaFree(p); }
#endif
    bool operator==(const Aligned&) const { return true; }
    bool operator!=(const Aligned&) const { return false; }
};
template <typename T>
using Vec = std::vector<T, Aligned<T>>;
