"""An exception raised inside a stage, reduced to the facts a person needs: the stage's own file,
line and source line, and, in numba's simulator, the block and thread and that thread's locals."""

from __future__ import annotations

import re
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base.files import shown

_SIM_PLACE = re.compile(r"tid=\[(\d+), (\d+), (\d+)\] ctaid=\[(\d+), (\d+), (\d+)\](?::\s*)?")
# The first line of a fault from the cuda stage executed on the CPU (include/cpu/brrr_cpu_runtime.cpp):
# "FILE:LINE: KIND in KERNEL, block (x, y, z)[, thread (x, y, z)]: DETAIL".
_CPU_FAULT = re.compile(r"^(?P<file>/[^:\n]+):(?P<line>\d+): (?P<kind>[^\n]+?) in (?P<kernel>[^\n]+?), "
                        r"block \((?P<block>\d+, \d+, \d+)\)(?:, thread \((?P<thread>\d+, \d+, \d+)\))?: "
                        r"(?P<detail>[^\n]*)", re.M)
_ABSOLUTE = re.compile(r"(/[^\s:,()]+)")


@dataclass
class StageFault:
    """An exception from a stage call, reduced to the facts a person needs."""

    message: str
    file: str | None = None
    line: int | None = None
    function: str | None = None
    source_line: str | None = None
    block: tuple[int, int, int] | None = None
    thread: tuple[int, int, int] | None = None
    locals: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        parts = []
        if self.file:
            parts.append(f"{self.file}:{self.line} in {self.function}")
        if self.block is not None:
            parts.append(f"block {self.block} thread {self.thread}")
        head = ", ".join(parts)
        text = f"{head}: {self.message}" if head else self.message
        if self.source_line:
            text += f"\n      {self.source_line.strip()}"
        if self.locals:
            text += "\n      locals: " + ", ".join(f"{k}={v}" for k, v in self.locals.items())
        return text


# A fault as describe() writes it: "FILE:LINE in FUNCTION, block (..) thread (..): KIND: ...".
_DESCRIBED = re.compile(r"(?P<file>[^\s:\[\]]+):(?P<line>\d+) in (?P<function>[^\n]+?), block \([\d, ]+\) "
                        r"thread \([\d, ]+\): (?P<kind>[^:\n]+)")


def fault_key(text: str) -> str:
    """What makes two reports the same fault, met again in another case or row: the file, line and
    kind of a located kernel fault (its block, thread, element and locals differ from case to case),
    or else the text itself."""
    for pattern in (_DESCRIBED, _CPU_FAULT):
        m = pattern.search(text)
        if m:
            return f"{Path(m.group('file')).name}:{m.group('line')}: {m.group('kind').strip()}"
    return text


def scalar_locals(frame_locals: dict[str, Any]) -> dict[str, Any]:
    """The plain numbers among a frame's locals (Python or numpy scalars), as Python numbers."""
    scalars = {}
    for k, v in frame_locals.items():
        if isinstance(v, (int, float)) or type(v).__module__ == "numpy" and getattr(v, "ndim", 1) == 0:
            scalars[k] = v.item() if hasattr(v, "item") else v
    return scalars


def cpu_fault(error: BaseException) -> StageFault | None:
    """The facts of a fault the CPU execution of the cuda stage reported (kernel.cu:line, kernel,
    block, thread), or None if `error` is not one."""
    m = _CPU_FAULT.search(str(error))
    if not m:
        return None
    path = Path(m.group("file"))
    line = int(m.group("line"))
    detail = _ABSOLUTE.sub(lambda p: shown(Path(p.group(1))) if Path(p.group(1)).is_file() else p.group(1),
                           m.group("detail"))
    fault = StageFault(message=f"{m.group('kind')}: {detail}", file=shown(path), line=line, function=m.group("kernel"))
    fault.block = tuple(int(v) for v in m.group("block").split(", "))  # type: ignore[assignment]
    if m.group("thread"):
        fault.thread = tuple(int(v) for v in m.group("thread").split(", "))  # type: ignore[assignment]
    if path.is_file():
        lines = path.read_text().splitlines()
        fault.source_line = lines[line - 1] if 0 < line <= len(lines) else None
    return fault


def fault_from(error: BaseException, stage_file: Path) -> StageFault:
    """Name the stage's own file and line (innermost frame in it) and, in the simulator, the thread."""
    found = cpu_fault(error)
    if found is not None:
        return found
    message = f"{type(error).__name__}: {error}"
    fault = StageFault(message=message)
    m = _SIM_PLACE.search(str(error))
    if m:
        fault.thread = tuple(int(v) for v in m.groups()[:3])  # type: ignore[assignment]
        fault.block = tuple(int(v) for v in m.groups()[3:])  # type: ignore[assignment]
        fault.message = f"{type(error).__name__}: {_SIM_PLACE.sub('', str(error)) or '(no message)'}"
    target = stage_file.resolve()
    for frame, lineno in traceback.walk_tb(error.__traceback__):
        if Path(frame.f_code.co_filename).resolve() == target:
            fault.file = shown(stage_file)
            fault.line = lineno
            fault.function = frame.f_code.co_name
            fault.locals = scalar_locals(frame.f_locals) if fault.block is not None else {}
    if fault.line is not None:
        lines = stage_file.read_text().splitlines()
        if 0 < fault.line <= len(lines):
            fault.source_line = lines[fault.line - 1]
    if not fault.file and isinstance(error, RuntimeError):
        fault.message = f"{type(error).__name__}: {_first_lines(str(error))}"
    return fault


def _first_lines(text: str, n: int = 3) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("Exception raised from")]
    return "\n".join(lines[:n])
