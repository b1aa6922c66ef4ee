// Square, CUDA C stage: a line-for-line translation of numba_kernel.py.
// A 2-D grid of 2-D blocks: x over columns, y over rows, 64-bit indices throughout.
#include "brrr.cuh"

#include <algorithm>

// 32 threads along a row make one warp read one contiguous run of memory.
constexpr int kBlockX = 32;
constexpr int kBlockY = 8;
// gridDim.y cannot exceed this; rows beyond what one pass of the grid covers are looped over.
constexpr int64_t kMaxGridY = 65535;

template <typename scalar_t>
__global__ void square_forward_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ y, int64_t rows,
                                      int64_t cols) {
    const int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const int64_t row = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y;
    if (col >= cols) return;
    const int64_t stride = static_cast<int64_t>(gridDim.y) * blockDim.y;
    for (int64_t r = row; r < rows; r += stride) {
        const scalar_t v = x[r * cols + col];
        y[r * cols + col] = v * v;
    }
}

template <typename scalar_t>
__global__ void square_backward_kernel(const scalar_t* __restrict__ grad_y, const scalar_t* __restrict__ x,
                                       scalar_t* __restrict__ grad_x, int64_t rows, int64_t cols) {
    const int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const int64_t row = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y;
    if (col >= cols) return;
    const int64_t stride = static_cast<int64_t>(gridDim.y) * blockDim.y;
    for (int64_t r = row; r < rows; r += stride) {
        const int64_t i = r * cols + col;
        grad_x[i] = scalar_t(2) * x[i] * grad_y[i];
    }
}

static dim3 grid_for(int64_t rows, int64_t cols) {
    const auto blocks_y = std::min<int64_t>((rows + kBlockY - 1) / kBlockY, kMaxGridY);
    return dim3(brrr::blocks_for(cols, kBlockX), static_cast<unsigned int>(blocks_y));
}

static void check_matrix(const at::Tensor& x, const char* name) {
    TORCH_CHECK(x.dim() == 2, name, " must be a 2-D matrix, got shape ", x.sizes());
}

at::Tensor forward(at::Tensor x) {
    brrr::check_input(x, "x");
    check_matrix(x, "x");
    auto xc = x.contiguous();
    auto y = at::empty_like(xc);
    const int64_t rows = xc.size(0), cols = xc.size(1);
    if (xc.numel() == 0) return y;
    AT_DISPATCH_FLOATING_TYPES(xc.scalar_type(), "square_forward", [&] {
        square_forward_kernel<scalar_t><<<grid_for(rows, cols), dim3(kBlockX, kBlockY), 0, brrr::stream()>>>(
            xc.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), rows, cols);
    });
    BRRR_CHECK_LAUNCH();
    return y;
}

at::Tensor backward(at::Tensor grad_y, at::Tensor x) {
    brrr::check_input(grad_y, "grad_y");
    brrr::check_same(grad_y, x, "grad_y", "x");
    check_matrix(x, "x");
    auto gc = grad_y.contiguous();
    auto xc = x.contiguous();
    auto grad_x = at::empty_like(xc);
    const int64_t rows = xc.size(0), cols = xc.size(1);
    if (xc.numel() == 0) return grad_x;
    AT_DISPATCH_FLOATING_TYPES(xc.scalar_type(), "square_backward", [&] {
        square_backward_kernel<scalar_t><<<grid_for(rows, cols), dim3(kBlockX, kBlockY), 0, brrr::stream()>>>(
            gc.data_ptr<scalar_t>(), xc.data_ptr<scalar_t>(), grad_x.data_ptr<scalar_t>(), rows, cols);
    });
    BRRR_CHECK_LAUNCH();
    return grad_x;
}

BRRR_BIND(m) {
    m.def("forward", &forward);
    m.def("backward", &backward);
}
