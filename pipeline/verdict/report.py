"""Report rows: the table printed after validation, and the same rows as JSON."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..op.spec import StageName
from .compare import Worst

Verdict = Literal["pass", "FAIL", "compiled, not run: no GPU", "skip", "not run", "n/a"]
PASS: Verdict = "pass"
FAIL: Verdict = "FAIL"
NOT_RUN: Verdict = "compiled, not run: no GPU"  # the cuda stage without a GPU: compiled only, not a failure
SKIP: Verdict = "skip"
UNRUN: Verdict = "not run"  # no case reached the check: an earlier call or stage failed (the reason is under the row)
# The check does not apply to this op (a backward check of an op the spec says has none); the reason is under the row.
NOT_APPLICABLE: Verdict = "n/a"


@dataclass
class Problem:
    """One reason a row failed, on one case. `key` is the same for the same fault met again in
    another case or row (faults.fault_key), so the table names it once; --json keeps each one."""

    case: str  # the case's label, or "" for a reason that is not about one case
    text: str  # without the case label
    key: str


@dataclass
class Row:
    op: str
    stage: StageName
    check: str  # as plan.py names it
    dtype: str  # a torch dtype's name, "all", or for the compile check the target architecture
    verdict: Verdict
    max_abs: float | None = None  # the largest |got - expected| of any element
    # The largest |got - expected| / max(|expected|, tiny) of the elements whose bound is relative:
    # None where none is (a widened output, or one bounded by the spread under rounding).
    max_rel: float | None = None
    worst: Worst | None = None
    seconds: float = 0.0
    detail: str = ""
    extras: dict[str, Any] = field(default_factory=dict)
    # Where the stage ran, when not where it usually does: "cpu" for the cuda stage executed on the
    # CPU (shown as cuda@cpu), so no one takes the row for a GPU result.
    place: str = ""
    cases: list[str] = field(default_factory=list)  # the cases the check ran on: sizes, edge cases, variants
    of_bound: float | None = None  # the worst element's |got - expected| over its bound: above 1 fails
    # Every reason the row failed, one per case (detail keeps the first few as text), and the lines
    # printed after them (cases not run, the `brrr debug` command).
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Sizes of the spec this row did not run where it ran (the CPU execution's budget): a GPU runs them.
    gpu_only: list[str] = field(default_factory=list)
    # The kernels' device printf lines while this check ran (the CPU execution), each "[case] [block
    # (x, y, z), thread (x, y, z)] text": a kernel's own debugging output belongs with its verdict.
    printed: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.verdict == FAIL


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:.2e}"


def _worst_text(w: Worst | None) -> str:
    if w is None:
        return ""
    where = f"{w.tensor}[{','.join(map(str, w.index))}]"
    if w.case:
        where += f" ({w.case})"
    text = where
    if len(w.shape) >= 2:  # a row-wise op's element: which row, which column
        text += f" row={w.flat_index // max(w.shape[-1], 1)} col={w.index[-1]}"
    if w.input is not None:
        text += f" {w.input_name or 'x'}={w.input:.6g}"
    text += f" expected={w.expected:.6g} got={w.got:.6g}"
    if w.block is not None:
        text += f" block={w.block} thread={w.thread}"
        if w.placed == "intended":  # no run saw the write: say whose the spec says it is, not who did it
            text += " (the spec's intended mapping, not observed)"
    return text


def covered(cases: list[str]) -> str:
    """The cases of a row, short: "1, 127" for sizes, "3x37" for shapes, edge cases by name, "nc" for strided,
    "mis" for misaligned, "perm" for permuted."""
    short = []
    for label in cases:
        text = label.replace("non-contiguous, ", "nc ").replace("misaligned, ", "mis ").replace("permuted, ", "perm ")
        text = text.replace("size ", "")
        if "(" in text:
            text = text.replace("(", "").replace(")", "").replace(", ", "x").replace(",", "")
        short.append(text)
    return ", ".join(short) or "-"


def format_table(rows: list[Row]) -> str:
    headers = ("stage", "check", "dtype", "verdict", "of bound", "max rel", "time", "cases", "worst element")
    cells = [
        (f"{r.stage}@{r.place}" if r.place else r.stage, r.check, r.dtype, r.verdict,  # cuda@cpu: not a GPU's
         _num(r.of_bound), _num(r.max_rel), f"{r.seconds:.2f}s",
         covered(r.cases) + (f"; on a GPU only: {covered(r.gpu_only)}" if r.gpu_only else ""), _worst_text(r.worst))
        for r in rows
    ]
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(headers)]
    widths[-1] = len(headers[-1])
    line = lambda c: "  ".join(str(v).ljust(w) for v, w in zip(c, widths)).rstrip()  # noqa: E731
    out = [line(headers), line(["-" * w for w in widths])]
    folded = _Folded(rows)
    for r, c in zip(rows, cells):
        out.append(line(c))
        if r.problems or r.notes:
            out += [f"    {d}" for d in folded.lines(r) + r.notes]
        elif r.detail and (r.failed or r.verdict in (NOT_RUN, SKIP, UNRUN, NOT_APPLICABLE) or "not run:" in r.detail):
            for d in r.detail.splitlines():
                out.append(f"    {d}")
        out += [f"    {d}" for d in printed_lines(r)]
    widened = list(dict.fromkeys(why for r in rows for why in r.extras.get("widened", [])))
    if widened:
        out.append("bounds the spec widens, and why:")
        out += [f"    {why}" for why in widened]
    return "\n".join(out)


PRINTED_SHOWN = 20  # device printf lines shown under a row; --json keeps them all


def printed_lines(r: Row) -> list[str]:
    """A row's device printf lines as the table shows them: a heading, the first PRINTED_SHOWN lines."""
    if not r.printed:
        return []
    n = len(r.printed)
    out = [f"device printf, {n} line{'s' if n > 1 else ''}:", *(f"  {line}" for line in r.printed[:PRINTED_SHOWN])]
    if n > PRINTED_SHOWN:
        out.append(f"  ... {n - PRINTED_SHOWN} more (--json has every one)")
    return out


def _row_name(r: Row) -> str:
    return f"{r.stage}@{r.place} {r.check} {r.dtype}" if r.place else f"{r.stage} {r.check} {r.dtype}"


class _Folded:
    """A fault met in many cases and rows (a missing barrier fails every case of every check) is
    printed once, in full, where it is first met, with where else it recurred; a later row that
    failed only by it says so in a line."""

    def __init__(self, rows: list[Row]) -> None:
        self.met: dict[str, list[tuple[Row, str]]] = {}
        for r in rows:
            for p in r.problems:
                self.met.setdefault(p.key, []).append((r, p.case))
        self.first = {key: where[0][0] for key, where in self.met.items()}

    def lines(self, row: Row, keep: int = 6) -> list[str]:
        out: list[str] = []
        firsts: dict[str, Problem] = {}
        for p in row.problems:
            firsts.setdefault(p.key, p)
        distinct = list(firsts.values())
        for p in distinct[:keep]:
            cases = [case for r, case in self.met[p.key] if r is row and case]
            if self.first[p.key] is not row:
                where = _row_name(self.first[p.key])
                out.append(f"{_labels(cases)}same fault as under {where}: {p.key.splitlines()[0][:100]}")
                continue
            out += f"{_labels(cases[:1])}{p.text}".splitlines()
            others = sorted({_row_name(r) for r, _ in self.met[p.key] if r is not row})
            more = [f"{len(cases) - 1} more case{'s' if len(cases) > 2 else ''} of this row ({', '.join(cases[1:])})"
                    ] if len(cases) > 1 else []
            if others:
                more.append(f"{len(others)} more row{'s' if len(others) > 1 else ''}: {', '.join(others)}")
            if more:
                out.append(f"  same fault in {' and in '.join(more)}")
        if len(distinct) > keep:
            out.append(f"... {len(distinct) - keep} more (--json has every one)")
        return out


def _labels(cases: list[str]) -> str:
    return f"[{', '.join(cases)}] " if cases else ""


def summary(rows: list[Row]) -> str:
    counts = {v: sum(r.verdict == v for r in rows) for v in (PASS, FAIL, NOT_RUN, SKIP, UNRUN)}
    parts = [f"{counts[PASS]} passed", f"{counts[FAIL]} failed"]
    if counts[UNRUN]:
        parts.append(f"{counts[UNRUN]} not run")
    if counts[NOT_RUN]:
        parts.append(f"{counts[NOT_RUN]} compiled, not run (no GPU)")
    if counts[SKIP]:
        parts.append(f"{counts[SKIP]} skipped")
    return ", ".join(parts)


def to_json(rows: list[Row], meta: dict[str, Any]) -> str:
    return json.dumps({"meta": meta, "rows": [asdict(r) for r in rows]}, indent=2, default=str)


def write_json(path: Path, rows: list[Row], meta: dict[str, Any]) -> None:
    from ..base.files import write_atomic

    write_atomic(path, to_json(rows, meta))
