"""The direct path: the optimized plan of the simplest queries, read straight from the text.

The front end builds a syntax tree (:mod:`~hgm_engine.query.parser`), checks it
(:mod:`~hgm_engine.query.analyze`), plans it (:mod:`~hgm_engine.query.plan`) and rewrites
the plan (:mod:`~hgm_engine.query.optimizer`): four stages, a few dozen objects and a hundred
function calls even for ``#a11.following``. In a fresh process each of those runs cold (its
code and objects not in the CPU's caches yet), which makes compiling most of a small first
query's time. For the commonest shapes this module reads the text once and builds the very
plan the four stages give — equal node for node, ``rules`` included — or returns None for
anything else, and then the four stages run (and report any error: this path never reports
one, it accepts only texts the stages accept).

What it reads, without whitespace outside the parentheses of ``.where``::

    start:  #ID | root | nodes
    steps:  .RELATION               a relation of the schema
            {m} | {m,} | {m,n}      right after a relation that is one hop, m <= n
            .where(NAME OP LITERAL) NAME neither ``id`` nor ``type`` (the optimizer rewrites
                                    those); the literal as fastparse.scan_comparison reads it
            [i]                     an index
    final:  .count() | .exists()    at the end

``tests/test_direct.py`` holds it equal to the stages on generated queries, token soups and
the compliance queries. :class:`~hgm_engine.query.pipeline.CompiledQuery` computes the syntax
tree, the analysis and the literal plan of a query compiled this way when someone asks.

>>> from hgm_engine.model import DEFAULT_SCHEMA
>>> direct_plan("#a1.results.derived{1,}.where(confidence >= 0.5)", DEFAULT_SCHEMA).rules
('id_lookup',)
>>> direct_plan("#a1.results derived", DEFAULT_SCHEMA) is None  # anything else: the stages read it
True
"""

from __future__ import annotations

from hgm_engine.model import Hop, Schema
from hgm_engine.query.fastparse import scan_comparison
from hgm_engine.query.limits import DEFAULT_LIMITS, Limits
from hgm_engine.query.plan import AllNodes, Attr, Cmp, Const, Filter, IdLookup, Index, Navigate, PathPlan, QueryPlan, Roots

__all__ = ["direct_plan"]

# Characters as strings for str.lstrip: a run of them is skipped by one call into C (a loop
# over characters in Python costs ~900 machine instructions a character in a fresh process,
# where nothing is specialized yet).
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_"
_DIGITS = "0123456789"
_WORD = _LETTERS + _DIGITS
_HASH_ID = _WORD + "-"
_MAX_DIGITS = 18  # an integer of the text (a bound, an index) far below every limit on integers
# Longer texts go to the stages: skipping a run with lstrip copies the rest of the text, so a
# text of n characters costs O(n^2) here; every shape above is short.
MAX_DIRECT_LENGTH = 256
_ID_LOOKUP = ("id_lookup",)
_FINALS = ("count", "exists")


def direct_plan(text: str, schema: Schema, limits: Limits = DEFAULT_LIMITS) -> QueryPlan | None:
    """The optimized plan of ``text`` as parse, analyze, plan and optimize give it, when the
    text has one of the shapes in this module's docstring; None otherwise.

    >>> from hgm_engine.model import DEFAULT_SCHEMA
    >>> direct_plan("#a1.following", DEFAULT_SCHEMA).branches[0].source
    IdLookup(node_id='a1', param=None, node_type=None)
    >>> direct_plan("#a1.folowing", DEFAULT_SCHEMA) is None  # unknown: analysis says so
    True
    """
    n = len(text)
    # a where nests two levels (the step, the comparison); a long text is refused by parse
    if n == 0 or n > MAX_DIRECT_LENGTH or n > limits.max_length or limits.max_depth < 2:
        return None
    if text[0] == "#":
        i = n - len(text[1:].lstrip(_HASH_ID))
        if i == 1:
            return None
        # ``#ID`` plans to a scan with an id filter, which id_lookup turns into a lookup
        source = IdLookup(text[1:i], None, None)
        rules = _ID_LOOKUP
    else:
        i = n - len(text.lstrip(_WORD))
        word = text[:i]
        if word == "root":
            source = Roots()
        elif word == "nodes":
            source = AllNodes()
        else:
            return None
        rules = ()
    ops: list = []
    # The navigation being read: its name, relation, repetition and predicates (a predicate
    # after a navigation, with only predicates between, applies per source of it).
    nav_name = nav_relation = repeat = None
    predicates: list = []
    hop_last = False  # the last step was a relation that is one hop: a repetition may follow
    final = None
    relations = schema.relations
    while i < n:
        c = text[i]
        if c == ".":
            j = i + 1
            if j >= n or text[j] not in _LETTERS:
                return None
            k = n - len(text[j:].lstrip(_WORD))
            name = text[j:k]
            if k < n and text[k] == "(":
                if name == "where":
                    found = scan_comparison(text, k + 1)
                    if found is None:
                        return None
                    a, b, _, symbol, _, _, value, close = found
                    attribute = text[a:b]
                    if attribute == "id" or attribute == "type":
                        return None
                    predicate = Filter(Cmp("=" if symbol == "==" else symbol, Attr(attribute), Const(value)))
                    i = close + 1
                elif name in _FINALS and k + 2 == n and text[k + 1] == ")":
                    final = name
                    break
                else:
                    return None
            else:
                relation = relations.get(name)
                if relation is None or name == "where":
                    return None
                if nav_name is not None:
                    ops.append(Navigate(nav_name, nav_relation, repeat, tuple(predicates)))
                    predicates = []
                nav_name, nav_relation, repeat = name, relation, None
                hop_last = isinstance(relation, Hop)
                i = k
                continue
        elif c == "{":
            if not hop_last:
                return None
            j = i + 1
            k = _digits_end(text, j)
            if k is None:
                return None
            lower = upper = int(text[j:k])
            if k < n and text[k] == ",":
                m = _digits_end(text, k + 1)
                if m is None:
                    upper, m = None, k + 1
                else:
                    upper = int(text[k + 1 : m])
                    if lower > upper:
                        return None
                k = m
            if k >= n or text[k] != "}":
                return None
            repeat = (lower, upper)
            hop_last = False
            i = k + 1
            continue
        elif c == "[":
            j = i + 2 if text.startswith("-", i + 1) else i + 1
            k = _digits_end(text, j)
            if k is None or k >= n or text[k] != "]":
                return None
            predicate = Index(int(text[i + 1 : k]))
            i = k + 1
        else:
            return None
        hop_last = False
        if nav_name is None:
            ops.append(predicate)
        else:
            predicates.append(predicate)
    if nav_name is not None:
        ops.append(Navigate(nav_name, nav_relation, repeat, tuple(predicates)))
    return QueryPlan((PathPlan(source, tuple(ops)),), final, rules)


def _digits_end(text: str, i: int) -> int | None:
    """The end of the digits from ``i`` (1 to ``_MAX_DIGITS`` of them), else None.

    >>> _digits_end("{12,3}", 1), _digits_end("{,3}", 1)
    (3, None)
    """
    j = len(text) - len(text[i:].lstrip(_DIGITS))
    return j if 0 < j - i <= _MAX_DIGITS else None
