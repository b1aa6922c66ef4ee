"""`brrr walkthrough`: the six steps from a PyTorch function to a checked CUDA kernel, run live."""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

import torch

from ..base.errors import EXIT_OK, BrrrError
from ..op.spec import Op

Step = Callable[["Tour"], None]


class Tour:
    def __init__(self, op: Op, out: TextIO, pause: bool) -> None:
        self.op = op
        self.out = out
        self.pause = pause
        self.gpu = torch.cuda.is_available()

    def say(self, text: str) -> None:
        # One paragraph: the source's line breaks and indentation are not the narration's.
        self.out.write(textwrap.fill(" ".join(text.split()), width=96) + "\n\n")

    def show(self, path: Path, first: int = 1, last: int | None = None) -> None:
        self.show_text(path.name, path.read_text(), first, last)

    def show_text(self, title: str, text: str, first: int = 1, last: int | None = None) -> None:
        lines = text.splitlines()[first - 1 : last]
        code = "\n".join(lines)
        name = title.split()[0]
        if self.out.isatty():
            try:
                from pygments import highlight
                from pygments.formatters import TerminalFormatter
                from pygments.lexers import get_lexer_for_filename

                code = highlight(code, get_lexer_for_filename(name), TerminalFormatter()).rstrip("\n")
            except ImportError:  # highlighting is a nicety; plain text says the same
                pass
        self.out.write(f"--- {title} ---\n")
        for n, line in enumerate(code.splitlines(), start=first):
            self.out.write(f"{n:4d} | {line}\n")
        self.out.write("\n")

    def wait(self) -> None:
        if self.pause and sys.stdin.isatty():
            input("  [Enter for the next step] ")


def step_reference(t: Tour) -> None:
    t.say(f"""Step 1: the op in plain PyTorch. Every brrr op starts as two functions, forward and backward,
    in {t.op.folder.name}/reference.py. This is the contract the kernels must meet later, written where a
    debugger, a notebook and all of PyTorch are at hand. For sigmoid, the stable form picks, per element,
    the branch in which exp never sees a large positive number, and backward reuses the forward
    output: sigma'(x) = y (1 - y).""")
    t.show(t.op.path("reference"))


def step_gradcheck(t: Tour) -> None:
    from ..op.loaders import load_reference
    from ..validation.function import apply

    t.say("""Step 2: does backward really differentiate forward? torch.autograd.gradcheck perturbs each
    input element, measures the change of the outputs numerically and compares with what backward
    returns. In float64 the two agree to many digits, so a wrong backward cannot hide. brrr wraps any
    stage in one autograd.Function so gradcheck can call it. Running it now:""")
    spec = t.op.spec
    ref = load_reference(t.op)
    inputs = spec.make_inputs(spec.gradcheck_size, torch.float64, torch.device("cpu"), torch.Generator().manual_seed(0))
    xs = tuple(x.requires_grad_() for x in inputs)
    ok = torch.autograd.gradcheck(lambda *a: apply(ref, *a), xs)
    t.out.write(f"  gradcheck(reference, float64, size {spec.gradcheck_size}) -> {ok}\n\n")


def step_numba(t: Tour) -> None:
    from ..debugger.numba_stage import prepare, trace
    from ..op.loaders import load_numba, load_reference

    t.say("""Step 3: the same op as GPU kernels, in Python. numba_kernel.py holds @cuda.jit kernels with the
    same forward and backward names. Each thread computes one element; it finds its element from its
    block and thread index and returns if it is past the end (the last block is usually partial).""")
    t.show(t.op.path("numba"))
    t.say("""With NUMBA_ENABLE_CUDASIM=1 these kernels run on the CPU, every GPU thread a Python thread, so
    you can stop inside one of them. Here the kernel runs in the simulator and is compared with the
    reference, then one thread is traced line by line (brrr trace; brrr debug opens pdb there instead):""")
    spec = t.op.spec
    gen = torch.Generator().manual_seed(0)
    inputs = spec.make_inputs(spec.sim_sizes[-1], torch.float64, torch.device("cpu"), gen)
    numba, ref = load_numba(t.op, gpu=False), load_reference(t.op)
    got = numba.forward(*inputs, *spec.param_values)
    want = ref.forward(*inputs, *spec.param_values)
    got, want = (got[0], want[0]) if isinstance(got, tuple) else (got, want)
    t.out.write(f"  simulator vs reference, {got.numel()} elements: max abs difference "
                f"{(got - want).abs().max().item():.2e}\n\n")
    session, module = prepare(str(t.op.folder), index=5, dtype="float64")
    trace(session, module, t.out)
    t.out.write("\n")


def step_cuda_source(t: Tour) -> None:
    from ..translate.common import TranslateError
    from ..translate.run import translate

    t.say("""Step 4: translate to CUDA C, in two files. kernel.cu holds the kernels and a launcher on raw
    pointers for each; it includes only CUDA's headers, so an edit rebuilds in about a second. binding.cpp
    holds forward and backward on at::Tensor: they check their inputs with TORCH_CHECK, allocate outputs,
    pick the dtype and call the launchers on PyTorch's current stream; BRRR_BIND registers them so Python
    can call them. `brrr translate` writes a first version of both from numba_kernel.py, mechanically:
    each @cuda.jit kernel becomes a __global__ function with the same name, lines and comments, templated
    on the dtype, with 64-bit indices, const inputs and numba's own arithmetic types (a float literal is
    a double). Its translation of this op's kernels:""")
    try:
        translated = translate(t.op).kernel_cu
    except TranslateError as e:
        t.out.write(f"  brrr translate cannot translate this op: {e}\n\n")
    else:
        kernels = translated.split("\n// The launchers")[0]
        t.show_text("kernel.cu (from brrr translate; its launchers follow)", kernels)
    t.say("""That translation validates as it stands: it is version 1, the readable kernel every faster one
    is checked against (`brrr translate OP --out DIR` writes it with its binding.cpp). Beside it, the
    hand-tuned kernel.cu keeps the same math and moves a 16-byte pack per thread instead of one element,
    which took sigmoid from 68% to 99% of copy bandwidth on an H100, and its binding.cpp:""")
    t.show(t.op.path("cuda"))
    t.show(t.op.path("binding"))


def step_compile(t: Tour) -> None:
    from ..cuda import builder

    t.say("""Step 5: compile. brrr compiles kernel.cu with nvcc and binding.cpp with the host compiler,
    caches each object under a key of its source, flags, architecture and versions (so a kernel edit
    recompiles kernel.cu alone), and reads ptxas' report: registers per thread and bytes spilled to
    local memory for every kernel (spills are a first thing to look at when a kernel is slow).""")
    if builder.find_nvcc() is None:
        t.out.write("  nvcc is not installed here, so this step can only be described.\n\n")
        return
    if t.gpu:
        ext = builder.build_extension(t.op)
        t.out.write(f"  built and loaded {ext.library.name} in {ext.seconds:.1f}s\n")
    report = builder.compile_check(t.op, builder.device_arch() if t.gpu else builder.DEFAULT_ARCH)
    t.out.write(f"  ptxas ({report.arch}):\n")
    for k in report.kernels:
        t.out.write(f"    {k.kernel:40s} {k.registers:3d} registers, {k.spill_stores + k.spill_loads} bytes spilled\n")
    t.out.write("\n")


def step_gpu(t: Tour) -> None:
    from ..cuda import builder, cpu_build
    from ..op.loaders import Where, load_cuda, load_reference
    from ..validation.function import apply

    t.say("""Step 6: run it and check the gradients again. The compiled forward and backward go into the
    same autograd.Function; gradcheck runs in float64, and the outputs are compared with the reference
    on a large odd size.""")
    spec = t.op.spec
    if t.gpu:
        cuda = load_cuda(t.op, builder.build_extension(t.op))
        device, size, place = "cuda", spec.gpu_sizes[-1], f"on {torch.cuda.get_device_name()}"
    elif cpu_build.available():
        t.say("""No GPU here, so brrr executes the same kernel.cu and binding.cpp on the CPU: compiled with
        the host compiler against brrr's stand-ins for CUDA's headers, each block's threads run as fibers
        that take turns at __syncthreads and warp intrinsics. The numbers are the kernel's own (16-bit
        types rounded as a GPU rounds them, no fused multiply-adds); the speed is not a GPU's.""")
        cuda = load_cuda(t.op, cpu_build.build_cpu_extension(t.op), Where.CPU_EXECUTION)
        device, size, place = "cpu", Where.CPU_EXECUTION.sizes(spec)[-1], "executed on the CPU"
    else:
        t.say(f"""No GPU and no host compiler here, so this step stops at the description: `brrr validate
        {t.op.name}` runs the CUDA C stage on a GPU, or executed on the CPU where g++ is installed.""")
        return
    gen = torch.Generator().manual_seed(0)
    inputs = spec.make_inputs(spec.gradcheck_size, torch.float64, torch.device(device), gen)
    ok = torch.autograd.gradcheck(lambda *a: apply(cuda, *a), tuple(x.requires_grad_() for x in inputs))
    t.out.write(f"  gradcheck(cuda stage, float64, {place}) -> {ok}\n")
    big = spec.make_inputs(size, torch.float32, torch.device(device), gen)
    got = apply(cuda, *big)
    want = load_reference(t.op).forward(*(x.double().cpu() for x in big), *spec.param_values)
    got, want = (got[0], want[0]) if isinstance(got, tuple) else (got, want)
    t.out.write(f"  cuda float32 vs reference float64 at size {size}: max abs difference "
                f"{(got.double().cpu() - want).abs().max().item():.2e}\n\n")


STEPS: tuple[Step, ...] = (step_reference, step_gradcheck, step_numba, step_cuda_source, step_compile, step_gpu)


def run(op: Op, steps: list[int], out: TextIO, pause: bool) -> None:
    for n in steps:
        out.write(f"==== step {n} of {len(STEPS)} " + "=" * 70 + "\n")
        STEPS[n - 1](Tour(op, out, pause))
        if n != steps[-1]:
            Tour(op, out, pause).wait()


def main(args: argparse.Namespace) -> int:
    """brrr walkthrough: the steps asked for, live."""
    from ..op.loaders import load_op
    from ..sim.numba_env import use_simulator

    use_simulator(True)
    total = len(STEPS)
    if args.step is not None and not 1 <= args.step <= total:
        raise BrrrError(f"--step must be between 1 and {total}")
    steps = [args.step] if args.step else list(range(1, total + 1))
    run(load_op(args.op), steps, sys.stdout, pause=not args.no_pause)
    return EXIT_OK
