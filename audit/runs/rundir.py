"""A run's folder and identity: the fingerprint, ``run.json``, and who may write the folder.

A folder written by ``run --out DIR`` belongs to one run.  Its **identity** is everything that
decides the numbers — the dpaudit version, the seed, the budget, the confidence, the δs, the
event views, the sequential rule and, per scenario, the mechanism (type, name, parameters and
state), the neighbouring datasets (content hashes), the claims and the expectations — and its
**fingerprint** is the SHA-256 of that identity in canonical JSON.  The fingerprint is written in
``run.json`` and in every checkpoint line (:class:`dpaudit.runtime.checkpoint.Checkpoint`), so counts from
another run, another seed or edited data are never mixed into this one:

* a new run refuses a folder that already holds a run unless told to overwrite it (then it
  starts clean);
* a resume recomputes the identity and refuses, naming what differs, when it is not the one
  recorded, and so it does when a module, file or environment variable the mechanism reached at
  call time changed (``checkpoint.reached.jsonl``: :mod:`dpaudit.runtime.reach`);
* :class:`dpaudit.runtime.files.FolderLock` keeps a second process out while one writes the folder.

Paths recorded in ``run.json`` that lie inside the folder are relative to it, so a folder can be
moved and resumed from anywhere; paths outside it are absolute.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dpaudit import __version__
from dpaudit.core import InputError
from dpaudit.runtime.blame import is_user_file
from dpaudit.runtime.checkpoint import REACHED_SUFFIX
from dpaudit.runtime.files import LOCK_NAME, FolderLock, read_regular, write_atomic
from dpaudit.runtime.identity import Describer, describe, fingerprint

RUN_FILE = "run.json"
CHECKPOINT_FILE = "checkpoint.jsonl"
ERROR_LOG = "error.log"
# Everything a run writes in its folder: what --overwrite removes (and nothing else).
REACHED_FILE = Path(CHECKPOINT_FILE).stem + REACHED_SUFFIX  # what the mechanism reached at call time
OUTPUTS = (RUN_FILE, "config.resolved.json", CHECKPOINT_FILE, REACHED_FILE, "results.json", "summary.txt", "report.pdf",
           ERROR_LOG)
RUN_KIND = "dpaudit run"
RUN_SCHEMA = 4  # 3: run.json carries the identity and its fingerprint; 4: with the mechanism's code
_BUILT_IN = ("dpaudit", "audit")

def _mechanism(mechanism: Any) -> dict[str, Any]:
    try:
        name = getattr(mechanism, "name", None)
    except Exception:  # a raising name property: refused by dpaudit.engine.api before anything is drawn
        name = None
    describer = Describer()
    state = describer(mechanism)
    return {"name": name if isinstance(name, str) else None,
            "type": f"{type(mechanism).__module__}.{type(mechanism).__qualname__}",
            "state": state, "code": code_identity(describer.modules)}


def code_identity(modules: set[str]) -> dict[str, str]:
    """What the mechanism's code is: for each module of a plugin (a user's file) that defines its
    class, a base class or a function it holds, the SHA-256 of the module's file — a constant
    edited from ``EPS = 3`` to ``EPS = 1`` or a ``sample`` body changed gives another hash, so a
    resume across the edit is refused; the built-in mechanisms are dpaudit's code, named by its
    version."""
    out = {}
    for name in sorted(modules):
        module = sys.modules.get(name)
        if name == "builtins" or module is None:
            continue
        top = name.split(".")[0]
        if top in _BUILT_IN:
            out["dpaudit"] = __version__
            continue
        filename = getattr(module, "__file__", None)
        if not filename or not is_user_file(filename):
            continue  # the standard library or an installed package: the environment's, not the plugin's
        try:
            digest = hashlib.sha256(Path(filename).read_bytes()).hexdigest()
        except OSError:
            digest = "unreadable"
        out[name] = f"sha256:{digest} ({filename})"
    return out


def identity(settings: Any, scenarios: Sequence[Any], claims: Sequence[Any], samples: Sequence[int],
             onerun: Sequence[Any] = ()) -> dict[str, Any]:
    """The identity of a run (see the module docstring): ``settings`` a :class:`dpaudit.runs.config.RunSettings`,
    ``scenarios`` catalog Scenarios, ``claims`` their explicit claims (or None), ``samples`` each
    scenario's budget per side, ``onerun`` the one-run designs (mechanism, canaries, base data,
    scorer, rule, claims, δs, expectations: one training run each, rerun on resume with the same
    seed).  Workers, backend and progress do not enter it: they do not change the numbers."""
    out = _identity(settings, scenarios, claims, samples)
    if onerun:  # only then: a multi-run run's identity is the one it always was
        out["onerun"] = [{"name": d.name, "mechanism": _mechanism(d.mechanism), "relation": d.relation,
                          "canaries": describe(list(d.canaries)), "base": describe(d.base),
                          "scorer": _mechanism(d.scorer), "rule": describe(d.rule), "claims": describe(d.claims),
                          "deltas": describe(list(d.deltas)), "expected": describe(dict(d.expected)),
                          "runs": getattr(d, "runs", 1)}
                         for d in onerun]
    return out


def _identity(settings: Any, scenarios: Sequence[Any], claims: Sequence[Any], samples: Sequence[int]) -> dict[str, Any]:
    return {"dpaudit": __version__, "seed": settings.seed, "samples": settings.samples,
            "confidence": describe(settings.confidence), "deltas": describe(list(settings.deltas)),
            "events": settings.events, "sequential": settings.sequential,
            "scenarios": [{"name": sc.name, "samples": n, "mechanism": _mechanism(sc.mechanism),
                           "relation": sc.pair.relation, "pair": sc.pair.description,
                           "d": describe(sc.pair.d), "d_prime": describe(sc.pair.d_prime),
                           "claims": describe(cl), "expected": describe(dict(sc.expected))}
                          for sc, cl, n in zip(scenarios, claims, samples, strict=True)]}


def differences(old: Any, new: Any, path: str = "", limit: int = 5) -> list[str]:
    """Where two identities differ, as ``key.path: old -> new`` (at most ``limit`` entries)."""
    out: list[str] = []

    def short(v: Any) -> str:
        text = json.dumps(v, sort_keys=True)
        return text if len(text) <= 60 else text[:57] + "..."

    def walk(a: Any, b: Any, where: str) -> None:
        if len(out) >= limit or a == b:
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b)):
                if key not in a or key not in b:
                    out.append(f"{where}.{key}: " + ("added" if key not in a else "removed"))
                else:
                    walk(a[key], b[key], f"{where}.{key}" if where else key)
        elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                walk(x, y, f"{where}[{i}]")
        else:
            out.append(f"{where or 'identity'}: {short(a)} -> {short(b)}")

    walk(old, new, path)
    return out


def portable(path: str | os.PathLike, folder: Path) -> str:
    """A path for ``run.json``: relative to ``folder`` when inside it, else absolute."""
    target = Path(path).resolve()
    home = folder.resolve()
    return str(target.relative_to(home)) if target.is_relative_to(home) else str(target)


def restore(text: str, folder: Path) -> Path:
    """The path :func:`portable` recorded, for a folder that may have moved since."""
    path = Path(text)
    return path if path.is_absolute() else folder / path


class RunFolder:
    """The folder of one run, locked while this process writes it."""

    def __init__(self, path: str | os.PathLike, flag: str) -> None:
        self.path = Path(path)
        self.flag = flag
        self.lock = FolderLock(self.path)
        self.created = False  # made by this process: removed again if nothing was written in it

    def _problem(self, what: str) -> InputError:
        return InputError(f"{self.flag} {self.path}: {what}")

    @classmethod
    def for_new_run(cls, path: str | os.PathLike, overwrite: bool, flag: str = "--out") -> RunFolder:
        """Create (or reuse an empty or foreign) folder and lock it; a folder that holds a run is
        refused unless ``overwrite`` (:meth:`clear` then removes that run's files)."""
        folder = cls(path, flag)
        try:
            folder.created = not folder.path.exists() and not folder.path.is_symlink()
            folder.path.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise folder._problem("exists and is not a folder") from None
        except (OSError, ValueError) as exc:
            raise folder._problem(f"cannot create the folder ({_reason(exc)})") from None
        if folder.path.resolve() == Path(folder.path.resolve().anchor):
            raise folder._problem("is the root of the file system: give a folder for the run's files")
        folder._lock()
        if folder.holds_run() and not overwrite:
            folder.lock.release()
            raise folder._problem("already holds a run (run.json, checkpoint.jsonl or results.json): continue it "
                                  "with --resume, or start again with --overwrite, or choose another --out")
        others = [] if folder.holds_run() else [p.name for p in folder.path.iterdir()
                                                 if p.name != LOCK_NAME and p.name not in OUTPUTS]
        if others and not overwrite:  # a run's files would land among someone else's
            folder.lock.release()
            shown = ", ".join(sorted(others)[:3]) + (" ..." if len(others) > 3 else "")
            raise folder._problem(f"is not empty ({shown}) and holds no run: choose a new or empty folder, or "
                                  "write into it anyway with --overwrite (only the run's own files are replaced)")
        return folder

    @classmethod
    def for_resume(cls, path: str | os.PathLike) -> RunFolder:
        folder = cls(path, "--resume")
        try:
            found = folder.path.is_dir() and (folder.path / RUN_FILE).exists()
        except (OSError, ValueError) as exc:
            raise folder._problem(f"no resumable run there ({_reason(exc)})") from None
        if not found:
            raise folder._problem(f"no resumable run there (no folder with a {RUN_FILE})")
        folder._lock()
        return folder

    def _lock(self) -> None:
        if not self.path.is_dir():
            raise self._problem("is not a folder")
        if not os.access(self.path, os.W_OK | os.X_OK):
            raise self._problem("the folder is not writable")
        try:
            self.lock.acquire()
        except OSError as exc:
            raise self._problem(f"cannot lock the folder ({_reason(exc)})") from None

    def holds_run(self) -> bool:
        return any((self.path / name).exists() or (self.path / name).is_symlink()
                   for name in (RUN_FILE, CHECKPOINT_FILE, "results.json"))

    def clear(self) -> None:
        """Remove the files a previous run wrote here (only those: the folder may hold others)."""
        for name in OUTPUTS:
            (self.path / name).unlink(missing_ok=True)

    def read_run(self) -> dict[str, Any]:
        """``run.json``, checked for the fields a resume needs."""
        try:
            raw = read_regular(self.path / RUN_FILE, RUN_FILE, follow=False)
            saved = json.loads(raw.decode("utf-8", errors="replace"))
        except (OSError, ValueError, RecursionError, InputError) as exc:
            raise self._problem(f"no resumable run there ({RUN_FILE}: {_reason(exc)})") from None
        if not isinstance(saved, dict) or saved.get("kind") != RUN_KIND or saved.get("schema") != RUN_SCHEMA:
            raise self._problem(f"{RUN_FILE} is not a run record of this dpaudit (kind {RUN_KIND!r}, schema "
                                f"{RUN_SCHEMA}): no resumable run there; start a new run with --overwrite")
        argv, ident, fp = saved.get("argv"), saved.get("identity"), saved.get("fingerprint")
        if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv) or "--resume" in argv:
            raise self._problem(f"{RUN_FILE}: argv must be the run's own command line")
        if not isinstance(ident, dict) or not isinstance(fp, str) or fingerprint(ident) != fp:
            raise self._problem(f"{RUN_FILE}: its identity does not match its fingerprint (the file was edited): "
                                "refusing to resume; start a new run")
        return saved

    def write_run(self, argv: Sequence[str], ident: Mapping[str, Any], fp: str, cwd: str) -> None:
        write_atomic(self.path / RUN_FILE, json.dumps(
            {"kind": RUN_KIND, "schema": RUN_SCHEMA, "dpaudit_version": __version__, "argv": list(argv),
             "cwd": cwd, "fingerprint": fp, "identity": ident}, indent=1, allow_nan=False) + "\n")

    def release(self) -> None:
        """Unlock (which deletes ``.lock``); a folder this run created and never wrote is removed."""
        self.lock.release()
        if self.created and not any(True for _ in self.path.iterdir()):  # refused before writing
            self.path.rmdir()


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__
