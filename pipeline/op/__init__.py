"""What an op is: the files of its folder, its spec, the tolerance it is judged by, the calling
contract every stage keeps, and loading it. Above sim (the numba stage loads through numba_env).

Layer map:

    names        stage names, op-folder files, the unfinished mark: spelled once
    extension    an op brought as its own torch extension: which module functions are forward and backward
    spec         OpSpec and the names spec.py is written with
    tolerances   the comparison rule: how far an element may be from the expected value
    spec_checks  a SPEC checked once, at load, before anything runs
    contract     results, saved tensors and schemas every stage keeps
    loaders      finding op folders and loading each stage where it runs
"""
