// elementwise_mult.cu
// my_kernel/kernel/elementwise_mult.cu
#include <torch/extension.h>
#include <cuda_runtime.h>

// Macro to check if a tensor is on CUDA
#define CHECK_CUDA(x) TORCH_CHECK(x.is_cuda(), #x " must be a CUDA tensor!")
// Macro to check if a tensor is contiguous in memory
#define CHECK_CONTIGUOUS(x) TORCH_CHECK(x.is_contiguous(), #x " must be contiguous!")
// Macro to check if a tensor has the expected data type (float in this case)
#define CHECK_INPUT_TYPE(x) TORCH_CHECK(x.dtype() == torch::kFloat, #x " must be of float type!")

// CUDA kernel for element-wise multiplication
__global__ void elementwise_mult_kernel(
    const float* __restrict__ a,
    const float* __restrict__ b,
    float* __restrict__ result,
    int n
) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) {
        result[idx] = a[idx] * b[idx];
    }
}

// PyTorch wrapper function for the CUDA kernel.
void elementwise_mult_torch(
    torch::Tensor a,
    torch::Tensor b,
    torch::Tensor result // The output tensor, pre-allocated by PyTorch
) {
    // Perform checks on input tensors to ensure they meet the kernel's requirements.
    CHECK_CUDA(a);
    CHECK_CUDA(b);
    CHECK_CUDA(result);
    CHECK_CONTIGUOUS(a);
    CHECK_CONTIGUOUS(b);
    CHECK_CONTIGUOUS(result);
    CHECK_INPUT_TYPE(a);
    CHECK_INPUT_TYPE(b);
    CHECK_INPUT_TYPE(result);

    TORCH_CHECK(a.numel() == b.numel(), "Input tensors must have the same number of elements!");
    TORCH_CHECK(a.numel() == result.numel(), "Result tensor must have the same number of elements as inputs!");

    // Get the total number of elements in the tensors.
    int n = a.numel();

    int block_size = 256;
    int num_blocks = (n + block_size - 1) / block_size;

    // Launch the CUDA kernel.
    elementwise_mult_kernel<<<num_blocks, block_size>>>(
        a.data_ptr<float>(),
        b.data_ptr<float>(),
        result.data_ptr<float>(),
        n
    );
    cudaDeviceSynchronize();
}

// PYBIND11_MODULE is a macro that creates the entry point for the Python module.
// The first argument "elementwise_mult" is the name of the Python module that will be imported.
// The second argument "m" is a pybind11::module object, through which we can define functions, classes, etc.
PYBIND11_MODULE(elementwise_mult, m) {
    // m.def() binds a C++ function to a Python function.
    // "elementwise_mult": The name of the function as it will appear in Python.
    // &elementwise_mult_torch: A pointer to the C++ function to be exposed.
    // "Element-wise multiplication of two tensors": A docstring for the Python function.
    m.def("elementwise_mult", &elementwise_mult_torch, "Element-wise multiplication of two tensors");

}

// Check macros
#define CHECK_CUDA(x) TORCH_CHECK(x.is_cuda(), #x " must be a CUDA tensor")
#define CHECK_CONTIGUOUS(x) TORCH_CHECK(x.is_contiguous(), #x " must be contiguous")

// PyBind11 module
PYBIND11_MODULE(elementwise_mult, m) {
    m.def("elementwise_mult", &elementwise_mult_torch, "Element-wise multiplication of two tensors");
}
