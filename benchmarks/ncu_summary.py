"""A table of gpu_perf.sh's ncu.txt: for each profiled case and kernel, its duration, achieved DRAM
bandwidth, occupancy (achieved / theoretical), registers and its three largest stall reasons (warps
stalled per instruction issued; 'selected' is the issuing itself, not a stall, and is left out).

usage: python3 benchmarks/ncu_summary.py benchmarks/results/DATE-h100-perf/runN/ncu.txt
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

KERNEL = re.compile(r"^  (?:void )?([A-Za-z_][\w:]*)(<[^(]*>)?\(.*\) \(([\d, ]+)\)x\(([\d, ]+)\)")
VALUE = re.compile(r"^\s+(.+?)\s{2,}(\S+)?\s+([\d.,]+)\s*$")
STALL = re.compile(r"smsp__average_warps_issue_stalled_(\w+)_per_issue_active\.ratio")


def parse(text: str) -> list[dict]:
    kernels: list[dict] = []
    case = ""
    for line in text.splitlines():
        if line.startswith("### "):
            case = line[4:].strip()
            continue
        if m := KERNEL.match(line):
            kernels.append({"case": case, "kernel": m[1] + (m[2] or ""), "grid": m[3], "block": m[4], "stalls": {}})
            continue
        if not kernels or not (v := VALUE.match(line)):
            continue
        name, value = v[1].strip(), float(v[3].replace(",", ""))
        k = kernels[-1]
        if s := STALL.search(name):
            k["stalls"][s[1]] = value
        elif name.startswith("dram__bytes.sum.per_second"):
            k["dram_gbps"] = value * (1000 if v[2] == "Tbyte/s" else 1)
        elif name == "Duration":  # in us, whatever unit ncu chose
            k[name] = value * {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}.get(v[2] or "us", float("nan"))
        else:
            k[name] = value
    return kernels


def row(k: dict) -> str:
    stalls = sorted(((v, n) for n, v in k["stalls"].items() if n != "selected"), reverse=True)[:3]
    top = ", ".join(f"{n} {v:.2f}" for v, n in stalls) or "-"
    nan = float("nan")
    return (f"| {k['case']} | {k['kernel']} | {k['grid']} x {k['block']} | {k.get('Duration', nan):.1f} | "
            f"{k.get('dram_gbps', nan):.0f} | {k.get('DRAM Throughput', nan):.1f}% | "
            f"{k.get('Achieved Occupancy', nan):.1f}% / {k.get('Theoretical Occupancy', nan):.1f}% | "
            f"{k.get('Registers Per Thread', nan):.0f} | {k.get('Warp Cycles Per Issued Instruction', nan):.1f} | {top} |")


def table(text: str) -> str:
    head = ["| case | kernel | grid x block | us | DRAM GB/s | DRAM % of peak | occupancy achieved / theoretical | "
            "registers | cycles per issue | top stalls (warps per issue) |", "|" + " --- |" * 10]
    return "\n".join(head + [row(k) for k in parse(text)])


if __name__ == "__main__":
    print(table(Path(sys.argv[1]).read_text()))
