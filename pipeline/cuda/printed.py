"""A kernel's device printf lines on the CPU, taken from brrr's runtime instead of stdout.

The runtime keeps each launch's printf lines, prefixed with block and thread, and writes them to
stdout at the launch's end (include/cpu/brrr_cpu_runtime.cpp). Validation asks it to keep them
instead, and takes them after each call, so they land in the row of the check that made them (the
table and --json) rather than scrolled past on a terminal, or lost in a child process's stdout.
"""

from __future__ import annotations

import ctypes
from pathlib import Path


class Printed:
    """The printf collector of one loaded library holding brrr's CPU runtime."""

    def __init__(self, library: Path | str) -> None:
        self.lib = ctypes.CDLL(str(library))
        self.lib.brrr_cpu_take_printed.restype = ctypes.c_size_t
        self.lib.brrr_cpu_take_printed.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        self.lib.brrr_cpu_keep_printed.argtypes = [ctypes.c_int]

    def keep(self, on: bool = True) -> None:
        """Keep the lines for `take` (True), or print them at each launch's end as a program would."""
        self.lib.brrr_cpu_keep_printed(int(on))

    def take(self) -> str:
        """The lines kept since the last take, and forget them."""
        size = self.lib.brrr_cpu_take_printed(None, 0)
        if size == 0:
            return ""
        buffer = ctypes.create_string_buffer(size)
        self.lib.brrr_cpu_take_printed(buffer, size)
        return buffer.raw[:size].decode(errors="replace")
