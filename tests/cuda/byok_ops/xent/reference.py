import torch


def forward(logits, targets):
    return (torch.logsumexp(logits, dim=1) - logits.gather(1, targets[:, None])[:, 0],)


def backward(grad_losses, logits, targets):
    p = torch.softmax(logits, dim=1)
    p = p - torch.nn.functional.one_hot(targets, logits.shape[1]).to(p.dtype)
    return grad_losses[:, None] * p, None
