"""Fast checks of attribute values against the JSON Schemas of a schema's node types.

``jsonschema`` is the reference and writes the messages, but it costs tens of microseconds
per node, too much for loading a million nodes. The common subset of JSON Schema (type,
enum, const, properties, required, additionalProperties, items, numeric and length bounds,
pattern) compiles here to a closure that answers valid/invalid in about a microsecond;
schemas using anything else use ``jsonschema`` alone.

>>> check = compile_schema({"type": "object", "properties": {"status": {"enum": ["done", "failed"]}}})
>>> check({"status": "done"}), check({"status": "maybe"}), check({})
(True, False, True)
>>> compile_schema({"oneOf": [{"type": "string"}]}) is None
True
"""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping

from hgm_engine.model.generated import compile_function

__all__ = ["compile_schema"]

_IGNORED = {"$schema", "$id", "title", "description", "default", "examples", "$comment"}
_SUPPORTED = _IGNORED | {
    "type", "enum", "const", "properties", "required", "additionalProperties", "items",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength",
    "minItems", "maxItems", "pattern",
}


def _json_equal(a: Any, b: Any) -> bool:
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b))
    return a == b


def compile_schema(spec: Mapping[str, Any]) -> Callable[[Any], bool] | None:
    """A function ``value -> bool`` for ``spec``, or None when it uses unsupported keywords.

    The checks are generated as the source of one Python function (no call per keyword or
    property), which a million-node load calls once per node."""
    generator = _Generator()
    try:
        body = generator.checks(spec, "v", 1)
    except _Unsupported:
        return None
    source = "def check(v):\n" + "".join(body) + "    return True\n"
    # (``inspect.getsource(check)`` reads the source back; a traceback shows its lines)
    return compile_function(source, "check", generator.constants, kind="schema check")


class _Unsupported(Exception):
    pass


_TYPE_CONDITIONS = {
    "object": "isinstance({x}, dict)",
    "array": "isinstance({x}, (tuple, list))",
    "string": "type({x}) is str",
    "number": "type({x}) in _NUMBER",
    "integer": "(type({x}) is int or (type({x}) is float and {x}.is_integer()))",
    "boolean": "type({x}) is bool",
    "null": "{x} is None",
}


class _Generator:
    """Lines of Python that ``return False`` when a value breaks a schema (JSON Schema's
    common subset; anything else raises ``_Unsupported``)."""

    def __init__(self) -> None:
        self.constants: dict[str, Any] = {"_NUMBER": (int, float), "_json_equal": _json_equal, "_MISSING": object()}
        self._names = 0

    def constant(self, value: Any) -> str:
        self._names += 1
        name = f"_C{self._names}"
        self.constants[name] = value
        return name

    def variable(self) -> str:
        self._names += 1
        return f"x{self._names}"

    def checks(self, spec: Any, x: str, depth: int) -> list[str]:
        if not isinstance(spec, Mapping) or set(spec) - _SUPPORTED:
            raise _Unsupported
        pad = "    " * depth
        lines: list[str] = []
        kind = spec.get("type")
        if kind is not None:
            kinds = [kind] if isinstance(kind, str) else list(kind)
            if not kinds or any(k not in _TYPE_CONDITIONS for k in kinds):
                raise _Unsupported
            condition = " or ".join(_TYPE_CONDITIONS[k].format(x=x) for k in kinds)
            lines.append(f"{pad}if not ({condition}):\n{pad}    return False\n")
        if "enum" in spec:
            options = list(spec["enum"])
            if options and all(type(o) is str for o in options):
                lines.append(f"{pad}if not (type({x}) is str and {x} in {self.constant(frozenset(options))}):\n{pad}    return False\n")
            else:
                name = self.constant(tuple(options))
                lines.append(f"{pad}if not any(_json_equal({x}, o) for o in {name}):\n{pad}    return False\n")
        if "const" in spec:
            lines.append(f"{pad}if not _json_equal({x}, {self.constant(spec['const'])}):\n{pad}    return False\n")
        bounds = []
        for keyword, op in (("minimum", "<"), ("maximum", ">"), ("exclusiveMinimum", "<="), ("exclusiveMaximum", ">=")):
            if keyword in spec:
                bounds.append(f"{x} {op} {self.constant(spec[keyword])}")
        if bounds:
            lines.append(f"{pad}if type({x}) in _NUMBER and ({' or '.join(bounds)}):\n{pad}    return False\n")
        lengths = self._length_bounds(spec, "minLength", "maxLength", x)
        if lengths:
            lines.append(f"{pad}if type({x}) is str and ({lengths}):\n{pad}    return False\n")
        if "pattern" in spec:
            search = self.constant(re.compile(spec["pattern"]).search)
            lines.append(f"{pad}if type({x}) is str and {search}({x}) is None:\n{pad}    return False\n")
        sizes = self._length_bounds(spec, "minItems", "maxItems", x)
        if sizes:
            lines.append(f"{pad}if isinstance({x}, (tuple, list)) and ({sizes}):\n{pad}    return False\n")
        if "items" in spec:
            item = self.variable()
            inner = self.checks(spec["items"], item, depth + 2)
            if inner:
                lines.append(f"{pad}if isinstance({x}, (tuple, list)):\n{pad}    for {item} in {x}:\n")
                lines.extend(inner)
        properties = spec.get("properties", {})
        if not isinstance(properties, Mapping):
            raise _Unsupported
        required = tuple(spec.get("required", ()))
        additional = spec.get("additionalProperties", True)
        if properties or required or additional is not True:
            object_lines: list[str] = []
            inner_pad = pad + "    "
            for name, sub in properties.items():
                value = self.variable()
                inner = self.checks(sub, value, depth + 2)
                if inner:
                    object_lines.append(f"{inner_pad}{value} = {x}.get({name!r}, _MISSING)\n")
                    object_lines.append(f"{inner_pad}if {value} is not _MISSING:\n")
                    object_lines.extend(inner)
            for name in required:
                object_lines.append(f"{inner_pad}if {name!r} not in {x}:\n{inner_pad}    return False\n")
            known = self.constant(frozenset(properties))
            if additional is False:
                object_lines.append(f"{inner_pad}for key in {x}:\n{inner_pad}    if key not in {known}:\n{inner_pad}        return False\n")
            elif isinstance(additional, Mapping):
                key, value = self.variable(), self.variable()
                inner = self.checks(additional, value, depth + 3)
                if inner:
                    object_lines.append(f"{inner_pad}for {key}, {value} in {x}.items():\n{inner_pad}    if {key} not in {known}:\n")
                    object_lines.extend(inner)
            elif additional is not True:
                raise _Unsupported
            if object_lines:
                lines.append(f"{pad}if isinstance({x}, dict):\n")
                lines.extend(object_lines)
        return lines

    def _length_bounds(self, spec: Mapping[str, Any], low_key: str, high_key: str, x: str) -> str:
        parts = []
        if low_key in spec:
            parts.append(f"len({x}) < {self.constant(spec[low_key])}")
        if high_key in spec:
            parts.append(f"len({x}) > {self.constant(spec[high_key])}")
        return " or ".join(parts)
