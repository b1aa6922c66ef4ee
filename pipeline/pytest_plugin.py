"""brrr's verdict as ordinary pytest tests: one test per op and check (a row of `brrr validate`),
so `pytest --junitxml` and CI dashboards show each check.

Two ways in, both validating each op once per session:

    pytest --brrr ./ops/rmsnorm --brrr ./ops          # op folders, or folders of op folders
    [tool.pytest.ini_options] brrr_ops = ["ops"]       # the same from the ini file (paths from it)

    # or in a test file, one line per op:
    from brrr_kernels.pytest_plugin import op_tests
    test_rmsnorm = op_tests("ops/rmsnorm")             # a path relative to this file, or a built-in name

`--brrr-stage numba` (repeatable; ini brrr_stages) narrows the stages, `--brrr-seed N` replays.
The ops are validated while pytest collects (the checks a row holds are known only after they ran);
a failing test shows brrr's reasons and the `brrr debug` command that stops in the guilty thread.
A row `compiled, not run: no GPU` passes (the compile check ran), a skipped row is a pytest skip.

Loaded by pytest through the entry point `pytest11`; it imports nothing of brrr, torch or numba
until an op is asked for, so it costs a test run that does not use it nothing.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .api import Report
    from .verdict.report import Row

from .op.names import STAGES as STAGE_NAMES  # noqa: E402  (light: no torch, no numba)

_reports: dict[tuple[str, tuple[str, ...], int | None], Report] = {}
# The session's config, for op_tests(), which runs while a test module is imported and so gets no
# fixture or hook argument: its stages and seed follow --brrr-stage, --brrr-seed and the ini as the
# --brrr tests do.
_config: pytest.Config | None = None


def pytest_configure(config: pytest.Config) -> None:
    global _config
    _config = config
    for where in [*(config.getoption("brrr", None) or []), *config.getini("brrr_ops")]:
        if Path(where).is_dir() and not _op_folders(where):
            # A path that holds no op would collect nothing, and the run would pass without a word.
            raise pytest.UsageError(f"brrr: {where}: no op folder here (a folder with a spec.py, or a folder "
                                    "holding such folders); nothing to validate")


def pytest_unconfigure(config: pytest.Config) -> None:
    global _config
    if _config is config:
        _config = None


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("brrr", "brrr: op folders validated as tests")
    group.addoption("--brrr", action="append", default=[], metavar="OP",
                    help="validate this op folder (or every op folder inside it, or a built-in op's name) as tests: "
                         "one per check (repeatable)")
    group.addoption("--brrr-stage", action="append", default=[], choices=STAGE_NAMES,
                    help="only this stage (repeatable; default: the ini's brrr_stages, else all three)")
    group.addoption("--brrr-seed", type=int, default=None, help="the seed of the random inputs (default: fresh)")
    parser.addini("brrr_ops", type="paths", default=[], help="op folders (or folders of them) to validate as tests")
    parser.addini("brrr_stages", type="args", default=[], help="the stages to validate (default: all three)")


def _stages(config: pytest.Config) -> tuple[str, ...]:
    return tuple(config.getoption("brrr_stage") or config.getini("brrr_stages") or STAGE_NAMES)


def _op_folders(where: str | Path) -> list[str]:
    """An op folder, the op folders directly inside a folder, or a built-in op's name as given."""
    path = Path(where)
    if (path / "spec.py").is_file() or not path.is_dir():
        return [str(where)]
    return [str(p) for p in sorted(path.iterdir()) if (p / "spec.py").is_file()]


def validated(op: str, stages: Iterable[str], seed: int | None) -> Report:
    """One validation per op, stages and seed in this pytest session."""
    from .api import validate

    key = (str(Path(op).resolve()) if Path(op).exists() else op, tuple(stages), seed)
    if key not in _reports:
        _reports[key] = validate(op, stages=key[1], seed=seed, quiet=True)
    return _reports[key]


def row_id(row: Row) -> str:
    """A row's test name: stage-check-dtype, without spaces so `-k` can name it."""
    return f"{row.stage}-{row.check.replace(' ', '_')}-{row.dtype}"


def judge(row: Row, report: Report) -> None:
    """Pass, fail with brrr's reasons, or skip, as the row's verdict says."""
    from .verdict.report import FAIL, NOT_APPLICABLE, SKIP, format_table

    if row.verdict == FAIL:
        lines = [f"brrr: {report.op} {row.stage} {row.check} [{row.dtype}] failed (seed {report.seed})",
                 format_table([row])]
        if "brrr debug" not in row.detail and row.stage != "reference":
            lines.append(f"step through it: brrr debug {report.folder} --seed {report.seed} --index I")
        lines.append(f"replay: brrr validate {report.folder} --stage {row.stage} --seed {report.seed}")
        pytest.fail("\n".join(lines), pytrace=False)  # brrr's reasons, not a traceback into this plugin
    if row.verdict in (SKIP, NOT_APPLICABLE):
        pytest.skip(row.detail or "skipped by brrr")


class OpCollector(pytest.Collector):
    """The checks of one op, validated once; a folder that cannot be loaded is one failing test."""

    def __init__(self, *, op: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.op = op

    def collect(self) -> Iterator[pytest.Item]:
        from .base.errors import BrrrError

        config = self.config
        try:
            report = validated(self.op, _stages(config), config.getoption("brrr_seed"))
        except BrrrError as e:
            yield CheckItem.from_parent(self, name="load", row=None, report=None, error=str(e))
            return
        for row in report.rows:
            yield CheckItem.from_parent(self, name=row_id(row), row=row, report=report, error=None)


class CheckItem(pytest.Item):
    def __init__(self, *, row: Row | None, report: Report | None, error: str | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.row, self.report, self.error = row, report, error

    def runtest(self) -> None:
        if self.error is not None:
            pytest.fail(f"brrr cannot validate {self.parent.op}: {self.error}", pytrace=False)  # type: ignore[attr-defined]
        assert self.row is not None and self.report is not None
        judge(self.row, self.report)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"brrr {self.nodeid}"


@pytest.hookimpl(tryfirst=True)  # before -k and -m deselect, so they can select brrr's tests too
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    wanted = [*config.getoption("brrr"), *config.getini("brrr_ops")]
    seen: set[str] = set()
    for where in wanted:
        for op in _op_folders(where):
            label = Path(op).name
            if label in seen:
                continue
            seen.add(label)
            path = Path(op).resolve() if Path(op).exists() else session.path
            collector = OpCollector.from_parent(session, name=label, nodeid=f"brrr/{label}", path=path, op=op)
            items.extend(_collected(session, collector))


def _collected(session: pytest.Session, collector: OpCollector) -> list[pytest.Item]:
    report = session.config.hook.pytest_make_collect_report(collector=collector)
    if report.failed:
        session.config.hook.pytest_collectreport(report=report)
        return []
    return [node for node in report.result if isinstance(node, pytest.Item)]


def _chosen(stages: Iterable[str] | None, seed: int | None) -> tuple[tuple[str, ...], int | None]:
    """op_tests' stages and seed: the command line's (--brrr-stage, --brrr-seed) first, then the
    arguments, then the ini's brrr_stages; all three stages and a fresh seed by default."""
    if _config is None:  # imported outside a pytest session
        return tuple(stages or STAGE_NAMES), seed
    chosen = _config.getoption("brrr_stage") or list(stages or []) or _config.getini("brrr_stages") or STAGE_NAMES
    flag_seed = _config.getoption("brrr_seed")
    return tuple(chosen), flag_seed if flag_seed is not None else seed


def op_tests(op: str, stages: Iterable[str] | None = None, seed: int | None = None) -> Callable[..., None]:
    """In a test file, `test_rmsnorm = op_tests("rmsnorm")`: one parametrized test per check of the op
    (a folder relative to the calling file, or a built-in op's name)."""
    caller = Path(inspect.stack()[1].filename).parent
    path = caller / op
    where = str(path) if path.exists() else op
    report = validated(where, *_chosen(stages, seed))

    @pytest.mark.parametrize("row", report.rows, ids=[row_id(r) for r in report.rows])
    def test(row: Row) -> None:
        judge(row, report)

    return test
