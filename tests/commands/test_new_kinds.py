"""`brrr new --kind K`: each kind's five files, filled in only on the lines marked `brrr: fill in`
(as the README shows), validate in all three stages; each honours --inputs or refuses it naming why,
and its simulator sizes reach every warp and tile of the CUDA block its kernel.cu launches."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import HAS_NVCC, brrr
from test_new import RMSNORM_CUDA, RMSNORM_NUMBA, RMSNORM_REFERENCE

from brrr_kernels.base.errors import UsageError
from brrr_kernels.commands.new import KINDS, new_op
from brrr_kernels.op.loaders import load_op

# What a newcomer writes into each kind: reference.py whole, and each "brrr: fill in: WHAT" line by WHAT.
FILLED: dict[str, dict[str, object]] = {
    "elementwise": {  # two inputs, so each gradient has its own marked line
        "inputs": ["a", "b"],
        "reference": '''
import torch


def forward(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a.double() * torch.sin(b.double())).to(a.dtype)


def backward(grad_y: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    g, b64 = grad_y.double(), b.double()
    return (g * torch.sin(b64)).to(a.dtype), (g * a.double() * torch.cos(b64)).to(b.dtype)
''',
        "numba": {
            "the output element y[i]": "y[i] = float(a[i]) * math.sin(float(b[i]))",
            "the gradient element grad_a[i]": "grad_a[i] = g * math.sin(float(b[i]))",
            "the gradient element grad_b[i]": "grad_b[i] = g * float(a[i]) * math.cos(float(b[i]))",
        },
        "cuda": {
            "the output element y[i]": "y[i] = static_cast<T>(static_cast<double>(a[i]) * sin(static_cast<double>(b[i])));",
            "the gradient element grad_a[i]": "grad_a[i] = static_cast<T>(g * sin(static_cast<double>(b[i])));",
            "the gradient element grad_b[i]":
                "grad_b[i] = static_cast<T>(g * static_cast<double>(a[i]) * cos(static_cast<double>(b[i])));",
        },
        "oracle": "lambda a, b: a * torch.sin(b)",
    },
    "rowscan": {
        "inputs": None,
        "reference": '''
import torch


def forward(x: torch.Tensor) -> torch.Tensor:
    return torch.cumsum(x.double(), dim=-1).to(x.dtype)


def backward(grad_y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return torch.flip(torch.cumsum(torch.flip(grad_y.double(), (-1,)), dim=-1), (-1,)).to(x.dtype)
''',
        "numba": {
            "the element's term of the running sum": "term = float(x[row, c])",
            "the output element from the running sum carry + s": "y[row, c] = carry + s",
            "the element's term of the sum from the end": "term = float(grad_y[row, c])",
            "the gradient element from the sum from the end carry + s": "grad_x[row, c] = carry + s",
        },
        "cuda": {
            "the element's term of the running sum": "term = static_cast<double>(x[row * cols + c]);",
            "the output element from the running sum carry + s": "y[row * cols + c] = static_cast<T>(carry + s);",
            "the element's term of the sum from the end": "term = static_cast<double>(grad_y[row * cols + c]);",
            "the gradient element from the sum from the end carry + s":
                "grad_x[row * cols + c] = static_cast<T>(carry + s);",
        },
        "oracle": "lambda x: torch.cumsum(x, dim=-1)",
    },
    "rowwise": {  # an RMS norm with a weight: the block sum is kernel.cu's warp shuffle, as written
        "inputs": None,
        "reference": RMSNORM_REFERENCE,
        "numba": RMSNORM_NUMBA,
        "cuda": RMSNORM_CUDA,
        "oracle": "lambda x, w, eps: torch.nn.functional.rms_norm(x, (x.shape[-1],), w, eps)",
    },
    "rowloss": {  # cross-entropy against int64 targets
        "inputs": ["logits", "target"],
        "reference": '''
import torch


def forward(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    x = logits.double()
    return (torch.logsumexp(x, dim=-1) - x.gather(1, target[:, None])[:, 0]).to(logits.dtype)


def backward(grad_loss: torch.Tensor, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    x = logits.double()
    hit = torch.nn.functional.one_hot(target, x.shape[-1]).double()
    return (grad_loss.double()[:, None] * (torch.softmax(x, dim=-1) - hit)).to(logits.dtype)
''',
        "numba": {
            "the row's term at column c, from v and m": "total += math.exp(v - m)",
            "the row's loss from total, m and the target's value": "loss[row] = math.log(total) + m - float(logits[row, k])",
            "the gradient at column c from g, v, m, total and hit": "grad_logits[row, c] = g * (math.exp(v - m) / total - hit)",
        },
        "cuda": {
            "the row's term at column c, from v and m": "total += exp(v - m);",
            "the row's loss from total, m and the target's value":
                "loss[row] = static_cast<T>(log(total) + m - static_cast<double>(xr[k]));",
            "the gradient at column c from g, v, m, total and hit":
                "grad_logits[row * cols + c] = static_cast<T>(g * (exp(v - m) / total - hit));",
        },
        "oracle": "lambda x, t: torch.nn.functional.cross_entropy(x, t, reduction='none')",
    },
    "tiled": {  # a matrix product
        "inputs": None,
        "reference": '''
import torch


def forward(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a.double() @ b.double()).to(a.dtype)


def backward(grad_y: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    g = grad_y.double()
    return (g @ b.double().T).to(a.dtype), (a.double().T @ g).to(b.dtype)
''',
        "numba": {
            "one term of the accumulation over k": "acc += a_tile[ty, kk] * b_tile[kk, tx]",
            "the output element from acc": "y[row * n + col] = acc",
        },
        "cuda": {
            "one term of the accumulation over k": "acc += a_tile[ty][kk] * b_tile[kk][tx];",
            "the output element from acc": "y[row * n + col] = static_cast<T>(acc);",
        },
        "oracle": "torch.matmul",
    },
}


def fill_in(path: Path, lines: dict[str, str]) -> None:
    """Replace each "brrr: fill in: WHAT" line of a template by lines[WHAT], keeping its indentation."""
    out = []
    for line in path.read_text().splitlines():
        marker = re.search(r"(?://|#) brrr: fill in: (.+)$", line)
        if marker:
            indent = line[: len(line) - len(line.lstrip())]
            line = indent + lines[marker.group(1)]
        out.append(line)
    path.write_text("\n".join(out) + "\n")


def write_op(kind: str, folder: Path, inputs: list[str] | None = None) -> Path:
    """The op as a newcomer writes it from the template: only the marked lines, the raises and the
    `brrr: unfinished` lines, and the spec's oracle."""
    filled = FILLED[kind]
    new_op(folder.name, inputs or filled["inputs"], folder.parent, kind)  # type: ignore[arg-type]
    (folder / "reference.py").write_text(str(filled["reference"]))
    fill_in(folder / "numba_kernel.py", filled["numba"])  # type: ignore[arg-type]
    numba = folder / "numba_kernel.py"
    numba.write_text(re.sub(r'    raise NotImplementedError\(".*?"\)\n', "", numba.read_text(), flags=re.S))
    fill_in(folder / "kernel.cu", filled["cuda"])  # type: ignore[arg-type]
    for cuda in (folder / "kernel.cu", folder / "binding.cpp"):
        cuda.write_text(re.sub(r"// brrr: unfinished.*\n", "", cuda.read_text()))
    spec = folder / "spec.py"
    spec.write_text(re.sub(r"oracle=None,.*", f"oracle={filled['oracle']},", spec.read_text()))
    return folder


@pytest.mark.parametrize("kind", sorted(FILLED))
def test_each_kind_filled_in_validates_in_every_stage(kind: str, tmp_path: Path) -> None:
    folder = write_op(kind, tmp_path / f"my_{kind}")
    stages = ["--stage", "reference", "--stage", "numba"] + (["--stage", "cuda"] if HAS_NVCC else [])
    proc = brrr("validate", str(folder), *stages, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert " 0 failed" in proc.stdout and "forward vs oracle" in proc.stdout and "note:" not in proc.stderr


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_kind_is_unfinished_until_written(kind: str, tmp_path: Path) -> None:
    new_op("op", None, tmp_path, kind)
    proc = brrr("validate", str(tmp_path / "op"), cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert [ln.split()[1] for ln in proc.stdout.splitlines() if " FAIL " in ln] == ["unfinished"] * 3, proc.stdout


def _cuda_block(folder: Path) -> int:
    text = (folder / "kernel.cu").read_text()
    m = re.search(r"constexpr int (?:kThreads|threads) = (\d+);", text) or re.search(r"constexpr int kTile = (\d+);", text)
    assert m, "kernel.cu states its block size"
    return int(m.group(1))


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_sim_sizes_reach_every_warp_and_tile_of_the_cuda_block(kind: str, tmp_path: Path) -> None:
    """The cuda stage executed on the CPU runs the simulator sizes: the largest must give every thread
    of kernel.cu's block (or, for tiles, every row and column of a tile and a partial next one) an element."""
    folder = new_op("op", None, tmp_path, kind)
    spec = load_op(str(folder)).spec
    block = _cuda_block(folder)
    largest = max(spec.sim_sizes, key=lambda s: s if isinstance(s, int) else max(s))
    if kind == "elementwise":
        assert largest > block
    elif kind == "tiled":
        assert all(d > block for d in largest), (largest, block)  # m, k, n: past one tile in every dimension
    else:
        assert largest[-1] > block, (largest, block)  # a row longer than the block: every warp works


@pytest.mark.parametrize(("kind", "inputs", "why"), [
    ("rowwise", ["a", "b"], "x [rows, cols], and weight [cols]"),
    ("rowwise", ["x", "weight", "bias"], "--inputs x or --inputs x,weight"),
    ("rowscan", ["x", "y2"], "one input x [rows, cols]"),
    ("tiled", ["a"], "two matrices a [m, k] and b [k, n]"),
    ("rowloss", ["logits"], "then the integer targets [rows]"),
])
def test_inputs_a_kind_cannot_take_are_refused_naming_why(kind: str, inputs: list[str], why: str, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=re.escape(why)):
        new_op("op", inputs, tmp_path, kind)  # type: ignore[arg-type]
    assert not (tmp_path / "op").exists()


def test_rowwise_inputs_x_writes_no_weight(tmp_path: Path) -> None:
    folder = new_op("rn", ["x"], tmp_path, "rowwise")
    for file in ("spec.py", "reference.py", "numba_kernel.py", "kernel.cu", "binding.cpp"):
        assert "weight" not in (folder / file).read_text(), file
    assert load_op(str(folder)).spec.inputs == ("x",)


def test_inputs_rename_a_kinds_tensors(tmp_path: Path) -> None:
    folder = new_op("cs", ["v"], tmp_path, "rowscan")
    assert load_op(str(folder)).spec.inputs == ("v",)
    assert "def forward(v: torch.Tensor)" in (folder / "numba_kernel.py").read_text()
    assert "at::Tensor forward(at::Tensor v)" in (folder / "binding.cpp").read_text()


def rms_reference(weight: bool, stat: bool) -> str:
    """reference.py of an RMS norm as `brrr new --kind rowwise` asks for it, with or without a weight
    (--inputs x) and a saved statistic (--no-stat)."""
    w_typed = "weight: torch.Tensor, " if weight else ""
    s_typed = "rstd: torch.Tensor, " if stat else ""
    scale = " * weight.double()" if weight else ""
    returned = "(x.double() * rstd[:, None]" + scale + ").to(x.dtype)"
    grads = "grad_x.to(x.dtype), (g * xhat).sum(dim=0).to(weight.dtype)" if weight else "grad_x.to(x.dtype)"
    return f'''
import torch


def rstd_of(x, eps):
    return torch.rsqrt(x.double().square().mean(dim=-1) + eps)


def forward(x, {w_typed}eps):
    rstd = rstd_of(x, eps)
    return {returned + (", rstd" if stat else "")}


def backward(grad_y, x, {w_typed}{s_typed}eps):
    {"" if stat else "rstd = rstd_of(x, eps)"}
    g, xhat = grad_y.double(), x.double() * rstd[:, None]
    gw = g{scale}
    grad_x = rstd[:, None] * (gw - xhat * (gw * xhat).mean(dim=-1, keepdim=True))
    return {grads}
'''


# The fourth shape, a weight and a statistic (the default), is test_new's rmsnorm: validated there.
@pytest.mark.parametrize(("weight", "stat"), [(True, False), (False, True), (False, False)],
                         ids=["weight-no-stat", "no-weight-stat", "no-weight-no-stat"])
def test_rowwise_with_or_without_weight_and_statistic_validates(weight: bool, stat: bool, tmp_path: Path) -> None:
    """Each rowwise shape, filled in only on its marked lines as an RMS norm, passes all three
    stages; without a statistic forward returns y alone and backward recomputes it."""
    folder = tmp_path / "rn"
    args = ["new", "rn", "--kind", "rowwise", "--dir", str(tmp_path)] + ([] if weight else ["--inputs", "x"])
    assert brrr(*args, *([] if stat else ["--no-stat"])).returncode == 0
    spec = load_op(str(folder)).spec
    assert spec.stats == (("rstd",) if stat else ()) and spec.inputs == (("x", "weight") if weight else ("x",))
    (folder / "reference.py").write_text(rms_reference(weight, stat))
    numba, cuda = dict(RMSNORM_NUMBA), dict(RMSNORM_CUDA)
    if not weight:
        numba["the output element"] = "y[row, c] = float(x[row, c]) * r"
        cuda["the output element"] = "yr[c] = static_cast<T>(v * r);"
    fill_in(folder / "numba_kernel.py", numba)
    path = folder / "numba_kernel.py"
    path.write_text(re.sub(r'    raise NotImplementedError\("fill in.*?"\)\n', "", path.read_text(), flags=re.S))
    fill_in(folder / "kernel.cu", cuda)
    path = folder / "kernel.cu"
    path.write_text(re.sub(r"// brrr: unfinished.*\n", "", path.read_text()))
    oracle = "lambda x, w, eps: torch.nn.functional.rms_norm(x, (x.shape[-1],), w, eps)" if weight else \
        "lambda x, eps: torch.nn.functional.rms_norm(x, (x.shape[-1],), None, eps)"
    path = folder / "spec.py"
    path.write_text(path.read_text().replace("oracle=None,", f"oracle={oracle},"))
    stages = ["--stage", "reference", "--stage", "numba"] + (["--stage", "cuda"] if HAS_NVCC else [])
    proc = brrr("validate", str(folder), *stages, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert " 0 failed" in proc.stdout and "forward vs oracle" in proc.stdout and "gradcheck" in proc.stdout


@pytest.mark.parametrize("kind", sorted(set(KINDS) - {"rowwise"}))
def test_no_stat_is_refused_where_a_kind_saves_no_statistic(kind: str, tmp_path: Path) -> None:
    proc = brrr("new", "op", "--kind", kind, "--no-stat", "--dir", str(tmp_path))
    assert proc.returncode == 2 and "only --kind rowwise saves a per-row statistic" in proc.stderr, proc.stderr
    assert not (tmp_path / "op").exists()
