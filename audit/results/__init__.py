"""The results file's room: its one schema source and the schemas assembled from it
(:mod:`~dpaudit.results.schema`), the document writer (:mod:`~dpaudit.results.document`), the loader
that checks a saved file (:mod:`~dpaudit.results.saved`) and the re-checkers of its numbers
(:mod:`~dpaudit.results.recheck`, :mod:`~dpaudit.results.recheck_onerun`).

The records' own fields are written by the results that hold them (the engine's ``AuditResult``, the
one-run ``OneRunResult``, the catalog's one-run scenario); the reports and the command line read the
file only through this room.  It sits above the engine and the one-run audits, whose bounds it
recomputes, and below the reports and the command line (``tests/test_architecture.py``).
"""
