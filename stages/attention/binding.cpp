// Causal attention, CUDA C stage, host side: forward and backward on float32, float16 or bfloat16
// tensors [bh, T, D], checking them, allocating outputs (in the inputs' dtype; lse, and backward's
// delta workspace, in float32 whatever it is: kernel.cu computes in float) and calling kernel.cu's launchers.
#include <cstdint>
#include <tuple>

#include "brrr.cuh"

// Defined in kernel.cu for float, __half and __nv_bfloat16.
template <typename T>
void attention_forward(const T* q, const T* k, const T* v, T* o, float* lse, int64_t bh, int64_t t, int64_t d,
                       cudaStream_t stream);
template <typename T>
void attention_backward(const T* grad_o, const T* q, const T* k, const T* v, const T* o, const float* lse,
                        float* delta, T* grad_q, T* grad_k, T* grad_v, int64_t bh, int64_t t, int64_t d,
                        cudaStream_t stream);

constexpr int64_t kMaxD = 64;  // kernel.cu's: a lane owns two of the head's dims
constexpr int64_t kMaxGridY = 65535;

// float32, float16 and bfloat16: kernel.cu's shared tiles hold floats, which float64 would overflow.
#define ATTENTION_DISPATCH(TYPE, NAME, ...)                                  \
    AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE(at::kFloat, __VA_ARGS__) \
                       AT_DISPATCH_CASE(at::kHalf, __VA_ARGS__) AT_DISPATCH_CASE(at::kBFloat16, __VA_ARGS__))

static void check_qkv(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
    brrr::check_input(q, "q");
    brrr::check_same(q, k, "q", "k");
    brrr::check_same(q, v, "q", "v");
    const auto type = q.scalar_type();
    TORCH_CHECK(type == at::kFloat || type == at::kHalf || type == at::kBFloat16,
                "attention's kernels take float32, float16 or bfloat16, got ", type);
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
    auto lse = at::empty({bh, t}, qc.options().dtype(at::kFloat));
    if (o.numel() == 0) return {o, lse};
    ATTENTION_DISPATCH(qc.scalar_type(), "attention_forward", [&] {
        attention_forward(brrr::data<scalar_t>(qc), brrr::data<scalar_t>(kc), brrr::data<scalar_t>(vc),
                          brrr::data<scalar_t>(o), lse.data_ptr<float>(), bh, t, d, brrr::stream());
    });
    BRRR_CHECK_LAUNCH();
    return {o, lse};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> backward(at::Tensor grad_o, at::Tensor q, at::Tensor k, at::Tensor v,
                                                        at::Tensor o, at::Tensor lse) {
    check_qkv(q, k, v);
    brrr::check_same(q, grad_o, "q", "grad_o");
    brrr::check_same(q, o, "q", "o");
    brrr::check_input(lse, "lse");
    TORCH_CHECK(lse.device() == q.device(), "q and lse must be on one device: ", q.device(), " vs ", lse.device());
    TORCH_CHECK(lse.scalar_type() == at::kFloat, "lse must be float32 (as forward makes it), got ", lse.scalar_type());
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
    auto delta = at::empty({bh, t}, lc.options());  // rowsum(grad_o * o), shared by both gradient kernels
    ATTENTION_DISPATCH(qc.scalar_type(), "attention_backward", [&] {
        attention_backward(brrr::data<scalar_t>(gc), brrr::data<scalar_t>(qc), brrr::data<scalar_t>(kc),
                           brrr::data<scalar_t>(vc), brrr::data<scalar_t>(oc), lc.data_ptr<float>(),
                           delta.data_ptr<float>(), brrr::data<scalar_t>(grad_q), brrr::data<scalar_t>(grad_k),
                           brrr::data<scalar_t>(grad_v), bh, t, d, brrr::stream());
    });
    BRRR_CHECK_LAUNCH();
    return {grad_q, grad_k, grad_v};
}

BRRR_BIND(m) {
    m.def("forward", &forward);
    m.def("backward", &backward);
}
