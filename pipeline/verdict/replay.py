"""A failed check's case, kept so `brrr debug --input` replays it in the thread that went wrong: saved
under the cache's failures/, the command line that replays it, and loading it back."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ..base.errors import UsageError
from ..base.files import replacing, shown
from ..base.outputs import cache_root
from ..op.spec import Op, Phase


@dataclass(frozen=True)
class Failure:
    """A failed check's case, kept so `brrr debug --input` replays it in the thread that went wrong.

    The thread is named by the element it computes (`index`: the thread the simulator saw write it) or,
    for an exception raised in the simulator, by its `block` and `thread`.
    """

    op: Op
    inputs: tuple[torch.Tensor, ...]
    upstream: tuple[torch.Tensor, ...]
    phase: Phase
    index: int | None = None
    block: tuple[int, ...] | None = None
    thread: tuple[int, ...] | None = None
    stage: str = "numba"  # cuda: replayed in gdb on the CPU execution (brrr debug --stage cuda)
    kernel: str | None = None  # where the simulator saw the writer


# A kept case outlives its validation by this long: two runs of one op at once each name a file of
# their own (named by its content), and a failing run prunes the older files of its op and check.
KEEP_S = 3600.0


def save_failure(failure: Failure, name: str) -> str:
    """Save the failure's inputs (atomically) under the cache's failures/; the command line that replays it."""
    import io
    import time

    data = {"op": str(failure.op.folder), "phase": failure.phase,
            "inputs": [x.detach().cpu().clone() for x in failure.inputs],
            "upstream": [u.detach().cpu().clone() for u in failure.upstream]}
    buffer = io.BytesIO()
    torch.save(data, buffer)
    content = buffer.getvalue()
    # Named for the op's folder (two folders holding ops of one name: a user's copy, the planted-bug
    # copies the tests make) and for the case itself (one folder validated twice at once): neither
    # replaces the other's file.
    folder = hashlib.sha256(str(Path(failure.op.folder).resolve()).encode()).hexdigest()[:8]
    prefix = f"{failure.op.name}-{folder}-{name}"
    path = cache_root() / "failures" / f"{prefix}-{hashlib.sha256(content).hexdigest()[:8]}.pt"
    with replacing(path) as tmp:
        tmp.write_bytes(content)
    for old in path.parent.glob(f"{prefix}-*.pt"):
        try:
            if old != path and time.time() - old.stat().st_mtime > KEEP_S:
                old.unlink()
        except OSError:  # another run pruned or replaced it meanwhile
            pass
    return f"debug it: {replay_command(failure, path)}"


def replay_command(failure: Failure, path: Path) -> str:
    phase = " --phase backward" if failure.phase == "backward" else ""
    if failure.index is not None:
        thread = f"--index {failure.index}"
    else:
        thread = f"--block {','.join(map(str, failure.block or ()))} --thread {','.join(map(str, failure.thread or ()))}"
        thread += f" --kernel {failure.kernel}" if failure.kernel else ""
    stage = " --stage cuda" if failure.stage == "cuda" else ""
    return f"brrr debug {op_ref(failure.op)} --input {path}{stage}{phase} {thread}"


def op_ref(op: Op) -> str:
    """The op as `brrr debug` takes it: a built-in's name, else its folder."""
    from ..op.loaders import BUILTIN_DIR

    return op.name if op.folder.parent == BUILTIN_DIR else shown(op.folder)


def load_failure(path: Path) -> dict[str, Any]:
    """The inputs `save_failure` kept; anything else is one line naming the file."""
    import warnings

    try:
        with warnings.catch_warnings():  # torch warns about a corrupt file's pickle protocol before failing on it
            warnings.simplefilter("ignore")
            saved = torch.load(path, weights_only=True)
    except OSError as e:
        raise UsageError(f"--input {path}: cannot read it ({e.strerror or e})") from e
    except Exception as e:  # torch's unpickling errors run to many lines; their kind is enough
        raise UsageError(f"--input {path}: not inputs saved by a failed validation (torch.load: {type(e).__name__})",
                         hint="validation prints the --input path to use under a failing row") from e
    if not (isinstance(saved, dict) and {"op", "inputs", "upstream"} <= saved.keys()):
        raise UsageError(f"--input {path}: a torch file, but not inputs saved by a failed validation "
                         f"(expected the keys op, inputs, upstream)")
    return saved
