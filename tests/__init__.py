"""dpaudit's test suite (a package, so no installed `tests` package of another distribution can stand in for it)."""
