"""Shared utilities every layer may use; they know nothing of ops, stages or numba.

Layer map:

    assets      where brrr's own headers and templates lie in the installed package
    errors      errors told to a person: message, exit code, no traceback unless --debug
    files       writes that are never half-done, locks between processes, paths as shown
    outputs     where brrr writes, checked before any work begins
    progress    a ticker on stderr for long work
    settings    the BRRR_* environment settings, each checked
    interrupts  Ctrl-C and SIGTERM end every process brrr started
    workers     the one process pool: a function over items in worker processes
    watch       wait until a file in some folders changes (validate --watch)
"""
