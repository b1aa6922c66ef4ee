"""How a result is judged and told: element-wise comparison against the tolerance, the rounding
spread an op's math allows, faults reduced to file and line, and the report's rows.

Layer map:

    compare   element-wise comparison of a stage's tensors against expected ones
    rounding  how much rounding an op's own math amplifies, element by element
    reductions  a library reduction's rounding counted by its terms (rounding's nudge for sums, scans, products)
    faults    an exception inside a stage, reduced to file, line, block, thread, locals
    replay    a failed check's inputs kept, and the brrr debug command that replays them
    report    report rows: the printed table and the same rows as JSON
"""
