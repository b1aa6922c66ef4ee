"""`brrr debug OP --stage cuda`: gdb, stopped at the first line of a kernel in one thread, on kernel.cu.

The op's CUDA C stage is built for the CPU execution with -g -O0 (and the memory checks), and a
small driver process (this module run with `python -m`) makes the call under gdb: forward, or
forward then backward. Each GPU thread is a fiber on one OS thread; the scheduler keeps the
running block and thread in plain globals (brrr_cpu_debug_block/_thread), so a breakpoint on the
kernel conditioned on them stops in that one thread only. `next` over a __syncthreads lets the
other threads run and comes back to the same thread: gdb steps over the call by the frame's
stack address, and each fiber has a stack of its own.

`--index I` finds the thread that computes element I by running the call once first in this
process, with the checked build recording which kernel, block and thread last stored each byte
of every tensor argument, then asking who stored element I of the result.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ..base.errors import UsageError
from ..cuda.tokens import kernel_names
from ..op.contract import call_backward, call_forward, saved_tensors, visible
from ..op.spec import Op
from ..sim.writers import Dim3

GDB_MISSING = ("gdb not found: `brrr debug --stage cuda` runs the kernel under gdb. Install it: "
               "apt-get install gdb (Debian, Ubuntu), dnf install gdb (Fedora), "
               "conda install -c conda-forge gdb, or put it on PATH")


@dataclass(frozen=True)
class Target:
    """Where to stop: a kernel (None: any of kernel.cu's), a block and a thread."""

    kernel: str | None
    block: Dim3
    thread: Dim3
    index: int | None = None
    fault: str = ""  # the fault the call met while finding the thread: gdb runs to the faulting access instead


@dataclass(frozen=True)
class Library:
    """A CPU build of the op's CUDA C stage, as the driver loads it."""

    path: Path
    namespace: str


def find_gdb() -> str:
    gdb = os.environ.get("BRRR_GDB") or shutil.which("gdb")
    if gdb is None:
        raise UsageError(GDB_MISSING)
    return gdb


def _call(library: Library, op: Op, inputs: tuple[torch.Tensor, ...], upstream: tuple[torch.Tensor, ...],
          phase: str, arm: Any = None) -> tuple[torch.Tensor, ...]:
    """forward, then backward for the backward phase; arm(True/False) around the chosen phase."""
    spec = op.spec
    ns = getattr(torch.ops, library.namespace)
    arm = arm or (lambda on: None)
    if phase == "forward":
        arm(True)
        results = call_forward(spec, ns, inputs)
        arm(False)
        return visible(spec, results)
    results = call_forward(spec, ns, inputs)
    arm(True)
    grads = call_backward(spec, ns, upstream, saved_tensors(spec, inputs, results))
    arm(False)
    return grads


def _element_address(t: torch.Tensor, index: int) -> int:
    """The address of flat element `index` of t (row-major over its shape, any strides)."""
    offset = 0
    for size, stride in zip(reversed(t.shape), reversed(t.stride())):
        offset += (index % size) * stride
        index //= size
    return t.data_ptr() + offset * t.element_size()


def find_writer(library: Library, op: Op, inputs: tuple[torch.Tensor, ...], upstream: tuple[torch.Tensor, ...],
                phase: str, index: int) -> Target:
    """Run the call once, recording every store, and name the kernel, block and thread that stored
    element `index` of the (first) result last."""
    lib = ctypes.CDLL(str(library.path))
    record = lib.brrr_memcheck_record_writes
    record.argtypes = [ctypes.c_int]
    writer = lib.brrr_memcheck_writer
    writer.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                       ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint)]
    writer.restype = ctypes.c_int
    try:
        results = _call(library, op, inputs, upstream, phase, arm=lambda on: record(1 if on else 0))
    except RuntimeError as e:  # the memory checks (or a trap) stopped the call: stop at that access instead
        record(0)
        return Target(None, (0, 0, 0), (0, 0, 0), index, fault=str(e).strip().splitlines()[0])
    result = results[0]
    if not 0 <= index < result.numel():
        record(0)
        raise UsageError(f"--index {index} is outside the {phase} result of shape {tuple(result.shape)} "
                         f"({result.numel()} elements)")
    name = ctypes.create_string_buffer(512)
    block, thread = (ctypes.c_uint * 3)(), (ctypes.c_uint * 3)()
    found = writer(_element_address(result, index), name, len(name), block, thread)
    record(0)
    if not found:
        raise UsageError(f"no kernel wrote element {index} of the {phase} result (binding.cpp computed it, "
                         "or the element is never written)", hint="use --block and --thread")
    return Target(name.value.decode(), (block[0], block[1], block[2]), (thread[0], thread[1], thread[2]), index)


# Run when the runtime reports a fault (brrr_cpu::fault, called by the memory checks, __trap and the
# assertions): select the innermost frame in the op's own files, so gdb shows the faulting line of
# kernel.cu (or its header) with its locals, not the runtime's report.
_SELECT_USER_FRAME = """python
def brrr_select_user_frame(folder):
    frame = gdb.newest_frame()
    while frame is not None:
        sal = frame.find_sal()
        if sal.symtab is not None and sal.symtab.filename.startswith(folder):
            frame.select()
            print("brrr: stopped at the faulting access, in %s at %s:%d" % (frame.name(), sal.symtab.filename, sal.line))
            gdb.execute("frame")
            return
        frame = frame.older()
    print("brrr: the fault's frame in the op's files was not found; bt shows where it stopped")
end
"""


def gdb_script(library: Library, target: Target, kernels: list[str], folder: Path) -> str:
    """Commands gdb runs first: load only the op library's symbols (torch's would take long),
    break on the kernel's first line in the chosen thread (unless the call faults: then at the
    faulting access in the op's files, found in the checked build), run the driver to it."""
    b, t = target.block, target.thread
    armed = "*(int*)&brrr_debug_armed == 1"
    cond = " && ".join([f"((int*)&brrr_cpu_debug_block)[{i}] == {b[i]}" for i in range(3)]
                       + [f"((int*)&brrr_cpu_debug_thread)[{i}] == {t[i]}" for i in range(3)] + [armed])
    names = [] if target.fault else [target.kernel] if target.kernel else kernels
    where = f"block ({b[0]}, {b[1]}, {b[2]}) thread ({t[0]}, {t[1]}, {t[2]})"
    why = f", which computes element {target.index}" if target.index is not None else ""
    lib = re.escape(library.path.name)
    quoted = str(folder.resolve()).replace("\\", "\\\\").replace('"', '\\"')
    start = (f"echo brrr: the call faults ({target.fault}); running to the faulting access\\n" if target.fault else
             f"echo brrr: running {target.kernel or 'the kernels'} to {where}{why}\\n")
    lines = [
        "set pagination off",
        "set confirm off",
        "set breakpoint pending on",
        "set auto-solib-add off",
        "skip -gfi /usr/include/*",
        "skip -gfi /usr/lib/*",
        _SELECT_USER_FRAME,
        *_bthread(b, t),
        f"catch load {lib}",
        "commands",
        "silent",
        f"sharedlibrary {lib}",
        *[f"break '{n}' if {cond}" if "<" in n else f"break {n} if {cond}" for n in names],
        f"break brrr_cpu::fault if {armed}",
        "commands",
        "silent",
        f'python brrr_select_user_frame("{quoted}")',
        "end",
        "continue",
        "end",
        start,
        "run",
    ]
    return "\n".join(lines) + "\n"


def _bthread(block: Dim3, thread: Dim3) -> list[str]:
    """`bthread LOCATION`: a breakpoint at LOCATION (kernel.cu:54, a function) in the selected thread
    only. Conditioned on the scheduler's plain globals, which every fiber switch sets: a plain `break`
    fires in every fiber that reaches the line, so `next` would walk from thread to thread."""
    cond = " && ".join([f"((int*)&brrr_cpu_debug_block)[{i}] == {block[i]}" for i in range(3)]
                       + [f"((int*)&brrr_cpu_debug_thread)[{i}] == {thread[i]}" for i in range(3)])
    where = f"block ({block[0]}, {block[1]}, {block[2]}) thread ({thread[0]}, {thread[1]}, {thread[2]})"
    return ["define bthread", "  if $argc != 1",
            "    echo usage: bthread LOCATION (kernel.cu:54, a function): break there in the selected thread only\\n",
            "  else", f"    break $arg0 if {cond}", "  end", "end",
            "document bthread", f"bthread LOCATION: break at LOCATION in brrr's selected thread only, {where}.", "end"]


def save_session(path: Path, library: Library, op: Op, call: tuple[tuple[torch.Tensor, ...], tuple[torch.Tensor, ...]],
                 phase: str) -> None:
    """What the driver process (`drive`) replays: the library, the op, its inputs and upstream gradients."""
    inputs, upstream = call
    torch.save({"op": str(op.folder), "library": str(library.path), "namespace": library.namespace,
                "phase": phase, "inputs": list(inputs), "upstream": list(upstream)}, path)


def debug(library: Library, op: Op, inputs: tuple[torch.Tensor, ...], upstream: tuple[torch.Tensor, ...],
          phase: str, target: Target) -> int:
    """Start gdb on a driver process that makes the call; gdb reads the user's commands from stdin."""
    gdb = find_gdb()
    kernels = kernel_names(op.path("cuda").read_text())
    with tempfile.TemporaryDirectory(prefix="brrr-gdb-") as tmp:
        session = Path(tmp) / "session.pt"
        save_session(session, library, op, (inputs, upstream), phase)
        script = Path(tmp) / "start.gdb"
        script.write_text(gdb_script(library, target, kernels, op.folder))
        env = dict(os.environ, BRRR_CPU_WORKERS="1")  # the debug globals are kept in a one-worker run
        # python-scripts off: an interpreter's own gdb helpers would only warn about the safe path
        command = [gdb, "-q", "-iex", "set auto-load python-scripts off", "-x", str(script),
                   "--args", sys.executable, "-m", "brrr_kernels.debugger.cuda_stage", str(session)]
        return subprocess.run(command, env=env, check=False).returncode


def run(op_ref: str | None, **selection: Any) -> int:
    """`brrr debug OP --stage cuda` (keywords: debugger.Selection): pick the inputs and the thread,
    build, and hand over to gdb."""
    from ..cuda.cpu_build import DEBUG, build_cpu_extension
    from ..cuda.memcheck import install_allocation_registry
    from .numba_stage import Selection, chosen_inputs, dim3

    chosen = Selection(**selection)
    block, thread, index, kernel = chosen.block, chosen.thread, chosen.index, chosen.kernel
    find_gdb()  # before any build: a missing gdb is a usage error, said at once
    if index is None and (block is None or thread is None):
        raise UsageError("choose a thread: --index I, or --block X[,Y[,Z]] with --thread X[,Y[,Z]]")
    install_allocation_registry()  # before the inputs are made, so their extents are known
    op, phase, inputs, upstream = chosen_inputs(op_ref, chosen)
    ext = build_cpu_extension(op, DEBUG)
    library = Library(ext.library, ext.namespace)
    kernels = kernel_names(op.path("cuda").read_text())
    if kernel is not None and kernel not in kernels:
        raise UsageError(f"no kernel named {kernel!r} in {op.path('cuda').name}; it has: {', '.join(kernels) or 'none'}")
    if index is not None:
        target = find_writer(library, op, inputs, upstream, phase, index)
    else:
        target = Target(kernel, dim3(block), dim3(thread))  # type: ignore[arg-type]
    return debug(library, op, inputs, upstream, phase, target)


def drive(session_file: str) -> None:
    """The process gdb runs: load the saved inputs and the library, make the call."""
    from ..cuda.memcheck import install_allocation_registry
    from ..op.loaders import load_op

    # As in validate's checked build: the registry first, so the inputs (loaded next) and every output
    # have known extents. Without it the launch is unbounded and only the guess "near a __shared__
    # variable" remained, which called a correct store into y, allocated next to the block's shared
    # storage, an overrun of that variable.
    install_allocation_registry()
    data = torch.load(session_file, weights_only=True)
    op = load_op(data["op"])
    torch.ops.load_library(data["library"])
    library = Library(Path(data["library"]), data["namespace"])
    lib = ctypes.CDLL(data["library"])
    armed = ctypes.c_int.in_dll(lib, "brrr_debug_armed")

    def arm(on: bool) -> None:
        armed.value = 1 if on else 0

    _call(library, op, tuple(data["inputs"]), tuple(data["upstream"]), data["phase"], arm)
    print("brrr: the call returned", flush=True)


if __name__ == "__main__":
    for session in sys.argv[1:]:  # several replays share one start-up (tests)
        drive(session)
