"""A whole-environment read is hashed without what a shell changes between any two commands (red team:
an unchanged run resumed from a script's background job, or after `timeout`, was refused over SHLVL
or `_`); any other variable set, unset or changed still refuses the resume."""

import os

from dpaudit.runtime.reach import SHELL_BOOKKEEPING, WHOLE_ENVIRONMENT, env_digest


def test_shell_bookkeeping_does_not_change_the_whole_environments_hash(monkeypatch):
    before = env_digest(WHOLE_ENVIRONMENT)
    for name in ("_", "SHLVL", "PWD", "OLDPWD", "COLUMNS", "LINES"):
        monkeypatch.setenv(name, "changed-by-the-shell")
    assert env_digest(WHOLE_ENVIRONMENT) == before
    assert {n.decode() for n in SHELL_BOOKKEEPING} == {"_", "SHLVL", "PWD", "OLDPWD", "COLUMNS", "LINES"}


def test_any_other_variable_changes_it(monkeypatch):
    before = env_digest(WHOLE_ENVIRONMENT)
    monkeypatch.setenv("DPAUDIT_TEST_NOISE", "0.5")
    assert env_digest(WHOLE_ENVIRONMENT) != before
    monkeypatch.delenv("DPAUDIT_TEST_NOISE")
    assert env_digest(WHOLE_ENVIRONMENT) == before


def test_a_bookkeeping_variable_looked_up_by_name_is_still_recorded(monkeypatch):
    monkeypatch.setenv("SHLVL", "1")
    one = env_digest("SHLVL")
    monkeypatch.setenv("SHLVL", "2")
    assert env_digest("SHLVL") != one


def test_code_that_copies_the_environment_has_no_shell_bookkeeping_recorded(monkeypatch):
    """Issue 41, item 9: ``dict(os.environ)`` and ``os.environ.copy()`` look up every name one by one
    (SHLVL and ``_`` among them): a resume after the shell changed them (4 of 5 relaunches) was refused.
    Now a window that read the whole environment records none of the shell's bookkeeping; another
    variable it copied still refuses the resume when it changes."""
    from dpaudit.runtime.reach import watch

    monkeypatch.setenv("SHLVL", "1")
    monkeypatch.setenv("_", "/usr/bin/python3")
    monkeypatch.setenv("DPAUDIT_TEST_COPIED", "a")
    for copy in (lambda: dict(os.environ), os.environ.copy, lambda: {**os.environ}):
        with watch() as window:
            copy()
        assert WHOLE_ENVIRONMENT in window.reach.env and "DPAUDIT_TEST_COPIED" in window.reach.env
        assert not {"SHLVL", "_"} & set(window.reach.env)
        monkeypatch.setenv("SHLVL", "2")
        monkeypatch.setenv("_", "/usr/bin/timeout")
        assert window.reach.changed() == []
        monkeypatch.setenv("DPAUDIT_TEST_COPIED", "b")
        assert "environment variable DPAUDIT_TEST_COPIED" in window.reach.changed()
        monkeypatch.setenv("SHLVL", "1")
        monkeypatch.setenv("_", "/usr/bin/python3")
        monkeypatch.setenv("DPAUDIT_TEST_COPIED", "a")
