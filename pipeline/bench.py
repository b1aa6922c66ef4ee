"""`brrr bench`: each op's cuda stage against PyTorch eager, torch.compile, and the other stages.

Timing follows the usual rules for asynchronous devices: CUDA events around each run, after a
warm-up, the median of many runs, the whole device synchronized before each stop event is read,
and inputs rotated among enough buffers that they cannot sit in L2 between runs. Achieved
bandwidth counts the bytes an op must move at least (each input read once, each result written
once), and is set against a device-to-device copy measured in the same run.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import torch

from pipeline.errors import BrrrError
from pipeline.spec import Op, Size, as_tuple

RUNS = 50
L2_MULTIPLE = 3  # rotate enough input sets to cover this many times the L2 cache


@dataclass
class Timing:
    op: str
    size: str
    dtype: str
    pass_: str  # forward | forward+backward
    impl: str  # eager | compile | reference | numba | cuda
    ms: float
    gbps: float
    copy_fraction: float
    speedup_vs_eager: float | None = None


def require_gpu() -> None:
    if not torch.cuda.is_available():
        raise BrrrError("brrr bench needs a CUDA GPU; torch sees none here")


def time_ms(fn: Callable[[int], Any], sets: int, runs: int = RUNS) -> float:
    """Median milliseconds of fn(i), i rotating over input sets, each run synchronized device-wide."""
    for i in range(3):
        fn(i % sets)
    torch.cuda.synchronize()
    times = []
    for r in range(runs):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(r % sets)
        stop.record()
        torch.cuda.synchronize()  # counts work left on any stream, not only the current one
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def copy_bandwidth(nbytes: int = 1 << 30) -> float:
    """GB/s of a device-to-device copy, counting bytes read plus bytes written."""
    src = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda").uniform_()
    dst = torch.empty_like(src)
    ms = time_ms(lambda i: dst.copy_(src), 1, runs=20)
    return 2 * nbytes / ms / 1e6


def _sets_for(nbytes: int) -> int:
    l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 << 20)
    return max(1, min(8, -(-L2_MULTIPLE * l2 // max(nbytes, 1))))


def bench_op(op: Op, size: Size, dtype: torch.dtype, impls: dict[str, Callable[..., Any]], copy_gbps: float,
             backward: bool) -> list[Timing]:
    spec = op.spec
    gen = torch.Generator().manual_seed(0)
    probe = spec.make_inputs(size, dtype, torch.device("cuda"), gen)
    in_bytes = sum(x.nbytes for x in probe)
    sets = [probe] + [spec.make_inputs(size, dtype, torch.device("cuda"), gen) for _ in range(_sets_for(in_bytes) - 1)]
    upstreams: dict[int, tuple[torch.Tensor, ...]] = {}
    results: list[Timing] = []
    eager_ms = None
    for name, fn in impls.items():
        def run(i: int, fn: Callable[..., Any] = fn) -> None:
            xs = sets[i]
            if backward:
                xs = [x.detach().requires_grad_(x.is_floating_point()) for x in xs]
            out = as_tuple(fn(*xs, *spec.param_values))[: len(spec.outputs)]
            if backward:
                if i not in upstreams:
                    upstreams[i] = tuple(torch.randn_like(o) for o in out)
                torch.autograd.grad(out, [x for x in xs if x.requires_grad], upstreams[i])

        try:
            out = as_tuple(impls[name](*probe, *spec.param_values))
            moved = in_bytes + sum(o.nbytes for o in out)
            if backward:  # read the upstream gradient and what backward needs; write one gradient per input
                moved += sum(o.nbytes for o in out[: len(spec.outputs)]) + in_bytes + in_bytes
            ms = time_ms(run, len(sets))
        except Exception as e:  # one implementation failing (numba on an unsupported dtype) is reported, not fatal
            results.append(Timing(spec.name, str(size), str(dtype).removeprefix("torch."),
                                  "forward+backward" if backward else "forward", f"{name} (failed: {type(e).__name__})",
                                  float("nan"), float("nan"), float("nan")))
            continue
        upstreams.clear()
        gbps = moved / ms / 1e6
        eager_ms = ms if name == "eager" else eager_ms
        results.append(Timing(spec.name, str(size), str(dtype).removeprefix("torch."),
                              "forward+backward" if backward else "forward", name, ms, gbps, gbps / copy_gbps,
                              eager_ms / ms if eager_ms else None))
    return results


def implementations(op: Op, with_numba: bool) -> dict[str, Callable[..., Any]]:
    from pipeline import builder
    from pipeline.function import apply
    from pipeline.loaders import load_cuda, load_numba, load_reference

    spec = op.spec
    impls: dict[str, Callable[..., Any]] = {}
    if spec.oracle is not None:
        impls["eager"] = spec.oracle
        impls["compile"] = torch.compile(spec.oracle)
    ref = load_reference(op)
    impls["reference"] = lambda *a: apply(ref, *a[: len(spec.inputs)])
    if with_numba:
        numba = load_numba(op, gpu=True)
        impls["numba"] = lambda *a: apply(numba, *a[: len(spec.inputs)])
    cuda = load_cuda(op, builder.build_extension(op))
    impls["cuda"] = lambda *a: apply(cuda, *a[: len(spec.inputs)])
    return impls


def format_table(rows: list[Timing], copy_gbps: float, device: str) -> str:
    lines = [f"{device}: device-to-device copy {copy_gbps:.0f} GB/s (read + write)",
             f"{'op':10s} {'size':>16s} {'dtype':8s} {'pass':16s} {'impl':22s} {'ms':>9s} {'GB/s':>7s} "
             f"{'% copy':>7s} {'vs eager':>8s}"]
    for r in rows:
        vs = f"{r.speedup_vs_eager:.2f}x" if r.speedup_vs_eager else "-"
        lines.append(f"{r.op:10s} {r.size:>16s} {r.dtype:8s} {r.pass_:16s} {r.impl:22s} {r.ms:9.4f} {r.gbps:7.0f} "
                     f"{100 * r.copy_fraction:6.1f}% {vs:>8s}")
    return "\n".join(lines)


def to_dicts(rows: list[Timing]) -> list[dict[str, Any]]:
    return [asdict(r) for r in rows]


def plot(rows: list[Timing], path: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise BrrrError("--plot needs matplotlib (pip install matplotlib)") from e
    labels = [f"{r.op} {r.dtype} {'fwd' if r.pass_ == 'forward' else 'fwd+bwd'}\n{r.impl}" for r in rows]
    fig, ax = plt.subplots(figsize=(max(6, 0.45 * len(rows)), 4))
    ax.bar(range(len(rows)), [100 * r.copy_fraction for r in rows])
    ax.set_xticks(range(len(rows)), labels, rotation=90, fontsize=6)
    ax.set_ylabel("% of device-to-device copy bandwidth")
    fig.tight_layout()
    fig.savefig(path, dpi=150)
