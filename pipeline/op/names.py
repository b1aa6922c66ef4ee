"""The names every layer spells the same way: the stages, the files of an op folder, and the mark a
template carries until its user has written it. Nothing here imports torch or numba."""

from __future__ import annotations

from typing import Literal

StageName = Literal["reference", "numba", "cuda"]
STAGES: tuple[StageName, ...] = ("reference", "numba", "cuda")
# an op folder's files, in the order a reader meets them
STAGE_FILES = {"spec": "spec.py", "reference": "reference.py", "numba": "numba_kernel.py", "cuda": "kernel.cu",
               "binding": "binding.cpp"}
UNFINISHED_MARK = "brrr: unfinished"  # in the templates of kernel.cu and binding.cpp, until the user deletes it
