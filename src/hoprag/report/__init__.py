"""Reports for people: the self-contained HTML evaluation report (:mod:`hoprag.report.html`)."""
