"""torch.compile's own kernel for an op, timed back to back on fixed buffers beside brrr's op, and
then rebuilt from its Triton source with one thing changed at a time (cache hints, block sizes,
warps): which part of the generated kernel makes it faster or slower than brrr's, where brrr bench
has it ahead. Writes the generated source and each variant's time.

usage, on a GPU machine:  python3 benchmarks/triton_bisect.py [--op layernorm] [--dtype float32] [--out DIR]
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import inspect
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from b2b_timing import CALLS, REPEATS, per_call_us

from brrr_kernels.base.errors import OpLoadError
from brrr_kernels.op.loaders import load_op
from brrr_kernels.ops import register


def the_autotuner(name_part: str) -> Any:
    """Inductor's launcher object for the generated kernel whose name holds name_part."""
    found = [o for o in gc.get_objects() if type(o).__name__ == "CachingAutotuner"
             and name_part in getattr(getattr(o, "fn", None), "__name__", "")]
    if not found:
        raise SystemExit(f"no generated kernel named *{name_part}*")
    return found[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--op", default="layernorm")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--kernel", default="layer_norm", help="part of the generated kernel's name")
    parser.add_argument("--out", default=".")
    args = parser.parse_args()
    try:
        spec = load_op(args.op).spec
    except OpLoadError as e:
        parser.error(str(e))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    dtype = getattr(torch, args.dtype)
    size = spec.bench_sizes[0]
    inputs = spec.make_inputs(size, dtype, torch.device("cuda"), torch.Generator().manual_seed(0))
    params = spec.param_values
    brrr, compiled = register(args.op), torch.compile(spec.oracle, dynamic=False)
    with torch.no_grad():
        compiled(*inputs, *params)
        autotuner_class = type(the_autotuner(args.kernel))
        calls: list[tuple[Any, tuple, dict]] = []
        class_run = autotuner_class.run

        def recording_run(self: Any, *a: Any, **k: Any) -> Any:
            calls.append((self, a, k))
            return class_run(self, *a, **k)

        autotuner_class.run = recording_run
        compiled(*inputs, *params)
        autotuner_class.run = class_run
        calls = [c for c in calls if args.kernel in c[0].fn.__name__]
        if not calls:
            raise SystemExit("the compiled function ran no generated kernel through CachingAutotuner.run")
        tuner, targs, tkw = calls[-1]

        def run(*a: Any, **k: Any) -> Any:
            return class_run(tuner, *a, **k)
        source_file = inspect.getsourcefile(tuner.fn.fn)
        module_text = Path(source_file).read_text()
        (out / "generated.py").write_text(module_text)
        config = tuner.launchers[0].config
        print("config", config.kwargs, "num_warps", config.num_warps, "num_stages", config.num_stages, flush=True)
        tensors = [a for a in targs if isinstance(a, torch.Tensor)]
        print("kernel args", [(tuple(a.shape), a.dtype) if isinstance(a, torch.Tensor) else a for a in targs], flush=True)

        header = "\n".join(line for line in module_text.splitlines()
                           if line.startswith(("import ", "from ")) and "async_compile" not in line)
        kernel_src = tuner.fn.src if hasattr(tuner.fn, "src") else inspect.getsource(tuner.fn.fn)
        kernel_src = "\n".join(line for line in kernel_src.splitlines() if not line.lstrip().startswith("@"))
        (out / "kernel_src.py").write_text(kernel_src)
        name = tuner.fn.__name__
        ints = [a for a in targs if isinstance(a, int)]
        xnumel = ints[0]

        made = iter(range(1000))

        def variant(src: str, **overrides: Any) -> Callable[[], Any]:
            # From a file: triton.jit reads its function's source through inspect.
            path = out / f"variant_{next(made)}.py"
            path.write_text(header + "\nimport triton\n\n\n@triton.jit\n" + src + "\n")
            module_spec = importlib.util.spec_from_file_location(path.stem, path)
            module = importlib.util.module_from_spec(module_spec)
            module_spec.loader.exec_module(module)
            kernel = getattr(module, name)
            kw = dict(config.kwargs)
            kw.update({k: v for k, v in overrides.items() if k not in ("num_warps", "num_stages")})
            warps = overrides.get("num_warps", config.num_warps)
            stages = overrides.get("num_stages", config.num_stages)
            xblock = kw.get("XBLOCK", 1)
            grid = (triton_cdiv(xnumel, xblock), 1, 1)
            call_args = [a for a in targs]
            return lambda: kernel[grid](*call_args, **kw, num_warps=warps, num_stages=stages)

        no_hints = re.sub(r",\s*eviction_policy='evict_\w+'", "", kernel_src)
        first_only = kernel_src.replace("eviction_policy='evict_first'", "eviction_policy='evict_last'")
        fns: dict[str, Callable[[], Any]] = {
            "brrr op": lambda: brrr(*inputs, *params),
            "compile fn": lambda: compiled(*inputs, *params),
            "generated kernel, fixed buffers": lambda: run(*targs, **tkw),
            "rebuilt as is": variant(kernel_src),
            "rebuilt, no eviction hints": variant(no_hints),
            "rebuilt, evict_last everywhere": variant(first_only),
        }
        r0 = config.kwargs.get("R0_BLOCK") or config.kwargs.get("RBLOCK")
        rkey = "R0_BLOCK" if "R0_BLOCK" in config.kwargs else "RBLOCK"
        if r0:
            for factor in (0.5, 2):
                fns[f"rebuilt, {rkey} {int(r0 * factor)}"] = variant(kernel_src, **{rkey: int(r0 * factor)})
        for warps in (4, 8, 16, 32):
            if warps != config.num_warps:
                fns[f"rebuilt, {warps} warps"] = variant(kernel_src, num_warps=warps)
        compiled_kernel = fns["rebuilt as is"]()
        if hasattr(compiled_kernel, "asm"):
            (out / "kernel.ptx").write_text(compiled_kernel.asm.get("ptx", ""))
        for label, fn in list(fns.items()):  # a variant that cannot compile is named, not fatal
            try:
                fn()
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001
                print(f"{label}: not run ({type(e).__name__}: {str(e)[:200]})", flush=True)
                del fns[label]
        fns["generated kernel, fixed buffers"]()
        ref = compiled(*inputs, *params)
        for t in tensors:
            if t.shape == ref.shape and t.dtype == ref.dtype and not any(t is i for i in inputs):
                print("fixed-buffer output matches compile's:", torch.equal(t, ref), flush=True)
        times = per_call_us({label: (lambda i, fn=fn: fn()) for label, fn in fns.items()})
    lines = [f"{args.op} {size} {args.dtype}: us a call, back to back ({CALLS} calls, median of {REPEATS})"]
    lines += [f"  {label:45s} {us:8.2f}" for label, us in times.items()]
    (out / "times.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)
    return 0


def triton_cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


if __name__ == "__main__":
    raise SystemExit(main())
