"""An op's stages as real PyTorch ops: `register("OP")` gives torch.ops.brrr.NAME (and NAME_backward).

The stable face over validation/torch_library.py, which says how (reference on CPU tensors, the cuda
stage on CUDA tensors, the reference as the fake implementation, autograd from the spec)."""

from __future__ import annotations

from .validation.torch_library import define, register, registered

__all__ = ["define", "register", "registered"]
