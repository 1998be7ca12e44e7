import sys
from pathlib import Path

# Tests run against the checkout (also when it is installed in editable mode).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

pytest_plugins = ["pytester"]
