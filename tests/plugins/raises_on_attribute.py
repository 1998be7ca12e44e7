"""A module whose attributes raise when looked up (module ``__getattr__``)."""


def __getattr__(name):
    raise RuntimeError(f"attribute {name} exploded")
