"""The Monte Carlo engine: binomial bounds, statistics, event selection and views, the estimate,
the exact loss, the trade-off curve, streaming, the runner and where chunks execute, the results
records, :func:`~dpaudit.engine.api.audit_mechanism`, the pair search and the budget planner.

The engine never imports the catalog, the command line, the run files or the reports
(``tests/test_architecture.py`` keeps that direction).
"""
