"""The row forwards launched early against the version before, where the kernel before them is not
one of theirs. Usage, on a GPU: python3 benchmarks/pdl_indep.py OLD_LAYERNORM OLD_SOFTMAX, each an op
folder holding the earlier kernel.cu under another op name. Two timings, interleaved, twice:
(1) do_bench, L2 flushed before each call (torch's zero_ of 256 MB, then an event, then the call);
(2) bench's back-to-back timing of a pair: a small torch kernel (mul_ of 4096 floats, which does not
allow an early launch) then the op."""

import sys
from collections.abc import Callable

import torch
from triton.testing import do_bench

from brrr_kernels.commands import bench
from brrr_kernels.ops import register

R, C = 4096, 8192


def one(fn: Callable[..., object], sets: list[tuple[torch.Tensor, ...]], pad: torch.Tensor) -> tuple[float, float]:
    flushed = do_bench(lambda: fn(*sets[0]), warmup=50, rep=300, return_mode="median")
    paired = bench.time_ms(lambda i: (pad.mul_(1.0), fn(*sets[i])), len(sets)).device_ms
    return flushed, paired


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit("usage: python3 benchmarks/pdl_indep.py OLD_LAYERNORM OLD_SOFTMAX (op folders of the earlier kernels)")
    before = dict(zip(("layernorm", "softmax"), sys.argv[1:3], strict=True))
    pad = torch.ones(4096, device="cuda")
    for dt in (torch.float32, torch.bfloat16):
        made = [tuple(torch.randn(*shape, device="cuda", dtype=dt) for shape in ((R, C), (C,), (C,))) for _ in range(3)]
        for name in ("layernorm", "softmax"):
            ops = {"before": register(before[name]), "early": register(name)}
            sets = made if name == "layernorm" else [s[:1] for s in made]
            for fn in ops.values():
                fn(*sets[0])
            for _ in range(2):
                for label, fn in ops.items():
                    flushed, paired = one(fn, sets, pad)
                    print(f"{name:9s} {str(dt).removeprefix('torch.'):8s} {label:6s} do_bench flushed {flushed * 1e3:6.1f} us"
                          f"   after a torch kernel, back to back {paired * 1e3:6.2f} us", flush=True)
    alone = bench.time_ms(lambda i: pad.mul_(1.0), 1).device_ms
    print(f"the torch kernel alone, back to back: {alone * 1e3:.2f} us", flush=True)


if __name__ == "__main__":
    main()
