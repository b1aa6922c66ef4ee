"""Causal attention: an online softmax over key tiles (flash-attention style), backward from the saved logsumexp."""

import math

import torch

from brrr_kernels import Inputs, OpSpec, Size, Terms, Widen


def make_inputs(size: Size, dtype: torch.dtype, device: torch.device, gen: torch.Generator) -> Inputs:
    bh, t, d = size
    # Unit normal q and k give scores q.k / sqrt(D) of unit size: rows from flat to peaked.
    return tuple(torch.randn(bh, t, d, dtype=torch.float64, generator=gen).to(device=device, dtype=dtype)
                 for _ in range(3))


def large_scores(dtype: torch.dtype, device: torch.device) -> Inputs:
    """Scores near +-3600: exp overflows without the running max, and a row's max moves up and down
    across the key tiles (40 keys: two tiles of 32), so the rescaling of the earlier tiles matters."""
    gen = torch.Generator().manual_seed(2)
    t, d = 40, 4
    q = 30.0 * torch.randn(2, t, d, dtype=torch.float64, generator=gen).sign()
    k = 30.0 * torch.randn(2, t, d, dtype=torch.float64, generator=gen).sign()
    v = torch.randn(2, t, d, dtype=torch.float64, generator=gen)
    return tuple(x.to(device=device, dtype=dtype) for x in (q, k, v))


def one_position(dtype: torch.dtype, device: torch.device) -> Inputs:
    """T = 1: each row attends to itself alone, o = v, and every gradient of q and k is 0."""
    return make_inputs((3, 1, 5), dtype, device, torch.Generator().manual_seed(3))


def _probabilities(t: Terms) -> tuple[torch.Tensor, torch.Tensor]:
    """P (float64, causal) and the size of each score's terms, sum |q_d k_d| / sqrt(D)."""
    q, k = t["q"], t["k"]
    n = q.shape[-2]
    scale = 1.0 / math.sqrt(q.shape[-1])
    causal = torch.ones(n, n, dtype=torch.bool).tril()
    s = (q @ k.transpose(-1, -2) * scale).masked_fill(~causal, float("-inf"))
    p = torch.softmax(s, dim=-1)
    return p, (q.abs() @ k.abs().transpose(-1, -2)) * scale


# Each probability carries the rounding of its score as a relative error of about |score terms| ulps
# (exp turns an absolute error into a relative one), and every output is a sum of terms of both
# signs: the error of each is measured against the sum of |term| x (1 + that score error).
def o_terms(t: Terms) -> torch.Tensor:
    p, sizes = _probabilities(t)
    weight = p * (1 + sizes)
    return weight @ t["v"].abs() + (p @ t["v"].abs()) * weight.sum(dim=-1, keepdim=True)


def _ds_terms(t: Terms) -> torch.Tensor:
    # dS = P (dP - delta), dP = grad_o v^T, delta = rowsum(grad_o o): both differences cancel.
    p, sizes = _probabilities(t)
    g = t["grad_o"].abs()
    dp = g @ t["v"].abs().transpose(-1, -2)
    delta = (g * t["o"].abs()).sum(dim=-1, keepdim=True)
    return p * (dp + delta) * (1 + sizes)


def grad_q_terms(t: Terms) -> torch.Tensor:
    return _ds_terms(t) @ t["k"].abs() / math.sqrt(t["q"].shape[-1])


def grad_k_terms(t: Terms) -> torch.Tensor:
    return _ds_terms(t).transpose(-1, -2) @ t["q"].abs() / math.sqrt(t["q"].shape[-1])


def grad_v_terms(t: Terms) -> torch.Tensor:
    p, sizes = _probabilities(t)
    return (p * (1 + sizes)).transpose(-1, -2) @ t["grad_o"].abs()


def oracle(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)


WHY = "a sum of terms of both signs, each probability off by its score's rounding: measured against their sizes"

SPEC = OpSpec(
    name="attention",
    doc="causal, online softmax over key tiles staged by cp.async, cg::reduce in the reductions; backward from logsumexp",
    inputs=("q", "k", "v"),
    outputs=("o",),
    stats=("lse",),
    saved=("q", "k", "v", "o", "lse"),
    make_inputs=make_inputs,
    # (batch x heads, T, D). numba_kernel.py's blocks own 4 query (or key) rows, two warps of two, and
    # read 32 keys (or queries) a tile: (2, 37, 8) has two tiles, the second partial, and blocks whose
    # rows end past T; (1, 6, 40) lanes owning one dim and lanes owning two (dims 32..39).
    sim_sizes=((1, 1, 1), (2, 37, 8), (1, 6, 40)),
    # kernel.cu's blocks own 16 rows (four warps of four) and tiles of 32: (3, 70, 64) the largest head
    # dim, three key tiles, the last partial; (2, 130, 33) five tiles, a partial block; (1, 257, 48)
    # nine tiles (double-buffered cp.async through odd and even steps).
    gpu_sizes=((1, 1, 1), (3, 70, 64), (2, 130, 33), (1, 257, 48), (16, 1024, 64), (4, 4099, 64)),
    gradcheck_size=(2, 5, 3),
    edge_cases={"large scores": large_scores, "T = 1": one_position},
    oracle=oracle,
    tolerances=(Widen("o", WHY, scale=o_terms), Widen("grad_q", WHY, scale=grad_q_terms),
                Widen("grad_k", WHY, scale=grad_k_terms), Widen("grad_v", WHY, scale=grad_v_terms)),
    dtypes={"reference": (torch.float32, torch.float64), "numba": (torch.float32, torch.float64),
            "cuda": (torch.float32, torch.float16, torch.bfloat16)},
    bench_sizes=((16, 4096, 64),),
    # No accumulator_sizes: no case a CPU can run tells a 16-bit running sum from kernel.cu's float ones.
    # Forward folds a 32-key tile into a row's sum and output with one add, so a 16-bit one rounds T / 32
    # times: nearly flat rows with v in [1, 2) (bound ~4 ulps of |o|, nothing cancels) put it at 1-2.6
    # times the bound at T = 2048 and 3-4.5 at T = 4096 (float: 0.1), but a (1, 4103, 4) forward executed
    # on a 2-core CPU ran past BRRR_CPU_TIMEOUT (11 s a launch). Backward's sums take one key or query at a time, of terms whose
    # sign the random grad_o sets: in 16-bit they reached 0.92 of their (widened) bound at T = 1024.
)
