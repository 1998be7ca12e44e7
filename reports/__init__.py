"""Reports of audit results: the text summary and the PDF report, both from saved records."""


def write_pdf(payload, path, sweeps=()):
    """Write the PDF report of a results payload (see :mod:`reports.pdf`)."""
    from reports.pdf import write_pdf as _write  # matplotlib is imported only when a PDF is made
    _write(payload, path, sweeps)
