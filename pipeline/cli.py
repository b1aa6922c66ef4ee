"""The `brrr` command line: a table of commands, one parser built from it, one shared --debug.

Each command's code lives in its own module and is imported only when the command runs, so
`brrr --help` stays instant (no torch, no numba).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .base import interrupts
from .base.errors import EXIT_OK, EXIT_USAGE, BrrrError
from .base.interrupts import Interrupted
from .op.names import STAGES

DTYPES = ("float32", "float64", "float16", "bfloat16")
BENCH_PASSES = ("forward", "backward", "forward+backward")  # bench_warm.Pass's values (torch is not imported here)
MUTANT_KINDS = ("comparison", "index", "last block", "naive form", "constant", "accumulator", "barrier", "input write",
                "known bug")
SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")


@dataclass(frozen=True)
class Arg:
    """One argparse argument, as data: its flags and add_argument's keywords."""

    flags: tuple[str, ...]
    options: dict[str, Any] = field(default_factory=dict)


def arg(*flags: str, **options: Any) -> Arg:
    return Arg(flags, options)


def ops(help_text: str = "built-in op names or op folders (default: every built-in op)") -> Arg:
    return arg("ops", nargs="*", metavar="OP|PATH", help=help_text)


def json_file(what: str) -> Arg:
    return arg("--json", type=Path, metavar="FILE", help=f"also write {what} as JSON")


ONE_OP = arg("op", metavar="OP|PATH")
FRESH_SEED = arg("--seed", type=int, help="seed for the random inputs (default: fresh; printed in the report)")


@dataclass(frozen=True)
class Command:
    """A subcommand: its help, its arguments, and `run` ("module:function" under brrr_kernels), which
    takes the parsed arguments and returns the exit code."""

    name: str
    help: str
    run: str
    args: tuple[Arg, ...] = ()
    description: str | None = None
    creates: str | None = None   # the argument naming a folder the command creates, checked before any work
    caches: bool = False         # writes the build cache (compiled objects, failed checks' inputs)


THREAD_SELECTION = (
    arg("op", nargs="?", metavar="OP|PATH", help="op name or folder (optional with --input)"),
    arg("--index", type=int, metavar="I", help="the thread that computes element I of the result"),
    arg("--block", metavar="X[,Y[,Z]]", help="block index (with --thread)"),
    arg("--thread", metavar="X[,Y[,Z]]", help="thread index within the block (with --block)"),
    arg("--kernel", metavar="NAME", help="stop only in this kernel (default: the first one the thread enters)"),
    arg("--phase", choices=("forward", "backward"), default="forward",
        help="stop in a kernel launched by forward (default) or by backward"),
    arg("--input", metavar="FILE", help="the exact inputs a failed validation saved"),
    arg("--dtype", choices=("float32", "float64"), default="float32", help="dtype of fresh inputs"),
    arg("--seed", type=int, default=0, help="seed of fresh inputs (default 0)"),
)

COMMANDS: tuple[Command, ...] = (
    Command("validate", "check an op's stages against each other and with gradcheck", "commands.validate:main", (
        ops(),
        arg("--stage", action="append", choices=STAGES, help="validate only this stage (repeatable; default: all three)"),
        json_file("the report rows"),
        arg("--gpu", action="store_true", help="run the numba stage on the GPU instead of the simulator"),
        arg("--cuda-on-cpu", action="store_true",
            help="execute the cuda stage on the CPU even where there is a GPU (without one it always is)"),
        arg("--huge", action="store_true",
            help="GPU only: also run the cuda stage of elementwise ops on more than 2^31 elements"),
        FRESH_SEED,
        arg("--fail-fast", action="store_true",
            help="stop each op at its first failing row: the verdict sooner, without the rest of the report (the "
                 "other checks, dtypes and stages after it)"),
        arg("--arch", default=None, help="target for the no-GPU compile check (default sm_90a)"),
        arg("--jobs", type=int, default=None, metavar="N",
            help="validate up to N ops at once, one process each (default: the number of CPUs)"),
        arg("--watch", action="store_true", help="stay running: validate again, in this warm process, each time a file "
                                                 "of an op changes (Ctrl-C ends it)"),
        arg("--quiet", action="store_true", help="no progress lines on stderr"),
    ), "Validate ops stage by stage. Exit 0: nothing failed; 1: a check failed; 2: usage or loading error.", caches=True),
    Command("debug", "stop in pdb inside one simulated GPU thread of an op's numba kernel", "commands.debug:main", (
        *THREAD_SELECTION,
        arg("--stage", choices=("numba", "cuda"), default="numba",
            help="numba: pdb in the simulator (default); cuda: gdb in the CPU execution of kernel.cu"),
    ), "Stop in pdb (numba) or gdb (cuda) in one thread. Exit 0 when the op ran through."),
    Command("trace", "print the kernel lines one simulated thread executes, its locals and its writes",
            "commands.debug:main", THREAD_SELECTION, "Trace one simulated thread. Exit 0 when the op ran through."),
    Command("new", "scaffold an op folder (spec and three stage templates) that validates at once", "commands.new:main", (
        arg("name", help="the op's name (a Python identifier)"),
        arg("--inputs", default=None, help="comma-separated tensor input names (default: the kind's own, x for "
                                            "elementwise); a kind that cannot take them says why"),
        arg("--kind", default="elementwise", choices=("elementwise", "rowwise", "rowloss", "rowscan", "tiled"),
            help="elementwise (default): a thread per element; rowwise: x [rows, cols] (and weight [cols] unless "
                 "--inputs x), a param eps and a saved per-row statistic, a block per row; rowloss: scores "
                 "[rows, classes] and int64 targets [rows] (no gradient), a loss per row; rowscan: a running sum "
                 "along each row; tiled: a [m, k] by b [k, n] through shared-memory tiles"),
        arg("--no-stat", action="store_true", help="rowwise only: forward saves no per-row statistic; backward "
                                                   "recomputes it from x (default: forward returns rstd and the spec "
                                                   "saves it)"),
        arg("--dir", type=Path, default=Path("."), help="where to create the folder (default: here)"),
    ), "Write NAME/ with spec.py, reference.py, numba_kernel.py, kernel.cu and binding.cpp. "
       "Never overwrites: exit 1 if NAME exists.", creates="dir"),
    Command("adopt", "make an op folder from an extension you already have (a .cu, a setup.py, a load() or load_inline() script)",
            "commands.adopt:main", (
                arg("path", metavar="PATH", help="a .cu, a setup.py, a Python file calling cpp_extension.load() or "
                                                 "load_inline(), or a folder holding one"),
                arg("--into", type=Path, metavar="DIR", help="the op folder to write (default: ./NAME)"),
                arg("--name", help="the op's name (default: the .cu's name, or load_inline's name=; of a script's "
                                                 "several load_inline calls, the one of this name)"),
            ), "Copy the extension's sources (and the headers they include) into an op folder unchanged, and write "
               "spec.py and reference.py stubs naming what is left to write. Never overwrites a different file."),
    Command("translate", "write a first CUDA C stage (kernel.cu, binding.cpp) from an op's numba_kernel.py",
            "translate.run:main", (
                ONE_OP, arg("--out", type=Path, metavar="DIR", help="write kernel.cu and binding.cpp here instead"),
            ), "Translate numba_kernel.py line by line into kernel.cu and binding.cpp. Writes into the op's folder only "
               "while those are `brrr new` templates, else into --out DIR; never overwrites. Exit 2: a construct "
               "outside the subset (named at numba_kernel.py:line)."),
    Command("walkthrough", "a narrated, live tour of the six steps on one op (default: sigmoid)",
            "commands.walkthrough:main", (
                arg("op", nargs="?", default="sigmoid", metavar="OP|PATH"),
                arg("--step", type=int, metavar="N", help="run only step N (1-6)"),
                arg("--no-pause", action="store_true", help="do not wait for Enter between steps"),
            )),
    Command("build", "compile an op's CUDA C stage only: kernel.cu (nvcc) and binding.cpp (c++); on a GPU, link and "
                     "load them too", "commands.build:main", (
                arg("ops", nargs="+", metavar="OP|PATH"),
                arg("--arch", default=None, help="target architecture (default: the GPU's, or sm_90a without one)"),
                arg("--resources", action="store_true", help="print registers, shared memory, spills and stack per kernel"),
                arg("--verbose", action="store_true", help="show the build commands' output"),
            ), "Compile only. Exit 0: compiled; 1: the compiler failed (its errors shown against the op's own file "
               "and line); 2: usage error.", caches=True),
    Command("export", "write a standalone pip-installable package of an op's CUDA C stage", "commands.export:main", (
        ONE_OP, arg("dir", type=Path, metavar="DIR"),
    ), "Write DIR: setup.py (CUDAExtension), pyproject.toml, the kernel, the torch.library registration and a test. "
       "It builds with pip and imports without brrr. Never overwrites.", creates="dir"),
    Command("bench", "time ops on a GPU against PyTorch eager, torch.compile and the other stages", "commands.bench:main", (
        ops("default: every built-in op"),
        arg("--size", action="append", metavar="N[xM...]", help="size(s) to time (default: the op's bench sizes)"),
        arg("--dtype", action="append", choices=DTYPES, help="dtype(s) (default: float32)"),
        arg("--pass", dest="pass_", action="append", choices=BENCH_PASSES,
            help="what to time (default: forward and forward+backward); backward: the backward alone, from a graph "
                 "its forward left (kept between calls), as a training step's backward finds it"),
        arg("--no-numba", action="store_true", help="skip the numba stage on the GPU"),
        arg("--jobs", type=int, default=None, metavar="N",
            help="processes that build the cuda stages and compile torch.compile's cases before the timing, which "
                 "stays serial (default: the free CPUs, as many as the GPU's free memory holds; 0: none)"),
        json_file("the timings"),
        arg("--plot", metavar="PNG", help="bar chart of the fraction of copy bandwidth"),
        arg("--profile", type=Path, metavar="JSON",
            help="also write a torch.profiler Chrome trace of a few untimed calls of each implementation"),
        arg("--ncu", type=Path, metavar="REPORT",
            help="also run Nsight Compute (--clock-control none) on one forward and backward of the cuda stage at the "
                 "first size and dtype; writes REPORT-OP.ncu-rep and prints each kernel's headline"),
    ), "GPU only (exit 2 without one). Two times a call: ms, the GPU's (a batch of back-to-back calls issued "
       "behind a GPU sleep, so no host gap counts; the median of 10 batches), and host ms, the time to issue one; "
       "a training step pays the larger.", caches=True),
    Command("sanitize", "GPU only: compute-sanitizer (memcheck, racecheck, synccheck, initcheck) over one forward and "
                        "backward of each op's cuda stage", "commands.sanitize:main", (
                ops("default: every built-in op"),
                arg("--tool", action="append", choices=SANITIZER_TOOLS,
                    help="run only this tool (repeatable; default: all four)"),
                json_file("the findings"),
            ), "GPU only (exit 2 without one). Each op and tool runs in a child process under compute-sanitizer at one "
               "simulator size and the largest GPU size. Exit 0: no tool reported an error; 1: one did.", caches=True),
    Command("mutate", "plant standard bugs in an op's kernels and see whether validation catches each",
            "mutate.run:main", (
                ONE_OP,
                arg("--stage", choices=("numba", "cuda"), default="numba",
                    help="mutate numba_kernel.py (default; runs in the simulator) or kernel.cu (where the cuda stage runs)"),
                arg("--kind", action="append", metavar="KIND", choices=MUTANT_KINDS,
                    help="only mutants of this kind (repeatable; default: all)"),
                arg("--lines", metavar="A-B",
                    help="only mutants on these lines of the file (A-B, A- to the end, or A; the op's own "
                         "bugs/*.bug files run always): the lines a change touched"),
                FRESH_SEED,
                arg("--jobs", type=int, default=None, metavar="N", help="mutants validated at once (default: CPUs)"),
                arg("--timeout", type=float, default=None, metavar="S",
                    help="a mutant still running after S seconds hangs, and counts as caught (default: 8 times "
                         "the op's own validation in this run, at least 60 s)"),
                json_file("the results"),
            ), "Mutation testing: each standard bug (a comparison flipped or off by one, an index shifted, the last "
               "block skipped, log1p/expm1 in the naive form, a constant perturbed, an accumulator seeded wrong, a "
               "barrier removed, a write into an input) planted in the stage's file, one at a time, and validated. "
               "Exit 0: every mutant killed, equivalent or explained in the spec; 1: a survivor is not; 2: usage error."),
    Command("list", "list the built-in ops", "cli:list_ops"),
)
BY_NAME = {c.name: c for c in COMMANDS}
# Options naming a file a command writes, checked before it starts (see base/outputs.py).
OUTPUT_FILES = {"json": "--json", "plot": "--plot", "profile": "--profile", "ncu": "--ncu"}


def _debug_flag(parser: argparse.ArgumentParser, default: Any) -> None:
    # Subcommands leave it unset unless given, so `brrr --debug validate` and `brrr validate --debug` both hold.
    parser.add_argument("--debug", action="store_true", default=default, help="show full tracebacks for errors")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="brrr",
        description="A staged kernel-development pipeline for PyTorch: reference -> numba -> CUDA C, checked at every step.",
    )
    _debug_flag(parser, False)
    shared = argparse.ArgumentParser(add_help=False)
    _debug_flag(shared, argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        p = sub.add_parser(command.name, help=command.help, description=command.description or command.help,
                           parents=[shared])
        for a in command.args:
            p.add_argument(*a.flags, **a.options)
    return parser


def list_ops(args: argparse.Namespace) -> int:
    from .op.loaders import builtin_op_names

    for name in builtin_op_names():
        print(name)
    return EXIT_OK


def check_outputs(command: Command, args: argparse.Namespace) -> None:
    """Every place the command will write, checked before any work: a UsageError names the path and the setting."""
    from .base import outputs

    for attr, flag in OUTPUT_FILES.items():
        value = getattr(args, attr, None)
        if value:
            outputs.check_file(Path(value), flag)
    if command.creates:
        flag = next(a.flags[0] for a in command.args if a.flags[0].lstrip("-") == command.creates)
        outputs.check_folder(getattr(args, command.creates), flag if flag.startswith("-") else flag.upper())
    reference_only = set(getattr(args, "stage", None) or ()) == {"reference"}
    if command.caches and not reference_only:
        outputs.check_cache()  # compiled objects, and the inputs of failed checks


def runner_of(command: Command) -> Callable[[argparse.Namespace], int]:
    module, function = command.run.split(":")
    return getattr(importlib.import_module(f".{module}", __package__), function)


def _interrupted(e: KeyboardInterrupt) -> int:
    code = e.exit_code if isinstance(e, Interrupted) else 130
    interrupts.announce(code)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    try:  # a signal can come at any step, the parser's building included: the same one line and exit code
        return _main(argv)
    except KeyboardInterrupt as e:
        return _interrupted(e)


def _main(argv: Sequence[str] | None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    debug = getattr(args, "debug", False)
    command = BY_NAME.get(args.command)
    if command is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        check_outputs(command, args)
        return runner_of(command)(args)
    except BrrrError as e:
        if debug:
            traceback.print_exc()
        print(f"brrr: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt as e:
        return _interrupted(e)
    except OSError as e:  # the machine's doing (a full disk, a file removed meanwhile), not brrr's: say which file
        if debug:
            traceback.print_exc()
        where = f"{e.filename}: " if e.filename else ""
        print(f"brrr: error: {where}{e.strerror or e}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as e:  # a bug in brrr itself: every mistake of the user's is a BrrrError
        if debug:
            traceback.print_exc()
        print(f"brrr: internal error (a bug in brrr): {type(e).__name__}: {e}\n"
              f"  please report it with the traceback that the same command with --debug prints", file=sys.stderr)
        return EXIT_USAGE


def quiet_openmp(environ: MutableMapping[str, str]) -> None:
    """Before torch loads OpenMP: its pool threads sleep once an op is done instead of spinning for
    ~20 ms (300,000 PAUSEs). brrr waits on its CPU execution's child and on pipes between torch ops,
    and the spinning took a core from that child: 6 of 53 CPU s of `brrr validate layernorm`, and a
    loop of small ops with waits between them took 2.6x its wall time. A user's own setting stays."""
    environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def entry() -> None:
    quiet_openmp(os.environ)
    argv = sys.argv[1:]
    command = next((a for a in argv if not a.startswith("-")), None)
    interrupts.install(interactive=command == "debug")  # pdb keeps its Ctrl-C
    sys.exit(main(argv))  # after a signal, interrupts' watcher ends brrr if exiting takes more than seconds
