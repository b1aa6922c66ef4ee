"""Reads cuobjdump -sass on stdin; writes the shipped v3 forward kernel's SASS to argv[1] and prints its
instruction mix: the whole kernel, and the main loop (the instructions between the loop's BAR.SYNC and
the backward branch after the last HMMA)."""

import re
import sys
from collections import Counter

WANTED = "mma_pipelined_kernel"
text = sys.stdin.read()
functions = re.split(r"\n\s*Function : ", text)
# The shipped tiling is instantiated first by the launcher matmul_tc_pipelined<true, false>; pick
# the forward (Lb1ELb0) instantiation of TcTiling's parameters, given by the kernel.cu constant.
shipped = open("stages/matmul_tc/kernel.cu").read()
tiling = re.search(r"using TcTiling = Tiling<([^>]*)>", shipped).group(1).replace(" ", "").split(",")
mangled = "Tiling" + "I" + "".join(f"Li{v}E" for v in tiling) + "E" + "Lb1ELb0"
body = next((f for f in functions if f.startswith("_Z") and WANTED in f.split()[0] and mangled in f.split()[0]), None)
if body is None:
    print(f"no {WANTED} with {mangled} in the SASS")
    sys.exit(0)
open(sys.argv[1], "w").write(body)
ops = re.findall(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)(?:\.[A-Z0-9_.]+)?", body)
print("whole kernel:", len(ops), "instructions;", Counter(ops).most_common(14))
bars = [i for i, o in enumerate(ops) if o == "BAR"]
hmmas = [i for i, o in enumerate(ops) if o == "HMMA"]
if bars and hmmas:
    loop = ops[bars[0]:hmmas[-1] + 1]
    print("main loop (BAR to last HMMA):", len(loop), "instructions;", Counter(loop).most_common(16))
