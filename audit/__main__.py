"""``python -m dpaudit`` (and ``python -m audit``): the command line."""

import sys

try:
    from dpaudit.runs.syspath import working_folder_last
except ModuleNotFoundError as exc:  # `python -m audit` in a checkout whose package is not installed
    if exc.name != "dpaudit":
        raise
    print("error: dpaudit is not installed in this Python (the checkout's folders are not importable as "
          "`dpaudit` by themselves): pip install . (or pip install -e . to work on it)", file=sys.stderr)
    sys.exit(3)  # an environment failure, not the user's input

working_folder_last()  # before the CLI imports anything, so nothing of the user's folder stands in for it

from dpaudit.cli import main  # noqa: E402
from dpaudit.cli.supervise import run  # noqa: E402

# In a supervised child process (dpaudit.cli.supervise): a user's os._exit(0) is never a pass.
sys.exit(run(main, entry="module" if __name__ == "__main__" else None))
