"""Time variants of one op's kernel.cu on a GPU, each a copy of the op with a few lines replaced:
how the constants in the built-in kernels were chosen. Each variant is checked against the
float64 reference before it is timed. Run from the repo root on a GPU machine:

    python benchmarks/sweep.py softmax
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import torch

from brrr_kernels.commands import bench
from brrr_kernels.cuda import builder
from brrr_kernels.op.contract import as_tuple
from brrr_kernels.op.loaders import load_cuda, load_op, load_reference
from brrr_kernels.validation.function import apply
from brrr_kernels.verdict.compare import outputs_agree

REPO = Path(__file__).resolve().parent.parent
EXP2 = ("__device__ __forceinline__ brrr::acc_t<T> exp_acc(brrr::acc_t<T> d) { return exp(d); }\n",
        "__device__ __forceinline__ brrr::acc_t<T> exp_acc(brrr::acc_t<T> d) { return exp(d); }\n"
        "template <>\n__device__ __forceinline__ float exp_acc<float>(float d) { return exp2f(d * 1.4426950408889634f); }\n")
SLOTS = "constexpr int kSlots = sizeof(T) == 8 ? 8 : 32;"
VARIANTS: dict[str, dict[str, list[tuple[str, str]]]] = {
    "softmax": {
        "as committed (32 slots)": [],
        "16 slots a thread": [(SLOTS, SLOTS.replace(": 32;", ": 16;"))],
        "8 slots a thread": [(SLOTS, SLOTS.replace(": 32;", ": 8;"))],
        "exp2f for float": [EXP2],
        "16 slots, exp2f": [(SLOTS, SLOTS.replace(": 32;", ": 16;")), EXP2],
        "16 slots float, exp2f": [(SLOTS, SLOTS.replace(": 32;", ": sizeof(T) == 4 ? 16 : 32;")), EXP2],
    },
}
SIZE = (4096, 8192)


def main() -> None:
    name = sys.argv[1]
    work = Path(tempfile.mkdtemp(prefix="brrr-sweep-"))
    copy_gbps = bench.copy_bandwidth()
    print(f"{torch.cuda.get_device_name()}: copy {copy_gbps:.0f} GB/s; {name} {SIZE} forward")
    print(f"{'variant':28s} {'dtype':9s} {'ms':>8s} {'% copy':>7s}  check")
    for i, (label, edits) in enumerate(VARIANTS[name].items()):
        folder = work / f"{name}{i}"
        shutil.copytree(REPO / "stages" / name, folder, ignore=shutil.ignore_patterns("__pycache__"))
        source = folder / "kernel.cu"
        text = source.read_text()
        for old, new in edits:
            assert old in text, f"{label}: {old!r} not in kernel.cu"
            text = text.replace(old, new)
        source.write_text(text)
        op = load_op(str(folder))
        cuda, ref = load_cuda(op, builder.build_extension(op)), load_reference(op)
        for dtype in (torch.float32, torch.bfloat16):
            gen = torch.Generator().manual_seed(0)
            sets = [op.spec.make_inputs(SIZE, dtype, torch.device("cuda"), gen) for _ in range(4)]
            got = apply(cuda, *sets[0])
            want = ref.forward(*(x.double() for x in sets[0]), *op.spec.param_values)
            ok = outputs_agree(op.spec, "cuda", tuple(x.double() for x in sets[0]), as_tuple(got), as_tuple(want))
            ms = bench.time_ms(lambda j, c=cuda, s=sets: apply(c, *s[j]), len(sets), runs=100)
            moved = 2 * sets[0][0].nbytes
            print(f"{label:28s} {str(dtype)[6:]:9s} {ms:8.4f} {100 * moved / ms / 1e6 / copy_gbps:6.1f}%  "
                  f"{'ok' if ok else 'WRONG'}", flush=True)


if __name__ == "__main__":
    main()
