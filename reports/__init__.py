"""Reports of audit results: the text summary now; PDF and plots build on the same records."""
