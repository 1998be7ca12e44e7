"""Pairs a user might point ``--pair`` at that are not pairs."""

none_pair = (None, None)
list_pair = ([0.0, 1.0], [0.0, 1.0, 1.0])
