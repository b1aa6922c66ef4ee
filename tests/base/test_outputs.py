"""Where brrr writes is checked before any work: each bad target is one line naming the path and the setting, exit 2."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from brrr_kernels import cli
from brrr_kernels.base import outputs

UNWRITABLE = Path("/proc/brrr-cannot-write-here")  # not even root can create files in /proc


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, float]:
    start = time.monotonic()
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.err + captured.out, time.monotonic() - start


def _target(tmp_path: Path, kind: str) -> Path:
    if kind == "a folder":
        return tmp_path
    if kind == "under a file":
        (tmp_path / "file").write_text("")
        return tmp_path / "file" / "out"
    return UNWRITABLE / "out"


TARGETS = [("a folder", "is a folder; expected the path of a file to write"),
           ("under a file", "is a file, not a folder"),
           ("unwritable", "cannot write in /proc")]


@pytest.mark.parametrize("kind, says", TARGETS, ids=[t[0] for t in TARGETS])
@pytest.mark.parametrize("command", [["validate", "sigmoid", "--stage", "reference", "--json"],
                                     ["bench", "sigmoid", "--json"], ["bench", "sigmoid", "--plot"],
                                     ["bench", "sigmoid", "--profile"]],
                         ids=["validate --json", "bench --json", "bench --plot", "bench --profile"])
def test_an_output_file_brrr_cannot_write_is_refused_before_work(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                 command: list[str], kind: str, says: str) -> None:
    target = _target(tmp_path, kind)
    code, text, seconds = _run(capsys, *command, str(target))
    assert code == 2
    assert f"brrr: error: {command[-1]} {target}: " in text and says in text
    assert "==" not in text and "needs a GPU" not in text  # nothing ran: not validation, not even bench's GPU check
    assert seconds < 5


CACHES = [("a file", "is a file; expected a folder"), ("unwritable", "cannot write in /proc")]


@pytest.mark.parametrize("kind, says", CACHES, ids=[c[0] for c in CACHES])
@pytest.mark.parametrize("command", [["validate", "sigmoid", "--stage", "numba"], ["build", "sigmoid"]],
                         ids=["validate", "build"])
def test_a_cache_brrr_cannot_write_is_refused_before_work(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch, command: list[str],
                                                          kind: str, says: str) -> None:
    cache = tmp_path / "cache-file" if kind == "a file" else UNWRITABLE
    if kind == "a file":
        cache.write_text("")
    monkeypatch.setenv("BRRR_CACHE", str(cache))
    code, text, _ = _run(capsys, *command)
    assert code == 2
    assert f"brrr: error: BRRR_CACHE={cache}: {says}" in text
    assert "hint: point BRRR_CACHE at a folder you can write, or unset it for ~/.cache/brrr" in text


@pytest.mark.parametrize("value", ["", "  "], ids=["empty", "blank"])
def test_an_empty_cache_setting_means_the_default_never_the_current_directory(monkeypatch: pytest.MonkeyPatch,
                                                                              value: str) -> None:
    monkeypatch.setenv("BRRR_CACHE", value)
    assert outputs.cache_root() == Path.home() / ".cache" / "brrr"


NEW_DIRS = [("a file", "is a file; expected a folder"), ("unwritable", "cannot write in /proc")]


@pytest.mark.parametrize("kind, says", NEW_DIRS, ids=[d[0] for d in NEW_DIRS])
def test_new_dir_brrr_cannot_write_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str,
                                            says: str) -> None:
    target = tmp_path / "file" if kind == "a file" else UNWRITABLE
    if kind == "a file":
        target.write_text("")
    code, text, _ = _run(capsys, "new", "swish", "--dir", str(target))
    assert code == 2
    assert f"brrr: error: --dir {target}: {says}" in text
    assert not (target.parent / "swish").exists()


def test_a_writable_target_passes(tmp_path: Path) -> None:
    outputs.check_file(tmp_path / "new" / "deeper" / "out.json", "--json")
    outputs.check_folder(tmp_path / "new", "--dir")
    assert not (tmp_path / "new").exists()  # checking creates nothing
    assert list(tmp_path.iterdir()) == []
