"""brrr mutate: plant standard bugs in one stage and see whether validation kills each.

Layer map:

    run            the command: every mutant validated, survivors reported
    probe          a mutant's cheapest verdict: one case at a time, the last mutant's killer first
    standard_bugs  the standard bugs: small edits of numba_kernel.py and kernel.cu
    bug_files      known bugs an op folder carries as bugs/NAME.bug
"""
