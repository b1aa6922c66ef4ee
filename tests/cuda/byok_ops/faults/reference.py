def forward(x):
    return x.clone()
