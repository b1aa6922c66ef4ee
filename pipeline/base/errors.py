"""Errors brrr reports to a person: a message, an exit code, no traceback unless --debug."""

from __future__ import annotations

from pathlib import Path

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_USAGE = 2


def is_device_fault(error: BaseException) -> bool:
    """A sticky CUDA error (a kernel's illegal address or instruction, a trap), as torch raises it: the
    GPU's, raised by whatever call came next, so never the fault of that call's author (a spec's
    make_inputs, say). validation/gpu_fault.py turns it into the row of the call that faulted."""
    return isinstance(error, RuntimeError) and "CUDA error:" in str(error)


def first_lines(text: str, n: int, sep: str = "\n") -> str:
    """A long message's first n non-blank lines (a compiler's or torch's error), joined by sep."""
    return sep.join([line for line in text.splitlines() if line.strip()][:n])


class BrrrError(Exception):
    """An error with a message meant for the user of the tool."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n  hint: {self.hint}"


class UsageError(BrrrError):
    """The command line asks for something that cannot be done (exit 2)."""


class OpLoadError(BrrrError):
    """An op folder or one of its stage files cannot be loaded (exit 2)."""


class BuildError(BrrrError):
    """nvcc or the extension build failed (exit 1: the cuda stage's compile check failed)."""

    exit_code = EXIT_CHECK_FAILED


class RefusedError(BrrrError):
    """brrr would have to overwrite something that exists (exit 1)."""

    exit_code = EXIT_CHECK_FAILED


class CheckFailed(BrrrError):
    """Something brrr checked is wrong and the command cannot go on (exit 1)."""

    exit_code = EXIT_CHECK_FAILED


def innermost_line_in(error: BaseException, path: Path) -> str:
    """":LINE" of the innermost frame of `error` that ran in the file `path`, or "" if none did."""
    tb = error.__traceback__
    line = ""
    while tb is not None:
        if Path(tb.tb_frame.f_code.co_filename).resolve() == path.resolve():
            line = f":{tb.tb_lineno}"
        tb = tb.tb_next
    return line
