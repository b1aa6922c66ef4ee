// Cross-entropy over rows of logits with int64 class targets: one block per row. The kernels and
// their torch wrapper in one file, as a load() user writes it.
#include <torch/extension.h>
#include "common.h"

__global__ void xent_forward_kernel(float* losses, const float* logits, const int64_t* targets, int64_t V) {
    const int64_t row = blockIdx.x;
    const float* x = logits + row * V;
    float m = -INFINITY;
    for (int64_t i = threadIdx.x; i < V; i += blockDim.x) m = fmaxf(m, x[i]);
    m = block_reduce(m, Max{}, -INFINITY);
    float s = 0.0f;
    for (int64_t i = threadIdx.x; i < V; i += blockDim.x) s += expf(x[i] - m);
    s = block_reduce(s, Sum{}, 0.0f);
    if (threadIdx.x == 0) losses[row] = logf(s) + m - x[targets[row]];
}

__global__ void xent_backward_kernel(float* dlogits, const float* dlosses, const float* logits, const int64_t* targets,
                                     int64_t V) {
    const int64_t row = blockIdx.x;
    const float* x = logits + row * V;
    float m = -INFINITY;
    for (int64_t i = threadIdx.x; i < V; i += blockDim.x) m = fmaxf(m, x[i]);
    m = block_reduce(m, Max{}, -INFINITY);
    float s = 0.0f;
    for (int64_t i = threadIdx.x; i < V; i += blockDim.x) s += expf(x[i] - m);
    s = block_reduce(s, Sum{}, 0.0f);
    for (int64_t i = threadIdx.x; i < V; i += blockDim.x) {
        const float p = expf(x[i] - m) / s;
        dlogits[row * V + i] = dlosses[row] * (p - (i == targets[row] ? 1.0f : 0.0f));
    }
}

torch::Tensor xent_forward(torch::Tensor logits, torch::Tensor targets) {
    TORCH_CHECK(targets.scalar_type() == torch::kLong, "targets must be int64");
    auto x = logits.contiguous();
    auto t = targets.contiguous();
    auto losses = torch::empty({x.size(0)}, x.options());
    xent_forward_kernel<<<x.size(0), 128>>>(losses.data_ptr<float>(), x.data_ptr<float>(), t.data_ptr<int64_t>(),
                                           x.size(1));
    return losses;
}

torch::Tensor xent_backward(torch::Tensor dlosses, torch::Tensor logits, torch::Tensor targets) {
    auto x = logits.contiguous();
    auto t = targets.contiguous();
    auto d = dlosses.contiguous();
    auto dlogits = torch::empty_like(x);
    xent_backward_kernel<<<x.size(0), 128>>>(dlogits.data_ptr<float>(), d.data_ptr<float>(), x.data_ptr<float>(),
                                            t.data_ptr<int64_t>(), x.size(1));
    return dlogits;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("forward", &xent_forward, "cross-entropy forward");
    m.def("backward", &xent_backward, "cross-entropy backward");
}
