"""Stage gates: a hook registry, timed stage wrappers, checks per stage, thresholds that warn or block."""
