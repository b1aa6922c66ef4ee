"""How long each op's validation took when it last ran here, so that validate_many starts the longest first.

With more ops than worker processes, the op started last decides when brrr ends. In the order
asked (the seven ops of the README: sigmoid ... matmul), matmul, the longest, started last and ran
alone on one core while the other core had nothing left to do. Started first, the shorter ops fill
the other cores beside it. An op never timed here goes first of all: it may be the longest.

The times live in the build cache (one small JSON file) by the op as named and the stages asked.
Two brrr runs writing at once may lose one's update; that changes an order, never a verdict.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..base.files import write_atomic
from ..base.outputs import cache_root

FILE = "validate-seconds.json"
KEPT = 500  # entries at most: the most recently written are kept


def _key(name: str, stages: Sequence[str]) -> str:
    return f"{name} {'+'.join(stages)}"


def _read() -> dict[str, float]:
    try:
        data = json.loads((cache_root() / FILE).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: float(v) for k, v in data.items() if isinstance(v, (int, float))}


def longest_first(names: Sequence[str], stages: Sequence[str]) -> list[int]:
    """The indices of `names` in the order to start them: those never timed (as given), then the
    rest by their last time, longest first."""
    known = _read()
    never = [i for i, name in enumerate(names) if _key(name, stages) not in known]
    timed = sorted((i for i, name in enumerate(names) if _key(name, stages) in known),
                   key=lambda i: -known[_key(names[i], stages)])
    return never + timed


def record(seconds: dict[str, float], stages: Sequence[str]) -> None:
    """Keep each op's time of this run (op as named -> seconds); a cache brrr cannot write is no error here."""
    if not seconds:
        return
    known = _read()
    for name, s in seconds.items():
        known.pop(_key(name, stages), None)
        known[_key(name, stages)] = round(s, 2)
    kept = dict(list(known.items())[-KEPT:])
    try:
        write_atomic(cache_root() / FILE, json.dumps(kept, indent=0))
    except OSError:
        pass
