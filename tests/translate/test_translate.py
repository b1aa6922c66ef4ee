"""`brrr translate`: numba_kernel.py becomes a CUDA C stage that validates; outside the subset it says where; it
never overwrites."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
from conftest import REPO, STAGES, brrr, failed, needs_nvcc, validate

from brrr_kernels.base.errors import BrrrError
from brrr_kernels.op.loaders import builtin_op_names, load_op
from brrr_kernels.translate.run import TEMPLATE_LINE, is_template, translate
from brrr_kernels.verdict.report import FAIL, PASS

BUILTIN = ("bias_gelu", "layernorm", "matmul", "mul", "sigmoid", "softmax", "square")
# Built-in ops whose numba stage lies outside what translate reads, and what stops it (named at its line).
OUTSIDE = {"matmul_tc": "a kernel factory is translated when called with the numba type of the op's dtype",
           "attention": "math is not a parameter, a local or a module-level"}

# An op written as the README says, by hand: each row centred on its mean. Forward reduces each row
# in shared memory (a 2-D block: threadIdx.y picks the row, threadIdx.x strides over its columns),
# then a 2-D grid of 2-D blocks subtracts the means; backward is the same on the upstream gradient.
ROW_CENTER_SPEC = '''
import torch

from brrr_kernels import OpSpec, one_per_thread


def make_inputs(size, dtype, device, gen):
    return (3 * torch.randn(size, dtype=dtype, generator=gen).to(device),)


SPEC = OpSpec(
    name="row_center",
    inputs=("x",),
    outputs=("y",),
    stats=("mean",),
    saved=("mean",),
    make_inputs=make_inputs,
    sim_sizes=((1, 1), (5, 19), (9, 4)),
    gpu_sizes=((1, 1), (257, 1031)),
    gradcheck_size=(3, 5),
    oracle=lambda x: x - x.mean(dim=1, keepdim=True),
)
'''

ROW_CENTER_REFERENCE = '''
import torch


def forward(x):
    mean = x.double().mean(dim=1)
    return x - mean.to(x.dtype)[:, None], mean


def backward(grad_y, mean):
    return grad_y - grad_y.mean(dim=1, keepdim=True)
'''

ROW_CENTER_NUMBA = '''
import torch
from numba import float64

from brrr_kernels import cdiv, import_cuda, launch

cuda = import_cuda()
BX, BY = 8, 4  # threads along a row, rows a block


@cuda.jit
def row_mean_kernel(x, mean, rows, cols):
    partial = cuda.shared.array((BY, BX), dtype=float64)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * BY + ty
    total = 0.0
    if row < rows:
        for c in range(tx, cols, BX):
            total += float(x[row, c])
    partial[ty, tx] = total
    cuda.syncthreads()  # every partial of the block written
    if tx == 0 and row < rows:
        s = 0.0
        for k in range(BX):
            s += partial[ty, k]
        mean[row] = s / cols


@cuda.jit
def subtract_kernel(x, mean, y, rows, cols):
    col, row = cuda.grid(2)
    if row < rows and col < cols:
        y[row, col] = x[row, col] - mean[row]


def forward(x):
    x = x.contiguous()
    rows, cols = x.shape
    y = torch.empty_like(x)
    mean = torch.empty(rows, dtype=torch.float64, device=x.device)
    if x.numel():
        launch(row_mean_kernel, (1, cdiv(rows, BY)), (BX, BY), x, mean, rows, cols)
        launch(subtract_kernel, (cdiv(cols, BX), cdiv(rows, BY)), (BX, BY), x, mean, y, rows, cols)
    return y, mean


def backward(grad_y, mean):
    grad_y = grad_y.contiguous()
    rows, cols = grad_y.shape
    gmean = torch.empty(rows, dtype=torch.float64, device=grad_y.device)
    grad_x = torch.empty_like(grad_y)
    if grad_y.numel():
        launch(row_mean_kernel, (1, cdiv(rows, BY)), (BX, BY), grad_y, gmean, rows, cols)
        launch(subtract_kernel, (cdiv(cols, BX), cdiv(rows, BY)), (BX, BY), grad_y, gmean, grad_x, rows, cols)
    return grad_x
'''


def translated_copy(op: str | Path, tmp_path: Path) -> Path:
    """The op's folder with kernel.cu and binding.cpp replaced by `brrr translate`'s."""
    source = Path(op) if isinstance(op, Path) else STAGES / op
    folder = tmp_path / source.name
    shutil.copytree(source, folder, ignore=shutil.ignore_patterns("__pycache__", "kernel.cu", "binding.cpp"))
    result = brrr("translate", str(source), "--out", str(folder))
    assert result.returncode == 0, result.stderr
    return folder


def ran_on_the_cpu(rows: list) -> bool:
    """Validation executed the translation (on the CPU here, on a GPU where there is one): it compared
    outputs, not only compiled them."""
    return {"forward", "backward", "gradcheck"} <= {r.check for r in rows if r.verdict == PASS}


def write_op(folder: Path, spec: str, reference: str, numba: str) -> Path:
    folder.mkdir(parents=True)
    for name, text in (("spec.py", spec), ("reference.py", reference), ("numba_kernel.py", numba)):
        (folder / name).write_text(textwrap.dedent(text).lstrip())
    # Placeholders `brrr new` would write, so the folder loads as an op before translation.
    for name in ("kernel.cu", "binding.cpp"):
        (folder / name).write_text(f"// {TEMPLATE_LINE}\n")
    return folder


def test_every_builtin_op_is_covered() -> None:
    assert set(BUILTIN) | set(OUTSIDE) == set(builtin_op_names())


@pytest.mark.parametrize("op", sorted(OUTSIDE))
def test_an_op_outside_the_subset_is_refused_at_its_line(op: str) -> None:
    with pytest.raises(BrrrError, match=rf"numba_kernel.py:\d+: .*{re.escape(OUTSIDE[op])}"):
        translate(load_op(op))


@needs_nvcc
@pytest.mark.parametrize("op", BUILTIN)
def test_builtin_op_translation_validates(op: str, tmp_path: Path, small_cpu_sizes: None) -> None:
    folder = translated_copy(op, tmp_path)
    rows = validate(folder, "cuda")
    assert not failed(rows), [r.detail for r in rows if r.verdict == FAIL]
    assert ran_on_the_cpu(rows)
    text = (folder / "kernel.cu").read_text()
    assert "int64_t" in text and "__restrict__" in text and "brrr: unfinished" not in text


def test_translation_mirrors_the_numba_stage(tmp_path: Path) -> None:
    """Same names in the same order, comments carried over, inputs const, T for several dtypes."""
    result = translate(load_op("sigmoid"))
    kernel = result.kernel_cu
    assert kernel.index("sigmoid_forward_kernel") < kernel.index("sigmoid_backward_kernel")
    assert "const T* __restrict__ x, T* __restrict__ y, int64_t n" in kernel
    assert "int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;" in kernel
    assert "y[i] = brrr::from_acc<T>(1.0 / (1.0 + exp(-v)));" in kernel  # a float literal is a double, as numba types it
    layernorm = translate(load_op("layernorm")).kernel_cu
    assert "// Second pass over the row for the centred sum of squares" in layernorm
    assert "__shared__ double partial[WARPS];" in layernorm
    assert "brrr::to_acc(" in layernorm  # bfloat16 is dispatched: elements are computed in float
    assert "template void layernorm_forward<__nv_bfloat16>" in layernorm
    softmax = translate(load_op("softmax"))
    # launch_bounds=MAX_ROW_THREADS in the numba stage: the module constant's value, as kernel.cu has it
    assert "__global__ void __launch_bounds__(1024) softmax_forward_kernel(" in softmax.kernel_cu
    binding = softmax.binding_cpp
    assert "AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type()" in binding
    assert 'brrr::check_input(x, "x");' in binding and "BRRR_DEVICE_GUARD(x);" in binding


@needs_nvcc
def test_readme_style_op_with_shared_reduction_and_2d_grid(tmp_path: Path) -> None:
    op = write_op(tmp_path / "src" / "row_center", ROW_CENTER_SPEC, ROW_CENTER_REFERENCE, ROW_CENTER_NUMBA)
    assert not failed(validate(op)), "the hand-written numba stage itself must pass"
    folder = translated_copy(op, tmp_path)
    kernel = (folder / "kernel.cu").read_text()
    assert "__shared__ double partial[BY][BX];" in kernel and "__syncthreads();" in kernel
    assert "x[row * x_stride0 + c * x_stride1]" in kernel
    rows = validate(folder, "cuda")
    assert not failed(rows), [r.detail for r in rows if r.verdict == FAIL]
    assert ran_on_the_cpu(rows)


@pytest.mark.parametrize("numba, needle, message", [
    ("    v = x[i]\n", "    v = [x[i], 0.0][0]\n", "a Python list is outside the subset"),
    ("@cuda.jit\ndef sigmoid_backward_kernel", "@cuda.jit(device=True)\ndef again(v):\n    return again(v)\n\n\n"
     "@cuda.jit\ndef sigmoid_backward_kernel", None),
])
def test_outside_the_subset_names_file_and_line(numba: str, needle: str, message: str | None, tmp_path: Path) -> None:
    folder = tmp_path / "sigmoid"
    shutil.copytree(STAGES / "sigmoid", folder, ignore=shutil.ignore_patterns("__pycache__"))
    path = folder / "numba_kernel.py"
    text = path.read_text()
    assert numba in text
    if message is None:  # recursion: a device function that calls itself, called by a kernel
        text = text.replace(numba, needle).replace("    v = x[i]\n", "    v = again(x[i])\n")
        message = "calls itself (recursion)"
    else:
        text = text.replace(numba, needle)
    path.write_text(text)
    line = next(n for n, t in enumerate(text.splitlines(), 1) if ("[x[i], 0.0]" in t or "return again(v)" in t))
    result = brrr("translate", str(folder), "--out", str(tmp_path / "out"))
    assert result.returncode == 2, result.stderr
    assert f"numba_kernel.py:{line}: " in result.stderr and message in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()


def test_partly_translated_leaves_a_todo_and_validation_says_unfinished(tmp_path: Path) -> None:
    folder = tmp_path / "sigmoid"
    shutil.copytree(STAGES / "sigmoid", folder, ignore=shutil.ignore_patterns("__pycache__"))
    path = folder / "numba_kernel.py"
    # A float atomic max: numba builds it from compare-and-swap; CUDA C has no intrinsic for it.
    path.write_text(path.read_text().replace("    grad_x[i] = float(grad_y[i]) * float(y[i]) * (1.0 - float(y[i]))\n",
                                             "    grad_x[i] = float(grad_y[i]) * float(y[i]) * (1.0 - float(y[i]))\n"
                                             "    cuda.atomic.max(grad_x, 0, y[i])\n"))
    out = tmp_path / "out" / "sigmoid"
    shutil.copytree(folder, out, ignore=shutil.ignore_patterns("__pycache__", "kernel.cu", "binding.cpp"))
    result = brrr("translate", str(folder), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "TODO" in result.stdout
    kernel = (out / "kernel.cu").read_text()
    line = next(n for n, t in enumerate(path.read_text().splitlines(), 1) if "atomic.max" in t)
    assert f"// TODO(brrr translate): numba_kernel.py:{line} cuda.atomic.max" in kernel
    rows = validate(out, "cuda")
    assert [(r.stage, r.check) for r in rows if r.verdict == FAIL] == [("cuda", "unfinished")]


def test_writes_into_brrr_new_templates_and_never_overwrites(tmp_path: Path) -> None:
    made = brrr("new", "swish", "--dir", str(tmp_path))
    assert made.returncode == 0, made.stderr
    folder = tmp_path / "swish"
    # Give the template's numba stage a body, as the README's path does before translating.
    (folder / "numba_kernel.py").write_text((STAGES / "sigmoid" / "numba_kernel.py").read_text()
                                            .replace("sigmoid_", "swish_"))
    first = brrr("translate", str(folder))
    assert first.returncode == 0, first.stderr
    assert TEMPLATE_LINE not in (folder / "kernel.cu").read_text()
    kept = (folder / "kernel.cu").read_text()
    again = brrr("translate", str(folder))
    assert again.returncode == 1 and "never overwrites" in again.stderr and "--out" in again.stderr
    assert (folder / "kernel.cu").read_text() == kept
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "binding.cpp").write_text("// mine\n")
    refused = brrr("translate", str(folder), "--out", str(tmp_path / "elsewhere"))
    assert refused.returncode == 1 and "never overwrites" in refused.stderr
    assert (tmp_path / "elsewhere" / "binding.cpp").read_text() == "// mine\n"
    assert not (tmp_path / "elsewhere" / "kernel.cu").exists()


@pytest.mark.parametrize("python, c", [
    ("v * 2", "v * 2.0"),  # float32 times an int is float64 in numba: the literal becomes a double
    ("v * n", "v * double(n)"),  # C would multiply in float
    ("i // 3", "py_floordiv(i, 3)"),  # Python's floor, not C's truncation
    ("i % n", "py_mod(i, n)"),
    ("i / n", "double(i) / n"),  # true division of ints is a double
    ("max(v, 0.0)", "py_max(double(v), 0.0)"),  # Python's max: NaN in the first place stays
    ("math.floor(v) + cuda.threadIdx.x", "int64_t(floor(v)) + int64_t(threadIdx.x)"),
    ("v if v >= 0 else -v", "v >= 0 ? v : -v"),
])
def test_numba_typing_rules(python: str, c: str, tmp_path: Path) -> None:
    folder = tmp_path / "sigmoid"
    shutil.copytree(STAGES / "sigmoid", folder, ignore=shutil.ignore_patterns("__pycache__"))
    path = folder / "numba_kernel.py"
    line = "        y[i] = 1.0 / (1.0 + math.exp(-v))\n"
    assert line in path.read_text()
    path.write_text(path.read_text().replace(line, f"        y[i] = {python}\n"))
    # a store into a 16-bit capable T goes through from_acc (sigmoid's cuda stage takes float16/bfloat16)
    assert f"y[i] = brrr::from_acc<T>({c});" in translate(load_op(str(folder))).kernel_cu


def test_rowwise_templates_count_as_templates(tmp_path: Path) -> None:
    """`brrr new --kind rowwise`'s kernel.cu is a template (its lines to fill in are marked); translate
    refuses while the numba stage is unwritten, and writes nothing."""
    assert brrr("new", "rms", "--kind", "rowwise", "--dir", str(tmp_path)).returncode == 0
    op = load_op(str(tmp_path / "rms"))
    assert is_template(op.path("cuda"), op)
    # while its numba stage still raises NotImplementedError, translate refuses at that line, writing nothing
    kept = op.path("binding").read_text()
    result = brrr("translate", str(tmp_path / "rms"))
    assert result.returncode == 2 and "NotImplementedError" in result.stderr, result.stderr
    assert op.path("binding").read_text() == kept


def test_the_next_command_after_out_works_there(tmp_path: Path) -> None:
    """After --out DIR (only kernel.cu and binding.cpp there), the printed command first copies the
    op's other files in, so `brrr validate DIR` finds an op."""
    out = tmp_path / "out dir"
    result = brrr("translate", "sigmoid", "--out", str(out))
    assert result.returncode == 0, result.stderr
    command = next(ln.removeprefix("next: ") for ln in result.stdout.splitlines() if ln.startswith("next: "))
    assert command.startswith("cp ") and command.endswith("--stage cuda"), command
    copy, validate = command.split(" && ")
    assert subprocess.run(copy, shell=True, check=False).returncode == 0
    assert sorted(p.name for p in out.iterdir()) == ["binding.cpp", "kernel.cu", "numba_kernel.py", "reference.py", "spec.py"]
    args = shlex.split(validate)[1:]
    checked = brrr(*[a if a != "cuda" else "reference" for a in args])  # the op loads there; its reference runs
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_integer_inputs_stay_integer_through_binding_checks(tmp_path: Path) -> None:
    """examples/cross_entropy's targets are int64 (spec's make_inputs): the kernels take them as
    int64_t, binding.cpp checks their dtype and device (not check_input's floating point), and an
    index read from them is an int."""
    out = tmp_path / "out"
    result = brrr("translate", str(REPO / "examples" / "cross_entropy"), "--out", str(out))
    assert result.returncode == 0, result.stderr
    binding, kernel = (out / "binding.cpp").read_text(), (out / "kernel.cu").read_text()
    assert 'TORCH_CHECK(target.scalar_type() == at::kLong, "target must be torch.int64, got "' in binding
    assert "check_compatible(logits, target" not in binding and 'check_input(target, "target")' not in binding
    assert "const int64_t* target" in binding and "const int64_t* __restrict__ target" in kernel


@needs_nvcc
def test_kernel_cu_launches_the_specs_cuda_block_not_numbas(tmp_path: Path) -> None:
    """examples/rowscan: numba's BLOCK = 32 (the simulator's), spec.py's CUDA_BLOCK = 256 (its cuda layout
    and sim sizes). The translation launches 256 and sizes its shared arrays so, and validates."""
    out = tmp_path / "out"
    result = brrr("translate", str(REPO / "examples" / "rowscan"), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "BLOCK = 256 (spec.py's CUDA_BLOCK; numba_kernel.py's is 32)" in result.stdout, result.stdout
    for name in ("kernel.cu", "binding.cpp"):
        text = (out / name).read_text()
        assert "constexpr int64_t BLOCK = 256;" in text and "BLOCK = 32;" not in text, name
    assert "brrr translate:" not in (out / "kernel.cu").read_text()  # nothing left to agree on
    for name in ("spec.py", "reference.py", "numba_kernel.py"):
        shutil.copy(REPO / "examples" / "rowscan" / name, out / name)
    rows = validate(out, "cuda")
    assert not failed(rows), [(r.check, r.dtype, r.detail) for r in rows if r.verdict == FAIL]


def test_a_launch_block_it_cannot_take_from_the_spec_is_commented_and_warned(tmp_path: Path) -> None:
    """A launch block computed from numba's BLOCK stays numba's; both files say where it must agree
    with spec.py's CUDA_BLOCK, and translate prints a warning naming both."""
    folder = tmp_path / "rowscan"
    shutil.copytree(REPO / "examples" / "rowscan", folder, ignore=shutil.ignore_patterns("__pycache__"))
    path = folder / "numba_kernel.py"
    text = path.read_text()
    assert "launch(rowscan_forward_kernel, rows, BLOCK," in text
    launched = "launch(rowscan_forward_kernel, rows, "
    path.write_text(text.replace(launched + "BLOCK,", launched + "2 * (BLOCK // 2),"))
    result = brrr("translate", str(folder), "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    warning = next((ln for ln in result.stdout.splitlines() if ln.startswith("warning:")), "")
    assert "2 * (BLOCK // 2)" in warning and "CUDA_BLOCK = 256" in warning and "must agree" in warning, result.stdout
    for name in ("kernel.cu", "binding.cpp"):
        text = (tmp_path / "out" / name).read_text()
        assert "// brrr translate: kernel.cu launches numba_kernel.py's block" in text and "CUDA_BLOCK = 256" in text
        assert "BLOCK = 32;" in text, name  # numba's, kept


def test_no_cuda_block_in_the_spec_leaves_numbas() -> None:
    """sigmoid's spec names no CUDA_ constant: the launches keep numba's block and nothing is said."""
    result = translate(load_op("sigmoid"))
    assert result.block.message is None and "brrr translate:" not in result.kernel_cu
