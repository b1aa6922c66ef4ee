"""Atomic writes (files and folders) and inter-process locks."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from brrr_kernels.base.files import locked, new_folder, replacing, write_atomic


def test_write_atomic_replaces_whole_and_leaves_no_temporaries(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text("old")
    write_atomic(target, "new")
    assert target.read_text() == "new" and list(tmp_path.iterdir()) == [target]


def test_a_failed_write_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text("old")


    with pytest.raises(TypeError):
        write_atomic(target, 42)  # type: ignore[arg-type]
    assert target.read_text() == "old" and list(tmp_path.iterdir()) == [target]


def test_lock_makes_the_second_holder_wait(tmp_path: Path) -> None:
    lock = tmp_path / "x.lock"
    order: list[str] = []

    def hold() -> None:
        with locked(lock):
            order.append("first in")
            time.sleep(0.3)
            order.append("first out")

    t = threading.Thread(target=hold)
    t.start()
    time.sleep(0.1)
    with locked(lock):
        order.append("second in")
    t.join()
    assert order == ["first in", "first out", "second in"]


def test_replacing_renames_on_success_and_cleans_up_on_error(tmp_path: Path) -> None:
    """The one atomic write every writer uses (objects, libraries, traces, saved failures)."""
    target = tmp_path / "lib.so"
    with replacing(target, suffix=".so") as tmp:
        assert tmp.suffix == ".so" and tmp.parent == tmp_path
        tmp.write_bytes(b"built")
    assert target.read_bytes() == b"built" and list(tmp_path.iterdir()) == [target]
    with pytest.raises(RuntimeError), replacing(target) as tmp:
        tmp.write_bytes(b"half")
        raise RuntimeError("the compiler died")
    assert target.read_bytes() == b"built" and list(tmp_path.iterdir()) == [target]


def test_new_folder_appears_whole_or_not_at_all(tmp_path: Path) -> None:
    folder = tmp_path / "op"
    with pytest.raises(RuntimeError), new_folder(folder) as staging:
        (staging / "spec.py").write_text("half")
        raise RuntimeError("interrupted")
    assert list(tmp_path.iterdir()) == []
    with new_folder(folder) as staging:
        (staging / "spec.py").write_text("whole")
    assert (folder / "spec.py").read_text() == "whole" and list(tmp_path.iterdir()) == [folder]
