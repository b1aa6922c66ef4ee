"""Why `brrr bench` and triton's do_bench disagreed on forward+backward: the same calls timed four ways.

For each case (op, dtype, size) and each way of calling the cuda stage (brrr's autograd.Function
`apply`, and torch.ops.brrr.NAME from `register`), forward+backward is timed:
  old    bench's former method: batches of back-to-back calls between events, the end event after a
         device synchronize (counts host launch gaps whenever the host is slower than the GPU);
  device bench's method now: the batch issued behind a GPU sleep (no host gaps), and host: the
         time to issue one call;
  dobench triton.testing.do_bench, L2 flushed before each call (the independent timing);
  kernels the sum of the kernels' own durations in a torch.profiler trace, per call.
usage (GPU machine, repo root): python3 benchmarks/timing_probe.py
"""
import statistics
import time

import torch
from triton.testing import do_bench

from brrr_kernels.commands import bench
from brrr_kernels.cuda import builder
from brrr_kernels.op.loaders import load_cuda, load_op
from brrr_kernels.ops import register
from brrr_kernels.validation.function import apply

CASES = (("softmax", torch.bfloat16, (4096, 8192)), ("layernorm", torch.float32, (4096, 8192)),
         ("bias_gelu", torch.float32, (8192, 8192)))


def old_method(fn, sets, runs=50, batch_ms=5.0):
    for i in range(3):
        fn(i % sets)
    torch.cuda.synchronize()
    t = time.perf_counter()
    fn(0)
    torch.cuda.synchronize()
    one = (time.perf_counter() - t) * 1e3
    batch = max(1, min(200, int(batch_ms / max(one, 1e-3)) + 1))
    times = []
    for r in range(runs):
        b, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        b.record()
        for k in range(batch):
            fn((r * batch + k) % sets)
        torch.cuda.synchronize()
        e.record()
        e.synchronize()
        times.append(b.elapsed_time(e) / batch)
    return statistics.median(times)


def kernel_ms(fn, calls=5):
    fn(0)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn(0)
        torch.cuda.synchronize()
    total = sum(e.device_time_total for e in prof.key_averages() if e.device_time_total > 0 and not e.key.startswith("Memcpy"))
    names = sorted({e.key[:60] for e in prof.key_averages() if e.device_time_total > 0})
    return total / calls / 1e3, names


def main():
    heads = ("old", "device", "host", "dobench", "kernels")
    print(f"{'op':10s} {'dtype':9s} {'via':9s} " + " ".join(f"{h:>8s}" for h in heads) + "  (ms, fwd+bwd)")
    for name, dtype, size in CASES:
        op = load_op(name)
        cuda = load_cuda(op, builder.build_extension(op))
        spec = op.spec
        gen = torch.Generator().manual_seed(0)
        sets = [spec.make_inputs(size, dtype, torch.device("cuda"), gen) for _ in range(2)]
        n_in = len(spec.inputs)
        ways = {"apply": lambda *a, c=cuda, n=n_in: apply(c, *a[:n]), "register": register(name)}
        for via, f in ways.items():
            run = bench.runner(op, f, sets, True, {})
            old = old_method(run, len(sets))
            new = bench.time_ms(run, len(sets))
            db = do_bench(lambda r=run: r(0), warmup=50, rep=300, return_mode="median")
            km, names = kernel_ms(run)
            values = (old, new.device_ms, new.host_ms, db, km)
            print(f"{name:10s} {str(dtype)[6:]:9s} {via:9s} " + " ".join(f"{v:8.4f}" for v in values), flush=True)
        print("   kernels:", "; ".join(names), flush=True)


if __name__ == "__main__":
    main()
