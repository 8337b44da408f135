"""The models of the constraint, rule-set and schema routes.

>>> ConstraintRequest.model_json_schema()["required"]
['name', 'text']
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hgm_engine.server.rest.models.common import ErrorDetail, NonBlank, OPEN, STRICT

__all__ = ["NamedTextModel", "ConstraintsModel", "ConstraintAddedModel", "ConstraintRemovedModel", "ViolationModel", "ViolationsModel", "RuleSetsModel", "RulesLoadedModel", "RulesRemovedModel", "ConstraintRequest", "RulesRequest", "SchemaDocumentRequest", "SchemaDocumentModel"]


class NamedTextModel(BaseModel):
    """A constraint or a rule set; ``broken`` (the error) when it does not compile and is inactive."""

    name: str
    text: Any
    broken: ErrorDetail | None = None


class ConstraintsModel(BaseModel):
    t: int
    constraints: list[NamedTextModel]


class ConstraintAddedModel(BaseModel):
    added: bool
    name: str
    text: str
    replaced: str | None = Field(description="The text it replaced (None: it is new).")


class ConstraintRemovedModel(BaseModel):
    removed: bool
    name: str
    text: Any


class ViolationModel(BaseModel):
    constraint: str
    node: str | None
    message: str


class ViolationsModel(BaseModel):
    t: int
    violations: list[ViolationModel]


class RuleSetsModel(BaseModel):
    t: int
    rule_sets: list[NamedTextModel]


class RulesLoadedModel(BaseModel):
    loaded: bool
    name: str
    constraints: list[str]
    triggers: list[str]
    propagations: list[str]


class RulesRemovedModel(BaseModel):
    removed: str


class ConstraintRequest(BaseModel):
    model_config = STRICT
    name: NonBlank
    text: NonBlank = Field(description="each TYPE [where COND] must COND (docs/rules.md).")
    check_existing: bool = Field(True, description="Refuse (422, every violation) unless it holds now.")


class RulesRequest(BaseModel):
    model_config = STRICT
    text: NonBlank = Field(description="A rule file: constraints, triggers, propagation (docs/rules.md).")
    name: NonBlank = Field("default", description="The rule set's name; a set of that name is replaced.")


class SchemaDocumentRequest(BaseModel):
    """An hgm-schema/1 document (docs/formats.md); checked whole by the engine, which names
    every problem with its place."""

    model_config = ConfigDict(extra="allow")
    format: Literal["hgm-schema/1"]
    extends: Literal["default"] | None = Field(None, description="Add to the default schema instead of saying everything.")


class SchemaDocumentModel(BaseModel):
    model_config = OPEN
    format: Literal["hgm-schema/1"]
    node_types: list[str]
    edge_types: list[str]
    relations: dict[str, Any]
    attribute_schemas: dict[str, Any]
    edge_rules: dict[str, Any]
    acyclic_edge_types: list[str]
