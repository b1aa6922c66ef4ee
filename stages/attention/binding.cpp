// Causal attention, CUDA C stage, host side: forward and backward on float32 tensors [bh, T, D],
// checking them, allocating outputs (and backward's delta workspace) and calling kernel.cu's launchers.
#include <cstdint>
#include <tuple>

#include "brrr.cuh"

// Defined in kernel.cu.
void attention_forward(const float* q, const float* k, const float* v, float* o, float* lse, int64_t bh, int64_t t,
                       int64_t d, cudaStream_t stream);
void attention_backward(const float* grad_o, const float* q, const float* k, const float* v, const float* o,
                        const float* lse, float* delta, float* grad_q, float* grad_k, float* grad_v, int64_t bh,
                        int64_t t, int64_t d, cudaStream_t stream);

constexpr int64_t kMaxD = 64;  // kernel.cu's: a lane owns two of the head's dims
constexpr int64_t kMaxGridY = 65535;

static void check_qkv(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
    brrr::check_input(q, "q");
    brrr::check_same(q, k, "q", "k");
    brrr::check_same(q, v, "q", "v");
    TORCH_CHECK(q.scalar_type() == at::kFloat, "attention's kernels compute in float32, got ", q.scalar_type());
    TORCH_CHECK(q.dim() == 3, "attention takes q, k, v as [batch x heads, T, D], got ", q.sizes());
    TORCH_CHECK(q.size(2) <= kMaxD, "attention: head dim ", q.size(2), " is above the kernels' ", kMaxD);
    TORCH_CHECK(q.size(0) <= kMaxGridY, "attention: ", q.size(0), " batch x heads exceed the grid's ", kMaxGridY);
}

std::tuple<at::Tensor, at::Tensor> forward(at::Tensor q, at::Tensor k, at::Tensor v) {
    check_qkv(q, k, v);
    BRRR_DEVICE_GUARD(q);
    auto qc = q.contiguous();
    auto kc = k.contiguous();
    auto vc = v.contiguous();
    const int64_t bh = qc.size(0), t = qc.size(1), d = qc.size(2);
    auto o = at::empty_like(qc);
    auto lse = at::empty({bh, t}, qc.options());
    if (o.numel() == 0) return {o, lse};
    attention_forward(qc.data_ptr<float>(), kc.data_ptr<float>(), vc.data_ptr<float>(), o.data_ptr<float>(),
                      lse.data_ptr<float>(), bh, t, d, brrr::stream());
    BRRR_CHECK_LAUNCH();
    return {o, lse};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> backward(at::Tensor grad_o, at::Tensor q, at::Tensor k, at::Tensor v,
                                                        at::Tensor o, at::Tensor lse) {
    check_qkv(q, k, v);
    brrr::check_same(q, grad_o, "q", "grad_o");
    brrr::check_same(q, o, "q", "o");
    brrr::check_compatible(q, lse, "q", "lse");
    TORCH_CHECK(lse.dim() == 2 && lse.size(0) == q.size(0) && lse.size(1) == q.size(1), "lse must be [", q.size(0), ", ",
                q.size(1), "], got ", lse.sizes());
    BRRR_DEVICE_GUARD(q);
    auto gc = grad_o.contiguous();
    auto qc = q.contiguous();
    auto kc = k.contiguous();
    auto vc = v.contiguous();
    auto oc = o.contiguous();
    auto lc = lse.contiguous();
    const int64_t bh = qc.size(0), t = qc.size(1), d = qc.size(2);
    auto grad_q = at::empty_like(qc);
    auto grad_k = at::empty_like(kc);
    auto grad_v = at::empty_like(vc);
    if (qc.numel() == 0) return {grad_q, grad_k, grad_v};
    auto delta = at::empty({bh, t}, qc.options());  // rowsum(grad_o * o), shared by both gradient kernels
    attention_backward(gc.data_ptr<float>(), qc.data_ptr<float>(), kc.data_ptr<float>(), vc.data_ptr<float>(),
                       oc.data_ptr<float>(), lc.data_ptr<float>(), delta.data_ptr<float>(), grad_q.data_ptr<float>(),
                       grad_k.data_ptr<float>(), grad_v.data_ptr<float>(), bh, t, d, brrr::stream());
    BRRR_CHECK_LAUNCH();
    return {grad_q, grad_k, grad_v};
}

BRRR_BIND(m) {
    m.def("forward", &forward);
    m.def("backward", &backward);
}
