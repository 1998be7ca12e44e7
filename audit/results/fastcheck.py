"""A fast "yes, valid" for the result schemas: the schema compiled once into plain Python checks.

``jsonschema`` walks a schema keyword by keyword, building a validator object at every step: about
a millisecond per record of ``results.json``, 16 CPU s for a legal file of 18,000 records.  The
loader (:mod:`dpaudit.results.saved`) asks :func:`compile_schema`'s check first and ``jsonschema``
only when it says no, for the error and its key path; so the check must never say yes to a document
``jsonschema`` refuses, and it may say no to one it accepts (that only costs time).  To keep it so,
it is *stricter or equal* on every keyword it knows (Draft 2020-12, the keywords the shipped schemas
use) and it refuses to compile a schema with any other keyword (:class:`Unsupported`): the caller
then falls back to ``jsonschema`` for every document.

Strict where exactness would be subtle: ``const`` and ``enum`` match scalars of the same JSON type
only (``1`` never matches ``true``; a list or object value is left to ``jsonschema``);
``unevaluatedProperties: false`` counts only keys named by ``properties`` of the schema itself, of
its ``$ref`` targets and of its ``allOf`` members (all applied unconditionally), never those of a
conditional branch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["Check", "Unsupported", "compile_schema"]

Check = Callable[[Any], bool]
_ANNOTATIONS = frozenset({"$schema", "$id", "$defs", "$comment", "title", "description", "examples", "default"})
_TYPES: dict[str, Callable[[Any], bool]] = {
    "null": lambda v: v is None,
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


class Unsupported(ValueError):
    """The schema uses a keyword (or a ``$ref``) this compiler does not know: use ``jsonschema``."""


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _scalar_key(v: Any) -> tuple[str, Any] | None:
    """``v`` as a (JSON type, value) pair for ``const``/``enum``: numbers compare by value (1 == 1.0, as
    in JSON Schema), booleans and numbers never equal; lists and objects are not handled (None)."""
    if v is None or isinstance(v, (bool, str)):
        return type(v).__name__, v
    if _number(v):
        return "number", v
    return None


class _Compiler:
    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.refs: dict[str, Check] = {}

    def ref(self, ref: str) -> Check:
        if not ref.startswith("#/$defs/") or "/" in ref[len("#/$defs/"):]:
            raise Unsupported(f"$ref {ref!r}")
        if ref not in self.refs:
            target = self.root.get("$defs", {}).get(ref[len("#/$defs/"):])
            if target is None:
                raise Unsupported(f"$ref {ref!r} names no $defs entry")
            slot: list[Check] = []
            self.refs[ref] = lambda v: slot[0](v)  # a recursive $ref finds itself while compiling
            slot.append(self.compile(target))
        return self.refs[ref]

    def known(self, schema: Mapping[str, Any]) -> set[str]:
        """The keys ``unevaluatedProperties`` may take as evaluated (see the module docstring)."""
        keys = set(schema.get("properties", {}))
        if "$ref" in schema:
            self.ref(schema["$ref"])  # refuses a $ref it cannot follow
            keys |= self.known(self.root["$defs"][schema["$ref"][len("#/$defs/"):]])
        for member in schema.get("allOf", []):
            keys |= self.known(member) if isinstance(member, Mapping) else set()
        return keys

    def compile(self, schema: Any) -> Check:
        if schema is True or schema == {}:
            return lambda v: True
        if schema is False:
            return lambda v: False
        if not isinstance(schema, Mapping):
            raise Unsupported(f"schema {schema!r}")
        checks = [self.keyword(schema, key) for key in schema if key not in _ANNOTATIONS
                  and key not in ("then", "else", "prefixItems", "additionalProperties")]
        if "additionalProperties" in schema:
            checks.append(self.additional(schema))
        if "prefixItems" in schema and "items" not in schema:
            checks.append(self.keyword(schema, "items"))  # prefixItems alone: compiled with "items" below
        return _all(checks)  # "then" and "else" are compiled with their "if" (alone, JSON Schema ignores them)

    def keyword(self, schema: Mapping[str, Any], key: str) -> Check:
        value: Any = schema[key]
        if key == "type":
            names = [value] if isinstance(value, str) else list(value)
            if any(n not in _TYPES for n in names):
                raise Unsupported(f"type {value!r}")
            tests = [_TYPES[n] for n in names]
            return lambda v: any(t(v) for t in tests)
        if key in ("const", "enum"):
            allowed = [value] if key == "const" else list(value)
            keys = {k for k in map(_scalar_key, allowed) if k is not None}
            return lambda v: (k := _scalar_key(v)) is not None and k in keys
        if key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            return _bound(key, value)
        if key in ("minItems", "maxItems"):
            return (lambda v: not isinstance(v, list) or len(v) >= value) if key == "minItems" else \
                (lambda v: not isinstance(v, list) or len(v) <= value)
        if key == "required":
            names = list(value)
            return lambda v: not isinstance(v, dict) or all(n in v for n in names)
        if key == "properties":
            props = {name: self.compile(sub) for name, sub in value.items()}
            return lambda v: not isinstance(v, dict) or all(c(v[n]) for n, c in props.items() if n in v)
        if key == "items" or key == "prefixItems":
            return self.items(schema)
        if key in ("anyOf", "oneOf", "allOf"):
            subs = [self.compile(s) for s in value]
            if key == "anyOf":
                return lambda v: any(c(v) for c in subs)
            if key == "allOf":
                return lambda v: all(c(v) for c in subs)
            return lambda v: sum(1 for c in subs if c(v)) == 1
        if key == "if":
            cond, then, other = self.compile(value), self.compile(schema.get("then", True)), \
                self.compile(schema.get("else", True))
            return lambda v: then(v) if cond(v) else other(v)
        if key == "$ref":
            return self.ref(value)
        if key == "unevaluatedProperties":
            if value is not False:
                raise Unsupported("unevaluatedProperties other than false")
            known = self.known(schema)
            return lambda v: not isinstance(v, dict) or all(k in known for k in v)
        raise Unsupported(f"keyword {key!r}")

    def items(self, schema: Mapping[str, Any]) -> Check:
        prefix = [self.compile(s) for s in schema.get("prefixItems", [])]
        rest = self.compile(schema["items"]) if "items" in schema else None
        n = len(prefix)

        def check(v: Any) -> bool:
            if not isinstance(v, list):
                return True
            if not all(c(x) for c, x in zip(prefix, v, strict=False)):
                return False
            return rest is None or all(rest(x) for x in v[n:])
        return check

    def additional(self, schema: Mapping[str, Any]) -> Check:
        named = set(schema.get("properties", {}))
        extra = self.compile(schema["additionalProperties"])
        return lambda v: not isinstance(v, dict) or all(extra(x) for k, x in v.items() if k not in named)


def _bound(key: str, limit: Any) -> Check:
    if not _number(limit):
        raise Unsupported(f"{key} {limit!r}")
    compare: Callable[[Any], bool] = {
        "minimum": lambda v: v >= limit, "maximum": lambda v: v <= limit,
        "exclusiveMinimum": lambda v: v > limit, "exclusiveMaximum": lambda v: v < limit}[key]
    return lambda v: not _number(v) or compare(v)


def _all(checks: list[Check]) -> Check:
    if len(checks) == 1:
        return checks[0]
    return lambda v: all(c(v) for c in checks)


def compile_schema(schema: Mapping[str, Any]) -> Check:
    """A check of ``schema`` (Draft 2020-12) that says True only of a document ``jsonschema`` accepts;
    :class:`Unsupported` if the schema uses anything else than the keywords handled here."""
    return _Compiler(schema).compile(schema)
