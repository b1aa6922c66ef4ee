"""The `brrr` command line. Heavy imports (torch, numba) happen inside commands, so --help is instant."""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .base import interrupts, workers
from .base.errors import EXIT_CHECK_FAILED, EXIT_OK, EXIT_USAGE, BrrrError
from .base.interrupts import Interrupted

if TYPE_CHECKING:
    from .validation.executor import Options

from .op.names import STAGES as STAGE_CHOICES  # noqa: E402


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="brrr",
        description="A staged kernel-development pipeline for PyTorch: reference -> numba -> CUDA C, checked at every step.",
    )
    parser.add_argument("--debug", action="store_true", help="show full tracebacks for errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    v = sub.add_parser("validate", help="check an op's stages against each other and with gradcheck",
                       description="Validate ops stage by stage. Exit 0: nothing failed; 1: a check failed; "
                                   "2: usage or loading error.")
    v.add_argument("ops", nargs="*", metavar="OP|PATH", help="built-in op names or op folders (default: every op in stages/)")
    v.add_argument("--stage", action="append", choices=STAGE_CHOICES,
                   help="validate only this stage (repeatable; default: all three)")
    v.add_argument("--json", type=Path, metavar="FILE", help="also write the report rows as JSON")
    v.add_argument("--gpu", action="store_true", help="run the numba stage on the GPU instead of the simulator")
    v.add_argument("--cuda-on-cpu", action="store_true",
                   help="execute the cuda stage on the CPU even where there is a GPU (without one it always is)")
    v.add_argument("--huge", action="store_true",
                   help="GPU only: also run the cuda stage of elementwise ops on more than 2^31 elements")
    v.add_argument("--seed", type=int, help="seed for the random inputs (default: fresh; printed in the report)")
    v.add_argument("--arch", default=None, help="target for the no-GPU compile check (default sm_90)")
    v.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="validate up to N ops at once, one process each (default: the number of CPUs)")
    v.add_argument("--watch", action="store_true",
                   help="stay running: validate again, in this warm process, each time a file of an op changes "
                        "(Ctrl-C ends it)")
    v.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    v.add_argument("--debug", action="store_true", help="show full tracebacks for errors")

    for name, help_text in (("debug", "stop in pdb inside one simulated GPU thread of an op's numba kernel"),
                            ("trace", "print the kernel lines one simulated thread executes, its locals and its writes")):
        d = sub.add_parser(name, help=help_text, description=help_text + ". Exit 0 when the op ran through.")
        d.add_argument("op", nargs="?", metavar="OP|PATH", help="op name or folder (optional with --input)")
        d.add_argument("--index", type=int, metavar="I", help="the thread that computes element I of the result")
        d.add_argument("--block", metavar="X[,Y[,Z]]", help="block index (with --thread)")
        d.add_argument("--thread", metavar="X[,Y[,Z]]", help="thread index within the block (with --block)")
        d.add_argument("--kernel", metavar="NAME", help="stop only in this kernel (default: the first one the thread enters)")
        d.add_argument("--phase", choices=("forward", "backward"), default="forward",
                       help="stop in a kernel launched by forward (default) or by backward")
        d.add_argument("--input", metavar="FILE", help="the exact inputs a failed validation saved")
        d.add_argument("--dtype", choices=("float32", "float64"), default="float32", help="dtype of fresh inputs")
        d.add_argument("--seed", type=int, default=0, help="seed of fresh inputs (default 0)")
        if name == "debug":
            d.add_argument("--stage", choices=("numba", "cuda"), default="numba",
                           help="numba: pdb in the simulator (default); cuda: gdb in the CPU execution of kernel.cu")
        d.add_argument("--debug", action="store_true", help="show full tracebacks for errors")

    n = sub.add_parser("new", help="scaffold an op folder (spec and three stage templates) that validates at once",
                       description="Write NAME/ with spec.py, reference.py, numba_kernel.py, kernel.cu and binding.cpp. "
                                   "Never overwrites: exit 1 if NAME exists.")
    n.add_argument("name", help="the op's name (a Python identifier)")
    n.add_argument("--inputs", default="x", help="comma-separated tensor input names (default: x)")
    n.add_argument("--kind", default="elementwise", choices=("elementwise", "rowwise"),
                   help="elementwise (default): a thread per element; rowwise: x [rows, cols] and weight [cols], "
                        "a param eps and a saved per-row statistic, a block per row")
    n.add_argument("--dir", type=Path, default=Path("."), help="where to create the folder (default: here)")
    n.add_argument("--debug", action="store_true", help="show full tracebacks for errors")

    t = sub.add_parser("translate", help="write a first CUDA C stage (kernel.cu, binding.cpp) from an op's numba_kernel.py",
                       description="Translate numba_kernel.py line by line into kernel.cu and binding.cpp. Writes into "
                                   "the op's folder only while those are `brrr new` templates, else into --out DIR; never "
                                   "overwrites. Exit 2: a construct outside the subset (named at numba_kernel.py:line).")
    t.add_argument("op", metavar="OP|PATH")
    t.add_argument("--out", type=Path, metavar="DIR", help="write kernel.cu and binding.cpp here instead")
    t.add_argument("--debug", action="store_true", help="show full tracebacks for errors")

    w = sub.add_parser("walkthrough", help="a narrated, live tour of the six steps on one op (default: sigmoid)")
    w.add_argument("op", nargs="?", default="sigmoid", metavar="OP|PATH")
    w.add_argument("--step", type=int, metavar="N", help="run only step N (1-6)")
    w.add_argument("--no-pause", action="store_true", help="do not wait for Enter between steps")
    w.add_argument("--debug", action="store_true", help="show full tracebacks for errors")

    b = sub.add_parser("build", help="compile an op's CUDA C stage only: kernel.cu (nvcc) and binding.cpp (c++); "
                                     "on a GPU, link and load them too",
                       description="Compile only. Exit 0: compiled; 1: the compiler failed (its errors shown "
                                   "against the op's own file and line); 2: usage error.")
    b.add_argument("ops", nargs="+", metavar="OP|PATH")
    b.add_argument("--arch", default=None, help="target architecture (default: the GPU's, or sm_90 without one)")
    b.add_argument("--resources", action="store_true", help="print registers, shared memory, spills and stack per kernel")
    b.add_argument("--verbose", action="store_true", help="show the build commands' output")
    b.add_argument("--debug", action="store_true", help="show full tracebacks for errors")

    e = sub.add_parser("export", help="write a standalone pip-installable package of an op's CUDA C stage",
                       description="Write DIR: setup.py (CUDAExtension), pyproject.toml, the kernel, the torch.library "
                                   "registration and a test. It builds with pip and imports without brrr. Never overwrites.")
    e.add_argument("op", metavar="OP|PATH")
    e.add_argument("dir", type=Path, metavar="DIR")
    e.add_argument("--debug", action="store_true", help="show full tracebacks for errors")

    bn = sub.add_parser("bench", help="time ops on a GPU against PyTorch eager, torch.compile and the other stages",
                        description="GPU only (exit 2 without one). After a warm-up, the median of 50 runs, each a batch of "
                                    "back-to-back calls (at least 5 ms) between CUDA events.")
    bn.add_argument("ops", nargs="*", metavar="OP|PATH", help="default: every built-in op")
    bn.add_argument("--size", action="append", metavar="N[xM...]", help="size(s) to time (default: the op's bench sizes)")
    bn.add_argument("--dtype", action="append", choices=("float32", "float64", "float16", "bfloat16"),
                    help="dtype(s) (default: float32)")
    bn.add_argument("--no-numba", action="store_true", help="skip the numba stage on the GPU")
    bn.add_argument("--json", type=Path, metavar="FILE", help="also write the timings as JSON")
    bn.add_argument("--plot", metavar="PNG", help="bar chart of the fraction of copy bandwidth")
    bn.add_argument("--profile", type=Path, metavar="JSON",
                    help="also write a torch.profiler Chrome trace of a few untimed calls of each implementation")
    bn.add_argument("--ncu", type=Path, metavar="REPORT",
                    help="also run Nsight Compute (--clock-control none) on one forward and backward of the cuda "
                         "stage at the first size and dtype; writes REPORT-OP.ncu-rep and prints each kernel's headline")
    bn.add_argument("--debug", action="store_true", help="show full tracebacks for errors")

    sz = sub.add_parser("sanitize", help="GPU only: compute-sanitizer (memcheck, racecheck, synccheck, initcheck) over "
                                         "one forward and backward of each op's cuda stage",
                        description="GPU only (exit 2 without one). Each op and tool runs in a child process under "
                                    "compute-sanitizer at one simulator size and the largest GPU size. Exit 0: no "
                                    "tool reported an error; 1: one did.")
    sz.add_argument("ops", nargs="*", metavar="OP|PATH", help="default: every built-in op")
    sz.add_argument("--tool", action="append", choices=("memcheck", "racecheck", "synccheck", "initcheck"),
                    help="run only this tool (repeatable; default: all four)")
    sz.add_argument("--json", type=Path, metavar="FILE", help="also write the findings as JSON")
    sz.add_argument("--debug", action="store_true", help="show full tracebacks for errors")

    m = sub.add_parser("mutate", help="plant standard bugs in an op's kernels and see whether validation catches each",
                       description="Mutation testing: each standard bug (a comparison flipped or off by one, an index "
                                   "shifted, the last block skipped, log1p/expm1 in the naive form, a constant perturbed, "
                                   "an accumulator seeded wrong, a barrier removed, a write into an input) planted in "
                                   "the stage's file, one at a time, and validated. Exit 0: every mutant killed, "
                                   "equivalent or explained in the spec; 1: a survivor is not; 2: usage error.")
    m.add_argument("op", metavar="OP|PATH")
    m.add_argument("--stage", choices=("numba", "cuda"), default="numba",
                   help="mutate numba_kernel.py (default; runs in the simulator) or kernel.cu (where the cuda stage runs)")
    m.add_argument("--kind", action="append", metavar="KIND",
                   choices=("comparison", "index", "last block", "naive form", "constant", "accumulator", "barrier",
                            "input write", "known bug"), help="only mutants of this kind (repeatable; default: all)")
    m.add_argument("--seed", type=int, help="seed for the random inputs (default: fresh; printed)")
    m.add_argument("--jobs", type=int, default=None, metavar="N", help="mutants validated at once (default: CPUs)")
    m.add_argument("--timeout", type=float, default=300.0, metavar="S",
                   help="a mutant still running after S seconds hangs, and counts as caught (default 300)")
    m.add_argument("--json", type=Path, metavar="FILE", help="also write the results as JSON")
    m.add_argument("--debug", action="store_true", help="show full tracebacks for errors")

    sub.add_parser("list", help="list the built-in ops")
    return parser


def cmd_list() -> int:
    from .op.loaders import builtin_op_names

    for name in builtin_op_names():
        print(name)
    return EXIT_OK


def cmd_walkthrough(args: argparse.Namespace) -> int:
    from .commands import walkthrough
    from .op.loaders import load_op
    from .sim.numba_env import use_simulator

    use_simulator(True)
    total = len(walkthrough.STEPS)
    if args.step is not None and not 1 <= args.step <= total:
        raise BrrrError(f"--step must be between 1 and {total}")
    steps = [args.step] if args.step else list(range(1, total + 1))
    walkthrough.run(load_op(args.op), steps, sys.stdout, pause=not args.no_pause)
    return EXIT_OK


def cmd_translate(args: argparse.Namespace) -> int:
    from .op.loaders import load_op
    from .sim.numba_env import use_simulator
    from .translate import run as translate

    use_simulator(True)
    op = load_op(args.op)
    result = translate.translate(op)
    written = translate.write(op, result, args.out)
    print(f"wrote {' and '.join(str(p) for p in written)}")
    if result.todos:
        print(f"{len(result.todos)} TODO(s) left, so validation reports the cuda stage unfinished: " + "; ".join(result.todos))
    shown = written[0].parent if written[0].parent.is_absolute() else f"./{written[0].parent}"
    print(f"next: brrr validate {shown} --stage cuda")
    return EXIT_OK


def cmd_build(args: argparse.Namespace) -> int:
    import torch

    from .base.errors import BuildError
    from .cuda import builder
    from .op.loaders import load_op

    gpu = torch.cuda.is_available()
    arch = args.arch or (builder.device_arch() if gpu else builder.DEFAULT_ARCH)
    worst = EXIT_OK
    for name in args.ops:
        op = load_op(name)
        try:
            if gpu:
                ext = builder.build_extension(op, arch=arch, verbose=args.verbose)
                what = "reused the cached build" if ext.cached else "built"
                print(f"{op.name}: {what} in {ext.seconds:.1f}s ({ext.library})")
            report = builder.compile_check(op, arch)
        except BuildError as e:
            print(f"{op.name}: {e}", file=sys.stderr)
            worst = max(worst, e.exit_code)
            continue
        print(f"{op.name}: compiled for {report.arch} {'(cached)' if report.cached else f'in {report.seconds:.1f}s'}")
        if args.resources:
            print(f"  {'kernel':44s} {'regs':>5s} {'smem B':>7s} {'spill st':>9s} {'spill ld':>9s} {'stack B':>8s}")
            for k in report.kernels:
                print(f"  {k.kernel:44s} {k.registers:5d} {k.shared_bytes:7d} {k.spill_stores:9d} {k.spill_loads:9d} "
                      f"{k.stack_bytes:8d}")
    return worst


def cmd_export(args: argparse.Namespace) -> int:
    from .commands.export import export
    from .op.contract import usage
    from .op.loaders import load_op

    op = load_op(args.op)
    folder = export(op, args.dir)
    print(f"wrote {folder}: pip install {folder}  (offline: pip install --no-build-isolation {folder}), "
          f"then: import brrr_{op.name}; {usage(op.spec, f'brrr_{op.name}.{op.name}')}")
    return EXIT_OK


def _parse_size(text: str) -> int | tuple[int, ...]:
    try:
        parts = tuple(int(p) for p in text.lower().split("x"))
    except ValueError as e:
        raise BrrrError(f"--size expects N or NxM..., got {text!r}") from e
    return parts[0] if len(parts) == 1 else parts


def cmd_bench(args: argparse.Namespace) -> int:
    import json

    import torch

    from .base.files import write_atomic
    from .commands import bench
    from .op.loaders import builtin_op_names, load_op
    from .sim.numba_env import use_simulator

    bench.require_gpu()
    use_simulator(False)
    dtypes = [getattr(torch, d) for d in (args.dtype or ["float32"])]
    copy_gbps = bench.copy_bandwidth()
    rows = []
    profiled = []  # what --profile traces once the timing is done
    for name in args.ops or builtin_op_names():
        op = load_op(name)
        sizes = [_parse_size(s) for s in args.size] if args.size else list(op.spec.bench_sizes or op.spec.gpu_sizes[-1:])
        impls = bench.implementations(op, with_numba=not args.no_numba)
        for dtype in dtypes:
            if dtype not in op.spec.stage_dtypes("cuda"):
                continue
            for size in sizes:
                for backward in (False, True):
                    rows += bench.bench_op(op, size, dtype, impls, copy_gbps, backward)
                profiled.append((op, size, dtype, impls))
        print(bench.format_table([r for r in rows if r.op == op.name], copy_gbps, torch.cuda.get_device_name()), flush=True)
        if args.ncu:
            dtype = next((d for d in dtypes if d in op.spec.stage_dtypes("cuda")), torch.float32)
            report = args.ncu.with_name(f"{args.ncu.name.removesuffix('.ncu-rep')}-{op.name}")
            print(f"Nsight Compute, {op.name} {sizes[0]} {dtype}: {report}.ncu-rep", flush=True)
            print(bench.ncu(op, sizes[0], dtype, report), flush=True)
    if args.profile:
        bench.profile(profiled, args.profile)
        print(f"wrote the profiler trace to {args.profile} (open it in chrome://tracing or ui.perfetto.dev)")
    if args.json:
        meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
                "copy_gbps": copy_gbps}
        write_atomic(args.json, json.dumps({"meta": meta, "rows": bench.to_dicts(rows)}, indent=2))
    if args.plot:
        bench.plot(rows, args.plot)
    return EXIT_OK


def cmd_sanitize(args: argparse.Namespace) -> int:
    from .base.files import write_atomic
    from .commands import sanitize
    from .op.loaders import builtin_op_names

    findings = sanitize.sanitize(args.ops or builtin_op_names(), tuple(args.tool or sanitize.TOOLS))
    if args.json:
        write_atomic(args.json, sanitize.to_json(findings))
    return EXIT_OK if all(f.ok for f in findings) else EXIT_CHECK_FAILED


def cmd_new(args: argparse.Namespace) -> int:
    from .commands.new import new_op

    folder = new_op(args.name, [x.strip() for x in args.inputs.split(",") if x.strip()], args.dir, kind=args.kind)
    print(f"wrote {folder}/: spec.py, reference.py, numba_kernel.py, kernel.cu, binding.cpp")
    shown = folder if folder.is_absolute() or str(folder).startswith(".") else f"./{folder}"
    print(f"next: brrr validate {shown}   (each unfinished stage says which function to write)")
    return EXIT_OK


def cmd_debug(args: argparse.Namespace) -> int:
    from .debugger import numba_stage as debugger
    from .verdict.faults import fault_from

    if getattr(args, "stage", "numba") == "cuda":
        from .debugger import cuda_stage as cuda_debugger

        return cuda_debugger.run(args.op, block=args.block, thread=args.thread, index=args.index,
                                 input_file=args.input, dtype=args.dtype, phase=args.phase, kernel=args.kernel,
                                 seed=args.seed)

    session, module = debugger.prepare(args.op, block=args.block, thread=args.thread, index=args.index,
                                       input_file=args.input, dtype=args.dtype, phase=args.phase,
                                       kernel=args.kernel, seed=args.seed)
    try:
        if args.command == "debug":
            debugger.debug(session, module)
        else:
            debugger.trace(session, module, sys.stdout)
    except BrrrError:
        raise
    except Exception as e:  # the kernel itself raised: report it as facts
        if args.debug:
            traceback.print_exc()
        print(f"brrr: the kernel raised: {fault_from(e, session.op.path('numba')).describe()}", file=sys.stderr)
        return EXIT_CHECK_FAILED
    return EXIT_OK


def cmd_validate(args: argparse.Namespace) -> int:
    from .base import progress
    from .cuda import builder
    from .op.loaders import builtin_op_names
    from .validation import runner

    progress.set_quiet(args.quiet)
    names = args.ops or builtin_op_names()
    if not names:
        raise BrrrError("no ops to validate: stages/ is empty and none were named")
    options = runner.Options(stages=tuple(args.stage) if args.stage else STAGE_CHOICES,
                             numba_gpu=args.gpu, arch=args.arch or builder.DEFAULT_ARCH, huge=args.huge,
                             cuda_on_cpu=args.cuda_on_cpu)
    if args.huge and args.cuda_on_cpu:
        raise BrrrError("--huge runs the cuda stage on the GPU; it cannot go with --cuda-on-cpu")
    if args.watch and args.huge:
        raise BrrrError("--watch re-validates at every edit; --huge is a one-off run on the GPU")
    if args.seed is not None:
        options.seed = args.seed
    if args.gpu or args.huge:
        import torch

        if not torch.cuda.is_available():
            flag = "--gpu" if args.gpu else "--huge"
            raise BrrrError(f"{flag} needs a GPU, but torch sees none here")
    if args.jobs is not None and args.jobs < 1:
        raise BrrrError(f"--jobs must be at least 1, got {args.jobs}")
    if args.watch:
        return _watch(names, options, args)
    # --huge needs most of the GPU's memory for one op at a time.
    jobs = 1 if args.huge else (args.jobs or workers.cpus())
    return _validate_once(names, options, jobs, args)


def _validate_once(names: list[str], options: Options, jobs: int, args: argparse.Namespace) -> int:
    """Validate the ops, print each one's table, write --json; the exit code."""
    from .validation import runner
    from .verdict import report

    all_rows: list[report.Row] = []
    worst = EXIT_OK
    for outcome in runner.validate_many(names, options, jobs=jobs):
        if outcome.error is not None:
            if args.debug and outcome.traceback:
                print(outcome.traceback, file=sys.stderr)
            print(f"\n== {outcome.name}: cannot validate\n  error: {outcome.error}", file=sys.stderr)
            worst = max(worst, outcome.exit_code)
            continue
        rows = outcome.rows
        print(f"\n== {outcome.name}  ({outcome.folder}, seed {options.seed})")
        print(report.format_table(rows))
        print(f"-- {outcome.name}: {report.summary(rows)}", flush=True)
        all_rows += rows
        if any(r.failed for r in rows):
            worst = max(worst, EXIT_CHECK_FAILED)
    if len(names) > 1:
        print(f"\n== all: {report.summary(all_rows)}")
    if args.json:
        import torch

        meta = {"seed": options.seed, "torch": torch.__version__, "cuda": torch.version.cuda,
                "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None, "exit_code": worst}
        report.write_json(args.json, all_rows, meta)
    return worst


def _watch(names: list[str], options: Options, args: argparse.Namespace) -> int:
    """Validate in this process, then again each time a file of an op changes (that op alone);
    ends with Ctrl-C. Each verdict after the first says how long it came after the file was saved
    (its modification time: the wait to notice the save counts too)."""
    import time

    from .base import watch
    from .base.files import shown
    from .op.loaders import load_op

    folders = {name: load_op(name).folder for name in names}
    _validate_once(names, options, 1, args)
    seen = watch.snapshot(list(folders.values()))
    while True:
        print(f"\n  watching {len(folders)} op folder(s) for changes (Ctrl-C to stop) ...", file=sys.stderr, flush=True)
        files, seen = watch.wait_for_change(list(folders.values()), seen)
        saved = watch.last_saved(files, seen)
        again = [name for name, folder in folders.items() if any(f.is_relative_to(folder) for f in files)]
        print(f"\n  changed: {', '.join(shown(f) for f in files)}", file=sys.stderr, flush=True)
        code = _validate_once(again, options, 1, args)
        print(f"  verdict (exit {code}) {time.time() - saved:.1f} s after the save", file=sys.stderr, flush=True)


# Options naming a file a command writes, checked before it starts (see outputs.py).
OUTPUT_FILES = {"json": "--json", "plot": "--plot", "profile": "--profile", "ncu": "--ncu"}


def check_outputs(args: argparse.Namespace) -> None:
    """Every place the command will write, checked before any work: a UsageError names the path and the setting."""
    from .base import outputs

    for attr, flag in OUTPUT_FILES.items():
        value = getattr(args, attr, None)
        if value:
            outputs.check_file(Path(value), flag)
    if args.command == "new":
        outputs.check_folder(args.dir, "--dir")
    if args.command == "export":
        outputs.check_folder(args.dir, "DIR")
    reference_only = args.command == "validate" and set(args.stage or ()) == {"reference"}
    if args.command in ("validate", "build", "bench", "sanitize") and not reference_only:
        outputs.check_cache()  # compiled objects, and the inputs of failed checks


def cmd_mutate(args: argparse.Namespace) -> int:
    from .base.files import write_atomic
    from .mutate import run as mutate
    from .mutate.standard_bugs import Kind

    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    report = mutate.mutate(args.op, seed, jobs=args.jobs or workers.cpus(), limit=args.timeout, stage=args.stage,
                           kinds=tuple(Kind(k) for k in args.kind or ()))
    print(mutate.format_report(report))
    if args.json:
        write_atomic(args.json, report.as_json())
    return EXIT_CHECK_FAILED if report.unexplained else EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    debug = getattr(args, "debug", False)
    try:
        check_outputs(args)
        if args.command == "validate":
            return cmd_validate(args)
        if args.command in ("debug", "trace"):
            return cmd_debug(args)
        if args.command == "new":
            return cmd_new(args)
        if args.command == "translate":
            return cmd_translate(args)
        if args.command == "walkthrough":
            return cmd_walkthrough(args)
        if args.command == "build":
            return cmd_build(args)
        if args.command == "export":
            return cmd_export(args)
        if args.command == "bench":
            return cmd_bench(args)
        if args.command == "sanitize":
            return cmd_sanitize(args)
        if args.command == "mutate":
            return cmd_mutate(args)
        if args.command == "list":
            return cmd_list()
        parser.print_help()
        return EXIT_USAGE
    except BrrrError as e:
        if debug:
            traceback.print_exc()
        print(f"brrr: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt as e:
        code = e.exit_code if isinstance(e, Interrupted) else 130
        interrupts.announce(code)
        return code
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


def entry() -> None:
    argv = sys.argv[1:]
    command = next((a for a in argv if not a.startswith("-")), None)
    interrupts.install(interactive=command == "debug")  # pdb keeps its Ctrl-C
    sys.exit(main(argv))  # after a signal, interrupts' watcher ends brrr if exiting takes more than seconds
