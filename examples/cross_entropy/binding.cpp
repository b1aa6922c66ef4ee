// cross_entropy, CUDA C stage, host side: forward and backward on torch tensors (the functions every
// stage defines), checking their inputs, allocating outputs and calling kernel.cu's launchers.
// Nothing to fill in here unless the op's shapes differ from logits [rows, classes], target [rows] -> loss [rows].
#include <cstdint>
#include <limits>

#include "brrr.cuh"

// Defined in kernel.cu for float and double scores; the targets are int64.
template <typename T>
void cross_entropy_forward(const T* logits, const int64_t* target, T* loss, int64_t rows, int64_t cols, cudaStream_t stream);
template <typename T>
void cross_entropy_backward(const T* grad_loss, const T* logits, const int64_t* target, T* grad_logits, int64_t rows, int64_t cols,
                      cudaStream_t stream);

static void check_shapes(const at::Tensor& logits, const at::Tensor& target) {
    brrr::check_input(logits, "logits");
    TORCH_CHECK(logits.dim() == 2, "logits must be [rows, classes], got shape ", logits.sizes());
    TORCH_CHECK(logits.size(0) <= std::numeric_limits<int32_t>::max(),
                "logits: one block per row allows at most 2^31 - 1 rows, got ", logits.size(0));
    TORCH_CHECK(target.scalar_type() == at::kLong, "target must be int64, got ", target.scalar_type());
    TORCH_CHECK(target.device() == logits.device(), "target must be on logits's device ", logits.device(), ", got ", target.device());
    TORCH_CHECK(target.dim() == 1 && target.size(0) == logits.size(0), "target must be [rows] = [", logits.size(0), "], got shape ",
                target.sizes());
}

at::Tensor forward(at::Tensor logits, at::Tensor target) {
    check_shapes(logits, target);
    BRRR_DEVICE_GUARD(logits);
    auto ac = logits.contiguous();
    auto bc = target.contiguous();
    const int64_t rows = ac.size(0), cols = ac.size(1);
    auto loss = at::empty({rows}, ac.options());
    if (rows == 0) return loss;
    AT_DISPATCH_FLOATING_TYPES(ac.scalar_type(), "cross_entropy_forward", [&] {
        cross_entropy_forward(brrr::data<scalar_t>(ac), bc.data_ptr<int64_t>(), brrr::data<scalar_t>(loss), rows, cols,
                        brrr::stream());
    });
    BRRR_CHECK_LAUNCH();
    return loss;
}

// One gradient: target is integer and takes none.
at::Tensor backward(at::Tensor grad_loss, at::Tensor logits, at::Tensor target) {
    check_shapes(logits, target);
    brrr::check_compatible(logits, grad_loss, "logits", "grad_loss");
    TORCH_CHECK(grad_loss.dim() == 1 && grad_loss.size(0) == logits.size(0), "grad_loss must be [rows], got shape ",
                grad_loss.sizes());
    BRRR_DEVICE_GUARD(logits);
    auto gc = grad_loss.contiguous();
    auto ac = logits.contiguous();
    auto bc = target.contiguous();
    const int64_t rows = ac.size(0), cols = ac.size(1);
    auto grad_logits = at::empty_like(ac);
    if (ac.numel() == 0) return grad_logits;
    AT_DISPATCH_FLOATING_TYPES(ac.scalar_type(), "cross_entropy_backward", [&] {
        cross_entropy_backward(brrr::data<scalar_t>(gc), brrr::data<scalar_t>(ac), bc.data_ptr<int64_t>(),
                         brrr::data<scalar_t>(grad_logits), rows, cols, brrr::stream());
    });
    BRRR_CHECK_LAUNCH();
    return grad_logits;
}

BRRR_BIND(m) {
    m.def("forward", &forward);
    m.def("backward", &backward);
}
