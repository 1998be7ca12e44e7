"""Reports of audit results: the text summary and the PDF report, both from saved records."""


def write_pdf(payload, path, sweeps=()):
    """Write the PDF report of a results payload (see :mod:`reports.pdf`)."""
    # matplotlib (an optional dependency for users who only audit) is imported only when a PDF is made.
    from reports.pdf import write_pdf as _write
    _write(payload, path, sweeps)
