"""The built-in kernels that brrr::launch_early launches wait for the kernel before them first.

A kernel launched early may run beside the end of the kernel ahead of it in the stream: a load before
its griddepcontrol.wait can read what that kernel has not yet written, a store can overwrite what it
still reads. The CPU runs launches one by one and the wait is a no-op there, so no validation on the
CPU can see such a read; this reads the source instead."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from brrr_kernels.cuda.tokens import kernel_names, masked, matching

STAGES = Path(__file__).resolve().parents[2] / "stages"
WAIT = "brrr::wait_for_prior_grid();"


def _definition(code: str, name: str) -> str | None:
    """The body of function `name`'s definition (not a declaration or a call), or None."""
    for m in re.finditer(rf"\b{name}\s*\(", code):
        after = code[matching(code, m.end() - 1) + 1 :]
        head = re.match(r"\s*(?:const\s*)?\{", after)
        if head:
            brace = len(code) - len(after) + head.end() - 1
            return code[brace + 1 : matching(code, brace, "{}")]
    return None


def _enclosing_block(code: str, at: int) -> str:
    """The outermost brace block around offset `at`: the function (or namespace) a statement is in."""
    depth, opened = 0, 0
    for i, c in enumerate(code[:at]):
        if c == "{":
            opened = i if depth == 0 else opened
            depth += 1
        elif c == "}":
            depth -= 1
    return code[opened : matching(code, opened, "{}")]


def early_kernels(source: str) -> dict[str, str]:
    """The kernels named in a function that calls brrr::launch_early, each with its body."""
    code = masked(source)
    kernels = set(kernel_names(source))
    launched = {name for m in re.finditer(r"brrr::launch_early\(", code)
                for name in re.findall(r"\w+", _enclosing_block(code, m.start())) if name in kernels}
    bodies = {name: _definition(code, name) for name in sorted(launched)}
    missing = [name for name, body in bodies.items() if body is None]
    assert not missing, f"kernels launched early whose definition was not found: {missing}"
    return bodies


# Statements that touch no memory: a kernel may open with them before its wait.
NO_MEMORY = re.compile(r"(using|typedef|constexpr|static_assert|__shared__)\b")


def _first_statement(body: str) -> str:
    """The body's first statement that may touch memory, its whitespace collapsed."""
    for statement in body.split(";"):
        statement = " ".join(statement.split())
        if statement and not NO_MEMORY.match(statement):
            return statement + ";"
    return ""


OPS = sorted(p.parent.name for p in STAGES.glob("*/kernel.cu") if "brrr::launch_early(" in p.read_text())


def test_the_row_ops_launch_early() -> None:
    assert {"layernorm", "softmax"} <= set(OPS)


@pytest.mark.parametrize("op", OPS)
def test_each_kernel_launched_early_waits_first(op: str) -> None:
    kernels = early_kernels((STAGES / op / "kernel.cu").read_text())
    assert kernels, f"{op}: kernel.cu calls brrr::launch_early, yet no kernel was found in its launchers"
    late = {name: _first_statement(body) for name, body in kernels.items() if _first_statement(body) != WAIT}
    assert not late, f"{op}: kernels launched early whose first statement is not {WAIT}: {late}"


def test_a_kernel_that_reads_first_is_named() -> None:
    source = """
    template <typename T> __global__ void good(const T* x, T* y) { using U = T; brrr::wait_for_prior_grid(); y[0] = x[0]; }
    template <typename T> __global__ void bad(const T* x, T* y) { using U = T; y[0] = x[0]; brrr::wait_for_prior_grid(); }
    template <typename T> __global__ void plain(const T* x, T* y) { y[0] = x[0]; }
    template <typename T> void launch(const T* x, T* y, cudaStream_t s) {
        brrr::launch_early(good<T>, dim3(1), dim3(1), 0, s, x, y);  // a comment naming plain is no launch
        brrr::launch_early(bad<T>, dim3(1), dim3(1), 0, s, x, y);
    }
    template <typename T> void launch_plain(const T* x, T* y) { plain<T><<<1, 1>>>(x, y); }
    """
    kernels = early_kernels(source)
    assert set(kernels) == {"good", "bad"}
    assert _first_statement(kernels["good"]) == WAIT
    assert _first_statement(kernels["bad"]) == "y[0] = x[0];"
