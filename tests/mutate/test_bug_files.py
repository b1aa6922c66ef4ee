"""Planted bugs as files: reading them, applying them whatever the whitespace, failing clearly when they no longer apply."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import STAGES

from brrr_kernels.mutate.bug_files import BugError, Change, apply_change, bugs_of, mutant, read_bug
from brrr_kernels.op.loaders import builtin_op_names, load_op

ALL_BUGS = [(op, name) for op in builtin_op_names() for name in bugs_of(STAGES / op)]


def _squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _reformat(text: str, suffix: str) -> str:
    """The same code with its whitespace changed: spaces doubled after the indentation, blank lines added,
    and for C++ the indentation changed too (Python's must stay consistent, so it is kept)."""
    out = []
    for line in text.splitlines():
        body = line.lstrip()
        indent = line[: len(line) - len(body)]
        if suffix != ".py":
            indent = indent.replace("    ", "  ")
        out.append(indent + body.replace(" ", "  ") + "   ")
        out.append("")
    return "\n".join(out) + "\n"


def test_every_op_carries_its_planted_bugs_and_still_loads() -> None:
    assert {op for op, _ in ALL_BUGS} == set(builtin_op_names())
    for op in builtin_op_names():
        assert load_op(op).folder == STAGES / op  # a bugs/ folder does not confuse the loader


@pytest.mark.parametrize(("op", "name"), ALL_BUGS)
def test_bug_applies_to_the_op_and_to_a_reformatted_copy(op: str, name: str, tmp_path: Path) -> None:
    bug = bugs_of(STAGES / op)[name]
    assert bug.about, f"{bug.path}: say what the bug is and why validation must catch it"
    plain = mutant(STAGES / op, name, tmp_path / "plain")
    assert not (plain / "bugs").exists()
    for file in {change.file for change in bug.changes}:
        original = (STAGES / op / file).read_text()
        again = _reformat(original, Path(file).suffix)
        for change in (c for c in bug.changes if c.file == file):
            again = apply_change(change, again, f"{bug.path}: {file}")
        assert _squeeze(again) == _squeeze((plain / file).read_text()) != _squeeze(original)
        if file.endswith(".py"):
            compile(again, file, "exec")  # still Python: the indentation fits where it landed


def test_a_bug_that_no_longer_applies_names_the_bug_file_and_the_op_file(tmp_path: Path) -> None:
    path = tmp_path / "gone.bug"
    path.write_text("# a bug whose code was rewritten since\n--- kernel.cu\nint idx = threadIdx.x;\n+++\nint idx = 0;\n")
    bug = read_bug(path)
    with pytest.raises(BugError, match=r"gone\.bug: kernel\.cu: the code to find is not there \(first line: 'int idx"):
        apply_change(bug.changes[0], "int64_t i = threadIdx.x;\n", f"{path}: kernel.cu")


def test_ambiguous_code_is_refused() -> None:
    with pytest.raises(BugError, match="is there 2 times"):
        apply_change(Change("k.cu", "x = 1;", "x = 2;"), "x = 1;\nx  =  1;\n", "b.bug: k.cu")


def test_whole_lines_are_reindented_and_a_removal_takes_its_line(tmp_path: Path) -> None:
    text = "def f(x, n):\n  for i in range(n):\n    if i >= n:\n      return\n    v = x[i]\n"
    change = Change("k.py", "        if i >= n:\n            return\n        v = x[i]", "        v = x[i]\n        w = v")
    assert apply_change(change, text, "b") == "def f(x, n):\n  for i in range(n):\n    v = x[i]\n    w = v\n"
    removal = Change("k.py", "    if i >= n:\n        return", "")
    assert apply_change(removal, text, "b") == "def f(x, n):\n  for i in range(n):\n    v = x[i]\n"


@pytest.mark.parametrize(("text", "message"), [
    ("--- kernel.cu\nint i;\n", "no '\\+\\+\\+' line"),
    ("just text\n", "expected '# comment' or '--- FILE'"),
    ("# only a comment\n", "no change in it"),
])
def test_malformed_bug_files_say_what_is_wrong(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.bug"
    path.write_text(text)
    with pytest.raises(BugError, match=message):
        read_bug(path)
