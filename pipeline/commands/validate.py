"""`brrr validate` on the command line: each op's table and summary, --json, --watch; the exit code."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ..base import workers
from ..base.errors import EXIT_CHECK_FAILED, EXIT_OK, BrrrError
from ..op.names import STAGES

if TYPE_CHECKING:
    from ..validation.executor import Options


def main(args: argparse.Namespace) -> int:
    """brrr validate: validate the ops, once or under --watch; the exit code."""
    from ..base import progress
    from ..cuda import builder
    from ..op.loaders import builtin_op_names
    from ..validation import runner

    progress.set_quiet(args.quiet)
    names = args.ops or builtin_op_names()
    if not names:
        raise BrrrError("no ops to validate: stages/ is empty and none were named")
    options = runner.Options(stages=tuple(args.stage) if args.stage else STAGES,
                             numba_gpu=args.gpu, arch=args.arch or builder.DEFAULT_ARCH, huge=args.huge,
                             cuda_on_cpu=args.cuda_on_cpu, fail_fast=args.fail_fast)
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
    # At most one op a CPU; as many at once as are free as each starts (workers.at_once).
    jobs = 1 if args.huge else (args.jobs or workers.cpus())
    return _validate_once(names, options, jobs, args)


def _validate_once(names: list[str], options: Options, jobs: int, args: argparse.Namespace) -> int:
    """Validate the ops, print each one's table, write --json; the exit code."""
    from ..validation import runner
    from ..verdict import report

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
            if options.fail_fast:
                print(f"-- {outcome.name}: stopped at its first failing row (--fail-fast): the checks after it did "
                      "not run", flush=True)
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

    from ..base import watch
    from ..base.files import shown
    from ..op.loaders import load_op

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
