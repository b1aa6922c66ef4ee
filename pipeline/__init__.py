"""brrr: a staged kernel-development pipeline for PyTorch (reference -> numba -> CUDA C)."""

__version__ = "0.1.0"
