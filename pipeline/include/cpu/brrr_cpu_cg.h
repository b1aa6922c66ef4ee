// Cooperative groups for the CPU execution (<cooperative_groups.h>): the block, its tiles of 1 to 32
// threads, coalesced groups, and the grid (whose sync needs a cooperative launch). Every collective is built
// on the runtime's warp intrinsics and barrier (brrr_cpu.h) with the group's mask, so the rules the
// scheduler checks hold for groups too: each thread of a tile must reach the same call, a thread
// that returned cannot take part, and a fault names the kernel.cu line of the group's call.
//
// Semantics as the CUDA Programming Guide gives them: a tile's thread_rank is the thread's rank in
// its parent modulo the tile size, its ballot and match_any bits are ranks in the group, a
// coalesced group's ranks number its active lanes in lane order, and tiled_partition needs a
// parent whose size is a multiple of the tile size (a partition that leaves a partial tile is a
// fault here, named, where a GPU's behaviour is undefined).
#pragma once
#include <cstring>
#include <string>
#include <type_traits>

#include "brrr_cpu.h"

namespace brrr_cpu::cg {

inline unsigned block_rank() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
inline unsigned block_threads() { return blockDim.x * blockDim.y * blockDim.z; }
inline unsigned lane() { return block_rank() % 32; }

// A shuffle of any trivially copyable value: the runtime moves up to 16 bytes a call, so a larger
// one (a user's struct in cg::reduce) goes in pieces, each a call every lane makes in turn.
template <typename T>
T shuffle(WarpOp op, unsigned mask, const T& value, int param, int width, const char* file, int line) {
    static_assert(std::is_trivially_copyable_v<T>, "cooperative groups shuffle trivially copyable values");
    if constexpr (sizeof(T) <= 16) {
        return warp_call<T>(op, mask, value, param, width, file, line);
    } else {
        struct Piece {
            unsigned char bytes[16];
        };
        unsigned char in[sizeof(T)], out[sizeof(T)];
        std::memcpy(in, &value, sizeof(T));
        for (size_t at = 0; at < sizeof(T); at += 16) {
            Piece p{};
            const size_t n = sizeof(T) - at < 16 ? sizeof(T) - at : 16;
            std::memcpy(p.bytes, in + at, n);
            const Piece q = warp_call<Piece>(op, mask, p, param, width, file, line);
            std::memcpy(out + at, q.bytes, n);
        }
        T result;
        std::memcpy(&result, out, sizeof(T));
        return result;
    }
}

// Lanes of `mask` listed by rank: the lane of rank r, and the rank of a lane.
inline int lane_of_rank(unsigned mask, unsigned rank) {
    for (int l = 0; l < 32; ++l) {
        if ((mask >> l) & 1u) {
            if (rank == 0) return l;
            --rank;
        }
    }
    return -1;
}
inline unsigned rank_of_lane(unsigned mask, int lane) { return __builtin_popcount(mask & ((1u << lane) - 1u)); }
// A warp-wide bit set (bit = lane) as the group's (bit = rank).
inline unsigned compact(unsigned bits, unsigned mask) {
    unsigned out = 0, rank = 0;
    for (int l = 0; l < 32; ++l) {
        if ((mask >> l) & 1u) {
            if ((bits >> l) & 1u) out |= 1u << rank;
            ++rank;
        }
    }
    return out;
}

[[noreturn]] inline void partition_fault(const std::string& detail, const char* file, int line) {
    fault("tiled_partition", detail, file, line);
}

}  // namespace brrr_cpu::cg

namespace cooperative_groups {

namespace details {
struct access;  // makes the groups the partitioning functions return
}

// What any group is: its size, the caller's rank in it and, for a group within a warp, its lanes.
class thread_group {
   public:
    // unsigned int, as CUDA's block and tiles return (a grid's are 64-bit).
    unsigned size() const { return size_; }
    unsigned num_threads() const { return size_; }
    unsigned thread_rank() const { return rank_; }
    bool is_valid() const { return true; }
    void sync(BRRR_CPU_HERE) const {
        if (whole_block_) __syncthreads(brrr_file, brrr_line);
        else __syncwarp(mask_, brrr_file, brrr_line);
    }

   protected:
    thread_group(bool whole_block, unsigned size, unsigned rank, unsigned mask)
        : whole_block_(whole_block), size_(size), rank_(rank), mask_(mask) {}
    bool whole_block_;
    unsigned size_, rank_;
    unsigned mask_;  // the group's lanes in the caller's warp (unused for a whole block)
    friend struct details::access;
};

class thread_block : public thread_group {
   public:
    dim3 group_index() const { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
    dim3 thread_index() const { return dim3(threadIdx.x, threadIdx.y, threadIdx.z); }
    dim3 dim_threads() const { return blockDim; }
    dim3 group_dim() const { return blockDim; }

   private:
    thread_block() : thread_group(true, brrr_cpu::cg::block_threads(), brrr_cpu::cg::block_rank(), 0) {}
    friend struct details::access;
};

// The grid: its ranks and sizes, and its barrier in a cooperative launch (brrr_cpu_runtime.cpp).
class grid_group {
   public:
    bool is_valid() const { return brrr_cpu::cooperative_launch(); }
    unsigned long long num_blocks() const { return static_cast<unsigned long long>(gridDim.x) * gridDim.y * gridDim.z; }
    unsigned long long block_rank() const {
        return blockIdx.x + static_cast<unsigned long long>(gridDim.x) * (blockIdx.y + static_cast<unsigned long long>(gridDim.y) * blockIdx.z);
    }
    unsigned long long num_threads() const { return num_blocks() * brrr_cpu::cg::block_threads(); }
    unsigned long long size() const { return num_threads(); }
    unsigned long long thread_rank() const { return block_rank() * brrr_cpu::cg::block_threads() + brrr_cpu::cg::block_rank(); }
    dim3 group_dim() const { return gridDim; }
    dim3 dim_blocks() const { return gridDim; }
    dim3 block_index() const { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
    void sync(BRRR_CPU_HERE) const { brrr_cpu::grid_sync(brrr_file, brrr_line); }
    dim3 dim_clusters() const {
        const dim3 c = brrr_cpu::cluster_dims();
        return dim3(gridDim.x / c.x, gridDim.y / c.y, gridDim.z / c.z);
    }
    unsigned long long num_clusters() const {
        const dim3 d = dim_clusters();
        return static_cast<unsigned long long>(d.x) * d.y * d.z;
    }
    dim3 cluster_index() const { return brrr_cpu::cluster_index(); }
    unsigned long long cluster_rank() const {
        const dim3 d = dim_clusters(), i = cluster_index();
        return i.x + static_cast<unsigned long long>(d.x) * (i.y + static_cast<unsigned long long>(d.y) * i.z);
    }
};
inline grid_group this_grid() { return grid_group(); }

// The block's thread block cluster (brrr_cpu_runtime.cpp: the barrier and distributed shared memory).
class cluster_group {
   public:
    using arrival_token = struct {};
    static void sync(BRRR_CPU_HERE) {
        brrr_cpu::cluster_arrive(brrr_file, brrr_line);
        brrr_cpu::cluster_wait(brrr_file, brrr_line);
    }
    static arrival_token barrier_arrive(BRRR_CPU_HERE) {
        brrr_cpu::cluster_arrive(brrr_file, brrr_line);
        return arrival_token();
    }
    static void barrier_wait(BRRR_CPU_HERE) { brrr_cpu::cluster_wait(brrr_file, brrr_line); }
    static void barrier_wait(arrival_token&&, BRRR_CPU_HERE) { brrr_cpu::cluster_wait(brrr_file, brrr_line); }
    static unsigned query_shared_rank(const void* addr, BRRR_CPU_HERE) {
        return brrr_cpu::cluster_shared_rank(addr, brrr_file, brrr_line);
    }
    template <typename T>
    static T* map_shared_rank(T* addr, int rank, BRRR_CPU_HERE) {
        return static_cast<T*>(brrr_cpu::cluster_map_shared(addr, static_cast<unsigned>(rank), brrr_file, brrr_line));
    }
    static dim3 block_index() { return brrr_cpu::cluster_block_index(); }
    static unsigned block_rank() { return brrr_cpu::cluster_block_rank(); }
    static dim3 dim_blocks() { return brrr_cpu::cluster_dims(); }
    static unsigned num_blocks() {
        const dim3 c = brrr_cpu::cluster_dims();
        return c.x * c.y * c.z;
    }
    static dim3 dim_threads() {
        const dim3 c = brrr_cpu::cluster_dims();
        return dim3(c.x * blockDim.x, c.y * blockDim.y, c.z * blockDim.z);
    }
    static dim3 thread_index() {
        const dim3 i = block_index();
        return dim3(i.x * blockDim.x + threadIdx.x, i.y * blockDim.y + threadIdx.y, i.z * blockDim.z + threadIdx.z);
    }
    static unsigned num_threads() { return num_blocks() * brrr_cpu::cg::block_threads(); }
    static unsigned size() { return num_threads(); }
    static unsigned thread_rank() { return block_rank() * brrr_cpu::cg::block_threads() + brrr_cpu::cg::block_rank(); }
    static bool is_valid() { return true; }

   private:
    cluster_group() = default;
    friend cluster_group this_cluster();
};
inline cluster_group this_cluster() { return cluster_group(); }

// The operations of a group within one warp; ranks are mapped to lanes by Lanes (a tile: a
// contiguous, aligned run of lanes; a coalesced group: the set bits of its mask).
template <typename Group>
class warp_collectives {
   public:
    template <typename T>
    T shfl(T var, int src_rank, BRRR_CPU_HERE) const {
        const Group& g = self();
        return brrr_cpu::cg::shuffle(brrr_cpu::WarpOp::Shfl, g.mask_, var, g.lane_of(static_cast<unsigned>(src_rank) % g.size_),
                                     32, brrr_file, brrr_line);
    }
    template <typename T>
    T shfl_down(T var, unsigned delta, BRRR_CPU_HERE) const {
        const Group& g = self();
        const unsigned src = g.rank_ + delta < g.size_ ? g.rank_ + delta : g.rank_;
        return brrr_cpu::cg::shuffle(brrr_cpu::WarpOp::Shfl, g.mask_, var, g.lane_of(src), 32, brrr_file, brrr_line);
    }
    template <typename T>
    T shfl_up(T var, unsigned delta, BRRR_CPU_HERE) const {
        const Group& g = self();
        const unsigned src = g.rank_ >= delta ? g.rank_ - delta : g.rank_;
        return brrr_cpu::cg::shuffle(brrr_cpu::WarpOp::Shfl, g.mask_, var, g.lane_of(src), 32, brrr_file, brrr_line);
    }
    int any(int predicate, BRRR_CPU_HERE) const { return __any_sync(self().mask_, predicate, brrr_file, brrr_line); }
    int all(int predicate, BRRR_CPU_HERE) const { return __all_sync(self().mask_, predicate, brrr_file, brrr_line); }
    unsigned ballot(int predicate, BRRR_CPU_HERE) const {
        const Group& g = self();
        return brrr_cpu::cg::compact(__ballot_sync(g.mask_, predicate, brrr_file, brrr_line), g.mask_);
    }
    template <typename T>
    unsigned match_any(T value, BRRR_CPU_HERE) const {
        const Group& g = self();
        return brrr_cpu::cg::compact(__match_any_sync(g.mask_, value, brrr_file, brrr_line), g.mask_);
    }
    template <typename T>
    unsigned match_all(T value, int& predicate, BRRR_CPU_HERE) const {
        const Group& g = self();
        return brrr_cpu::cg::compact(__match_all_sync(g.mask_, value, &predicate, brrr_file, brrr_line), g.mask_);
    }

   private:
    const Group& self() const { return static_cast<const Group&>(*this); }
};

// The lanes of the warp that reached this call together (__activemask), ranked in lane order.
class coalesced_group : public thread_group, public warp_collectives<coalesced_group> {
   public:
    unsigned meta_group_rank() const { return 0; }
    unsigned meta_group_size() const { return 1; }

   private:
    explicit coalesced_group(unsigned mask)
        : thread_group(false, static_cast<unsigned>(__builtin_popcount(mask)),
                       brrr_cpu::cg::rank_of_lane(mask, static_cast<int>(brrr_cpu::cg::lane())), mask) {}
    int lane_of(unsigned rank) const { return brrr_cpu::cg::lane_of_rank(mask_, rank); }
    friend class warp_collectives<coalesced_group>;
    friend struct details::access;
};

namespace details {
struct access {
    static thread_group group(bool whole_block, unsigned size, unsigned rank, unsigned mask) {
        return thread_group(whole_block, size, rank, mask);
    }
    static thread_block block() { return thread_block(); }
    static coalesced_group coalesced(unsigned mask) { return coalesced_group(mask); }
};
}  // namespace details

inline thread_block this_thread_block() { return details::access::block(); }
inline coalesced_group coalesced_threads(BRRR_CPU_HERE) {
    return details::access::coalesced(__activemask(brrr_file, brrr_line));
}

// A tile of a known size: ranks are consecutive lanes, starting at a multiple of Size.
template <unsigned Size, typename Parent = void>
class thread_block_tile;

template <unsigned Size>
class thread_block_tile<Size, void> : public thread_group, public warp_collectives<thread_block_tile<Size, void>> {
    static_assert(Size >= 1 && Size <= 32 && (Size & (Size - 1)) == 0,
                  "thread_block_tile<Size>: the CPU execution supports tiles of 1, 2, 4, 8, 16 or 32 threads");

   public:
    static constexpr unsigned num_threads() { return Size; }
    static constexpr unsigned size() { return Size; }
    unsigned meta_group_rank() const { return meta_rank_; }
    unsigned meta_group_size() const { return meta_size_; }
    template <typename T>
    T shfl_xor(T var, unsigned lane_mask, BRRR_CPU_HERE) const {
        return brrr_cpu::cg::shuffle(brrr_cpu::WarpOp::ShflXor, mask_, var, static_cast<int>(lane_mask & (Size - 1)),
                                     static_cast<int>(Size), brrr_file, brrr_line);
    }

   protected:
    // `parent_rank`/`parent_size`: the caller's rank in the partitioned group and that group's size.
    thread_block_tile(unsigned parent_rank, unsigned parent_size)
        : thread_group(false, Size, parent_rank % Size, mask_for(brrr_cpu::cg::lane())),
          meta_rank_(parent_rank / Size),
          meta_size_((parent_size + Size - 1) / Size) {}

   private:
    static unsigned mask_for(unsigned lane) {
        const unsigned lanes = Size == 32 ? 0xffffffffu : (1u << Size) - 1u;
        return lanes << (lane / Size * Size);
    }
    int lane_of(unsigned rank) const { return static_cast<int>(brrr_cpu::cg::lane() / Size * Size + rank); }
    unsigned meta_rank_, meta_size_;
    friend class warp_collectives<thread_block_tile<Size, void>>;
    template <unsigned, typename>
    friend class thread_block_tile;
};

template <unsigned Size, typename Parent>
class thread_block_tile : public thread_block_tile<Size, void> {
   public:
    thread_block_tile(unsigned parent_rank, unsigned parent_size) : thread_block_tile<Size, void>(parent_rank, parent_size) {}
};

template <unsigned Size, typename Parent>
thread_block_tile<Size, Parent> tiled_partition(const Parent& parent, BRRR_CPU_HERE) {
    static_assert(std::is_base_of_v<thread_group, Parent> && !std::is_same_v<Parent, coalesced_group>,
                  "tiled_partition<Size>(parent): the CPU execution partitions a thread_block or a tile");
    const unsigned n = static_cast<unsigned>(parent.num_threads());
    if (n % Size != 0) {
        brrr_cpu::cg::partition_fault("tiled_partition<" + std::to_string(Size) + "> of a group of " + std::to_string(n) +
                                          " threads: the parent's size must be a multiple of the tile size (the last tile "
                                          "would have " + std::to_string(n % Size) + " threads)",
                                      brrr_file, brrr_line);
    }
    return thread_block_tile<Size, Parent>(static_cast<unsigned>(parent.thread_rank()), n);
}

// tiled_partition(parent, n): a tile whose size is known only at run time, as a thread_group.
template <typename G>
thread_group tiled_partition(const G& parent, unsigned tile_size, BRRR_CPU_HERE) {
    static_assert(std::is_base_of_v<thread_group, G> && !std::is_same_v<G, coalesced_group>,
                  "tiled_partition(parent, n): the CPU execution partitions a thread_block or a tile");
    const unsigned n = static_cast<unsigned>(parent.num_threads());
    if (tile_size == 0 || tile_size > 32 || (tile_size & (tile_size - 1)) != 0) {
        brrr_cpu::cg::partition_fault("tiled_partition(parent, " + std::to_string(tile_size) +
                                          "): the tile size must be a power of 2 from 1 to 32",
                                      brrr_file, brrr_line);
    }
    if (n % tile_size != 0) {
        brrr_cpu::cg::partition_fault("tiled_partition(parent, " + std::to_string(tile_size) + ") of a group of " +
                                          std::to_string(n) + " threads: the parent's size must be a multiple of the tile size",
                                      brrr_file, brrr_line);
    }
    const unsigned lane = brrr_cpu::cg::lane();
    const unsigned lanes = tile_size == 32 ? 0xffffffffu : (1u << tile_size) - 1u;
    return details::access::group(false, tile_size, static_cast<unsigned>(parent.thread_rank()) % tile_size,
                                  lanes << (lane / tile_size * tile_size));
}

template <typename G>
void sync(const G& group, BRRR_CPU_HERE) {
    group.sync(brrr_file, brrr_line);
}

}  // namespace cooperative_groups
