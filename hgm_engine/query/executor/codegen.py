"""Code generation: the parts of a plan that run per node, written as Python source.

A conjunction of attribute tests as closures costs a call per test per node; written as the
source of one function it costs one call per node, or none when the test is inlined in the
loop over a hop's targets. :class:`ConditionWriter` writes conditions (as a test, as a loop
that keeps ids, as a loop over payloads) and :func:`per_source_step` writes a whole one-type
hop with its per-source filters and pick. Constants are passed in as names, never pasted as
text; the parts of a condition the writer does not handle are closures it calls by name.

Every function is compiled by :func:`hgm_engine.model.compile_function`, which names it
``<hgm KIND N>`` and registers its source with :mod:`linecache`, so a traceback shows the
generated line.

>>> from hgm_engine.query.plan import Attr, Cmp, Const
>>> writer = ConditionWriter(fallback=None)
>>> writer.expression(Cmp(">=", Attr("priority"), Const(4)))
'(type(_v1 := a.get(_k1)) in _NUM and _v1 >= _k2)'
"""

from __future__ import annotations

import sys
from typing import Any, Callable

from hgm_engine.model import Hop, MemoryGraph, compile_function
from hgm_engine.query.executor.values import NUMBER_TYPES
from hgm_engine.model import INSTANTS, VALID_FROM, VALID_TO, parse_instant
from hgm_engine.query.plan import AllOf, AnyOf, Attr, Cmp, Const, Filter, HasAttr, Index, Negate, Param, Truthy, ValidAt

__all__ = ["ConditionWriter", "per_source_step", "hop_then_filters_step", "MAX_INLINE_DEPTH"]

# How deep connectives (and, or, not) nest inside one generated function: each adds a pair of
# parentheses, and Python's parser refuses more than 200 nested ones.
MAX_INLINE_DEPTH = 40


class ConditionWriter:
    """Writes conditions as Python expressions over ``n`` (the node) and ``a`` (its attributes).

    ``fallback(cond)`` compiles a condition the writer does not handle (a path count, a
    regular expression, a comparison of two attributes...) into a closure ``(node, ctx) ->
    bool``, which the generated source calls. One writer serves one generated function: the
    names it hands out are that function's globals.

    >>> from hgm_engine.query.plan import Attr, Cmp, Const
    >>> test = ConditionWriter(fallback=None).function(Cmp("=", Attr("status"), Const("done")))
    >>> from hgm_engine.model import Node, freeze
    >>> test(Node("a", "action", freeze({"status": "done"}), 1), None)
    True
    >>> test.__code__.co_filename.startswith("<hgm condition ")
    True
    """

    def __init__(self, fallback: Callable[[Any], Callable] | None):
        self._fallback = fallback
        self.names: dict[str, Any] = {"_NUM": NUMBER_TYPES}
        self.temps = 0
        # Statements the generated function runs once, before its loop (a parameter's
        # instant for valid_at($t)): the names they bind are read by the expressions.
        self.prologue: list[str] = []
        # Whether an expression read ``a`` (the attributes): only then does the generated
        # code bind it, so that a filter on the type alone decodes no node's attributes.
        self.reads_attrs = False
        # Whether string equalities may test the graph's value indexes (``value_members``)
        # instead of the attributes: set by the writers of loops, whose prologue runs once
        # per call, not once per node.
        self.members = False
        self._member_names: dict[tuple[str, str], str] = {}
        # (node type, attribute, value) -> the local name of its value-index bucket (bound by
        # the prologue; None when the graph has no such index at hand): see typed_test.
        self._bucket_names: dict[tuple[str, str, str], str] = {}
        # An expression for how many ids the generated loop is about to test against its
        # buckets, when the prologue knows it (id_filter: ``len(ids)``): the graph is told
        # (``MemoryGraph.value_bucket``'s ``tests``), so a stored bucket makes its set at once
        # when that many tests would cost more.
        self.tests: str | None = None

    def preamble(self, indent: str = "    ") -> str:
        """The prologue's statements as source lines at ``indent`` (empty when none).

        >>> from hgm_engine.query.plan import Param
        >>> writer = ConditionWriter(fallback=None); _ = writer.valid_at(ValidAt(Param("t")))
        >>> writer.preamble()
        '    _t1 = _k1[ctx.params[_k2]]\\n'
        """
        return "".join(f"{indent}{line}\n" for line in self.prologue)

    def constant(self, value: Any) -> str:
        """The name under which the generated source reads ``value``.

        >>> ConditionWriter(fallback=None).constant("done")
        '_k1'
        """
        name = f"_k{len(self.names)}"
        # A string is interned: node types and the schema's names are, so ``n.type == _k1``
        # is settled by identity, without comparing the characters.
        self.names[name] = sys.intern(value) if type(value) is str else value
        return name

    def temp(self) -> str:
        """A fresh local name for an assignment expression.

        >>> ConditionWriter(fallback=None).temp()
        '_v1'
        """
        self.temps += 1
        return f"_v{self.temps}"

    def define(self, source: str, name: str, kind: str) -> Callable:
        """Compile ``source`` with this writer's names and return its function ``name``.

        >>> writer = ConditionWriter(fallback=None)
        >>> writer.define(f"def _one():\\n    return {writer.constant(1)}\\n", "_one", "example")()
        1
        """
        return compile_function(source, name, self.names, kind=kind)

    def function(self, cond) -> Callable:
        """``test(node, ctx) -> bool``.

        >>> from hgm_engine.query.plan import HasAttr, Truthy
        >>> from hgm_engine.model import Node, freeze
        >>> ConditionWriter(fallback=None).function(Truthy(HasAttr("cost")))(Node("a", "action", freeze({}), 1), None)
        False
        """
        body = self.expression(cond)
        bind = "    a = n.attrs\n" if self.reads_attrs else ""
        return self.define(f"def _test(n, ctx):\n{self.preamble()}{bind}    return {body}\n", "_test", "condition")

    def node_test(self, conditions, node: str = "n") -> str:
        """The conjunction of ``conditions`` as one expression on the node ``node`` (bound
        to ``n``), its attributes (``a``) bound only after the leading terms that need none:
        ``type = 'action' and status = 'pending'`` reads no attributes of a goal.

        >>> from hgm_engine.query.plan import Attr, Cmp, Const
        >>> ConditionWriter(fallback=None).node_test([AllOf((Cmp("=", Attr("type"), Const("action")), Cmp("=", Attr("s"), Const("p"))))], "nodes[i]")
        '((n := nodes[i]) is not None) and (n.type == _k1) and ((a := n.attrs) is not None) and (a.get(_k2) == _k3)'
        """
        parts = []
        for cond in conditions:  # terms of a conjunction at the level they had inside it
            if isinstance(cond, AllOf):
                parts.extend(self.expression(item, 1) for item in cond.items)
            else:
                parts.append(self.expression(cond))
        bind = "n" if node == "n" else f"(n := {node})"
        if not parts or "a.get(" in parts[0]:  # only attribute reads use ``a``
            # the first term reads attributes: bind them first (the form tracebacks show)
            return f"(a := {bind}.attrs) is not None and " + " and ".join(self.expression(c) for c in conditions)
        terms = [] if node == "n" else [f"({bind} is not None)"]
        while parts and "a.get(" not in parts[0]:
            terms.append(parts.pop(0))
        if parts:
            terms.append("((a := n.attrs) is not None)")
            terms.extend(parts)
        return " and ".join(terms)

    def typed_test(self, conditions, node_type: str | None, var: str) -> str:
        """The conjunction of ``conditions`` as one expression on the node id ``var``, whose
        node is of ``node_type`` when that is given (the targets of a hop to one type).

        Its leading terms that are ``type = '...'`` or an attribute equal to a string, with
        the type known (given, or from such a term), are tested against the graph's value
        index of that type and attribute when it is at hand (``var in bucket``: the node is
        not reached, nor its attributes read); the other terms follow on the node. Without
        the index the whole conjunction is tested on the node (:meth:`node_test`), and how
        many nodes were read is told to the graph (:meth:`epilogue`), which builds the index
        once filters have read as many nodes as there are of the type
        (``MemoryGraph.tested_without_index``).

        >>> from hgm_engine.query.plan import Attr, Cmp, Const
        >>> writer = ConditionWriter(fallback=None)
        >>> writer.typed_test([Cmp("=", Attr("s"), Const("p"))], "action", "i")
        '((i in _b1) if _b1 is not None else (a := (n := nodes[i]).attrs) is not None and (a.get(_k7) == _k8))'
        >>> writer.preamble()
        '    _b1 = _k4(ctx.view, _k2, _k3, _k1)\\n'
        >>> writer.epilogue("len(ids)")
        '    if _b1 is None:\\n        _k9(ctx.view, _k10, _k11, len(ids))\\n'
        """
        found = bucket_terms(conditions, node_type)
        if found is None:
            return self.node_test(conditions, f"nodes[{var}]")
        kept_type, pairs, rest = found
        names = []
        for attribute, value in pairs:
            key = (kept_type, attribute, value)
            name = self._bucket_names.get(key)
            if name is None:
                name = self._bucket_names[key] = f"_b{len(self._bucket_names) + 1}"
                # a parameter's value is read once per call (a bucket only for a string)
                wanted = f"ctx.params[{self.constant(value.name)}]" if isinstance(value, Param) else self.constant(value)
                args = f"ctx.view, {self.constant(kept_type)}, {self.constant(attribute)}, {wanted}"
                if self.tests is not None:
                    args += f", {self.tests}"
                self.prologue.append(f"{name} = {self.constant(_value_bucket)}({args})")
            names.append(name)
        probe = " and ".join(f"{var} in {name}" for name in names)
        if rest:
            probe += " and " + self.node_test(rest, f"nodes[{var}]")
        present = " and ".join(f"{name} is not None" for name in names)
        # Without the buckets the nodes' attributes are read: the graph has no index of that
        # type and attribute at hand, so value_members would have none to offer either.
        members, self.members = self.members, False
        whole = self.node_test(conditions, f"nodes[{var}]")
        self.members = members
        return f"(({probe}) if {present} else {whole})"

    def epilogue(self, count: str, indent: str = "    ") -> str:
        """Statements that tell the graph how many nodes (``count``, an expression) a loop read
        for each bucket of :meth:`typed_test` it found missing (empty when there is none).

        >>> ConditionWriter(fallback=None).epilogue("len(ids)")
        ''
        """
        lines = []
        for (node_type, attribute, _), name in self._bucket_names.items():
            told = self.constant(_tested_without_index)
            lines.append(
                f"{indent}if {name} is None:\n"
                f"{indent}    {told}(ctx.view, {self.constant(node_type)}, {self.constant(attribute)}, {count})\n"
            )
        return "".join(lines)


    def id_filter(self, cond, node_type: str | None = None) -> Callable:
        """``keep(ids, ctx) -> ids`` passing the condition, the test inlined in the loop.

        >>> from hgm_engine.query.plan import Attr, Cmp, Const
        >>> from hgm_engine.model import MemoryGraph
        >>> from hgm_engine.query.executor.context import Context, DEFAULT_LIMITS
        >>> g = MemoryGraph(); _ = g.add_node("a", "fact", {"n": 1}); _ = g.add_node("b", "fact", {"n": 2})
        >>> keep = ConditionWriter(fallback=None).id_filter(Cmp(">", Attr("n"), Const(1)))
        >>> keep(["a", "b"], Context(g, {}, None, DEFAULT_LIMITS))
        ['b']
        """
        self.members = True
        self.tests = "len(ids)"
        body = self.typed_test([cond], node_type, "i")
        told = self.epilogue("len(ids)")
        return self.define(
            "def _keep(ids, ctx):\n"
            f"{self.preamble()}"
            "    nodes = ctx.nodes\n"
            + (f"    kept = [i for i in ids if {body}]\n{told}    return kept\n" if told else f"    return [i for i in ids if {body}]\n"),
            "_keep",
            "filter",
        )

    def payload_scan(self, cond) -> Callable:
        """``scan(payloads, ctx) -> ids`` of the payloads passing the condition.

        >>> from hgm_engine.query.plan import Attr, Cmp, Const
        >>> from hgm_engine.model import Node, freeze
        >>> scan = ConditionWriter(fallback=None).payload_scan(Cmp("=", Attr("n"), Const(2)))
        >>> scan([Node("a", "fact", freeze({"n": 1}), 1), Node("b", "fact", freeze({"n": 2.0}), 2)], None)
        ['b']
        """
        self.members = True
        body = self.node_test([cond])
        return self.define(
            "def _scan(payloads, ctx):\n"
            f"{self.preamble()}"
            f"    return [n.id for n in payloads if {body}]\n",
            "_scan",
            "scan",
        )

    def fallback(self, cond) -> str:
        """A call of the closure the fallback compiles for ``cond``.

        >>> ConditionWriter(fallback=lambda cond: (lambda node, ctx: True)).fallback("anything")
        '_k1(n, ctx)'
        """
        name = self.constant(self._fallback(cond))
        return f"{name}(n, ctx)"

    def attribute(self, name: str) -> str:
        """The expression that reads attribute ``name`` (``id`` and ``type`` are the node's).

        >>> ConditionWriter(fallback=None).attribute("type")
        'n.type'
        """
        if name == "id":
            return "n.id"
        if name == "type":
            return "n.type"
        self.reads_attrs = True
        return f"a.get({self.constant(name)})"

    def member(self, name: str, value: str) -> str:
        """``n``'s attribute ``name`` is the string ``value``, tested against the value index
        of its type where the view has one at hand (no decoding), else on its attributes.

        >>> writer = ConditionWriter(fallback=None)
        >>> writer.member("status", "done")
        '(n.id in _m1[_v1] if (_v1 := n.type) in _m1 else n.attrs.get(_k1) == _k2)'
        >>> writer.preamble()
        '    _m1 = _k3(ctx.view, _k1, _k2)\\n'
        """
        found = self._member_names.get((name, value))
        key, wanted = self.constant(name), self.constant(value)
        if found is None:
            found = self._member_names[(name, value)] = f"_m{len(self._member_names) + 1}"
            helper = self.constant(_value_members)
            self.prologue.append(f"{found} = {helper}(ctx.view, {key}, {wanted})")
        t = self.temp()
        return f"(n.id in {found}[{t}] if ({t} := n.type) in {found} else n.attrs.get({key}) == {wanted})"

    def expression(self, cond, _level: int = 0) -> str:
        """``cond`` as a Python expression (connectives, truth tests and attribute-versus-
        constant comparisons inline; anything else through the fallback). Connectives nest
        inline up to ``MAX_INLINE_DEPTH`` levels; below that the fallback takes them.

        >>> from hgm_engine.query.plan import Attr, Cmp, Const, Negate
        >>> ConditionWriter(fallback=None).expression(Negate(Cmp("=", Attr("id"), Const("x"))))
        '(not (n.id == _k1))'
        """
        if isinstance(cond, (AllOf, AnyOf, Negate)):
            if _level >= MAX_INLINE_DEPTH:
                # Python's parser takes 200 nested parentheses at most: deeper connectives
                # become a function of their own, called from here.
                return self.fallback(cond)
            if isinstance(cond, AllOf):
                return "(" + " and ".join(self.expression(c, _level + 1) for c in cond.items) + ")"
            if isinstance(cond, AnyOf):
                return "(" + " or ".join(self.expression(c, _level + 1) for c in cond.items) + ")"
            return f"(not {self.expression(cond.item, _level + 1)})"
        if isinstance(cond, Truthy) and isinstance(cond.operand, Attr):
            return f"({self.attribute(cond.operand.name)} is True)"
        if isinstance(cond, Truthy) and isinstance(cond.operand, HasAttr):
            return f"({self.attribute(cond.operand.name)} is not None)"
        if isinstance(cond, Truthy) and isinstance(cond.operand, ValidAt):
            return self.valid_at(cond.operand)
        if (
            self.members
            and isinstance(cond, Cmp)
            and cond.op in ("=", "!=")
            and isinstance(cond.left, Attr)
            and cond.left.name not in ("id", "type")
            and isinstance(cond.right, Const)
            and type(cond.right.value) is str
        ):
            test = self.member(cond.left.name, cond.right.value)
            return test if cond.op == "=" else f"(not {test})"
        if isinstance(cond, Cmp) and isinstance(cond.left, Attr) and isinstance(cond.right, Const):
            generated = self.comparison(cond.op, self.attribute(cond.left.name), cond.right.value)
            if generated is not None:
                return generated
        return self.fallback(cond)

    def valid_at(self, cond: ValidAt) -> str:
        """``valid_at(T)`` as an expression: the instant is read once per query (a constant)
        or once per call of the generated function from the bound parameter (a statement of
        the :attr:`prologue`, before the loop).

        The bounds are looked up in :data:`~hgm_engine.model.INSTANTS` inline (a bound that
        is not a time is NaN there, and NaN compares false), so the test costs about what two
        attribute comparisons cost.

        >>> from hgm_engine.query.plan import Const
        >>> ConditionWriter(fallback=None).valid_at(ValidAt(Const("2026-03-01")))
        '(((_v1 := a.get(_k2)) is None or _k4[_v1] <= _k1) and ((_v2 := a.get(_k3)) is None or _k4[_v2] > _k1))'
        """
        if isinstance(cond.at, Const):
            at = self.constant(parse_instant(cond.at.value))
        elif isinstance(cond.at, Param):
            at = f"_t{len(self.prologue) + 1}"
            self.prologue.append(f"{at} = {self.constant(INSTANTS)}[ctx.params[{self.constant(cond.at.name)}]]")
        else:
            return self.fallback(Truthy(cond))
        start, end = self.temp(), self.temp()
        self.reads_attrs = True
        start_name, end_name, instants = self.constant(VALID_FROM), self.constant(VALID_TO), self.constant(INSTANTS)
        return (
            f"((({start} := a.get({start_name})) is None or {instants}[{start}] <= {at}) and "
            f"(({end} := a.get({end_name})) is None or {instants}[{end}] > {at}))"
        )

    def comparison(self, op: str, value: str, constant: Any) -> str | None:
        """``value op constant`` with the language's semantics, or None when the constant's
        kind needs the general comparison.

        >>> ConditionWriter(fallback=None).comparison("in", "n.type", ("goal", "action"))
        '(n.type in _k1)'
        """
        kind = type(constant)
        if op in ("=", "!="):
            if kind is str:
                test = f"({value} == {self.constant(constant)})"
            elif constant is None or kind is bool:
                test = f"({value} is {self.constant(constant)})"
            elif kind in NUMBER_TYPES:
                v = self.temp()
                test = f"(type({v} := {value}) in _NUM and {v} == {self.constant(constant)})"
            else:
                return None
            return test if op == "=" else f"(not {test})"
        if op in ("<", "<=", ">", ">="):
            v = self.temp()
            if kind in NUMBER_TYPES:
                return f"(type({v} := {value}) in _NUM and {v} {op} {self.constant(constant)})"
            if kind is str:
                return f"(type({v} := {value}) is str and {v} {op} {self.constant(constant)})"
            return "False"
        if op in ("in", "not in") and isinstance(constant, tuple) and all(type(c) is str for c in constant):
            return f"({value} {op} {self.constant(frozenset(constant))})"
        return None


def _value_members(view, attribute: str, value: str):
    """``view.value_members(attribute, value)`` for a graph; no index for other views (a
    transaction's overlay, an earlier state): their nodes are tested on their attributes."""
    if isinstance(view, MemoryGraph):
        return view.value_members(attribute, value)
    return _NO_MEMBERS


def bucket_terms(conditions, node_type: str | None):
    """``(node type, [(attribute, string or Param)], the other terms)`` when the leading terms
    of the conjunction of ``conditions`` include equalities a value index can answer (the
    nodes' type given, or from a ``type = ...`` term), else None: what
    :meth:`ConditionWriter.typed_test` probes by id.

    >>> from hgm_engine.query.plan import Attr, Cmp, Const
    >>> bucket_terms([Cmp("=", Attr("status"), Const("done")), Cmp(">", Attr("n"), Const(1))], "action")[:2]
    ('action', [('status', 'done')])
    """
    terms = []
    for cond in conditions:
        terms.extend(cond.items if isinstance(cond, AllOf) else (cond,))
    pairs: list[tuple[str, str]] = []
    lead = 0
    for term in terms:
        # only pure terms (no closure, no error) lead: their order does not matter
        if not (isinstance(term, Cmp) and term.op == "=" and isinstance(term.left, Attr) and term.left.name != "id"):
            break
        right = term.right
        if isinstance(right, Const) and type(right.value) is str:
            wanted = right.value
        elif isinstance(right, Param) and term.left.name != "type":
            wanted = right  # its value is read when the function runs
        else:
            break
        if term.left.name == "type":
            if node_type is not None and node_type != wanted:
                return None  # never true: the usual test says so
            node_type = wanted
        else:
            pairs.append((term.left.name, wanted))
        lead += 1
    if node_type is None or not pairs:
        return None
    return node_type, list(dict.fromkeys(pairs)), terms[lead:]


def bucket_keys(cond, node_type: str | None = None) -> tuple[tuple[str, str, Any], ...]:
    """The (node type, attribute, value) of each value-index bucket the generated filter of
    ``cond`` probes (:meth:`ConditionWriter.typed_test`; a value is a string or a ``Param``).
    A filter run through closures looks them up (:func:`buckets_at_hand`) and tells the graph
    of its reads without them (:func:`tell_reads`) as the generated loop does, so the index is
    built at the same call whichever runs.

    >>> from hgm_engine.query.plan import AllOf, Attr, Cmp, Const
    >>> bucket_keys(AllOf((Cmp("=", Attr("type"), Const("action")), Cmp("=", Attr("status"), Const("done")))))
    (('action', 'status', 'done'),)
    >>> bucket_keys(Cmp("=", Attr("status"), Const("done")))  # the type unknown: no bucket
    ()
    """
    if node_type is None and cond.__class__ is not AllOf:
        return ()  # one term: it cannot give both the type and a value
    found = bucket_terms([cond], node_type)
    if found is None:
        return ()
    kept_type, pairs, _ = found
    return tuple((kept_type, attribute, value) for attribute, value in pairs)


def buckets_at_hand(keys, ctx) -> list:
    """For each of ``keys`` (:func:`bucket_keys`), the bucket the view of ``ctx`` has at hand
    (a container of ids), or None: as the generated loop's prologue looks them up.

    >>> from hgm_engine.model import MemoryGraph
    >>> from hgm_engine.query.executor.context import Context, DEFAULT_LIMITS
    >>> buckets_at_hand((("action", "status", "done"),), Context(MemoryGraph(), {}, None, DEFAULT_LIMITS))
    [None]
    """
    view = ctx.view
    return [
        _value_bucket(view, node_type, attribute, ctx.params[value.name] if isinstance(value, Param) else value)
        for node_type, attribute, value in keys
    ]


def tell_reads(view, keys, buckets: list, count: int) -> None:
    """Tell the graph that a filter read ``count`` nodes for each of ``keys`` whose bucket was
    not at hand (None in ``buckets``, from :func:`buckets_at_hand`), as the generated loop's
    epilogue does.

    >>> from hgm_engine.model import MemoryGraph
    >>> g = MemoryGraph.from_records([("a", "action", {"status": "done"}), ("b", "action", {"status": "done"})], [])
    >>> tell_reads(g, (("action", "status", "done"),), [None], 2); "a" in g.value_bucket("action", "status", "done")
    True
    """
    for (node_type, attribute, _), bucket in zip(keys, buckets):
        if bucket is None:
            _tested_without_index(view, node_type, attribute, count)


_NO_MEMBERS: dict = {}


def _value_bucket(view, node_type: str, attribute: str, value: Any, tests: int = 0):
    """``view.value_bucket(...)`` for a graph and a string; None for other views (tested on
    attributes) and other values (a parameter bound to a number: compared as numbers are).
    ``tests``: how many ids the caller is about to test, when it knows (0: not known)."""
    if type(value) is str and isinstance(view, MemoryGraph):
        return view.value_bucket(node_type, attribute, value, tests)
    return None


def _tested_without_index(view, node_type: str, attribute: str, count: int) -> None:
    """``view.tested_without_index(...)`` for a graph; nothing for other views."""
    if count and isinstance(view, MemoryGraph):
        view.tested_without_index(node_type, attribute, count)


def per_source_step(
    relation: Hop, predicates: tuple, writer: ConditionWriter, weight: int = 1
) -> tuple[Callable, str] | None:
    """A one-type hop whose per-source predicates are filters followed by at most one index or
    slice, generated as one function: the type test, the conditions and the pick run inline
    for each source's targets (no call per source beyond the adjacency lookup).

    Returns ``(step(ids, ctx) -> ids, what was inlined)``, or None for other hops. Each
    target tested is charged ``weight`` (the filters' :func:`~hgm_engine.query.executor.conditions.condition_weight`).

    >>> from hgm_engine.query.plan import Index
    >>> step, inlined = per_source_step(Hop("out", ("parent_of",), "goal"), (Index(0),), ConditionWriter(fallback=None))
    >>> inlined
    "out(parent_of) to type 'goal' (cached per adjacency), pick [0:1]"
    """
    if relation.edge_types is None or len(relation.edge_types) != 1 or relation.direction == "both":
        return None
    filters = [p for p in predicates if isinstance(p, Filter)]
    positional = [p for p in predicates if not isinstance(p, Filter)]
    if len(positional) > 1 or (positional and predicates[-1] is not positional[0]):
        return None
    writer.members = True
    tests = [f.condition for f in filters]
    keep = writer.typed_test(tests, relation.node_type, "t") if tests else None
    pick, stop, shown = "", None, ""
    # Positions are passed in as constants, not pasted as text: an index may have thousands
    # of digits, which Python will not turn into text.
    if positional:
        op = positional[0]
        if isinstance(op, Index):
            if op.index == -1:
                pick = shown = "[-1:]"
            else:
                pick = f"[{writer.constant(op.index)}:{writer.constant(op.index + 1)}]"
                shown = _shown_slice(op.index, op.index + 1)
            stop = op.index + 1 if op.index >= 0 else None
        else:
            low = "" if op.lower is None else writer.constant(op.lower)
            high = "" if op.upper is None else writer.constant(op.upper)
            pick = f"[{low}:{high}]"
            shown = _shown_slice(op.lower, op.upper)
            if op.upper is not None and op.upper >= 0 and (op.lower is None or op.lower >= 0):
                stop = op.upper
    # Each source's other ends from the hop's memo (Context.hop); a call only on a miss.
    hop_args = (
        f"{writer.constant(relation.edge_types[0])}, {writer.constant(relation.node_type)}, "
        f"{writer.constant(relation.direction == 'out')}"
    )
    lookup = (
        "        targets = get(s)\n"
        "        if targets is None:\n"
        "            targets = find(s)\n"
    )
    index = positional[0].index if positional and isinstance(positional[0], Index) else None
    if keep and index == 0:
        # the first match (actions.where(...)[0]): taken, and the loop stops there
        body = (
            "            for t in targets:\n"
            "                scanned += 1\n"
            f"                if {keep}:\n"
            "                    append(t)\n"
            "                    break\n"
        )
    elif keep and stop is not None:
        # A pick from the front after a filter (actions.where(...)[0]) stops at the last
        # match it needs instead of testing every target.
        body = (
            "            picked = []\n"
            "            for t in targets:\n"
            "                scanned += 1\n"
            f"                if {keep}:\n"
            "                    picked.append(t)\n"
            f"                    if len(picked) == {writer.constant(stop)}:\n"
            "                        break\n"
            f"            extend(picked{pick})\n"
        )
    elif not keep and index == -1:  # the last target (subgoals[-1]): no slice made
        body = "            scanned += len(targets)\n            append(targets[-1])\n"
    elif not keep and index is not None and index >= 0:  # one target by position (subgoals[0])
        at = writer.constant(index)
        body = f"            scanned += len(targets)\n            if len(targets) > {at}:\n                append(targets[{at}])\n"
    else:
        chosen = f"[t for t in targets if {keep}]" if keep else "targets"
        body = "            scanned += len(targets)\n" f"            extend({chosen}{pick})\n"
    source = (
        "def _step(ids, ctx):\n"
        f"{writer.preamble()}"
        f"    get, find = ctx.hop({hop_args})\n"
        "    nodes = ctx.nodes\n"
        "    out = []\n"
        "    extend, append = out.extend, out.append\n"
        "    scanned = 0\n"
        "    for s in ids:\n"
        f"{lookup}"
        "        if targets:\n"
        f"{body}"
        f"    if len(ids) > 1 and {_repeats_possible(relation, writer)}:\n"
        "        out = list(dict.fromkeys(out))\n"
        f"{writer.epilogue('scanned')}"
        f"    ctx.charge(scanned{' * ' + writer.constant(weight) if weight > 1 and tests else ''})\n"
        "    return out\n"
    )
    hop = f"{relation.direction}({relation.edge_types[0]})"
    if relation.node_type is not None:
        hop += f" to type {relation.node_type!r} (cached per adjacency)"
    inlined = [hop]
    if filters:
        inlined.append(f"{len(filters)} filter{'s' if len(filters) > 1 else ''} inline")
    if pick:
        inlined.append(f"pick {shown}")
    if keep and stop is not None:
        inlined.append(f"stops after {_shown_number(stop)} match{'es' if stop != 1 else ''}")
    return writer.define(source, "_step", "step"), ", ".join(inlined)


def hop_then_filters_step(
    relation: Hop, conditions: list, weights: list[int], writer: ConditionWriter
) -> tuple[Callable, str] | None:
    """A one-type out or in hop followed by filters over its whole result (``actions.where(
    status = 'pending')``), generated as one function: the hop's loop over each source's
    remembered other ends, the repeats dropped, then each filter over the list, an equality
    on a string tested by id against the value index of the hop's node type when the graph
    has it at hand (:meth:`ConditionWriter.typed_test`). The same list and the same work as
    the hop followed by the filters one by one: the hop is charged the nodes it produces,
    each filter ``weight`` times the nodes it tests (``weights``, one per condition).

    Returns ``(step(ids, ctx) -> ids, what was inlined)``, or None for other hops.

    >>> from hgm_engine.query.plan import Attr, Cmp, Const
    >>> from hgm_engine.model import MemoryGraph
    >>> from hgm_engine.query.executor.context import Context, DEFAULT_LIMITS
    >>> g = MemoryGraph.from_records(
    ...     [("g", "goal", {}), ("a", "action", {"s": "p"}), ("b", "action", {"s": "d"})],
    ...     [("g", "a", "parent_of", {}), ("g", "b", "parent_of", {})])
    >>> step, inlined = hop_then_filters_step(
    ...     Hop("out", ("parent_of",), "action"), [Cmp("=", Attr("s"), Const("p"))], [1], ConditionWriter(fallback=None))
    >>> ctx = Context(g, {}, None, DEFAULT_LIMITS); step(["g"], ctx), ctx.work
    (['a'], 4)
    >>> inlined
    "out(parent_of) to type 'action' (cached per adjacency), 1 filter inline"
    """
    if relation.edge_types is None or len(relation.edge_types) != 1 or relation.direction == "both" or not conditions:
        return None
    writer.members = True
    # Each filter runs while the list is not empty (as the filters one by one stop at an
    # empty list); the buckets are looked up once, before the hop. The nodes read without a
    # bucket are told after the last filter: the first filter's count (the others read fewer).
    filters = []
    for k, (cond, weight) in enumerate(zip(conditions, weights)):
        test = writer.typed_test([cond], relation.node_type, "i")
        charge = "len(out)" if weight == 1 else f"len(out) * {writer.constant(weight)}"
        filters.append(
            "    if out:\n"
            f"        ctx.charge({charge})\n"
            + ("        first = len(out)\n" if k == 0 else "")
            + f"        out = [i for i in out if {test}]\n"
        )
    hop_args = (
        f"{writer.constant(relation.edge_types[0])}, {writer.constant(relation.node_type)}, "
        f"{writer.constant(relation.direction == 'out')}"
    )
    told = writer.epilogue("first")
    body = "    first = 0\n" + "".join(filters) if told else "".join(filters).replace("        first = len(out)\n", "")
    # The hop itself is a plain function (the same loop for every query: only the filters
    # are written, which keeps the source Python compiles on the first call short).
    source = (
        "def _step(ids, ctx):\n"
        f"{writer.preamble()}"
        f"    out = {writer.constant(_hop_ends)}(ids, ctx, {hop_args})\n"
        "    nodes = ctx.nodes\n"
        f"{body}"
        f"{told}"
        "    return out\n"
    )
    return writer.define(source, "_step", "step"), hop_then_filters_detail(relation, len(conditions))


def hop_then_filters_detail(relation: Hop, filters: int) -> str | None:
    """What :func:`hop_then_filters_step` writes for ``relation`` and that many filters, as
    the physical plan says it; None when it writes nothing for them.

    >>> hop_then_filters_detail(Hop("out", ("parent_of",), "action"), 2)
    "out(parent_of) to type 'action' (cached per adjacency), 2 filters inline"
    """
    if relation.edge_types is None or len(relation.edge_types) != 1 or relation.direction == "both" or not filters:
        return None
    hop = f"{relation.direction}({relation.edge_types[0]})"
    if relation.node_type is not None:
        hop += f" to type {relation.node_type!r} (cached per adjacency)"
    return f"{hop}, {filters} filter{'s' if filters > 1 else ''} inline"


def _hop_ends(ids: list, ctx, edge_type: str, node_type: str | None, outgoing: bool) -> list:
    """The other ends of a one-type out or in hop from the distinct sources ``ids``, each
    once, in order; charged the nodes it produces. Repeats are dropped unless the graph knows
    there can be none (:func:`_repeats_possible`)."""
    get, find = ctx.hop(edge_type, node_type, outgoing)
    out: list = []
    extend = out.extend
    for s in ids:
        targets = get(s)
        extend(targets if targets is not None else find(s))
    if len(ids) > 1 and not _distinct_ends(ctx.view, edge_type, outgoing, len(out)) and len(set(out)) != len(out):
        out = list(dict.fromkeys(out))
    ctx.charge(len(out))
    return out


def _repeats_possible(relation: Hop, writer: ConditionWriter) -> str:
    """The test, on a hop's list ``out`` from several distinct sources, that it may hold a
    node twice: not when the graph knows that no node is the far end of two edges of the type
    in that direction (``MemoryGraph.distinct_ends``); else whether a set of it is shorter
    (repeats are rare, and a set finds them for about half of what dropping them costs)."""
    args = f"ctx.view, {writer.constant(relation.edge_types[0])}, {writer.constant(relation.direction == 'out')}"
    return f"not {writer.constant(_distinct_ends)}({args}, len(out)) and len(set(out)) != len(out)"


def _distinct_ends(view, edge_type: str, outgoing: bool, work: int) -> bool:
    """``view.distinct_ends(...)`` for a graph; False (not known) for other views."""
    if isinstance(view, MemoryGraph):
        return view.distinct_ends(edge_type, outgoing, work)
    return False


def _shown_number(value: int) -> str:
    """An integer as ``explain`` shows it (Python will not write one of over 4,300 digits)."""
    try:
        return str(value)
    except ValueError:
        return "(an integer of over 4,300 digits)"


def _shown_slice(low: int | None, high: int | None) -> str:
    return f"[{'' if low is None else _shown_number(low)}:{'' if high is None else _shown_number(high)}]"
