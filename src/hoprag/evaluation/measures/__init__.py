"""Every measure hoprag reports, as definitions kept apart from the code that computes them.

- :mod:`~hoprag.evaluation.measures.registry`: the one registry of definitions (name, kind, cut-off,
  default for a missing case or query, where the formula is), and the parser of measure names that
  ``hoprag eval -m``, ``hoprag trec eval -m`` and the retrieve gate read;
- :mod:`~hoprag.evaluation.measures.cases`: the per-case providers (``Measure``: a definition bound to
  ``fn(case, trace, k)``) that ``evaluate_chains`` maps over cases;
- :mod:`~hoprag.evaluation.measures.documents`: the document-level (TREC) provider over qrels and a
  run, vectorised, equal to trec_eval.

The package imports nothing itself, so ``trec eval`` loads only the document provider.
"""
