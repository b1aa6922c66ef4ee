"""The cuda stage's toolchain: compile kernel.cu and binding.cpp for a GPU (nvcc) or for execution on
the CPU (the host compiler and brrr's runtime in include/cpu), and the memory checks of that build.

Layer map:

    builder     nvcc and the host compiler, objects cached by content, link and load on a GPU
    device_check  nvcc's compile check beside the CPU execution: every step but the host object (--cuda)
    cpu_build   the op's own CUDA C built and linked for execution on the CPU
    cpu_source  kernel.cu as C++ the host compiler can build
    cpu_deduce  template kernels launched by their bare name: deduced as a call would on the GPU
    cpu_ptx     inline PTX (mma.sync, ldmatrix, cp.async, ld/st, ...) as calls of the CPU runtime
    cpu_ptx_blocks  a block of PTX: .reg locals, setp/selp, @p guards around instructions cpu_ptx runs
    cpu_ptx_alu  integer, bit and float (f32, f64, f16x2, bf16x2) arithmetic instructions
    cpu_ptx_atom  atom and red as CUDA's atomic functions
    cpu_ptx_cvt  one-element cvt between the integer and float types
    cpu_ptx_warp  shfl/vote/redux/elect.sync, activemask, bar.warp.sync, bar.sync 0 as CUDA's warp functions
    cpu_ptx_operands  an asm statement's operands and the C++ of a register, immediate or address
    tokens      the one reader of CUDA C++: masking, tokens, top-level splits, kernel names
    memcheck    what the checked CPU build adds: bounds of tensors and shared memory
    isolated    the CPU build's calls in a child process: a crash is one call's fault, not brrr's end
    isolated_targets  what that child loads: the torch.ops library, or the author's own module and its spec's calls
    printed     a kernel's device printf lines taken from the CPU runtime for validation's rows
    cpu_includes  the op folder's headers rewritten for the CPU, stand-ins for headers brrr cannot provide
    module_source  an author's own torch extension (.cu with wrapper and PYBIND11_MODULE) made ready to build
    module_build  that extension built and imported for the CPU or a GPU, its functions bound by the spec
    guards      guard bands: every tensor a cuda-stage call receives or allocates between canary bytes
"""
