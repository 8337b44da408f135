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

__all__ = ["ConditionWriter", "per_source_step", "MAX_INLINE_DEPTH"]

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

    def id_filter(self, cond) -> Callable:
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
        body = self.node_test([cond], "nodes[i]")
        return self.define(
            "def _keep(ids, ctx):\n"
            f"{self.preamble()}"
            "    nodes = ctx.nodes\n"
            f"    return [i for i in ids if {body}]\n",
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


_NO_MEMBERS: dict = {}


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
    keep = writer.node_test(tests, "nodes[t]") if tests else None
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
    if keep and stop is not None:
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
    else:
        chosen = f"[t for t in targets if {keep}]" if keep else "targets"
        body = "            scanned += len(targets)\n" f"            extend({chosen}{pick})\n"
    source = (
        "def _step(ids, ctx):\n"
        f"{writer.preamble()}"
        f"    get, find = ctx.hop({hop_args})\n"
        "    nodes = ctx.nodes\n"
        "    out = []\n"
        "    extend = out.extend\n"
        "    scanned = 0\n"
        "    for s in ids:\n"
        f"{lookup}"
        "        if targets:\n"
        f"{body}"
        "    if len(ids) > 1:\n"
        "        out = list(dict.fromkeys(out))\n"
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


def _shown_number(value: int) -> str:
    """An integer as ``explain`` shows it (Python will not write one of over 4,300 digits)."""
    try:
        return str(value)
    except ValueError:
        return "(an integer of over 4,300 digits)"


def _shown_slice(low: int | None, high: int | None) -> str:
    return f"[{'' if low is None else _shown_number(low)}:{'' if high is None else _shown_number(high)}]"
