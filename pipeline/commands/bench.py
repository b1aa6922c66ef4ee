"""`brrr bench`: each op's cuda stage against PyTorch eager, torch.compile and the other stages.

Each case is a pass (bench_warm.Pass): the forward, the backward alone (from a graph each input set's
forward left, kept between calls), or both.

Two times a call, because a training step pays the larger of the two (the GPU runs one op while
the host issues the next ones):
- device time (`ms`): what the GPU spends on the call's kernels when the host is ahead of it, as
  in a training step that keeps the GPU busy. A batch of back-to-back calls is queued behind a
  GPU sleep long enough for the host to issue all of them, between CUDA events, so no launch gap
  of the host's is counted; the median of many batches. Inputs rotate among enough sets that
  they cannot sit in L2 between calls, and before each implementation the L2 lines an earlier
  one kept (an evict_last policy outlives that rotation) return to normal (release_kept_lines).
- host time (`host_ms`): how long the host takes to issue one call (Python, autograd, launches).
  Where it is the larger, the op is host-bound at that size: back to back, it runs at host speed.
Achieved bandwidth counts the bytes an op must move at least (each input read once, each result
written once) over the device time, and is set against two copies measured in the same run: a
1 GiB device-to-device copy (`% copy`, the bandwidth the card has), and a copy moving the case's
own bytes (`% same`). At tens of MiB a copy itself falls short of the 1 GiB rate (the launch, the
grid's ramp and its last wave weigh more: 88.7% at 64 MiB on an H200), so `% same` says how much
of the gap an op could still close and how much no load/store kernel of that size can.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from ..base.errors import EXIT_OK, BrrrError
from ..base.files import replacing
from ..op.contract import as_tuple
from ..op.spec import Inputs, Op, Size
from ..verdict.compare import outputs_agree
from .bench_warm import (
    DEFAULT_PASSES,
    SHORT_PASS,
    Case,
    Pass,
    case_bytes,
    first_calls,
    plan,
    runner,
    stable_cache_keys,
    summary,
    warm_up,
    workers_for,
)

RUNS = 10
BATCH_MS = 3.0  # a timed batch of calls keeps the GPU busy at least this long (see time_ms)
MAX_BATCH = 200
HOST_MARGIN = 1.5  # the GPU sleep before a batch covers this many times the host's time to issue it
SLOW_MS, SLOW_RUNS = 20.0, 3  # calls slower than SLOW_MS get SLOW_RUNS runs (bench over every op stays in minutes)
VARIANT = "cuda "  # implementations named "cuda v1", ...: binding.cpp's forward_v1, ...
L2_MULTIPLE = 3  # rotate enough input sets to cover this many times the L2 cache


@dataclass
class Timing:
    op: str
    size: str
    dtype: str
    pass_: Pass
    impl: str  # eager | compile | reference | numba | cuda
    ms: float  # device time a call (see the module doc)
    gbps: float
    copy_fraction: float
    speedup_vs_eager: float | None = None
    host_ms: float = float("nan")  # host time to issue a call
    same_copy_fraction: float = float("nan")  # a copy of the same bytes' time over this call's

    @property
    def host_bound(self) -> bool:
        return self.host_ms > self.ms


def require_gpu() -> None:
    if not torch.cuda.is_available():
        raise BrrrError("brrr bench needs a CUDA GPU; torch sees none here")


@dataclass
class CallTime:
    device_ms: float
    host_ms: float


_cycles_per_ms: float | None = None


def _sleep_cycles_per_ms() -> float:
    """GPU clock cycles a millisecond, as torch.cuda._sleep counts them (measured once)."""
    global _cycles_per_ms
    if _cycles_per_ms is None:
        cycles = 2_000_000
        torch.cuda._sleep(cycles)  # warm-up: its first launch loads the kernel
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        torch.cuda._sleep(cycles)
        end.record()
        end.synchronize()
        _cycles_per_ms = cycles / max(begin.elapsed_time(end), 1e-3)
    return _cycles_per_ms


_libcuda: ctypes.CDLL | None = None


def release_kept_lines() -> int | None:
    """Return every L2 line held under an evict_last policy to normal priority.

    Inductor's Triton kernels load a row they read twice under evict_last (brrr's kernels their
    weights), and such lines outlive the input rotation: on an H200, a third of a 20 MiB buffer
    read so still came from L2 after four flushes by normal writes of twice the L2
    (benchmarks/l2_residue.py; benchmarks/results/2026-11-30-h200-l2-residue). Timed after such a
    kernel, another implementation would read part of the same inputs from L2 and look faster, so
    the order of implementations would move the comparison. cuCtxResetPersistingL2Cache clears
    them (measured there). Returns the driver's CUresult (0: success), or None where the driver
    library cannot be loaded and nothing was done."""
    global _libcuda
    if _libcuda is None:
        try:
            _libcuda = ctypes.CDLL("libcuda.so.1")
        except OSError:
            return None
    torch.cuda.synchronize()  # every kernel that could still mark a line has run
    return int(_libcuda.cuCtxResetPersistingL2Cache())


def time_ms(fn: Callable[[int], Any], sets: int, runs: int = RUNS) -> CallTime:
    """Median device and host milliseconds per call of fn(i), i rotating over input sets.

    Device time: a batch of back-to-back calls, lasting at least BATCH_MS on the GPU, is issued
    while the GPU sleeps, and timed between CUDA events recorded after the sleep and after the
    batch: the GPU then runs the calls back to back without waiting for the host. If the sleep
    ran out before the host had issued the batch, that run is repeated with a longer sleep.
    Host time: the wall time to issue the batch (the issuing never waits for the GPU, which is
    still asleep or busy with earlier calls), over its calls.
    """
    release_kept_lines()  # nothing an implementation timed before this one kept in L2 helps it
    fn(0)  # the first call (a compile, a JIT, a first launch) stays out of everything below
    torch.cuda.synchronize()
    start = time.perf_counter()
    fn(0)
    issue_one = (time.perf_counter() - start) * 1e3
    torch.cuda.synchronize()
    one = (time.perf_counter() - start) * 1e3
    batch = max(1, min(MAX_BATCH, math.ceil(BATCH_MS / max(one, 1e-3))))
    if one > SLOW_MS:  # a call this long (numba's matmul: 0.4 s) varies little; its runs would take seconds
        runs = min(runs, SLOW_RUNS)
    else:  # the other input sets once each before the timing (a slow call's batch of one is warm enough)
        for i in range(1, min(sets, 3)):
            fn(i)
    per_ms = _sleep_cycles_per_ms()
    host_guess = issue_one * batch  # a run that finds the GPU awake before the batch is issued sleeps longer
    device, host = [], []
    for r in range(runs):
        for _attempt in range(4):
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            awake = torch.cuda.Event()
            torch.cuda.synchronize()
            torch.cuda._sleep(int(per_ms * (HOST_MARGIN * host_guess + 0.5)))
            awake.record()
            begin.record()
            issue = time.perf_counter()
            for k in range(batch):
                fn((r * batch + k) % sets)
            issued = (time.perf_counter() - issue) * 1e3
            caught_up = awake.query()  # the sleep ended before the last call was issued
            end.record()
            torch.cuda.synchronize()  # every stream, not only the one the events are on
            host_guess = max(host_guess, issued)
            if not caught_up:
                break
        device.append(begin.elapsed_time(end) / batch)
        host.append(issued / batch)
    return CallTime(statistics.median(device), statistics.median(host))


def copy_bandwidth(nbytes: int = 1 << 30) -> float:
    """GB/s of a device-to-device copy of nbytes, counting bytes read plus bytes written."""
    return 2 * nbytes / same_copy_ms(2 * nbytes) / 1e6


_same_copy_ms: dict[int, float] = {}


def same_copy_ms(moved: int) -> float:
    """Device ms of a copy moving `moved` bytes (read + write), its buffers rotated past L2 as a
    case's inputs are; measured once a size."""
    if moved not in _same_copy_ms:
        n = max(1, moved // 8)  # float32 elements read, and as many written
        pairs = [(torch.empty(n, device="cuda").uniform_(), torch.empty(n, device="cuda")) for _ in range(_sets_for(moved))]
        _same_copy_ms[moved] = time_ms(lambda i: pairs[i][1].copy_(pairs[i][0]), len(pairs)).device_ms
    return _same_copy_ms[moved]


def _sets_for(nbytes: int) -> int:
    l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 << 20)
    return max(1, min(8, -(-L2_MULTIPLE * l2 // max(nbytes, 1))))


def profile(cases: list[tuple[Op, Size, torch.dtype, dict[str, Callable[..., Any]]]], path: Path) -> None:
    """A torch.profiler Chrome trace of a few calls of each implementation in each case, taken after
    and apart from the timed runs, whose numbers the profiler would disturb."""
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as prof:
        for case in cases:
            profile_op(*case)
    with replacing(path, suffix=".json") as tmp:
        prof.export_chrome_trace(str(tmp))


def profile_op(op: Op, size: Size, dtype: torch.dtype, impls: dict[str, Callable[..., Any]], runs: int = 3) -> None:
    """A few calls of each implementation (forward and backward, or forward for a first version), each under a labelled range."""
    sets = [op.spec.make_inputs(size, dtype, torch.device("cuda"), torch.Generator().manual_seed(0))]
    for name, fn in impls.items():
        run = runner(op, fn, sets, "forward" if name.startswith(VARIANT) or op.spec.forward_only else "forward+backward",
                     {})
        try:
            run(0)  # warm-up: compilation and first-call costs stay out of the trace
        except Exception:
            continue  # bench_op reports what fails
        torch.cuda.synchronize()
        with torch.profiler.record_function(f"{op.name} {name} {dtype} {size}"):
            for _ in range(runs):
                run(0)
            torch.cuda.synchronize()


def twin(x: torch.Tensor) -> torch.Tensor:
    """x's values in memory of their own, laid out as x is: the same strides and storage offset."""
    return torch.empty((0,), dtype=x.dtype, device=x.device).set_(x.untyped_storage().clone(), x.storage_offset(),
                                                                  x.size(), x.stride())


def make_sets(op: Op, size: Size, dtype: torch.dtype) -> list[Inputs]:
    """Input sets for a case, enough to exceed L2 L2_MULTIPLE times (made once for every pass). The
    first is make_inputs'; the others are copies of it on the GPU, which the rotation past L2 needs
    (other addresses, not other values): make_inputs draws on the CPU, seconds for a 2^28-element tensor."""
    gen = torch.Generator().manual_seed(0)
    probe = op.spec.make_inputs(size, dtype, torch.device("cuda"), gen)
    count = _sets_for(sum(x.nbytes for x in probe))
    return [probe] + [tuple(twin(x) for x in probe) for _ in range(count - 1)]


def moved_bytes(pass_: Pass, inputs: int, outputs: int) -> int:
    """The least a pass moves: the forward reads its inputs and writes its outputs; the backward reads
    the upstream gradients and what it needs of the forward (counted as the inputs) and writes one
    gradient per input."""
    forward, backward = inputs + outputs, outputs + inputs + inputs
    return {"forward": forward, "backward": backward, "forward+backward": forward + backward}[pass_]


def bench_op(op: Op, case: Case, sets: list[Inputs], impls: dict[str, Callable[..., Any]], copy_gbps: float) -> list[Timing]:
    spec = op.spec
    probe = sets[0]
    in_bytes = sum(x.nbytes for x in probe)
    upstreams: dict[int, tuple[torch.Tensor, ...]] = {}
    results: list[Timing] = []
    eager_ms = None
    named = (spec.name, str(case.size), case.dtype, case.pass_)
    # torch.compile is one wrapper of the oracle for every case; dynamo counts its recompiles (a
    # dtype, requires_grad) against the oracle's code and, past its limit (8), silently runs it eager.
    torch._dynamo.reset()
    for name, fn in impls.items():
        if case.gradients and name.startswith(VARIANT):
            continue  # a first version registers forward only
        run = runner(op, fn, sets, case.pass_, upstreams)
        try:
            out = first_calls(op, fn, sets, case.pass_)
            if name.startswith(VARIANT):
                exact = impls["reference"](*(x.double() for x in probe), *spec.param_values)
                _check_variant(op, name, probe, out, as_tuple(exact))
            moved = moved_bytes(case.pass_, in_bytes, sum(o.nbytes for o in out[: len(spec.outputs)]))
            if case.pass_ == "backward":  # every set's forward before the timing, which then runs none
                for i in range(len(sets)):
                    run(i)
            timed = time_ms(run, len(sets))
            ms = timed.device_ms
        except Exception as e:  # one implementation failing (numba on an unsupported dtype) is reported, not fatal
            why = str(e) if isinstance(e, VariantMismatch) else type(e).__name__
            results.append(Timing(*named, f"{name} (failed: {why})", float("nan"), float("nan"), float("nan")))
            continue
        upstreams.clear()
        gbps = moved / ms / 1e6
        eager_ms = ms if name == "eager" else eager_ms
        results.append(Timing(*named, name, ms, gbps, gbps / copy_gbps, eager_ms / ms if eager_ms else None,
                              timed.host_ms, same_copy_ms(moved) / ms))
    return results


def implementations(op: Op, with_numba: bool) -> dict[str, Callable[..., Any]]:
    from ..cuda import builder
    from ..op.loaders import load_cuda, load_numba, load_reference
    from ..validation.function import apply
    from ..validation.library_checks import registered_op

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
    ext = builder.build_extension(op)
    # The cuda stage as a training step calls it: the op registered with torch (ops.register's
    # kernels and autograd), so the host time bench reports is the one a user's call pays.
    impls["cuda"] = registered_op(load_cuda(op, ext), ref)
    for variant, fn in ext.variants().items():
        impls[f"{VARIANT}{variant.removeprefix('forward_')}"] = fn
    return impls


class VariantMismatch(Exception):
    pass


def _check_variant(op: Op, name: str, inputs: Any, got: tuple[torch.Tensor, ...], exact: tuple[torch.Tensor, ...]) -> None:
    """A first version is timed only if it matches the float64 reference the way validation demands."""
    shapes = all(g.shape == w.shape for g, w in zip(got, exact))
    if not shapes or not outputs_agree(op.spec, "cuda", tuple(x.double() for x in inputs), got, exact):
        raise VariantMismatch(f"{name} disagrees with forward")


def format_table(rows: list[Timing], copy_gbps: float, device: str) -> str:
    lines = [f"{device}: device-to-device copy {copy_gbps:.0f} GB/s (read + write)",
             "ms: GPU time a call with the host ahead (what a step pays while the GPU is the bottleneck); "
             "host ms: time to issue a call (* where it is the larger: host-bound back to back)",
             "% copy: of a 1 GiB copy's bandwidth; % same: of a copy moving the same bytes (the ceiling at this size)",
             f"{'op':10s} {'size':>16s} {'dtype':8s} {'pass':16s} {'impl':22s} {'ms':>9s} {'GB/s':>7s} "
             f"{'% copy':>7s} {'% same':>7s} {'vs eager':>8s} {'host ms':>9s}"]
    for r in rows:
        vs = f"{r.speedup_vs_eager:.2f}x" if r.speedup_vs_eager else "-"
        mark = "*" if r.host_bound else " "
        lines.append(f"{r.op:10s} {r.size:>16s} {r.dtype:8s} {r.pass_:16s} {r.impl:22s} {r.ms:9.4f} {r.gbps:7.0f} "
                     f"{100 * r.copy_fraction:6.1f}% {100 * r.same_copy_fraction:6.1f}% {vs:>8s} {r.host_ms:8.4f}{mark}")
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
    labels = [f"{r.op} {r.dtype} {SHORT_PASS[r.pass_]}\n{r.impl}" for r in rows]
    fig, ax = plt.subplots(figsize=(max(6, 0.45 * len(rows)), 4))
    ax.bar(range(len(rows)), [100 * r.copy_fraction for r in rows])
    ax.set_xticks(range(len(rows)), labels, rotation=90, fontsize=6)
    ax.set_ylabel("% of device-to-device copy bandwidth")
    fig.tight_layout()
    fig.savefig(path, dpi=150)


# --- Nsight Compute -----------------------------------------------------------------------

NCU_METRICS = re.compile(r"Duration|Memory Throughput|DRAM Throughput|Compute \(SM\) Throughput|Registers Per Thread|"
                         r"Achieved Occupancy|Block Size|Grid Size")


def find_ncu() -> str | None:
    from ..cuda.builder import cuda_home

    home = cuda_home()
    candidates = [shutil.which("ncu"), *(str(p) for p in sorted(Path("/opt/nvidia").glob("nsight-compute/*/ncu"))),
                  str(home / "bin" / "ncu") if home else None]
    return next((c for c in candidates if c and Path(c).is_file()), None)


def ncu(op: Op, size: Size, dtype: torch.dtype, report: Path) -> str:
    """Nsight Compute over one forward and one backward of the cuda stage, after a warm-up, with the
    card's clocks left as they are (--clock-control none). Writes REPORT.ncu-rep; returns the
    headline metrics of each kernel."""
    exe = find_ncu()
    if exe is None:
        raise BrrrError("--ncu needs Nsight Compute: no ncu on PATH, in /opt/nvidia/nsight-compute or in CUDA_HOME/bin")
    target = [sys.executable, "-m", __name__, str(op.folder), json.dumps(size), str(dtype).removeprefix("torch.")]
    profiled = subprocess.run([exe, "--clock-control", "none", "--profile-from-start", "off", "--force-overwrite",
                               "--export", str(report), *target], capture_output=True, text=True)
    if profiled.returncode != 0:
        raise BrrrError(f"ncu failed (exit {profiled.returncode}):\n{(profiled.stdout + profiled.stderr)[-2000:]}")
    shown = subprocess.run([exe, "--import", f"{report}.ncu-rep"], capture_output=True, text=True)
    lines = [ln.rstrip() for ln in shown.stdout.splitlines()
             if NCU_METRICS.search(ln) or ("Context" in ln and "Device" in ln)]
    return "\n".join(lines)


def _ncu_target(folder: str, size_json: str, dtype_name: str) -> None:
    """What ncu runs: the cuda stage, warmed up, then one forward and backward between profiler start and stop."""
    from ..cuda import builder
    from ..op.loaders import load_cuda, load_op
    from ..validation.function import apply

    op = load_op(folder)
    size = json.loads(size_json)
    size = tuple(size) if isinstance(size, list) else size
    cuda = load_cuda(op, builder.build_extension(op))
    sets = [op.spec.make_inputs(size, getattr(torch, dtype_name), torch.device("cuda"), torch.Generator().manual_seed(0))]
    run = runner(op, lambda *a: apply(cuda, *a[: len(op.spec.inputs)]), sets, "forward+backward", {})
    run(0)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    run(0)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


if __name__ == "__main__":
    _ncu_target(*sys.argv[1:4])


def _parse_size(text: str) -> int | tuple[int, ...]:
    try:
        parts = tuple(int(p) for p in text.lower().split("x"))
    except ValueError as e:
        raise BrrrError(f"--size expects N or NxM..., got {text!r}") from e
    return parts[0] if len(parts) == 1 else parts


def cases_of(op: Op, sizes: list[Size], dtypes: list[torch.dtype], passes: Sequence[Pass] = DEFAULT_PASSES) -> list[Case]:
    """The op's cases in timing order: each dtype its cuda stage takes, each size, the passes in the
    order given (the forward alone where the op has no backward)."""
    kept = [p for p in passes if p == "forward" or not op.spec.forward_only]
    return [Case(str(op.folder), size, str(dtype).removeprefix("torch."), p)
            for dtype in dtypes if dtype in op.spec.stage_dtypes("cuda") for size in sizes for p in kept]


def warm(ops: list[Op], cases: dict[str, list[Case]], jobs: int | None) -> None:
    """The builds and torch.compile's compiles of every case, in parallel processes (bench_warm), unless jobs is 0."""
    from ..cuda.builder import device_arch

    tasks = plan(ops, [c for op in ops for c in cases[op.name]])
    if jobs == 0 or not tasks:
        return
    largest = max((case_bytes(op, c) for op in ops for c in cases[op.name]), default=0)
    jobs = jobs or workers_for(len(tasks), largest, torch.cuda.mem_get_info()[0])
    started = time.monotonic()
    print(summary(warm_up(tasks, jobs, device_arch()), jobs, time.monotonic() - started), flush=True)


def main(args: argparse.Namespace) -> int:
    """brrr bench: every op, size, dtype and direction timed; the table, --json, --plot, --profile, --ncu."""
    from ..base.files import write_atomic
    from ..op.loaders import builtin_op_names, load_op
    from ..sim.numba_env import use_simulator

    require_gpu()
    use_simulator(False)
    stable_cache_keys()  # the same inductor cache keys as the warm-up's processes
    began = time.monotonic()
    dtypes = [getattr(torch, d) for d in (args.dtype or ["float32"])]
    ops = [load_op(name) for name in args.ops or builtin_op_names()]
    passes = list(dict.fromkeys(args.pass_ or DEFAULT_PASSES))
    cases = {op.name: cases_of(op, [_parse_size(s) for s in args.size] if args.size
                               else list(op.spec.bench_sizes or op.spec.gpu_sizes[-1:]), dtypes, passes) for op in ops}
    warm(ops, cases, args.jobs)
    copy_gbps = copy_bandwidth()
    rows = []
    profiled = []  # what --profile traces once the timing is done
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
            "copy_gbps": copy_gbps}
    for op in ops:
        if not cases[op.name]:
            why = ("it has no backward and only backward passes were asked" if op.spec.forward_only
                   and "forward" not in passes else "its cuda stage takes none of the dtypes asked")
            print(f"{op.name}: nothing to time ({why})", flush=True)
            continue
        started = time.monotonic()
        impls = implementations(op, with_numba=not args.no_numba)
        loaded = time.monotonic()
        making = 0.0
        sets, made_for = [], None
        for case in cases[op.name]:
            if made_for != (case.size, case.dtype):  # the same inputs serve every pass
                made = time.monotonic()
                sets, made_for = [], (case.size, case.dtype)  # the last size's tensors freed first
                sets = make_sets(op, case.size, case.torch_dtype)
                making += time.monotonic() - made
                profiled.append((op, case.size, case.torch_dtype, impls))
            rows += bench_op(op, case, sets, impls, copy_gbps)
        del sets
        print(format_table([r for r in rows if r.op == op.name], copy_gbps, torch.cuda.get_device_name()), flush=True)
        total = time.monotonic() - started
        print(f"{op.name}: {total:.0f} s (build or load and numba's import {loaded - started:.1f} s, inputs {making:.1f} s, "
              f"first calls and timing {total - (loaded - started) - making:.1f} s)", flush=True)
        if args.json:  # after every op, so a run stopped part way keeps what it measured
            write_atomic(args.json, json.dumps({"meta": meta, "rows": to_dicts(rows)}, indent=2))
        if args.ncu:
            first = cases[op.name][0]
            report = args.ncu.with_name(f"{args.ncu.name.removesuffix('.ncu-rep')}-{op.name}")
            print(f"Nsight Compute, {op.name} {first.size} {first.dtype}: {report}.ncu-rep", flush=True)
            print(ncu(op, first.size, first.torch_dtype, report), flush=True)
    print(f"brrr bench: {len(ops)} ops in {time.monotonic() - began:.0f} s", flush=True)
    if args.profile:
        profile(profiled, args.profile)
        print(f"wrote the profiler trace to {args.profile} (open it in chrome://tracing or ui.perfetto.dev)")
    if args.plot:
        plot(rows, args.plot)
    return EXIT_OK
