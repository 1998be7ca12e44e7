"""A toy third-party family, registered only through the ``dpaudit.families`` entry point
(tests/test_plugin_family.py writes the distribution metadata that declares it)."""
