"""brrr's environment settings (BRRR_*), each read and checked in one place.

A setting a person mistypes (`BRRR_CPU_TIMEOUT=abc`, `=-5`, `=nan`) is a usage error naming it and
what it takes, before any work starts, never a silent default (which turned `abc` into 120 s).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Literal

from .errors import UsageError

Kind = Literal["seconds", "count", "switch"]


@dataclass(frozen=True)
class Setting:
    name: str
    kind: Kind
    what: str  # completes "NAME: ..." in the error


# Every numeric setting brrr or its CPU runtime reads (the runtime also refuses a bad one itself).
SETTINGS = (
    Setting("BRRR_CPU_TIMEOUT", "seconds", "the most one launch of the CPU execution may run"),
    Setting("BRRR_SIM_TIME_LIMIT", "seconds", "the most one launch in the numba simulator may run (0: no limit)"),
    Setting("BRRR_CPU_STACK_KB", "count", "each CPU-executed GPU thread's stack, in KB"),
    Setting("BRRR_CPU_WORKERS", "count", "OS threads running blocks of a CPU-executed launch"),
    Setting("BRRR_CPU_SMS", "count", "multiprocessors the CPU execution reports"),
    Setting("BRRR_CPU_RESIDENT", "count", "blocks the CPU execution may keep resident at once"),
    # Internal, for measuring what isolation costs (benchmarks/isolation_cost.py): off runs the op's
    # compiled code in brrr's own process, where a crash in it ends brrr.
    Setting("BRRR_CPU_ISOLATION", "switch", "whether the CPU execution runs the op's code in a child process"),
    # Off: registered ops run torch.library's Python autograd and kernels (validation/native_library.py).
    Setting("BRRR_NATIVE", "switch", "whether registered ops run brrr's C++ autograd formula and calls"),
)
_SWITCH = {"on": 1.0, "1": 1.0, "off": 0.0, "0": 0.0}
_BY_NAME = {s.name: s for s in SETTINGS}


def _parse(setting: Setting, text: str) -> float:
    if setting.kind == "switch":
        if text.lower() not in _SWITCH:
            raise UsageError(f"{setting.name}={text!r}: expected on or off ({setting.what})", hint="unset it for on")
        return _SWITCH[text.lower()]
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    whole = setting.kind == "count"
    zero_ok = setting.name == "BRRR_SIM_TIME_LIMIT"
    bad = not math.isfinite(value) or value < 0 or (value == 0 and not zero_ok) or (whole and value != int(value))
    if bad:
        expected = "a whole number above 0" if whole else f"a number of seconds {'of 0 or more' if zero_ok else 'above 0'}"
        raise UsageError(f"{setting.name}={text!r}: expected {expected} ({setting.what})",
                         hint=f"set it to {'16' if whole else '30'}, say, or unset it for the default")
    return value


def number(name: str, default: float) -> float:
    """The setting's value, or `default` where it is unset or blank; UsageError where it is malformed."""
    text = os.environ.get(name, "").strip()
    return _parse(_BY_NAME[name], text) if text else default


def seconds_setting(name: str, default: float) -> float:
    return number(name, default)


def switch(name: str, default: bool) -> bool:
    """An on/off setting: `default` where it is unset or blank; UsageError where it is neither."""
    return bool(number(name, float(default)))


def check_all() -> None:
    """Every setting that is set, checked (at the start of a command)."""
    for setting in SETTINGS:
        text = os.environ.get(setting.name, "").strip()
        if text:
            _parse(setting, text)
