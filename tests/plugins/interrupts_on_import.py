"""A module that raises KeyboardInterrupt when imported (no Ctrl-C was pressed)."""

raise KeyboardInterrupt
