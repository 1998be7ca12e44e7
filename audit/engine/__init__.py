"""The Monte Carlo engine, statistics only: binomial bounds, statistics, event selection and views,
the estimate, the exact loss, the trade-off curve, streaming counts, the runner that draws and counts
chunks, the results records, :func:`~dpaudit.engine.api.audit_mechanism`, the pair search and the
budget planner.  Where chunks run, the run folder's files and the process machinery are
:mod:`dpaudit.runtime`, the floor below.

The engine never imports the catalog, the command line, the run files or the reports
(``tests/test_architecture.py`` keeps that direction).
"""
