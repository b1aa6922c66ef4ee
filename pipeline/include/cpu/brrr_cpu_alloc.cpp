// Which CPU allocations torch has live, so the memory checks know the extent of the tensor behind
// each pointer a kernel launch receives. A kernel gets raw pointers (binding.cpp passes
// data_ptr()), possibly into the middle of a tensor's storage; this registry answers "which
// allocation holds this address, and how large is it".
//
// Built as a library of its own and loaded once per process with RTLD_GLOBAL before the op's
// tensors are made (brrr does this when the cuda stage runs on the CPU). Loading it wraps torch's
// CPU allocator; allocations made before that are unknown, and a launch that receives one is
// not bounds-checked (brrr_cpu_memcheck.cpp).
#include <c10/core/CPUAllocator.h>

#include <cstdint>
#include <map>
#include <mutex>

namespace {

struct Registry {
    std::mutex mutex;
    std::map<uintptr_t, std::size_t> live;  // start -> bytes
    // An allocation brrr narrowed to the tensor inside its guard bands: its start -> the tensor's
    // start, the key `live` holds for it now (see brrr_alloc_narrow).
    std::map<uintptr_t, uintptr_t> narrowed;
};

Registry& registry() {
    static Registry* r = new Registry();  // never destroyed: tensors may be freed at exit
    return *r;
}

// The inner DataPtr of each live allocation, by its data pointer: the DataPtr torch gets has its data
// as its context too (torch's raw_allocate, which CPU bfloat16 matmul uses, asserts data == context).
std::map<void*, c10::DataPtr>& held() {
    static auto* h = new std::map<void*, c10::DataPtr>();  // under registry().mutex; never destroyed
    return *h;
}

void release(void* p) {
    c10::DataPtr inner;  // freed when this returns, outside the lock
    {
        Registry& r = registry();
        std::lock_guard<std::mutex> lock(r.mutex);
        const auto a = reinterpret_cast<uintptr_t>(p);
        r.live.erase(a);
        if (auto n = r.narrowed.find(a); n != r.narrowed.end()) {
            r.live.erase(n->second);
            r.narrowed.erase(n);
        }
        if (auto h = held().find(p); h != held().end()) {
            inner = std::move(h->second);
            held().erase(h);
        }
    }
}

class Recording final : public c10::Allocator {
public:
    explicit Recording(c10::Allocator* inner) : inner_(inner) {}

    c10::DataPtr allocate(std::size_t n) override {
        c10::DataPtr dp = inner_->allocate(n);
        void* p = dp.get();
        const c10::Device device = dp.device();
        if (p == nullptr) return dp;
        {
            Registry& r = registry();
            std::lock_guard<std::mutex> lock(r.mutex);
            r.live[reinterpret_cast<uintptr_t>(p)] = n;
            held()[p] = std::move(dp);
        }
        return {p, p, &release, device};
    }

    void copy_data(void* dest, const void* src, std::size_t count) const override { default_copy_data(dest, src, count); }

    // raw_allocate/raw_deallocate (CPU bfloat16 matmul's workspace) free through this
    c10::DeleterFnPtr raw_deleter() const override { return &release; }

private:
    c10::Allocator* inner_;
};

struct Install {
    Install() {
        static Recording recording(c10::GetCPUAllocator());
        c10::SetCPUAllocator(&recording, /*priority=*/100);
    }
} install;

}  // namespace

// 1 and the allocation's start and size if p lies in a live allocation, 0 otherwise.
extern "C" int brrr_alloc_find(const void* p, const void** lo, std::size_t* bytes) {
    const auto a = reinterpret_cast<uintptr_t>(p);
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.live.upper_bound(a);
    if (it == r.live.begin()) return 0;
    --it;
    if (a >= it->first + (it->second == 0 ? 1 : it->second)) return 0;
    *lo = reinterpret_cast<const void*>(it->first);
    *bytes = it->second;
    return 1;
}

// The allocation starting at `allocation` holds a tensor of `bytes` bytes at `lo` between guard
// bands (pipeline/validation/guards.py): from now on its extent is the tensor's, so an access into
// a band is out of bounds (a 0-byte tensor keeps its one address, so it is still found and named).
extern "C" int brrr_alloc_narrow(const void* allocation, const void* lo, std::size_t bytes) {
    const auto a = reinterpret_cast<uintptr_t>(allocation), l = reinterpret_cast<uintptr_t>(lo);
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.live.find(a);
    if (it == r.live.end() || l < a || l + bytes > a + it->second) return 0;
    r.live.erase(it);
    r.live[l] = bytes;
    r.narrowed[a] = l;
    return 1;
}
