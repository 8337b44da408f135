"""Path records: the immutable form of one stored trajectory, as the path index holds it.

A record is what a trajectory file line (formats.md) says — goal, ordered steps, edges, tags,
result, reward — plus what versioning adds: ``status`` (``active``, ``superseded``,
``failed`` or ``template``), ``version``, the id of the path it ``replaces`` and its
``scenario``. Its *structure* is the step names with their edges; paths with equal structures
are merged into one localization result.

>>> r = PathRecord.from_trajectory({"id": "order-17", "goal": "Check order A1001",
...     "steps": [{"name": "query_order", "content": "call the order API"},
...               {"name": "notify_user"}], "tags": ["order"], "result": "success"})
>>> r.step_names, r.edges, r.structure_key
(('query_order', 'notify_user'), ((0, 1),), 'query_order > notify_user')
>>> PathRecord.from_json(r.to_json()) == r
True
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import attrs

from hgm_engine.model import FrozenDict, freeze, thaw
from hgm_engine.errors import LocalizationError

__all__ = ["Step", "PathRecord", "PATH_STATUSES", "PATH_RESULTS"]

PATH_STATUSES = ("active", "superseded", "failed", "template")
PATH_RESULTS = ("success", "failure", "pending")


@attrs.frozen
class Step:
    """One step of a path: the action's name (a tool, an operation) and what it did."""

    name: str
    text: str = ""
    attributes: FrozenDict = attrs.field(factory=FrozenDict, converter=freeze)

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"name": self.name}
        if self.text:
            doc["content"] = self.text
        doc.update(thaw(self.attributes))
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any] | str) -> "Step":
        if isinstance(doc, str) and doc:
            return cls(doc)
        if not isinstance(doc, Mapping) or not isinstance(doc.get("name"), str) or not doc["name"]:
            raise LocalizationError.single("bad-path", f"a step needs a non-empty 'name': {doc!r}")
        extra = {k: v for k, v in doc.items() if k not in ("name", "content")}
        text = doc.get("content", "")
        return cls(doc["name"], "" if text is None else str(text), extra)


def _chain(n: int) -> tuple[tuple[int, int], ...]:
    return tuple((i, i + 1) for i in range(n - 1))


@attrs.frozen
class PathRecord:
    """One stored path. Build with :meth:`create` or :meth:`from_trajectory`; both validate."""

    id: str
    goal: str
    steps: tuple[Step, ...]
    edges: tuple[tuple[int, int], ...]
    tags: tuple[str, ...] = ()
    reward: float | None = None
    result: str | None = None
    status: str = "active"
    version: int = 1
    replaces: str | None = None
    scenario: str | None = None
    created: float | None = None   # a timestamp when the caller has one; order is the index's

    # -- named constructors ------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        id: str,
        goal: str,
        steps: Sequence[Step | str | Mapping[str, Any]],
        *,
        edges: Iterable[Sequence[int]] | None = None,
        tags: Iterable[str] = (),
        reward: float | None = None,
        result: str | None = None,
        status: str = "active",
        version: int = 1,
        replaces: str | None = None,
        scenario: str | None = None,
        created: float | None = None,
    ) -> "PathRecord":
        """A validated record; ``edges`` default to consecutive pairs, tags are sorted.

        >>> PathRecord.create("p", "g", ["a", "b", "c"], edges=[(0, 2), (0, 1)]).edges
        ((0, 1), (0, 2))
        >>> PathRecord.create("p", "g", [])
        Traceback (most recent call last):
        ...
        hgm_engine.errors.LocalizationError: bad-path at p: a path needs at least one step
        """
        where = str(id)
        if not isinstance(id, str) or not id:
            raise LocalizationError.single("bad-path", "a path needs a non-empty string id", where=where)
        built = tuple(s if isinstance(s, Step) else Step.from_json(s) for s in steps)
        if not built:
            raise LocalizationError.single("bad-path", "a path needs at least one step", where=where)
        n = len(built)
        if edges is None:
            edge_tuple = _chain(n)
        else:
            pairs = []
            for edge in edges:
                if (not isinstance(edge, (list, tuple)) or len(edge) != 2
                        or not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < n for i in edge)):
                    raise LocalizationError.single(
                        "bad-path", f"edge {edge!r} does not join two of the {n} steps", where=where
                    )
                if edge[0] == edge[1]:
                    raise LocalizationError.single("bad-path", f"edge {list(edge)!r} is a loop", where=where)
                pairs.append((int(edge[0]), int(edge[1])))
            edge_tuple = tuple(sorted(set(pairs)))
        if status not in PATH_STATUSES:
            raise LocalizationError.single(
                "bad-path", f"status {status!r} is not one of {', '.join(PATH_STATUSES)}", where=where
            )
        if result is not None and result not in PATH_RESULTS:
            raise LocalizationError.single(
                "bad-path", f"result {result!r} is not one of {', '.join(PATH_RESULTS)}", where=where
            )
        if reward is not None and not isinstance(reward, (int, float)):
            raise LocalizationError.single("bad-path", f"reward {reward!r} is not a number", where=where)
        return cls(
            id=id,
            goal=str(goal or ""),
            steps=built,
            edges=edge_tuple,
            tags=tuple(sorted({str(t) for t in tags})),
            reward=None if reward is None else float(reward),
            result=result,
            status=status,
            version=int(version),
            replaces=replaces,
            scenario=scenario,
            created=created,
        )

    @classmethod
    def template(cls, id: str, goal: str, steps: Sequence[Step | str | Mapping[str, Any]],
                 **kwargs: Any) -> "PathRecord":
        """A template path (reward 0): located only when no real path matches.

        >>> PathRecord.template("t", "retry then fall back", ["retry", "fallback"]).status
        'template'
        """
        return cls.create(id, goal, steps, status="template", reward=0.0, **kwargs)

    @classmethod
    def from_trajectory(cls, doc: Mapping[str, Any], **overrides: Any) -> "PathRecord":
        """A record from one trajectory document (formats.md); ``overrides`` win over the document."""
        if not isinstance(doc, Mapping):
            raise LocalizationError.single("bad-path", f"a trajectory is a JSON object, not {type(doc).__name__}")
        steps = doc.get("steps")
        if not isinstance(steps, list):
            raise LocalizationError.single("bad-path", "a trajectory needs a 'steps' list", where=str(doc.get("id")))
        fields = dict(
            edges=doc.get("edges"),
            tags=doc.get("tags") or (),
            reward=doc.get("reward"),
            result=doc.get("result"),
            status=doc.get("status", "active"),
            version=doc.get("version", 1),
            replaces=doc.get("replaces"),
            scenario=doc.get("scenario"),
            created=doc.get("created"),
        )
        fields.update(overrides)
        return cls.create(str(doc.get("id", "")), doc.get("goal", ""), steps, **fields)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "PathRecord":
        """The inverse of :meth:`to_json` (a trajectory document with the versioning keys)."""
        return cls.from_trajectory(doc)

    # -- views ---------------------------------------------------------------------------------

    @property
    def step_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.steps)

    @property
    def is_chain(self) -> bool:
        edges = self.edges
        return len(edges) == len(self.steps) - 1 and all(edge == (i, i + 1) for i, edge in enumerate(edges))

    @property
    def signature(self) -> tuple:
        """The structure: step names, plus the edges when they are not a plain chain."""
        if self.is_chain:
            return self.step_names
        return (self.step_names, self.edges)

    @property
    def structure_key(self) -> str:
        """The structure as text: ``a > b > c``, or names and edges for other shapes."""
        if self.is_chain:
            return " > ".join(self.step_names)
        edges = ",".join(f"{i}>{j}" for i, j in self.edges)
        return f"{' ; '.join(self.step_names)} | {edges}"

    @property
    def is_template(self) -> bool:
        return self.status == "template"

    def text(self) -> str:
        """Goal and steps as one text: what the embedder sees of this path."""
        parts = [self.goal]
        for step in self.steps:
            parts.append(step.text)
            parts.append(step.name)
        return " ".join(p for p in parts if p)

    def ordered_pairs(self) -> tuple[tuple[int, int], ...]:
        """Every (i, j) with step j reachable from step i along the edges (quadratic in the
        steps by nature: scoring uses :class:`~hgm_engine.paths.localize.StepOrder` instead).

        >>> PathRecord.create("p", "g", ["a", "b", "c"]).ordered_pairs()
        ((0, 1), (0, 2), (1, 2))
        """
        successors: dict[int, list[int]] = {}
        for i, j in self.edges:
            successors.setdefault(i, []).append(j)
        pairs = []
        for start in range(len(self.steps)):
            seen: set[int] = set()
            stack = list(successors.get(start, ()))
            while stack:
                node = stack.pop()
                if node in seen or node == start:
                    continue
                seen.add(node)
                stack.extend(successors.get(node, ()))
            pairs.extend((start, j) for j in sorted(seen))
        return tuple(pairs)

    def completeness(self) -> float:
        """Fraction of the shape checks that hold: goal given; one acyclic sequence from one
        entry to one exit joining every step; a known result (success or failure).

        >>> PathRecord.create("p", "g", ["a", "b"], result="success").completeness()
        1.0
        >>> PathRecord.create("p", "", ["a", "b"], edges=[]).completeness()
        0.0
        """
        checks = [bool(self.goal.strip()), self._is_single_flow(), self.result in ("success", "failure")]
        return sum(checks) / len(checks)

    def _is_single_flow(self) -> bool:
        """One entry, one exit, no cycle (then every step is reachable from the entry): one
        pass over the edges (Kahn's topological sort), not one walk per step."""
        n = len(self.steps)
        if n == 1:
            return True
        indegree = [0] * n
        outdegree = [0] * n
        successors: list[list[int]] = [[] for _ in range(n)]
        for i, j in self.edges:
            outdegree[i] += 1
            indegree[j] += 1
            successors[i].append(j)
        if indegree.count(0) != 1 or outdegree.count(0) != 1:
            return False
        ready = [indegree.index(0)]
        ordered = 0
        while ready:
            step = ready.pop()
            ordered += 1
            for following in successors[step]:
                indegree[following] -= 1
                if indegree[following] == 0:
                    ready.append(following)
        return ordered == n  # a cycle leaves its steps unordered

    def to_json(self) -> dict[str, Any]:
        """A trajectory document (formats.md) with the versioning keys."""
        doc: dict[str, Any] = {
            "id": self.id,
            "goal": self.goal,
            "steps": [s.to_json() for s in self.steps],
            "edges": [list(e) for e in self.edges],
        }
        if self.tags:
            doc["tags"] = list(self.tags)
        if self.result is not None:
            doc["result"] = self.result
        if self.reward is not None:
            doc["reward"] = self.reward
        doc["status"] = self.status
        doc["version"] = self.version
        for key in ("replaces", "scenario", "created"):
            value = getattr(self, key)
            if value is not None:
                doc[key] = value
        return doc
