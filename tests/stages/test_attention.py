"""attention: planted bugs in the online softmax, its cooperative-groups reductions, its asynchronous
copies and its backward's causal mask must fail; the numba stage's missing warp sync is a race."""

from __future__ import annotations

import pytest
from conftest import HAS_GPU, failed, validate


@pytest.mark.skipif(HAS_GPU, reason="names the CPU execution's checked-build report")
def test_reading_a_key_tile_before_the_wait_group_names_the_copy(mutant) -> None:
    bad = failed(validate(mutant("attention", "cuda_no_wait_group"), "cuda", fail_fast=True))
    detail = bad[("cuda", "forward", "float32")].detail
    assert "read before an asynchronous copy landed" in detail, detail


@pytest.mark.parametrize("bug", ["cuda_no_rescale", "cuda_partition_of_16"])
def test_online_softmax_bugs_fail_forward(mutant, bug: str) -> None:
    """No rescale of the earlier tiles when the max moves; a max reduced over a tiled_partition<16>."""
    bad = failed(validate(mutant("attention", bug), "cuda", fail_fast=True))
    assert ("cuda", "forward", "float32") in bad, sorted(bad)


def test_causal_mask_missing_in_backward_fails_backward_only(mutant) -> None:
    bad = failed(validate(mutant("attention", "cuda_no_causal_mask_in_grad_kv"), "cuda", fail_fast=True))
    assert ("cuda", "backward", "float32") in bad and ("cuda", "forward", "float32") not in bad, sorted(bad)
    assert "grad_k" in bad[("cuda", "backward", "float32")].detail or "grad_v" in bad[("cuda", "backward", "float32")].detail


def test_numba_missing_syncwarp_is_a_race(mutant) -> None:
    bad = failed(validate(mutant("attention", "no_syncwarp_before_reading_p"), "numba"))
    row = bad.get(("numba", "forward", "float32")) or bad[("numba", "forward", "float64")]
    assert "race" in row.detail.lower(), row.detail
