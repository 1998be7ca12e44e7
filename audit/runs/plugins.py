"""Building a config's plugin mechanism from its ``params`` (and, from :mod:`dpaudit.runs.syspath`,
importing the modules a user names)."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

from dpaudit.core import InputError
from dpaudit.runs.syspath import import_user_module, working_folder_last

__all__ = ["allows", "build_plugin", "import_user_module", "load_plugin", "working_folder_last"]


def allows(module_name: str, allow_plugins: Sequence[str]) -> bool:
    """Whether ``--allow-plugin`` names ``module_name`` or a package above it."""
    return any(module_name == p or module_name.startswith(p + ".") for p in allow_plugins)


def load_plugin(spec: str, path: str, allow_plugins: Sequence[str], refused: str) -> Any:
    """The object a config's ``pkg.module:attr`` names (``path``: its key path), imported only
    when ``--allow-plugin`` allows its module; ``refused`` opens the message when it does not.
    Whatever the import or the attribute lookup raises is the config's bad input."""
    module_name, _, attr = spec.partition(":")
    if not allows(module_name, allow_plugins):
        raise InputError(f"config: {path} = {spec!r} is invalid: {refused}to let it import the plugin module "
                         f"{module_name!r}, allow it on the command line: --allow-plugin {module_name}")
    try:
        obj = import_user_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except InputError:
        raise
    except (Exception, SystemExit) as exc:  # a plugin's import may do anything, sys.exit included
        raise InputError(f"config: {path} = {spec!r} is invalid: cannot be loaded ({type(exc).__name__}: {exc})"
                         ) from None
    return obj


def build_plugin(obj: Any, params: dict, where: str, spec: str) -> Any:
    """The mechanism a config's plugin ``spec`` (``pkg.module:attr``, already imported as ``obj``)
    names, given its ``params`` table (``where``: the scenario's key path).

    A callable ``attr`` — a class, or a function that builds the mechanism — is called with the
    params as keyword arguments, after they are checked against its signature (an unknown or
    missing key is an :class:`~dpaudit.core.InputError` naming it); so is a class or a non-mechanism
    callable without params.  Any other object is the mechanism itself and takes no params."""
    mechanism_itself = callable(getattr(obj, "sample", None)) and not isinstance(obj, type)
    if not callable(obj) or (mechanism_itself and not params):
        if params:
            raise InputError(f"config: {where}.params = {params!r} is invalid: {spec} is a mechanism object, not "
                             "a class or function that builds one, so it takes no params")
        return obj
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):  # a builtin without a signature: let the call decide
        signature = None
    if signature is not None:
        accepted = {n: p for n, p in signature.parameters.items()
                    if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        open_ended = any(p.kind == p.VAR_KEYWORD for p in signature.parameters.values())
        for key in params:
            if key not in accepted and not open_ended:
                raise InputError(f"config: {where}.params.{key} = {params[key]!r} is invalid: {spec} takes no "
                                 f"parameter {key!r} (its parameters: {', '.join(accepted) or 'none'})")
        missing = [n for n, p in accepted.items() if p.default is p.empty and n not in params]
        if missing:
            raise InputError(f"config: {where}.params = {params!r} is invalid: {spec} needs "
                             f"{', '.join(repr(m) for m in missing)}")
    try:
        return obj(**params)
    except InputError as exc:
        raise InputError(f"config: {where}.params: {exc}") from None
    except Exception as exc:  # the user's builder rejected its params (or failed): their input, exit 2
        raise InputError(f"config: {where}.params = {params!r} is invalid: {spec}(**params) raised "
                         f"{type(exc).__name__}: {exc}") from None
