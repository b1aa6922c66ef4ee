"""A ticker for long work (compiles, simulator runs): elapsed seconds on stderr while it runs."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

_quiet = False
_notes_when_quiet = False  # a worker process: quiet tickers, but notes (estimates) still show


def set_quiet(quiet: bool) -> None:
    global _quiet
    _quiet = quiet


def is_quiet() -> bool:
    """Whether progress lines are off (set_quiet)."""
    return _quiet


def note(text: str) -> None:
    """One line on stderr that matters even where tickers are off (a worker process): only --quiet drops it."""
    if not _quiet or _notes_when_quiet:
        sys.stderr.write(f"  {text}\n")
        sys.stderr.flush()


def set_worker() -> None:
    """In a worker process: no tickers (they would interleave), but notes still show."""
    global _quiet, _notes_when_quiet
    _quiet, _notes_when_quiet = True, True


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

    thread = threading.Thread(target=tick, daemon=True)
    finished = False
    try:  # from the first line on: an interrupt at any point still ends the line
        sys.stderr.write(f"  {what} ...\n" if not tty else f"  {what} ...")
        sys.stderr.flush()
        thread.start()
        yield
        finished = True
    finally:
        done.set()
        if thread.ident is not None:
            thread.join()
        elapsed = time.monotonic() - start
        how = "done in" if finished else "stopped after"  # an interrupt or an error is no "done"
        sys.stderr.write(f"\r  {what}: {how} {elapsed:.1f}s\n" if tty else f"  {what}: {how} {elapsed:.1f}s\n")
        sys.stderr.flush()
