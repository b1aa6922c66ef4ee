"""Known bugs an op folder carries as files (bugs/NAME.bug), and applying one to a copy of the op.

A planted bug is a small "find this code, put this instead" file, so a test (and `brrr mutate`)
can check that validation catches it for the right reason. Its format:

    # What the bug is and why validation must catch it (comment lines, at the top).
    --- numba_kernel.py
        if i >= n:
            return
        v = x[i]
    +++
        v = x[i]

Each `--- FILE` line starts a change to that file of the op folder: the lines up to `+++` are
the code to find, the lines after it (up to the next `---` or the end) replace it; several
changes may follow one another. The code is found ignoring whitespace (a reformatted kernel
still matches), must occur exactly once, and its replacement is re-indented to where it is
found. A change that starts mid-line, like `--- reference.py` / `grad_y * (1 - y)` / `+++` /
`grad_y * (1 + y)`, replaces just that text. A file that cannot be applied fails with
a message naming the bug file, the op file, and the first line it looked for.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import OpLoadError

BUGS_DIR = "bugs"
SUFFIX = ".bug"


class BugError(OpLoadError):
    """A bug file that is malformed or no longer applies to its op (exit 2)."""


@dataclass(frozen=True)
class Change:
    file: str  # relative to the op folder
    find: str
    replace: str


@dataclass(frozen=True)
class Bug:
    name: str
    path: Path
    about: str  # the comment lines at the top
    changes: tuple[Change, ...]


def bugs_of(folder: Path) -> dict[str, Bug]:
    """The bugs an op folder carries, by name (the file name less `.bug`)."""
    directory = folder / BUGS_DIR
    if not directory.is_dir():
        return {}
    return {p.stem: read_bug(p) for p in sorted(directory.glob(f"*{SUFFIX}"))}


def read_bug(path: Path) -> Bug:
    about: list[str] = []
    changes: list[Change] = []
    file: str | None = None
    find: list[str] | None = None
    body: list[str] = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.startswith("--- "):
            if file is not None:
                changes.append(_change(path, file, find, body))
            file, find, body = line[4:].strip(), None, []
        elif line.rstrip() == "+++" and file is not None and find is None:
            find, body = body, []
        elif file is None:
            if line.strip() and not line.startswith("#"):
                raise BugError(f"{path}:{number}: expected '# comment' or '--- FILE' before the first change")
            about.append(line.lstrip("# ").rstrip())
        else:
            body.append(line)
    if file is None:
        raise BugError(f"{path}: no change in it (a change starts with a '--- FILE' line)")
    changes.append(_change(path, file, find, body))
    return Bug(path.stem, path, " ".join(a for a in about if a), tuple(changes))


def _change(path: Path, file: str, find: list[str] | None, replace: list[str]) -> Change:
    if find is None:
        raise BugError(f"{path}: the change to {file} has no '+++' line between the code to find and its replacement")
    if not "".join(find).strip():
        raise BugError(f"{path}: the change to {file} finds nothing (the lines between '--- {file}' and '+++' are empty)")
    return Change(file, "\n".join(find), "\n".join(replace))


def apply_bug(bug: Bug, folder: Path) -> None:
    """Apply the bug's changes to the op files in `folder` (a copy: the files are rewritten in place)."""
    for change in bug.changes:
        target = folder / change.file
        if not target.is_file():
            raise BugError(f"{bug.path}: the op has no file {change.file} (in {folder})")
        target.write_text(apply_change(change, target.read_text(), f"{bug.path}: {change.file}"))


def apply_change(change: Change, text: str, where: str) -> str:
    """`text` with the change's code (found ignoring whitespace, exactly once) replaced."""
    squeezed = re.sub(r"\s+", "", change.find)
    pattern = r"\s*".join(re.escape(c) for c in squeezed)
    # Whole words only: `return y` must not match the start of `return y_hat`.
    pattern = (r"(?<!\w)" if squeezed[0].isalnum() or squeezed[0] == "_" else "") + pattern
    pattern += r"(?!\w)" if squeezed[-1].isalnum() or squeezed[-1] == "_" else ""
    found = list(re.finditer(pattern, text))
    first = next(line.strip() for line in change.find.splitlines() if line.strip())
    if len(found) != 1:
        how = "is not there" if not found else f"is there {len(found)} times"
        raise BugError(f"{where}: the code to find {how} (first line: {first!r})")
    start, end = found[0].span()
    whole_lines = _line_start(text, start) is not None and change.find[:1].isspace()
    if whole_lines:  # replace from the line's start, re-indented to the indentation found there
        line_start = _line_start(text, start)
        assert line_start is not None
        replacement = _reindent(change.replace, _indent(change.find), text[line_start:start])
        start = line_start
        if text[end:end + 1] == "\n" and not change.replace.strip():
            end += 1  # a removal takes its line with it
    else:
        replacement = change.replace.strip()
    return text[:start] + replacement + text[end:]


def _line_start(text: str, index: int) -> int | None:
    """Where the line holding `index` starts, if only whitespace comes before `index` on it."""
    start = text.rfind("\n", 0, index) + 1
    return start if not text[start:index].strip() else None


def _indent(code: str) -> str:
    first = next((line for line in code.splitlines() if line.strip()), "")
    return first[: len(first) - len(first.lstrip())]


def _reindent(code: str, old: str, new: str) -> str:
    lines = code.splitlines()
    return "\n".join(new + line[len(old):] if line.startswith(old) else line for line in lines)


def mutant(folder: Path, name: str, dest: Path) -> Path:
    """A copy of the op folder at `dest`/<op folder name> with the bug `name` applied (its bugs/ left out)."""
    bugs = bugs_of(folder)
    if name not in bugs:
        raise BugError(f"{folder} carries no bug {name!r}; it has: {', '.join(bugs) or 'none'}")
    copy = dest / folder.name
    shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("__pycache__", BUGS_DIR))
    apply_bug(bugs[name], copy)
    return copy
