"""``python -m dpaudit.results NAME``: print the schema NAME (``run``, ``summary`` or ``sweep``) as JSON."""

from __future__ import annotations

import json
import sys

from dpaudit.results.schema import NAMES, published


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in NAMES:
        print(f"usage: python -m dpaudit.results {{{','.join(NAMES)}}}: print that result file's JSON schema",
              file=sys.stderr)
        return 2
    sys.stdout.write(json.dumps(published(argv[0]), indent=2, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
