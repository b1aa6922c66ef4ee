"""BRRR_* settings: each read and checked in one place; a mistyped one is a usage error naming it."""

from __future__ import annotations

import pytest

from brrr_kernels.base.errors import UsageError
from brrr_kernels.base.settings import check_all, switch


@pytest.mark.parametrize("text, expected", [("on", True), ("1", True), ("OFF", False), ("0", False), ("", True)])
def test_an_on_off_setting_takes_on_or_off(text: str, expected: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BRRR_CPU_ISOLATION", text)
    assert switch("BRRR_CPU_ISOLATION", True) is expected


@pytest.mark.parametrize("text", ["maybe", "2", "yes please"])
def test_an_on_off_setting_that_is_neither_is_a_usage_error(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BRRR_CPU_ISOLATION", text)
    with pytest.raises(UsageError, match=f"BRRR_CPU_ISOLATION='{text}': expected on or off"):
        check_all()
