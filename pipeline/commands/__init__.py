"""The other commands, each one module over the layers below.

Layer map:

    new          brrr new: an op folder from templates that validates at once
    export       brrr export: a standalone pip-installable package
    bench        brrr bench: the cuda stage against eager and torch.compile
    sanitize     brrr sanitize: compute-sanitizer over the cuda stage
    walkthrough  brrr walkthrough: the six steps, run live
"""
