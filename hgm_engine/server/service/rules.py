"""The service's verbs over what a memory's data must obey: user constraints, rule sets
(constraints, triggers, propagation), the violations now, and the stored schema
(``schema``, ``schema_document``, ``set_schema``).

>>> from hgm_engine import Memory
>>> RuleVerbs(Memory()).rules()
{'t': 0, 'rule_sets': []}
"""

from __future__ import annotations

from typing import Any, Mapping

from hgm_engine.server.service.checks import check_text, fail, require_text
from hgm_engine.server.service.core import ServiceCore

__all__ = ["RuleVerbs"]


class RuleVerbs(ServiceCore):
    """Constraints, rule sets and the schema (see the module)."""

    def constraints(self) -> dict[str, Any]:
        """User constraints in force (``name``, ``text``) and the broken, inactive ones (with
        ``broken``: the error), as ``hgm constraints list --json`` prints them.

        >>> from hgm_engine import Memory

        >>> from hgm_engine.server.service import MemoryService
        >>> s = MemoryService(Memory())
        >>> _ = s.add_constraint("has_content", "each goal must has(content)")
        >>> s.constraints()["constraints"]
        [{'name': 'has_content', 'text': 'each goal must has(content)'}]
        """
        self.fresh()
        entries: list[dict[str, Any]] = [{"name": n, "text": t} for n, t in self.memory.constraints().items()]
        for broken in self.memory.broken():
            if broken.kind == "constraint":
                doc = broken.to_json()
                entries.append({"name": doc["name"], "text": doc["text"], "broken": doc["error"]})
        return {"t": self.memory.t, "constraints": entries}

    def add_constraint(self, name: str, text: str, *, check_existing: bool = True) -> dict[str, Any]:
        """Add (or replace) the user constraint ``name``: ``each TYPE [where COND] must COND``.
        It must hold now (``check_existing``), else :class:`TransactionRefused` with every
        violation; ``replaced`` is the text it replaced (None: it is new)."""
        require_text("name", name)
        require_text("text", text)
        check_text(name=name, text=text)
        self.fresh()
        replaced = self.memory.constraints().get(name)
        self.memory.add_constraint(name, text, check_existing=check_existing)
        return {"added": True, "name": name, "text": text, "replaced": replaced}

    def remove_constraint(self, name: str) -> dict[str, Any]:
        """Remove the user constraint ``name`` (a broken one too); unknown-name if there is none."""
        require_text("name", name)
        check_text(name=name)
        self.fresh()
        text = self.memory.constraints().get(name)
        if text is None:
            text = next((b.text for b in self.memory.broken() if b.kind == "constraint" and b.name == name), None)
        self.memory.remove_constraint(name)
        return {"removed": True, "name": name, "text": text}

    def violations(self) -> dict[str, Any]:
        """Every constraint violation in the current state (normally none).

        >>> from hgm_engine import Memory

        >>> from hgm_engine.server.service import MemoryService
        >>> MemoryService(Memory()).violations()
        {'t': 0, 'violations': []}
        """
        self.fresh()
        return {"t": self.memory.t, "violations": [v.to_json() for v in self.memory.violations()]}

    def rules(self) -> dict[str, Any]:
        """Loaded rule sets (``name``, ``text``) and the broken ones, as ``hgm rules list --json``."""
        self.fresh()
        entries: list[dict[str, Any]] = [{"name": n, "text": t} for n, t in self.memory.rules().items()]
        for broken in self.memory.broken():
            if broken.kind != "constraint":
                doc = broken.to_json()
                entries.append({"name": doc["name"], "text": doc["text"], "broken": doc["error"]})
        return {"t": self.memory.t, "rule_sets": entries}

    def load_rules(self, text: str, name: str = "default") -> dict[str, Any]:
        """Load a rule file (constraints, triggers, propagation) under ``name``, replacing a
        set of that name; what it declares must hold now (else :class:`TransactionRefused`).

        >>> from hgm_engine import Memory

        >>> from hgm_engine.server.service import MemoryService
        >>> s = MemoryService(Memory())
        >>> s.load_rules("propagate derived_from backward depth 2", "stale")["propagations"]
        ['propagate:derived_from']
        """
        require_text("text", text)
        require_text("name", name)
        check_text(text=text, name=name)
        self.fresh()
        rule_set = self.memory.load_rules(text, name=name)
        return {
            "loaded": True,
            "name": name,
            "constraints": [c.name for c in rule_set.constraints],
            "triggers": [t.name for t in rule_set.triggers],
            "propagations": [p.name for p in rule_set.propagations],
        }

    def remove_rules(self, name: str) -> dict[str, Any]:
        """Unload the rule set ``name`` (its constraints go with it); unknown-name if none."""
        require_text("name", name)
        check_text(name=name)
        self.fresh()
        self.memory.remove_rules(name)
        return {"removed": name}

    def schema(self) -> dict[str, Any]:
        """The memory's schema: node and edge types, relations, edge rules (``hgm schema``).

        >>> from hgm_engine import Memory

        >>> from hgm_engine.server.service import MemoryService
        >>> MemoryService(Memory()).schema()["node_types"]
        ['goal', 'action', 'entity', 'fact', 'result']
        """
        return self.memory.schema.to_json()

    def schema_document(self) -> dict[str, Any]:
        """The memory's stored schema as an ``hgm-schema/1`` document (docs/formats.md): what
        :meth:`set_schema` takes back.

        >>> from hgm_engine import Memory

        >>> from hgm_engine.server.service import MemoryService
        >>> MemoryService(Memory()).schema_document()["format"]
        'hgm-schema/1'
        """
        return self.memory.schema.to_document()

    def set_schema(self, doc: Any) -> dict[str, Any]:
        """Make the ``hgm-schema/1`` document ``doc`` the memory's schema (a transaction,
        refused with every problem when what the memory holds breaks it: ``schema-violation``,
        422; a document with errors is a ``SchemaError`` naming each place, 400); the stored
        document.

        >>> from hgm_engine import Memory

        >>> from hgm_engine.server.service import MemoryService
        >>> s = MemoryService(Memory())
        >>> s.set_schema({"format": "hgm-schema/1", "extends": "default", "node_types": ["tool"]})["node_types"][-1]
        'tool'
        """
        from hgm_engine.model import Schema

        if not isinstance(doc, Mapping):
            raise fail("invalid-document", "a schema is an hgm-schema/1 JSON object (docs/formats.md)", "schema")
        check_text("invalid-document", schema=dict(doc))
        self.memory.set_schema(Schema.from_document(dict(doc)))
        return self.schema_document()
