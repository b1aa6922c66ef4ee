"""Call one op's stages the same way and see that they agree: the reference in PyTorch, the
numba kernel in the CUDA simulator (or on the GPU with --gpu), and, on a GPU, the CUDA C kernel.

    python examples/stages_side_by_side.py [OP] [--gpu]
"""

from __future__ import annotations

import argparse

import torch

from brrr_kernels.sim.numba_env import use_simulator


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("op", nargs="?", default="sigmoid")
    parser.add_argument("--gpu", action="store_true", help="numba and CUDA C on the GPU")
    args = parser.parse_args()
    use_simulator(not args.gpu)

    from brrr_kernels.cuda import builder
    from brrr_kernels.op.loaders import load_cuda, load_numba, load_op, load_reference
    from brrr_kernels.validation.function import apply

    op = load_op(args.op)
    device = "cuda" if args.gpu else "cpu"
    stages = [load_reference(op), load_numba(op, gpu=args.gpu)]
    if torch.cuda.is_available():
        stages.append(load_cuda(op, builder.build_extension(op)))
    gen = torch.Generator().manual_seed(0)
    inputs = op.spec.make_inputs(op.spec.sim_sizes[-1], torch.float64, torch.device("cpu"), gen)
    for stage in stages:
        where = device if stage.name != "cuda" else "cuda"
        xs = [x.detach().clone().to(where).requires_grad_() for x in inputs]
        out = apply(stage, *xs)
        out = out[0] if isinstance(out, tuple) else out
        out.sum().backward()
        grad = xs[0].grad.flatten()[:4].tolist()
        print(f"{stage.name:9s} out[:4]={[round(v, 6) for v in out.flatten()[:4].tolist()]} "
              f"grad_{op.spec.inputs[0]}[:4]={[round(v, 6) for v in grad]}")


if __name__ == "__main__":
    main()
