"""Writing files and folders so that nothing is ever half-written, locks between processes, paths as shown."""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created if missing); a second holder waits."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@contextmanager
def try_locked(path: Path) -> Iterator[bool]:
    """Take the lock on `path` if nobody holds it: yields True (held until the end) or False (held elsewhere)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@contextmanager
def replacing(path: Path, suffix: str = "") -> Iterator[Path]:
    """A temporary path beside `path` to write to; renamed onto `path` when the block succeeds, removed otherwise.

    The one atomic write: a reader (or a killed process) sees the old file or the new one, never half of it.
    `suffix` is for tools that pick a format by the file name (an object file's `.o`).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def write_atomic(path: Path, text: str) -> None:
    with replacing(path) as tmp:
        tmp.write_text(text)


@contextmanager
def new_folder(folder: Path) -> Iterator[Path]:
    """A staging folder beside `folder` to fill; renamed to `folder` when the block succeeds, removed otherwise.

    The caller has checked that `folder` does not exist; if it appears meanwhile the rename fails
    rather than merge into it (a non-empty folder) or the caller checks again at the end of its block.
    """
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        yield staging
        os.rename(staging, folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def shown(path: Path) -> str:
    """A path as a person in the current directory would type it: relative when it is below it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
