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

__all__ = ["compile_schema"]

_IGNORED = {"$schema", "$id", "title", "description", "default", "examples", "$comment"}
_SUPPORTED = _IGNORED | {
    "type", "enum", "const", "properties", "required", "additionalProperties", "items",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength",
    "minItems", "maxItems", "pattern",
}


def _is_number(value: Any) -> bool:
    return type(value) in (int, float)


_TYPE_TESTS: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, (tuple, list)),
    "string": lambda v: type(v) is str,
    "number": _is_number,
    "integer": lambda v: type(v) is int or (type(v) is float and v.is_integer()),
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
}


def _json_equal(a: Any, b: Any) -> bool:
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b))
    return a == b


def compile_schema(spec: Mapping[str, Any]) -> Callable[[Any], bool] | None:
    """A closure ``value -> bool`` for ``spec``, or None when it uses unsupported keywords."""
    if not isinstance(spec, Mapping) or set(spec) - _SUPPORTED:
        return None
    tests: list[Callable[[Any], bool]] = []
    kind = spec.get("type")
    if kind is not None:
        kinds = [kind] if isinstance(kind, str) else list(kind)
        if any(k not in _TYPE_TESTS for k in kinds):
            return None
        type_tests = [_TYPE_TESTS[k] for k in kinds]
        tests.append(type_tests[0] if len(type_tests) == 1 else (lambda v: any(t(v) for t in type_tests)))
    if "enum" in spec:
        options = list(spec["enum"])
        hashable = {o for o in options if isinstance(o, (str, int, float)) and type(o) is not bool}
        if len(hashable) == len(options) and all(type(o) is str for o in options):
            tests.append(lambda v: type(v) is str and v in hashable)
        else:
            tests.append(lambda v: any(_json_equal(v, o) for o in options))
    if "const" in spec:
        constant = spec["const"]
        tests.append(lambda v: _json_equal(v, constant))
    numeric = [(k, spec[k]) for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum") if k in spec]
    if numeric:
        def numbers(v, bounds=numeric):
            if not _is_number(v):
                return True
            for name, bound in bounds:
                if name == "minimum" and v < bound or name == "maximum" and v > bound:
                    return False
                if name == "exclusiveMinimum" and v <= bound or name == "exclusiveMaximum" and v >= bound:
                    return False
            return True
        tests.append(numbers)
    if "minLength" in spec or "maxLength" in spec:
        low, high = spec.get("minLength", 0), spec.get("maxLength")
        tests.append(lambda v: type(v) is not str or (len(v) >= low and (high is None or len(v) <= high)))
    if "pattern" in spec:
        search = re.compile(spec["pattern"]).search
        tests.append(lambda v: type(v) is not str or search(v) is not None)
    if "minItems" in spec or "maxItems" in spec:
        low, high = spec.get("minItems", 0), spec.get("maxItems")
        tests.append(
            lambda v: not isinstance(v, (tuple, list)) or (len(v) >= low and (high is None or len(v) <= high))
        )
    if "items" in spec:
        item = compile_schema(spec["items"])
        if item is None:
            return None
        tests.append(lambda v: not isinstance(v, (tuple, list)) or all(item(x) for x in v))
    properties = spec.get("properties", {})
    compiled_properties = {}
    for name, sub in properties.items():
        check = compile_schema(sub)
        if check is None:
            return None
        compiled_properties[name] = check
    required = tuple(spec.get("required", ()))
    additional = spec.get("additionalProperties", True)
    additional_check = None
    if isinstance(additional, Mapping):
        additional_check = compile_schema(additional)
        if additional_check is None:
            return None
    if compiled_properties or required or additional is not True:
        props = list(compiled_properties.items())

        def object_test(v):
            if not isinstance(v, dict):
                return True
            for name, check in props:
                if name in v and not check(v[name]):
                    return False
            for name in required:
                if name not in v:
                    return False
            if additional is False:
                return all(k in compiled_properties for k in v)
            if additional_check is not None:
                return all(additional_check(x) for k, x in v.items() if k not in compiled_properties)
            return True

        tests.append(object_test)
    if not tests:
        return lambda v: True
    if len(tests) == 1:
        return tests[0]
    if len(tests) == 2:
        first, second = tests
        return lambda v: first(v) and second(v)
    return lambda v: all(t(v) for t in tests)
