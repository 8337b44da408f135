"""Hypothesis strategies for JSON values, and for values that a JSON Schema accepts.

``matching(schema)`` knows the parts of JSON Schema that attribute schemas use (``type``,
``enum``, ``const``, ``properties``, ``required``, ``items``, bounds, ``anyOf``/``oneOf``,
``pattern``) and filters what it draws through ``jsonschema`` itself, so whatever it
produces is valid; a schema it cannot meet fails the health check instead of lying.

>>> from hypothesis import given
>>> @given(matching({"type": "object", "required": ["cost"], "properties": {"cost": {"type": "number", "minimum": 0}}}))
... def test(value):
...     assert value["cost"] >= 0
>>> test()
"""

from __future__ import annotations

from typing import Any, Mapping

import jsonschema
from hypothesis import strategies as st

__all__ = ["json_values", "matching", "SCALARS"]

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 5),
    st.sampled_from([0.5, 1.0, -0.5, 2.5]),
    st.sampled_from(["", "a", "b", "pending", "done", "Visit the palace", "hotel"]),
)


def json_values(max_leaves: int = 4) -> st.SearchStrategy:
    """Small JSON values of every kind (nested lists and objects included).

    >>> from hypothesis import find
    >>> find(json_values(), lambda v: isinstance(v, list) and len(v) > 1)
    [None, None]
    """
    return st.recursive(
        SCALARS,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["a", "b", "k"]), inner, max_size=2)
        ),
        max_leaves=max_leaves,
    )


def _raw(schema: Mapping[str, Any]) -> st.SearchStrategy:
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(list(schema["enum"]))
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return st.one_of([_raw(dict(part)) for part in schema[key]])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([_raw({**schema, "type": k}) for k in kind])
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        required = list(schema.get("required", ()))
        optional = [k for k in properties if k not in required]
        return st.fixed_dictionaries(
            {k: _raw(properties.get(k, {})) for k in required},
            optional={k: _raw(properties[k]) for k in optional},
        )
    if kind == "array":
        items = schema.get("items", {})
        return st.lists(
            _raw(items) if isinstance(items, Mapping) else json_values(),
            min_size=schema.get("minItems", 0),
            max_size=max(schema.get("minItems", 0), schema.get("maxItems", 3)),
        )
    if kind == "string":
        if "pattern" in schema:
            return st.from_regex(schema["pattern"])
        low = schema.get("minLength", 0)
        return st.text(alphabet="abcxyz ", min_size=low, max_size=max(low, schema.get("maxLength", 6)))
    if kind in ("number", "integer"):
        low, high = schema.get("minimum"), schema.get("maximum")
        if kind == "integer":
            return st.integers(None if low is None else int(low), None if high is None else int(high))
        return st.one_of(
            st.integers(None if low is None else int(-(-low // 1)), None if high is None else int(high // 1)),
            st.floats(low, high, allow_nan=False, allow_infinity=False),
        )
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    return json_values()


def matching(schema: Mapping[str, Any]) -> st.SearchStrategy:
    """Values ``schema`` accepts (drawn from its shape, then checked by ``jsonschema``)."""
    validator = jsonschema.validators.validator_for(schema)(schema)
    return _raw(schema).filter(validator.is_valid)
