// Square, CUDA C stage: numba_kernel.py's 2-D grid of 2-D blocks (x over columns, y over rows,
// both bounds checked, rows past what gridDim.y's 65535 blocks reach looped over), with each
// thread moving one 16-byte pack of W = 16 / sizeof(T) consecutive columns of a row instead
// of one element, and 64-bit indices throughout.
//
// In 2-D, alignment is per row: row r starts at element r * cols, on a 16-byte boundary only
// when r * cols is a multiple of W. So a row's packs start at its first aligned column,
// head = (-r * cols) mod W (0 for every row when cols % W == 0); the row's pack-0 thread squares
// the head columns one by one, and the thread whose pack runs past the row's end finishes it
// element by element. Every width gets packs; a tensor whose start is not 16-byte aligned runs
// with W = 1, which is numba_kernel.py's mapping exactly.
//
// Napkin math: forward reads and writes 4 bytes per float32 element, so 8192 x 8192 moves
// 512 MiB, 0.181 ms at the 2.965 TB/s an H100 copies. Measured on an H100
// (benchmarks/results/2026-11-23-h100-bench):
//   v1, one element per thread, as in numba_kernel.py:  0.331 ms forward (54.7% of copy;
//                                                       eager torch 0.189 ms, 95.7%)
//   v2, one 16-byte pack per thread (this file):        0.183 ms forward (97.9%; eager 97.6%),
//                                                       fwd+bwd 98.0% (benchmarks/results/2026-11-23-h100-bench2)
// Why v1 fell short, by Little's law: copy speed with ~600 ns of DRAM latency (an assumed
// round figure) needs 2.965 TB/s * 600 ns = 1.8 MB of loads in flight, 13.5 KB per SM of 132.
// An SM holds 2048 threads; one 4-byte load each is 8 KB in flight, about 60% of that. One
// 16-byte pack each is 32 KB, and still 24 KB at the 1536 threads that the backward kernel's
// 38 registers leave room for (it has two packs in flight, 48 KB): enough, the change that
// took sigmoid from 68% to 99% of copy.
// Why keep 2-D rather than flatten as sigmoid does: nothing in that arithmetic depends on it.
// A warp still moves 32 * 16 = 512 contiguous bytes of a row (four full 128-byte lines), and
// the 2-D extras (a 64-bit multiply, a remainder and the head and tail tests, once a row) are
// a few dozen instructions, where an SM's share of copy bandwidth (~12 bytes a cycle at ~1.8 GHz)
// takes ~2.7 cycles to move one pack in and out, time to issue ~350 thread-instructions
// (4 schedulers x 32 lanes). What 2-D does cost is on narrow matrices: a row under 32 packs
// (128 float32 columns) leaves threads of each warp idle. v1 ran a (1048579, 1) matrix at 2.9%
// of copy, and this version still keeps only 1 thread in 32 busy on it.
#include "brrr_kernel.cuh"

#include <algorithm>

constexpr int kBlockX = 32;  // packs along a row: one warp reads one contiguous run of 512 bytes
constexpr int kBlockY = 8;   // rows: 256 threads a block
// gridDim.y cannot exceed this; rows beyond what one pass of the grid covers are looped over.
constexpr int64_t kMaxGridY = 65535;

// The first column of row r whose address is a multiple of 16 bytes, given that the tensor's
// start is one (the launchers check): r * cols elements in, `past` elements beyond a boundary.
template <int W>
__device__ __forceinline__ int first_aligned_column(int64_t r, int64_t cols) {
    const int past = static_cast<int>(static_cast<uint64_t>(r * cols) % W);
    return past == 0 ? 0 : W - past;
}

// In acc_t (float for the 16-bit types), rounded once at the store.
template <typename T>
__device__ __forceinline__ T square(T v) {
    const brrr::acc_t<T> a = brrr::to_acc(v);
    return brrr::from_acc<T>(a * a);
}

template <typename T>
__device__ __forceinline__ T square_grad(T g, T v) {
    using A = brrr::acc_t<T>;
    return brrr::from_acc<T>(A(2) * brrr::to_acc(v) * brrr::to_acc(g));
}

// Thread (pack, row) owns pack `pack` of rows row, row + stride, ...: columns
// [head + pack * W, head + pack * W + W), cut at the row's end; pack 0 also owns the row's
// head columns [0, head). The row's packs are indexed as an array of P starting at its head:
// written as yr + head + pack * W, nvcc (13.0) no longer proves the store 16-byte aligned and splits
// it into W scalar stores. Head and tail loops run a constant W - 1 times, predicated, since
// head and the tail are both shorter than a pack.
template <typename T, int W>
__global__ void square_forward_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int64_t cols) {
    using P = brrr::Pack<T, W>;
    const int64_t pack = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const int64_t row = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y;
    // The pack starts at head + pack * W >= pack * W: past the last column here, past it in every row.
    if (pack * W >= cols) return;
    const int64_t stride = static_cast<int64_t>(gridDim.y) * blockDim.y;
    for (int64_t r = row; r < rows; r += stride) {
        const T* xr = x + r * cols;
        T* yr = y + r * cols;
        const int head = first_aligned_column<W>(r, cols);
        if (pack == 0) {
#pragma unroll
            for (int k = 0; k < W - 1; ++k) {
                if (k < head && k < cols) yr[k] = square(xr[k]);
            }
        }
        const int64_t c0 = head + pack * W;
        if (c0 + W <= cols) {
            P p = reinterpret_cast<const P*>(xr + head)[pack];
#pragma unroll
            for (int k = 0; k < W; ++k) p.v[k] = square(p.v[k]);
            reinterpret_cast<P*>(yr + head)[pack] = p;
        } else {
#pragma unroll
            for (int k = 0; k < W - 1; ++k) {
                if (c0 + k < cols) yr[c0 + k] = square(xr[c0 + k]);
            }
        }
    }
}

template <typename T, int W>
__global__ void square_backward_kernel(const T* __restrict__ grad_y, const T* __restrict__ x, T* __restrict__ grad_x,
                                       int64_t rows, int64_t cols) {
    using P = brrr::Pack<T, W>;
    const int64_t pack = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const int64_t row = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y;
    if (pack * W >= cols) return;
    const int64_t stride = static_cast<int64_t>(gridDim.y) * blockDim.y;
    for (int64_t r = row; r < rows; r += stride) {
        const T* gr = grad_y + r * cols;
        const T* xr = x + r * cols;
        T* out = grad_x + r * cols;
        const int head = first_aligned_column<W>(r, cols);
        if (pack == 0) {
#pragma unroll
            for (int k = 0; k < W - 1; ++k) {
                if (k < head && k < cols) out[k] = square_grad(gr[k], xr[k]);
            }
        }
        const int64_t c0 = head + pack * W;
        if (c0 + W <= cols) {
            const P g = reinterpret_cast<const P*>(gr + head)[pack];
            const P v = reinterpret_cast<const P*>(xr + head)[pack];
            P o;
#pragma unroll
            for (int k = 0; k < W; ++k) o.v[k] = square_grad(g.v[k], v.v[k]);
            reinterpret_cast<P*>(out + head)[pack] = o;
        } else {
#pragma unroll
            for (int k = 0; k < W - 1; ++k) {
                if (c0 + k < cols) out[c0 + k] = square_grad(gr[c0 + k], xr[c0 + k]);
            }
        }
    }
}

// x over the packs of a row (ceil(cols / W) of them covers every row's head and tail), y over
// blocks of rows, capped at gridDim.y's limit.
static dim3 grid_for(int64_t rows, int64_t packs_per_row) {
    const auto blocks_y = std::min<int64_t>((rows + kBlockY - 1) / kBlockY, kMaxGridY);
    return dim3(brrr::blocks_for(packs_per_row, kBlockX), static_cast<unsigned int>(blocks_y));
}

// The launchers binding.cpp calls, one per kernel: 16-byte packs when every pointer allows.
template <typename T>
void square_forward(const T* x, T* y, int64_t rows, int64_t cols, cudaStream_t stream) {
    constexpr int W = 16 / sizeof(T);
    const dim3 block(kBlockX, kBlockY);
    if (brrr::aligned16(x) && brrr::aligned16(y)) {
        square_forward_kernel<T, W><<<grid_for(rows, (cols + W - 1) / W), block, 0, stream>>>(x, y, rows, cols);
    } else {
        square_forward_kernel<T, 1><<<grid_for(rows, cols), block, 0, stream>>>(x, y, rows, cols);
    }
}

template <typename T>
void square_backward(const T* grad_y, const T* x, T* grad_x, int64_t rows, int64_t cols, cudaStream_t stream) {
    constexpr int W = 16 / sizeof(T);
    const dim3 block(kBlockX, kBlockY);
    if (brrr::aligned16(grad_y) && brrr::aligned16(x) && brrr::aligned16(grad_x)) {
        square_backward_kernel<T, W><<<grid_for(rows, (cols + W - 1) / W), block, 0, stream>>>(grad_y, x, grad_x, rows,
                                                                                                cols);
    } else {
        square_backward_kernel<T, 1><<<grid_for(rows, cols), block, 0, stream>>>(grad_y, x, grad_x, rows, cols);
    }
}

// The dtypes binding.cpp dispatches to.
template void square_forward(const float*, float*, int64_t, int64_t, cudaStream_t);
template void square_forward(const double*, double*, int64_t, int64_t, cudaStream_t);
template void square_backward(const float*, const float*, float*, int64_t, int64_t, cudaStream_t);
template void square_backward(const double*, const double*, double*, int64_t, int64_t, cudaStream_t);
template void square_forward(const __half*, __half*, int64_t, int64_t, cudaStream_t);
template void square_forward(const __nv_bfloat16*, __nv_bfloat16*, int64_t, int64_t, cudaStream_t);
template void square_backward(const __half*, const __half*, __half*, int64_t, int64_t, cudaStream_t);
template void square_backward(const __nv_bfloat16*, const __nv_bfloat16*, __nv_bfloat16*, int64_t, int64_t,
                              cudaStream_t);
