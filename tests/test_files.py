"""Atomic writes and inter-process locks."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from brrr_kernels.files import locked, write_atomic


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
