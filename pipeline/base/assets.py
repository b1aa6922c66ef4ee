"""Where brrr's own files lie inside the installed package: the CUDA C headers and the templates."""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent
INCLUDE_DIR = PACKAGE_DIR / "include"        # brrr.cuh, brrr_kernel.cuh: what every op's CUDA C includes
CPU_INCLUDE = INCLUDE_DIR / "cpu"            # the CPU execution's stand-ins for CUDA's headers, and its runtime
TEMPLATES = PACKAGE_DIR / "templates"        # brrr new's op folders, brrr export's package
