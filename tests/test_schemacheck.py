"""The generated attribute checks agree with jsonschema (the reference that writes messages)."""

from __future__ import annotations

import inspect

import jsonschema
from hypothesis import given, settings, strategies as st

from hgm_engine.model.schema import DEFAULT_ATTRIBUTE_SCHEMAS
from hgm_engine.model.schemacheck import compile_schema

SCHEMAS = [
    *DEFAULT_ATTRIBUTE_SCHEMAS.values(),
    {"type": "object", "required": ["a"], "additionalProperties": False, "properties": {"a": {"type": "integer"}, "b": {}}},
    {"type": "object", "additionalProperties": {"type": ["string", "null"], "maxLength": 3}},
    {"properties": {"a": {"enum": [1, "x", True, None, [1, 2]]}, "b": {"const": 2}}},
    {"properties": {"n": {"exclusiveMinimum": 0, "exclusiveMaximum": 10}, "m": {"minimum": -1.5, "maximum": 2}}},
    {"properties": {"s": {"type": "string", "minLength": 2, "pattern": "^[a-z]+$"}}},
    {"properties": {"l": {"type": "array", "minItems": 1, "maxItems": 3, "items": {"type": "number"}}}},
    {"type": ["object", "array"], "items": {"type": "object", "required": ["k"]}},
    {"type": "boolean"},
]

KEYS = st.sampled_from(["a", "b", "n", "m", "s", "l", "k", "content", "status", "priority", "tags", "confidence", "z"])
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-20, 20),
    st.sampled_from([0, 0.0, -1.5, 2, 2.0, 10, 1, 1.0, 3]),  # the bounds above, exactly
    st.floats(-20, 20, allow_nan=False, allow_infinity=False),
    st.sampled_from(["", "x", "ab", "abcd", "Ab", "done", "pending", "nonsense"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=5)),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(range(len(SCHEMAS))), VALUES)
def test_generated_checks_agree_with_jsonschema(which, value) -> None:
    schema = SCHEMAS[which]
    check = compile_schema(schema)
    assert check is not None
    reference = jsonschema.validators.validator_for(schema)(schema).is_valid(value)
    assert check(value) is reference, inspect.getsource(check)


def test_unsupported_keywords_leave_the_check_to_jsonschema() -> None:
    assert compile_schema({"oneOf": [{"type": "string"}]}) is None
    assert compile_schema({"properties": {"a": {"anyOf": []}}}) is None
    assert compile_schema({"items": {"not": {}}}) is None


def test_every_keyword_at_and_beside_its_bound() -> None:
    cases = [
        ({"minimum": 0}, [0, 0.0, -0.5, -1, True]),
        ({"maximum": 1}, [1, 1.0, 1.5, 2, False]),
        ({"exclusiveMinimum": 0}, [0, 0.001, -1]),
        ({"exclusiveMaximum": 1}, [1, 0.999, 2]),
        ({"minLength": 2, "maxLength": 3}, ["a", "ab", "abc", "abcd", 5]),
        ({"minItems": 1, "maxItems": 2}, [[], [1], [1, 2], [1, 2, 3], "ab"]),
        ({"required": ["a"]}, [{}, {"a": None}, [], "x"]),
        ({"additionalProperties": False, "properties": {"a": {}}}, [{"a": 1}, {"b": 1}, {}]),
        ({"type": "integer"}, [1, 1.0, 1.5, True, "1"]),
        ({"enum": [1, True]}, [1, 1.0, True, False, 0]),
        ({"const": [1, 2]}, [[1, 2], (1, 2), [1, 2.0], [2, 1]]),
        ({"pattern": "b"}, ["abc", "xyz", 1]),
    ]
    for schema, values in cases:
        check = compile_schema(schema)
        reference = jsonschema.validators.validator_for(schema)(schema)
        for value in values:
            as_json = list(value) if isinstance(value, tuple) else value
            assert check(value) is reference.is_valid(as_json), (schema, value, inspect.getsource(check))
