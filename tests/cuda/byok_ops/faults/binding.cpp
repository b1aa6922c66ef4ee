// Host side: forward (a correct copy) and the two faulting calls the tests make directly.
#include "brrr.cuh"

void copy(float* out, const float* inp1, int64_t n, cudaStream_t stream);
void copy_past_end(float* out, const float* inp1, int64_t n, cudaStream_t stream);
void float4_offset(float* out, const float* inp1, int64_t n4, cudaStream_t stream);
void helper_past_end(float* out, const float* inp1, int64_t n, cudaStream_t stream);

at::Tensor forward(at::Tensor x) {
    brrr::check_input(x, "x");
    BRRR_DEVICE_GUARD(x);
    auto xc = x.contiguous();
    auto y = at::empty_like(xc);
    if (xc.numel() > 0) copy(brrr::data<float>(y), brrr::data<float>(xc), xc.numel(), brrr::stream());
    BRRR_CHECK_LAUNCH();
    return y;
}

at::Tensor forward_past_end(at::Tensor x) {
    auto y = at::empty_like(x);
    copy_past_end(brrr::data<float>(y), brrr::data<float>(x), x.numel(), brrr::stream());
    BRRR_CHECK_LAUNCH();
    return y;
}

at::Tensor forward_helper_past_end(at::Tensor x) {
    auto y = at::empty_like(x);
    helper_past_end(brrr::data<float>(y), brrr::data<float>(x), x.numel(), brrr::stream());
    BRRR_CHECK_LAUNCH();
    return y;
}

at::Tensor forward_float4_offset(at::Tensor x) {
    const int64_t n4 = (x.numel() - 1) / 4;
    auto y = at::empty({n4}, x.options());
    float4_offset(brrr::data<float>(y), brrr::data<float>(x), n4, brrr::stream());
    BRRR_CHECK_LAUNCH();
    return y;
}

BRRR_BIND(m) {
    m.def("forward", &forward);
    m.def("forward_past_end", &forward_past_end);
    m.def("forward_float4_offset", &forward_float4_offset);
    m.def("forward_helper_past_end", &forward_helper_past_end);
}
