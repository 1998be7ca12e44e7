"""``python -m dpaudit`` (and ``python -m audit``): the command line."""

import sys

from dpaudit.runs.syspath import working_folder_last

working_folder_last()  # before the CLI imports anything, so nothing of the user's folder stands in for it

from dpaudit.cli import main  # noqa: E402

sys.exit(main())
