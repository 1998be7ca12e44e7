"""Reports of audit results: the text summary and the PDF report, both from saved records.

The PDF needs matplotlib and reportlab, which the ``[report]`` extra installs (``pip install 'dpaudit[report]'``);
without it :func:`write_pdf` raises :class:`ReportExtraMissing` and everything else works.
"""

REPORT_EXTRA_MESSAGE = "the PDF report needs the [report] extra: pip install 'dpaudit[report]'"


class ReportExtraMissing(RuntimeError):
    """matplotlib or reportlab (the ``[report]`` extra) is not installed: an environment failure, not bad input."""


def write_pdf(payload, path, sweeps=(), families=()):
    """Write the PDF report of a results payload (see :mod:`dpaudit.reports.pdf`)."""
    try:
        # matplotlib and reportlab (the optional [report] extra) are imported only when a PDF is made.
        from dpaudit.reports.pdf import write_pdf as _write
    except ImportError as exc:
        if (exc.name or "").split(".")[0] not in ("matplotlib", "reportlab"):
            raise
        raise ReportExtraMissing(REPORT_EXTRA_MESSAGE) from None
    _write(payload, path, sweeps, families)
