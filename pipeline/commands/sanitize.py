"""`brrr sanitize`: NVIDIA's compute-sanitizer over one forward and backward of an op's cuda stage.

The four tools each look for what no numeric check sees on a GPU: memcheck (out-of-bounds and
misaligned accesses), racecheck (shared-memory hazards), synccheck (barriers in divergent code)
and initcheck (reads of device memory nothing wrote). Each (op, tool) runs in a child process
under compute-sanitizer; the child (`python -m brrr_kernels.commands.sanitize OP SIZE...`) builds nothing
new (the parent builds first, so the tools see only the op's own launches), makes inputs on the
CPU and copies them over, so no torch kernel but the op's runs before the op does.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from typing import Literal

from ..base.errors import EXIT_CHECK_FAILED, EXIT_OK, UsageError

Tool = Literal["memcheck", "racecheck", "synccheck", "initcheck"]
TOOLS: tuple[Tool, ...] = ("memcheck", "racecheck", "synccheck", "initcheck")
# memcheck, synccheck and initcheck end with "ERROR SUMMARY: N errors", racecheck with
# "RACECHECK SUMMARY: M hazards displayed (N errors, W warnings)".
_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) error|RACECHECK SUMMARY: .*?\((\d+) error")
_FINDING = re.compile(r"^=+ +(?:Invalid|Race|Barrier|Uninitialized|Error|Warning|Hazard|.*(?:hazard|error) detected).*",
                      re.IGNORECASE)


@dataclass(frozen=True)
class Finding:
    op: str
    tool: Tool
    sizes: tuple[str, ...]
    errors: int  # compute-sanitizer's ERROR SUMMARY; -1 when the run did not reach it
    first: tuple[str, ...]  # the first reported lines, for the report
    seconds: float

    @property
    def ok(self) -> bool:
        return self.errors == 0


def find_sanitizer() -> str:
    tool = shutil.which("compute-sanitizer")
    if tool is None:
        from ..cuda.builder import cuda_home

        home = cuda_home()
        candidate = home / "bin" / "compute-sanitizer" if home else None
        if candidate is not None and candidate.is_file():
            return str(candidate)
        raise UsageError("compute-sanitizer not found (looked on PATH and in the CUDA toolkit's bin/)",
                         hint="it ships with the CUDA toolkit; `brrr sanitize` needs a GPU machine")
    return tool


def sizes_for(spec_sim: tuple, spec_gpu: tuple) -> tuple[str, ...]:
    """One simulator size and the largest GPU size, as strings the child parses."""
    picked = [spec_sim[-1], spec_gpu[-1]]
    return tuple(json.dumps(s) for s in dict.fromkeys(picked))


def run_tool(op_ref: str, name: str, tool: Tool, sizes: tuple[str, ...]) -> Finding:
    import time

    command = [find_sanitizer(), "--tool", tool, "--error-exitcode", "99", "--print-limit", "20",
               sys.executable, "-m", "brrr_kernels.commands.sanitize", op_ref, *sizes]
    start = time.monotonic()
    # Each tensor its own cudaMalloc: with torch's caching allocator a tensor is a piece of a larger
    # block, and a write just past its end lands inside that block, where memcheck sees nothing (an
    # H100 run: a backward looping `i <= n` gave memcheck 0 errors; brrr's guard bands caught it).
    env = {**os.environ, "PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}
    proc = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    output = proc.stdout + proc.stderr
    match = _SUMMARY.search(output)
    errors = int(match.group(1) or match.group(2)) if match else -1
    if errors == 0 and proc.returncode not in (0,):
        errors = -1  # the child failed for another reason: never a clean verdict
    first = tuple(line.strip() for line in output.splitlines() if _FINDING.match(line))[:6]
    if errors == -1 and not first:
        first = tuple(output.strip().splitlines()[-6:])
    return Finding(name, tool, sizes, errors, first, round(time.monotonic() - start, 2))


def sanitize(op_refs: list[str], tools: tuple[Tool, ...]) -> list[Finding]:
    import torch

    from ..cuda.builder import build_extension
    from ..op.loaders import load_op

    ops = [load_op(ref) for ref in op_refs]  # a wrong name or folder is named before anything else
    if not torch.cuda.is_available():
        raise UsageError("brrr sanitize needs a CUDA GPU: compute-sanitizer watches kernels as they run on one")
    find_sanitizer()
    findings = []
    for op in ops:
        build_extension(op)  # cached for the children
        sizes = sizes_for(op.spec.sim_sizes, op.spec.gpu_sizes)
        for tool in tools:
            finding = run_tool(str(op.folder), op.name, tool, sizes)
            print(_line(finding), flush=True)
            findings.append(finding)
    return findings


def _line(f: Finding) -> str:
    verdict = "pass" if f.ok else ("FAIL" if f.errors > 0 else "not run")
    head = f"{f.op:<10} {f.tool:<10} sizes {' '.join(f.sizes):<22} {verdict:<8} {max(f.errors, 0)} error(s)  {f.seconds:.1f}s"
    return "\n".join([head, *(f"    {line}" for line in f.first if not f.ok)])


def to_json(findings: list[Finding]) -> str:
    return json.dumps([asdict(f) | {"ok": f.ok} for f in findings], indent=1)


def _child(op_ref: str, sizes: list[str]) -> None:
    """One forward and backward per size and dtype of the cuda stage, inputs copied from the CPU."""
    import torch

    from ..cuda.builder import build_extension
    from ..op.loaders import load_cuda, load_op
    from ..validation.function import apply

    op = load_op(op_ref)
    stage = load_cuda(op, build_extension(op))
    gen = torch.Generator().manual_seed(0)
    for size in (json.loads(s) for s in sizes):
        size = tuple(size) if isinstance(size, list) else size
        for dtype in op.spec.stage_dtypes("cuda"):
            cpu_inputs = op.spec.make_inputs(size, dtype, torch.device("cpu"), gen)
            inputs = [t.to("cuda").requires_grad_(t.is_floating_point()) for t in cpu_inputs]
            out = apply(stage, *inputs)
            outputs = out if isinstance(out, tuple) else (out,)
            grads = [torch.randn(o.shape, dtype=o.dtype, generator=gen).to("cuda") for o in outputs]
            torch.autograd.backward(outputs, grads)
    torch.cuda.synchronize()


if __name__ == "__main__":
    _child(sys.argv[1], sys.argv[2:])


def main(args: argparse.Namespace) -> int:
    """brrr sanitize: each op and tool under compute-sanitizer; exit 1 if one reported an error."""
    from ..base.files import write_atomic
    from ..op.loaders import builtin_op_names

    findings = sanitize(args.ops or builtin_op_names(), tuple(args.tool or TOOLS))
    if args.json:
        write_atomic(args.json, to_json(findings))
    return EXIT_OK if all(f.ok for f in findings) else EXIT_CHECK_FAILED
