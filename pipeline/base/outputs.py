"""Where brrr writes, checked before any work begins: a report file, a plot, a new op's folder,
the build cache. A target brrr could not write would otherwise be found at the end of a long
run, and its error would replace the run's verdict.

Each check writes (and removes) a probe file where the output will go: permission bits lie to
root, a read-only mount does not, and the probe sees both.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .errors import UsageError

CACHE_SETTING = "BRRR_CACHE"


def cache_root() -> Path:
    """$BRRR_CACHE, or ~/.cache/brrr when it is unset or empty (never the current directory)."""
    value = os.environ.get(CACHE_SETTING, "").strip()
    return Path(value).expanduser() if value else Path.home() / ".cache" / "brrr"


def check_cache() -> Path:
    """The build cache, if brrr can write there; else a UsageError naming the setting."""
    root = cache_root()
    where = f"{CACHE_SETTING}={root}" if os.environ.get(CACHE_SETTING, "").strip() else f"the build cache {root}"
    _check_folder(root, root, where, f"point {CACHE_SETTING} at a folder you can write, or unset it for ~/.cache/brrr")
    return root


def check_file(path: Path, setting: str) -> None:
    """`path` can be written as a file (atomically: a temporary beside it, then renamed)."""
    shown = f"{setting} {path}"
    if path.is_dir():
        raise UsageError(f"{shown}: is a folder; expected the path of a file to write")
    if path.exists() and not path.is_file():
        raise UsageError(f"{shown}: exists and is not a regular file")
    _check_folder(path.parent, path, shown, None)


def check_folder(path: Path, setting: str) -> None:
    """`path` is a folder brrr can create things in (it may not exist yet)."""
    _check_folder(path, path, f"{setting} {path}", None)


def _check_folder(folder: Path, named: Path, shown: str, hint: str | None) -> None:
    """`folder` exists and takes new files, or can be created; errors start with `shown` (which names `named`)."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        if existing.is_symlink():
            raise UsageError(f"{shown}: {existing} is a broken link", hint=hint)
        existing = existing.parent
    if not existing.is_dir():
        what = "is a file" if existing == named else f"{existing} is a file, not a folder"
        raise UsageError(f"{shown}: {what}; expected a folder", hint=hint)
    try:
        fd, probe = tempfile.mkstemp(dir=existing, prefix=".brrr-probe-")
    except OSError as e:
        raise UsageError(f"{shown}: cannot write in {existing} ({e.strerror or e})", hint=hint) from e
    os.close(fd)
    os.unlink(probe)
