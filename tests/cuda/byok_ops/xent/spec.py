"""Cross-entropy with int64 class targets: the targets take no gradient and stay int64."""

import torch

from brrr_kernels import OpSpec, TorchModule


def make_inputs(size, dtype, device, gen):
    rows, classes = size
    logits = 3 * torch.randn(rows, classes, dtype=dtype, generator=gen)
    targets = torch.randint(0, classes, (rows,), generator=gen)  # int64, whatever dtype is asked for
    return logits.to(device), targets.to(device)


SPEC = OpSpec(
    name="xent",
    inputs=("logits", "targets"),
    outputs=("losses",),
    saved=("logits", "targets"),
    make_inputs=make_inputs,
    sim_sizes=((3, 7), (2, 300)),
    gpu_sizes=((64, 1000),),
    gradcheck_size=(3, 5),
    oracle=lambda logits, targets: torch.nn.functional.cross_entropy(logits, targets, reduction="none"),
    dtypes={"reference": (torch.float32, torch.float64), "cuda": (torch.float32,)},
    torch_module=TorchModule(forward="forward", backward="backward"),
)
