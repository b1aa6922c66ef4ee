def forward(a, b):
    return a * b


def backward(grad_y, a, b):
    return grad_y * b, grad_y * a
