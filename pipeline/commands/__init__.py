"""The other commands, each one module over the layers below.

Layer map:

    validate     brrr validate on the command line: tables, --json, --watch
    debug        brrr debug and trace on the command line
    build        brrr build: compile only, and each kernel's resources
    new          brrr new: an op folder from templates that validates at once
    adopt        brrr adopt: an op folder from an extension its author already has
    adopt_forward  a forward's tensors as inputs, outputs, in-place and optional ones, and its adapter
    bindings     what an extension's module binds, through the preprocessor where its macros bind it
    script_flags  the macros a setup.py or load() script defines, read for adopt
    inline_sources  a load_inline() script's strings, as the files torch writes, read for adopt
    conditionals  the macros a source's #ifdef branches need for its torch wrappers, read for adopt
    export       brrr export: a standalone pip-installable package
    bench        brrr bench: the cuda stage against eager and torch.compile
    bench_warm   brrr bench's warm-up: builds and torch.compile's compiles in parallel processes
    sanitize     brrr sanitize: compute-sanitizer over the cuda stage
    walkthrough  brrr walkthrough: the six steps, run live
"""
