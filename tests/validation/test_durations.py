"""durations.py: each op's last validation time, and the longest started first."""

from __future__ import annotations

from pathlib import Path

import pytest

from brrr_kernels.validation import durations

STAGES = ("reference", "cuda")


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BRRR_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_ops_never_timed_first_as_given_then_the_longest_first() -> None:
    durations.record({"a": 1.0, "b": 30.0, "c": 5.0}, STAGES)
    assert durations.longest_first(["a", "new1", "b", "c", "new2"], STAGES) == [1, 4, 2, 3, 0]


def test_times_are_kept_apart_for_other_stages_and_the_latest_time_counts() -> None:
    durations.record({"a": 1.0, "b": 30.0}, STAGES)
    durations.record({"a": 50.0}, STAGES)
    assert durations.longest_first(["a", "b"], STAGES) == [0, 1]
    assert durations.longest_first(["a", "b"], ("numba",)) == [0, 1]  # neither timed for numba: as given
    durations.record({"b": 60.0}, ("numba",))
    assert durations.longest_first(["a", "b"], ("numba",)) == [0, 1]  # a never timed for numba goes first


def test_a_damaged_record_is_as_none(own_cache: Path) -> None:
    own_cache.mkdir(parents=True)
    (own_cache / durations.FILE).write_text("{not json")
    assert durations.longest_first(["a", "b"], STAGES) == [0, 1]
    durations.record({"b": 2.0, "a": 1.0}, STAGES)
    assert durations.longest_first(["a", "b"], STAGES) == [1, 0]
