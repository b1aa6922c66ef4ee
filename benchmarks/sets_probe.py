"""Does an implementation's own cache state from one call help its later calls? On a GPU, time the
forward of layernorm (float32, bfloat16) and softmax (bfloat16) at 4096 x 8192, torch.compile's and
brrr's cuda stage, with bench's input sets (as many as cover 3x the L2), with 8, and with 8 that
share the first set's weight and bias (a layer's calls: new x, the same parameters), in turn; each
figure is bench's (median of 10 batches of back-to-back calls)."""

import torch

from brrr_kernels.commands import bench
from brrr_kernels.commands.bench_warm import first_calls, runner
from brrr_kernels.op.loaders import load_op

CASES = (("layernorm", torch.float32), ("layernorm", torch.bfloat16), ("softmax", torch.bfloat16))


def main() -> None:
    for name, dtype in CASES:
        op = load_op(name)
        base = bench.make_sets(op, (4096, 8192), dtype)
        many = base + [tuple(bench.twin(x) for x in base[0]) for _ in range(8 - len(base))]
        shared = [(s[0], *base[0][1:]) for s in many]
        impls = bench.implementations(op, with_numba=False)
        for impl in ("compile", "cuda"):
            fn = impls[impl]
            for sets, kind in ((base, ""), (many, ""), (shared, ", parameters shared"), (base, ""), (many, ""),
                               (shared, ", parameters shared")):
                first_calls(op, fn, sets, "forward")
                t = bench.time_ms(runner(op, fn, sets, "forward", {}), len(sets))
                label = f"{name} {str(dtype).removeprefix('torch.')} {impl:8s} sets {len(sets)}{kind}"
                print(f"{label}: {t.device_ms * 1e3:7.2f} us", flush=True)


if __name__ == "__main__":
    main()
