"""Wait until a file in one of some folders changes: `brrr validate --watch` re-validates an op
whenever one of its files is saved, in a process whose imports (torch, numba, the compiled op
libraries) are already warm, so an edit reaches a verdict in the time the checks themselves take.

Polling, not inotify: it works on every file system and needs nothing installed, and a stat of
an op folder's few files every 0.2 s costs nothing measurable.
"""

from __future__ import annotations

import time
from pathlib import Path

Snapshot = dict[Path, tuple[int, int]]  # file -> (mtime in ns, size)

POLL_SECONDS = 0.2
# Editors save in steps (a temporary, a rename, a second write): a change counts once the folder
# has stayed the same for this long.
SETTLE_SECONDS = 0.15


def snapshot(folders: list[Path]) -> Snapshot:
    """Every file under the folders that is part of an op: not caches, not hidden files."""
    files: Snapshot = {}
    for folder in folders:
        for path in folder.rglob("*"):
            parts = path.relative_to(folder).parts
            if any(p.startswith(".") or p == "__pycache__" for p in parts) or not path.is_file():
                continue
            try:
                st = path.stat()
            except OSError:  # removed between the listing and the stat
                continue
            files[path] = (st.st_mtime_ns, st.st_size)
    return files


def changed(before: Snapshot, after: Snapshot) -> list[Path]:
    """Files added, removed or modified, in path order."""
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))


def wait_for_change(folders: list[Path], since: Snapshot) -> tuple[list[Path], Snapshot]:
    """Block until some file under `folders` differs from `since` and has settled; the files that
    changed and the new snapshot."""
    while True:
        time.sleep(POLL_SECONDS)
        now = snapshot(folders)
        if now == since:
            continue
        while True:  # until the writes settle
            time.sleep(SETTLE_SECONDS)
            settled = snapshot(folders)
            if settled == now:
                break
            now = settled
        return changed(since, now), now


def last_saved(files: list[Path], now: Snapshot) -> float:
    """When the latest of `files` was written (seconds since the epoch); now, if all were removed."""
    times = [now[f][0] / 1e9 for f in files if f in now]
    return max(times) if times else time.time()
