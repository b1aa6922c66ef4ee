"""Stop inside one simulated GPU thread, or trace it line by line, in an op's numba stage; and keep
a failed check's inputs with the `brrr debug` command that replays it.

The CUDA simulator runs every thread of a block as a Python thread. A trace function installed
with threading.settrace sees each kernel call; it acts only in the thread whose blockIdx and
threadIdx were asked for, so the other threads run as usual and any block size works.
"""

from __future__ import annotations

import contextlib
import pdb
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

import torch

from ..base.errors import UsageError
from ..op.contract import call_backward, call_forward, saved_tensors, visible
from ..op.spec import Op, Phase
from ..sim.writers import Dim3
from ..verdict.faults import scalar_locals
from ..verdict.replay import load_failure

# pdb's `s` does not stop in these: at a call of a device function it goes through numba's
# dispatch and lands on the function's first line; at cuda.syncthreads() it steps over.
SIMULATOR_MODULES = ["numba.*", "numba_cuda.*", "contextlib", "threading", "importlib.*", "_frozen_importlib*",
                     "brrr_kernels.sim.*"]


@dataclass
class Session:
    """What one debug or trace run needs: the op, its inputs, and the thread to stop in."""

    op: Op
    inputs: tuple[torch.Tensor, ...]
    upstream: tuple[torch.Tensor, ...]
    phase: Phase  # whose launch to stop in
    block: Dim3
    thread: Dim3
    kernel: str | None = None
    index: int | None = None
    hits: list[str] = field(default_factory=list)


def dim3(text: str | tuple[int, ...] | int) -> Dim3:
    if isinstance(text, int):
        parts = [text]
    elif isinstance(text, tuple):
        parts = list(text)
    else:
        try:
            parts = [int(p) for p in text.split(",")]
        except ValueError as e:
            raise UsageError(f"expected X[,Y[,Z]] of integers, got {text!r}") from e
    if not 1 <= len(parts) <= 3 or any(p < 0 for p in parts):
        raise UsageError(f"expected 1 to 3 non-negative integers, got {text!r}")
    return tuple(parts + [0] * (3 - len(parts)))  # type: ignore[return-value]


def kernels_of(module: Any) -> dict[str, Any]:
    """The @cuda.jit kernels a numba stage module defines, by name."""
    return {name: obj for name, obj in vars(module).items() if hasattr(obj, "py_func") and hasattr(obj, "__getitem__")}


def _current_place() -> tuple[Dim3, Dim3] | None:
    t = threading.current_thread()
    if not hasattr(t, "blockIdx"):
        return None
    b, th = t.blockIdx, t.threadIdx
    return (b.x, b.y, b.z), (th.x, th.y, th.z)


@contextmanager
def trapped(codes: dict[Any, str], session: Session, on_hit: Callable[[FrameType, str], Any]) -> Iterator[None]:
    """While active, call on_hit(frame, kernel) when the chosen thread enters a chosen kernel, once."""
    fired = threading.Event()

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        if event != "call" or fired.is_set() or frame.f_code not in codes:
            return None
        if _current_place() != (session.block, session.thread):
            return None
        fired.set()
        session.hits.append(codes[frame.f_code])
        return on_hit(frame, codes[frame.f_code])

    threading.settrace(tracer)
    try:
        yield
    finally:
        threading.settrace(None)  # type: ignore[arg-type]


def run_op(session: Session, module: Any, arm: Callable[[], Any]) -> tuple[torch.Tensor, ...]:
    """Forward, then backward if the phase asks for it; the trap is armed only for that phase."""
    spec = session.op.spec
    if session.phase == "forward":
        with arm():
            return visible(spec, call_forward(spec, module, session.inputs))
    results = call_forward(spec, module, session.inputs)
    saved = saved_tensors(spec, session.inputs, results)
    with arm():
        return call_backward(spec, module, session.upstream, saved)


def chosen_codes(module: Any, kernel: str | None) -> dict[Any, str]:
    found = kernels_of(module)
    if kernel is not None:
        if kernel not in found:
            raise UsageError(f"no kernel named {kernel!r} in the numba stage; it has: {', '.join(found) or 'none'}")
        found = {kernel: found[kernel]}
    return {k.py_func.__code__: name for name, k in found.items()}


def _not_reached(session: Session) -> UsageError:
    return UsageError(
        f"block {session.block} thread {session.thread} never entered "
        f"{session.kernel or 'any kernel'} during {session.phase}: the launch is smaller, or that thread returned first",
        hint="pick a block and thread inside the launch, or use --index I",
    )


def debug(session: Session, module: Any, stdin: TextIO | None = None, stdout: TextIO | None = None) -> tuple[torch.Tensor, ...]:
    """Open pdb at the first line of the chosen kernel, in the chosen thread only."""
    codes = chosen_codes(module, session.kernel)

    def on_hit(frame: FrameType, name: str) -> Any:
        out = stdout or sys.stdout
        out.write(f"brrr: stopped in {name}, block {session.block} thread {session.thread}"
                  + (f" (computes element {session.index})" if session.index is not None else "") + "\n")
        out.flush()
        debugger = pdb.Pdb(stdin=stdin, stdout=stdout, skip=SIMULATOR_MODULES)
        debugger.use_rawinput = stdin is None
        debugger.set_trace(frame)
        return debugger.trace_dispatch  # the kernel frame's own tracer: pdb, from its first line

    from ..sim.scheduler import time_limit

    with time_limit(None):  # a person at the pdb prompt is not a kernel spinning
        results = run_op(session, module, lambda: trapped(codes, session, on_hit))
    if not session.hits:
        raise _not_reached(session)
    return results


# --- trace ----------------------------------------------------------------------------------


def _fmt(v: Any) -> str:
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def trace(session: Session, module: Any, out: TextIO) -> tuple[torch.Tensor, ...]:
    """Print each kernel line the chosen thread executes with the locals it changed, and its writes."""
    from ..sim.numba_internals import internal

    FakeWithinKernelCUDAArray = internal("cudadrv.devicearray", "FakeWithinKernelCUDAArray")

    codes = chosen_codes(module, session.kernel)
    lines_of: dict[str, list[str]] = {}
    target = threading.local()

    def on_hit(frame: FrameType, name: str) -> Callable[..., Any]:
        source = Path(frame.f_code.co_filename)
        lines_of[name] = source.read_text().splitlines()
        out.write(f"{name}  block {session.block} thread {session.thread}  ({source.name})\n")
        state = {"line": None, "locals": {}}
        target.on, target.writes = True, []

        def flush(frame: FrameType) -> None:
            now = scalar_locals(frame.f_locals)
            changed = {k: v for k, v in now.items() if state["locals"].get(k, object()) != v}
            if state["line"] is not None:
                text = lines_of[name][state["line"] - 1].strip()
                shown = "  ".join(f"{k}={_fmt(v)}" for k, v in changed.items())
                out.write(f"  {state['line']:4d}  {text:<44s} {shown}".rstrip() + "\n")
            for write in target.writes:
                out.write(f"        wrote {write}\n")
            target.writes.clear()
            state["locals"] = now

        def local(frame: FrameType, event: str, arg: Any) -> Any:
            if event in ("line", "return"):
                flush(frame)
                state["line"] = frame.f_lineno if event == "line" else None
            if event == "return":
                target.on = False
            return local

        return local

    original = FakeWithinKernelCUDAArray.__setitem__

    def recording_setitem(self: Any, idx: Any, val: Any) -> None:
        original(self, idx, val)
        if getattr(target, "on", False):
            caller = sys._getframe(1).f_locals
            name = next((k for k, v in caller.items() if v is self), "array")
            key = ",".join(str(int(i)) for i in (idx if isinstance(idx, tuple) else (idx,)))
            target.writes.append(f"{name}[{key}] = {_fmt(scalar_locals({'v': val}).get('v', val))}")

    FakeWithinKernelCUDAArray.__setitem__ = recording_setitem
    try:
        results = run_op(session, module, lambda: trapped(codes, session, on_hit))
    finally:
        FakeWithinKernelCUDAArray.__setitem__ = original
    if not session.hits:
        raise _not_reached(session)
    return results


# --- choosing the inputs and the thread ---------------------------------------------------------

DTYPES = {"float32": torch.float32, "float64": torch.float64}


@dataclass(frozen=True)
class Selection:
    """Which thread to stop in and on which inputs: `brrr debug`'s flags, as keywords of `prepare`."""

    block: str | tuple[int, ...] | int | None = None
    thread: str | tuple[int, ...] | int | None = None
    index: int | None = None
    input_file: str | Path | None = None
    dtype: str = "float32"
    phase: str = "forward"
    kernel: str | None = None
    seed: int = 0


def chosen_inputs(op_ref: str | None, chosen: Selection) -> tuple[Op, str, tuple[torch.Tensor, ...],
                                                                  tuple[torch.Tensor, ...]]:
    """The op, phase, inputs and upstream gradients of a debug run (numba or cuda stage): those a
    failed validation saved (--input), or fresh ones of the op's largest simulator size."""
    from ..op.loaders import load_op, load_reference

    input_file, dtype, phase, seed = chosen.input_file, chosen.dtype, chosen.phase, chosen.seed
    saved: dict[str, Any] = {}
    if input_file is not None:
        saved = load_failure(Path(input_file))
        op_ref = op_ref or saved["op"]
        phase = saved.get("phase", phase)
    if op_ref is None:
        raise UsageError("name an op (or give --input FILE saved by a failed validation)")
    op = load_op(op_ref)
    spec = op.spec
    if dtype not in DTYPES:
        raise UsageError(f"--dtype must be one of {', '.join(DTYPES)}")
    if phase not in ("forward", "backward"):
        raise UsageError("--phase must be forward or backward")
    if saved:
        return op, phase, tuple(saved["inputs"]), tuple(saved["upstream"])
    gen = torch.Generator().manual_seed(seed)
    inputs = spec.make_inputs(spec.sim_sizes[-1], DTYPES[dtype], torch.device("cpu"), gen)
    shapes = [o.shape for o in visible(spec, call_forward(spec, load_reference(op), inputs))]
    upstream = tuple(torch.randn(s, dtype=DTYPES[dtype], generator=gen) for s in shapes)
    return op, phase, tuple(inputs), upstream


def prepare(op_ref: str | None, **selection: Any) -> tuple[Session, Any]:
    """Load the op's numba stage in the simulator and pick the inputs and the thread (keywords: `Selection`)."""
    from ..op.loaders import load_numba
    from ..sim.numba_env import use_simulator

    chosen = Selection(**selection)
    block, thread, index, kernel = chosen.block, chosen.thread, chosen.index, chosen.kernel
    use_simulator(True)
    op, phase, inputs, upstream = chosen_inputs(op_ref, chosen)
    stage = load_numba(op, gpu=False)
    if index is not None:
        shape = tuple(upstream[0].shape) if phase == "forward" else tuple(inputs[0].shape)
        total = int(torch.Size(shape).numel())
        if not 0 <= index < total:
            raise UsageError(f"--index {index} is outside the {phase} result of shape {shape} ({total} elements)")
        probe = Session(op=op, inputs=tuple(inputs), upstream=tuple(upstream), phase=phase, block=(0, 0, 0),
                        thread=(0, 0, 0))
        b, t, written_by = _writer(probe, stage.module, index)
        kernel = kernel or written_by
    elif block is not None and thread is not None:
        b, t = dim3(block), dim3(thread)
    else:
        raise UsageError("choose a thread: --index I, or --block X[,Y[,Z]] with --thread X[,Y[,Z]]")
    session = Session(op=op, inputs=tuple(inputs), upstream=tuple(upstream), phase=phase,
                      block=dim3(b), thread=dim3(t), kernel=kernel, index=index)
    return session, stage.module


def _writer(probe: Session, module: Any, index: int) -> tuple[Dim3, Dim3, str]:
    """The block, thread and kernel that wrote element `index` of the phase's first result, as the
    simulator saw it in one run of the op (the simulator is deterministic: the debug run is the same)."""
    from ..sim.writers import writer_of

    result = run_op(probe, module, contextlib.nullcontext)[0]
    writer = writer_of(result, index)
    if writer is None:
        raise UsageError(f"no simulated thread wrote element {index} of the {probe.phase} result: it stays unwritten",
                         hint="pick a thread with --block/--thread")
    return writer.block, writer.thread, writer.kernel
