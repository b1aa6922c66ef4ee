"""Writers observed in the simulator: which thread wrote each element, used by `brrr debug --index`."""

from __future__ import annotations

import io
import re

import torch
from conftest import copy_op, failed, plant, validate

from brrr_kernels import import_cuda, launch
from brrr_kernels.debugger import numba_stage as debugger
from brrr_kernels.op.loaders import load_op
from brrr_kernels.sim.writers import Writer, writer_of

cuda = import_cuda()


@cuda.jit
def backwards(x, y, n):
    i = cuda.grid(1)
    if i < n - 1:  # the last thread writes nothing: element 0 stays unwritten
        y[n - 1 - i] = 2 * x[n - 1 - i]


def test_each_element_names_the_thread_that_wrote_it() -> None:
    n = 300
    x = torch.randn(n, dtype=torch.float64)
    y = torch.full((n,), float("nan"), dtype=torch.float64)
    launch(backwards, 3, 128, x, y, n)
    assert writer_of(y, 1) == Writer("backwards", (2, 0, 0), (42, 0, 0))  # thread 298 = 2 * 128 + 42
    assert writer_of(y, n - 1) == Writer("backwards", (0, 0, 0), (0, 0, 0))
    assert writer_of(y, 0) is None
    assert writer_of(y[10:], 0) == writer_of(y, 10)  # a view finds the memory it shares
    assert writer_of(x, 5) is None  # read, never written


# sigmoid with a mapping no layout would guess: thread i computes element (7 i + 3) mod n (a
# permutation for the simulator sizes 1, 127, 129 and 401), and a spec with no layouts at all.
SCRAMBLED = """    i = cuda.grid(1)
    if i >= n:
        return
    i = (7 * i + 3) % n  # scrambled: the element this thread owns
    v = x[i]"""


def scrambled_sigmoid(tmp_path):
    folder = plant(copy_op("sigmoid", tmp_path), "numba_kernel.py", "    i = cuda.grid(1)\n    if i >= n:\n"
                   "        return\n    v = x[i]", SCRAMBLED)
    return plant(folder, "spec.py", '    layouts={"numba": one_per_thread(BLOCK), "cuda": one_per_thread(256, '
                 'pack_bytes=16)},\n', "")


def test_debug_index_stops_in_the_thread_that_wrote_the_element_without_layouts(tmp_path) -> None:
    folder = scrambled_sigmoid(tmp_path)
    assert not load_op(str(folder)).spec.layouts
    index = 200
    n = load_op(str(folder)).spec.sim_sizes[-1]
    owner = next(t for t in range(n) if (7 * t + 3) % n == index)
    session, module = debugger.prepare(str(folder), index=index)
    out = io.StringIO()
    debugger.debug(session, module, stdin=io.StringIO("n\nn\nn\nn\np i\nc\n"), stdout=out)
    text = out.getvalue()
    assert f"block ({owner // 128}, 0, 0) thread ({owner % 128}, 0, 0) (computes element {index})" in text, text
    assert f"(Pdb) {index}" in text, text


def test_s_at_a_device_function_call_stops_in_its_first_line() -> None:
    """pdb's `s` goes through numba's dispatch (skipped) into the helper, not into simulator/kernel.py."""
    source = load_op("softmax").folder / "numba_kernel.py"
    call = next(i for i, ln in enumerate(source.read_text().splitlines(), 1) if "m = row_max(m, part_max, tpr)" in ln)
    session, module = debugger.prepare("softmax", index=3, kernel="softmax_forward_kernel")
    out = io.StringIO()
    debugger.debug(session, module, stdin=io.StringIO(f"b {call}\nc\ns\ns\np tpr\nc\n"), stdout=out)
    text = out.getvalue()
    frames = re.findall(r"> \S+\((\d+)\)(\w+)\(\)", text)
    after = frames[frames.index((str(call), "softmax_forward_kernel")) + 1:]
    assert after and all(fn == "row_max" for _, fn in after[:2]), text
    assert "simulator" not in text and "contextlib" not in text


def test_a_failing_element_is_reported_with_the_thread_seen_writing_it(tmp_path) -> None:
    folder = plant(scrambled_sigmoid(tmp_path), "numba_kernel.py", "y[i] = e / (1.0 + e)", "y[i] = e / (2.0 + e)")
    bad = failed(validate(folder, "numba"))
    row = bad[("numba", "forward", "float32")]
    w = row.worst
    n = w.shape[0]
    owner = next(t for t in range(n) if (7 * t + 3) % n == w.flat_index)
    assert (w.block, w.thread) == ((owner // 128, 0, 0), (owner % 128, 0, 0)), w
    assert f"--index {w.flat_index}" in row.detail  # which `brrr debug` maps through the same writers
