// A TORCH_LIBRARY project's CUDA file, written the way PyTorch's custom-op tutorial writes one: the
// wrappers in a namespace, registered for the CUDA dispatch key, asserting the device type, on
// the current stream from ATen/cuda/CUDAContext.h (which includes cuSPARSE's and cuBLAS's headers),
// launches checked with c10/cuda/CUDAException.h's macro;
// and, in the older idiom of the LLTM tutorial, `x.type().is_cuda()` and a packed accessor with
// torch::RestrictPtrTraits (which torch declares for nvcc only).
#include <ATen/Operators.h>
#include <torch/all.h>
#include <torch/library.h>

#include <cuda.h>
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

namespace brrr_registered {

__global__ void fma_kernel(int64_t numel, const float* a, const float* b, float c, float* result) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx < numel) result[idx] = a[idx] * b[idx] + c;
}

__global__ void mul_kernel(const torch::PackedTensorAccessor64<float, 1, torch::RestrictPtrTraits> a,
                           const torch::PackedTensorAccessor64<float, 1, torch::RestrictPtrTraits> b,
                           torch::PackedTensorAccessor64<float, 1, torch::RestrictPtrTraits> result) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx < result.size(0)) result[idx] = a[idx] * b[idx];
}

static void check(const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(a.sizes() == b.sizes());
  TORCH_CHECK(a.dtype() == at::kFloat && b.dtype() == at::kFloat);
  TORCH_INTERNAL_ASSERT(a.device().type() == at::DeviceType::CUDA);
  TORCH_INTERNAL_ASSERT(b.device() == a.device() && b.device().type() == c10::kCUDA);
  TORCH_CHECK(a.type().is_cuda(), "a must be a CUDA tensor");
}

at::Tensor myfma_cuda(const at::Tensor& a, const at::Tensor& b, double c) {
  check(a, b);
  at::Tensor a_contig = a.contiguous();
  at::Tensor b_contig = b.contiguous();
  at::Tensor result = at::empty(a_contig.sizes(), a_contig.options());
  const int64_t numel = a_contig.numel();
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  fma_kernel<<<(numel + 255) / 256, 256, 0, stream>>>(numel, a_contig.data_ptr<float>(), b_contig.data_ptr<float>(),
                                                     static_cast<float>(c), result.data_ptr<float>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return result;
}

at::Tensor mymul_cuda(const at::Tensor& a, const at::Tensor& b) {
  check(a, b);
  at::Tensor a_flat = a.contiguous().view(-1);
  at::Tensor b_flat = b.contiguous().view(-1);
  at::Tensor result = at::empty(a_flat.sizes(), a_flat.options().device(torch::kCUDA));
  const int64_t numel = a_flat.numel();
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  mul_kernel<<<(numel + 255) / 256, 256, 0, stream>>>(a_flat.packed_accessor64<float, 1, torch::RestrictPtrTraits>(),
                                                     b_flat.packed_accessor64<float, 1, torch::RestrictPtrTraits>(),
                                                     result.packed_accessor64<float, 1, torch::RestrictPtrTraits>());
  return result.view(a.sizes());
}

TORCH_LIBRARY_IMPL(brrr_registered, CUDA, m) {
  m.impl("myfma", &myfma_cuda);
  m.impl("mymul", &mymul_cuda);
}

}  // namespace brrr_registered
