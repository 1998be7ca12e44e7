"""Building a config's plugin mechanism from its ``params`` (and, from :mod:`dpaudit.runs.syspath`,
importing the modules a user names)."""

from __future__ import annotations

import functools
import inspect
import sys
import types
from collections.abc import Sequence
from typing import Any

from dpaudit.core import InputError
from dpaudit.runs.syspath import import_user_module, working_folder_last
from dpaudit.runtime.blame import what_code_did

__all__ = ["allows", "build_plugin", "home_modules", "import_user_module", "load_plugin", "resume_refusal",
           "working_folder_last"]


def allows(module_name: str, allow_plugins: Sequence[str]) -> bool:
    """Whether ``--allow-plugin`` names ``module_name`` or a package above it."""
    return any(module_name == p or module_name.startswith(p + ".") for p in allow_plugins)


def home_modules(obj: Any) -> list[str | None]:
    """The modules that define ``obj`` — every one of them must be a plugin module the command line
    allows before a config may reach ``obj`` (``None``: a part that cannot be attributed).

    A module is its own home; a class or a function is at home where it was defined (its
    ``__module__``, so ``from os import remove`` leaves ``remove`` at home in ``posix``); a bound
    method at its function's home and its object's; a :class:`functools.partial` at its function's
    (its fixed arguments are the plugin author's); any other object at its type's home (an instance
    ``MECH = MyMech()`` is at home where ``MyMech`` is defined, a list or a numpy ufunc is not)."""
    if isinstance(obj, types.ModuleType):
        return [getattr(obj, "__name__", None)]
    if isinstance(obj, types.MethodType):
        return home_modules(obj.__func__) + home_modules(obj.__self__)
    if isinstance(obj, functools.partial):
        return home_modules(obj.func)
    if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType)):
        home = getattr(obj, "__module__", None)
        # a builtin method bound to an object (``[].append``) is the object's as well as its own
        bound = getattr(obj, "__self__", None) if isinstance(obj, types.BuiltinFunctionType) else None
        extra = [] if bound is None or isinstance(bound, types.ModuleType) else home_modules(bound)
        return [home if isinstance(home, str) else None, *extra]
    home = getattr(type(obj), "__module__", None)
    return [home if isinstance(home, str) else None]


def _described(obj: Any, home: str | None) -> str:
    """What a refused step is and where it is really defined, for the message."""
    if isinstance(obj, types.ModuleType):
        return f"the module {home!r}"
    if isinstance(obj, type):
        what = "a class"
    elif isinstance(obj, types.MethodType):
        what = "a method"
    elif isinstance(obj, (types.FunctionType, types.BuiltinFunctionType)):
        what = "a function"
    else:
        what = f"an instance of {getattr(type(obj), '__qualname__', type(obj).__name__)}"
    return f"{what} defined in {home!r}" if home is not None else f"{what} whose defining module cannot be told"


def _walk_inside(module: types.ModuleType, spec: str, path: str, allow_plugins: Sequence[str]) -> Any:
    """The object at ``spec``'s attribute path in ``module``, every step checked to be defined in a
    plugin module the command line allows *before* the next lookup (a config that walks out through
    an imported module, ``mymod:os.remove`` or ``mymod:np.load``, is refused, and nothing it names is
    ever called)."""
    module_name, _, attr = spec.partition(":")
    obj: Any = module
    walked = module_name
    for step, part in enumerate(["", *attr.split(".")]):
        if step:
            obj = getattr(obj, part)
            walked += (":" if step == 1 else ".") + part
        outside = [h for h in home_modules(obj) if h is None or not allows(h, allow_plugins)]
        if outside:
            raise InputError(
                f"config: {path} = {spec!r} is invalid: {walked!r} is {_described(obj, outside[0])}, outside the "
                f"plugin modules the command line allows ({', '.join(allow_plugins)}); a config may name only "
                "the classes, functions and objects those modules (or their submodules) define themselves")
    return obj


def resume_refusal(folder: object, recorded: Sequence[str], given: Sequence[str]) -> str | None:
    """Why ``--resume folder`` must stop before importing anything, or None: the run recorded
    (in its ``run.json``) the plugin modules it allowed or ran, ``recorded``, and this command line
    allows only ``given``.  The folder is data (it may come from someone else), so it never grants
    the permission itself; the message names every ``--allow-plugin`` flag to add at once."""
    # a narrower permission than the run's (``pkg.mod`` for ``pkg``) is the user's choice: the
    # config's own check then names any module it leaves out
    missing = list(dict.fromkeys(m for m in recorded
                                 if not allows(m, given) and not any(g.startswith(m + ".") for g in given)))
    if not missing:
        return None
    flags = " ".join(f"--allow-plugin {m}" for m in missing)
    return (f"--resume {folder}: the run allowed the plugin module(s) {', '.join(map(repr, missing))}, and a "
            "resume imports a plugin only when its own command line allows it (the run's folder is data: it "
            f"never grants that itself); if you trust them, add {flags}")


def load_plugin(spec: str, path: str, allow_plugins: Sequence[str], refused: str) -> Any:
    """The object a config's ``pkg.module:attr`` names (``path``: its key path), imported only
    when ``--allow-plugin`` allows its module; ``refused`` opens the message when it does not.
    Every step of the attribute walk must stay inside the allowed modules (:func:`home_modules`):
    a config is data, so it may choose among the plugin's own objects, never reach past them to
    whatever the plugin imported.  Whatever the import or the attribute lookup raises is the
    config's bad input."""
    module_name = spec.partition(":")[0]
    if not allows(module_name, allow_plugins):
        raise InputError(f"config: {path} = {spec!r} is invalid: {refused}to let it import the plugin module "
                         f"{module_name!r}, allow it on the command line: --allow-plugin {module_name}")
    try:
        return _walk_inside(import_user_module(module_name), spec, path, allow_plugins)
    except InputError:
        raise
    except (Exception, SystemExit) as exc:  # a plugin's import may do anything, sys.exit included
        raise InputError(f"config: {path} = {spec!r} is invalid: cannot be loaded ({type(exc).__name__}: {exc})"
                         ) from None


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
    refusal = _not_a_builder(obj)
    if refusal:
        raise InputError(f"config: {where}.mechanism = {spec!r} is invalid: {refusal}; it was not called")
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
    except (Exception, SystemExit) as exc:  # the user's builder rejected its params, failed or exited: exit 2
        raise InputError(f"config: {where}.params = {params!r} is invalid: {spec}(**params) "
                         f"{what_code_did(exc, detail=True)}") from None


MECHANISM_METHODS = ("sample", "run", "__call__")  # a multi-run mechanism, a one-run trainer, a callable one


def _not_a_builder(obj: Any) -> str | None:
    """Why calling ``obj`` with a config's params cannot build a mechanism, checked before the call
    (a config is data: what it calls must be something that builds a mechanism, never a command
    runner the plugin happens to define, such as a ``subprocess.Popen`` subclass); None when it may.

    A class must define (itself or through a base other than ``object``) one of
    :data:`MECHANISM_METHODS`, and its constructor (``__new__``, ``__init__``) must not be a builtin's
    or the standard library's: calling it would run that code with the config's values.  A builtin
    function is refused outright.  A Python function, a method or a ``functools.partial`` of the
    plugin's own is called (what it returns is checked after)."""
    if isinstance(obj, types.BuiltinFunctionType | types.BuiltinMethodType):
        return "it is a builtin function, not a class or function that builds a mechanism"
    if not isinstance(obj, type):
        return None
    bases = obj.__mro__[:-1]  # without object
    if not any(name in base.__dict__ for base in bases for name in MECHANISM_METHODS):
        return ("it is a class without a sample(data, size, rng), run(dataset, rng) or __call__ method: its "
                "instances cannot be mechanisms")
    for name in ("__new__", "__init__"):
        owner = next((base for base in bases if name in base.__dict__), None)
        if owner is not None and _standard(owner.__module__):
            return (f"it is a class whose {name} is {owner.__module__}.{owner.__qualname__}'s (the standard "
                    "library's): a mechanism's class builds itself")
    return None


def _standard(module: str | None) -> bool:
    """Whether ``module`` is a builtin or standard-library module."""
    top = (module or "builtins").partition(".")[0]
    return top in sys.stdlib_module_names or top == "builtins"
