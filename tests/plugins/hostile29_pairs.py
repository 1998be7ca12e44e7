"""Pairs a user might point ``--pair`` at that are not pairs."""

none_pair = (None, None)
