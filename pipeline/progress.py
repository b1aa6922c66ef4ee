"""A ticker for long work (compiles, simulator runs): elapsed seconds on stderr while it runs."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

_quiet = False


def set_quiet(quiet: bool) -> None:
    global _quiet
    _quiet = quiet


@contextmanager
def ticking(what: str, every: float = 1.0) -> Iterator[None]:
    """Show `what ... Ns` while the body runs: redrawn in place on a terminal, a line every 10 s otherwise."""
    if _quiet:
        yield
        return
    tty = sys.stderr.isatty()
    done = threading.Event()
    start = time.monotonic()

    def tick() -> None:
        last_line = 0.0
        while not done.wait(every):
            elapsed = time.monotonic() - start
            if tty:
                sys.stderr.write(f"\r  {what} ... {elapsed:4.0f}s")
                sys.stderr.flush()
            elif elapsed - last_line >= 10:
                last_line = elapsed
                sys.stderr.write(f"  {what} ... {elapsed:.0f}s\n")
                sys.stderr.flush()

    sys.stderr.write(f"  {what} ...\n" if not tty else f"  {what} ...")
    sys.stderr.flush()
    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        elapsed = time.monotonic() - start
        sys.stderr.write(f"\r  {what}: {elapsed:.1f}s\n" if tty else f"  {what}: done in {elapsed:.1f}s\n")
        sys.stderr.flush()
