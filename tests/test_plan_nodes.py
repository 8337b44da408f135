"""The plan nodes with a hand-written ``__init__`` (hgm_engine/query/plan.py: their slots set
with model.slot_setters) against what attrs' generated ``__init__`` makes of the same fields:
the same fields in the same slots, the same defaults, equality, hash, repr, frozenness,
attrs.evolve and pickling."""

from __future__ import annotations

import pickle

import attrs
import pytest

from hgm_engine.model import DEFAULT_SCHEMA
import importlib

P = importlib.import_module("hgm_engine.query.plan")

_REL = DEFAULT_SCHEMA.relations["children"]
# class -> field values (all given), and the fields left to their defaults
CASES = {
    P.IdLookup: (("a1", None, "goal"), ()),
    P.Attr: (("status",), ()),
    P.Const: ((0.5,), ()),
    P.Cmp: ((">=", P.Attr("confidence"), P.Const(0.5)), ()),
    P.Filter: ((P.Cmp("=", P.Attr("s"), P.Const("x")),), ()),
    P.Navigate: (("children", _REL, (1, 2), (P.Index(0),)), ("repeat", "predicates")),
    P.PathPlan: ((P.Roots(), (P.Index(0),)), ()),
    P.QueryPlan: (((P.PathPlan(P.AllNodes(), ()),), "count", ("id_lookup",)), ("final", "rules")),
}


def _generated(cls):
    """The same class as attrs makes it with its own __init__ (the reference)."""
    fields = {f.name: attrs.field(default=f.default) for f in attrs.fields(cls)}
    return attrs.make_class(cls.__name__, fields, frozen=True)


@pytest.mark.parametrize("cls", list(CASES), ids=lambda c: c.__name__)
def test_a_hand_made_plan_node_holds_what_attrs_would_set(cls):
    values, defaulted = CASES[cls]
    names = [f.name for f in attrs.fields(cls)]
    reference = _generated(cls)
    made, expected = cls(*values), reference(*values)
    assert [getattr(made, n) for n in names] == [getattr(expected, n) for n in names] == list(values)
    assert made == cls(**dict(zip(names, values))) and hash(made) == hash(cls(*values))
    assert repr(made) == repr(expected).replace(reference.__qualname__, cls.__qualname__, 1)
    assert attrs.evolve(made) == made and pickle.loads(pickle.dumps(made)) == made
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        setattr(made, names[0], values[0])
    # the defaults are attrs' own
    given = [v for n, v in zip(names, values) if n not in defaulted]
    assert [getattr(cls(*given), n) for n in names] == [getattr(reference(*given), n) for n in names]
    assert made != cls(*given) if defaulted else True
    # the signature is the generated one's
    with pytest.raises(TypeError):
        cls(*values, None)
