"""`brrr debug` and `brrr trace` on the command line: one thread of an op's kernel, in pdb, gdb or traced."""

from __future__ import annotations

import argparse
import sys
import traceback

from ..base.errors import EXIT_CHECK_FAILED, EXIT_OK, BrrrError
from ..debugger import numba_stage as debugger
from ..verdict.faults import fault_from


def main(args: argparse.Namespace) -> int:
    """brrr debug (pdb, or gdb with --stage cuda) and brrr trace: one thread of one kernel."""
    if getattr(args, "stage", "numba") == "cuda":
        from ..debugger import cuda_stage as cuda_debugger

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
