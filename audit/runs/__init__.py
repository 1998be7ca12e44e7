"""Runs as the application sees them: TOML configs, a run's folder and fingerprint, saved results
read back (checked, never trusted), sweeps and the benchmark."""
