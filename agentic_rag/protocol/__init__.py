"""Typed contracts between every stage of the loop (seed 001 section 2, improved).

Every model here is what a stage emits or consumes; the planner and validator models are
constrained to these JSON schemas, so field descriptions are written for them. Every string and
list is bounded so constrained decoding always terminates, and every vocabulary is closed.
"""

from agentic_rag.protocol.base import EntityRef, ProtocolModel, Rationale, ShortText, SummaryText, Uuid
from agentic_rag.protocol.contracts import (
    FILTER_APPLIES_TO,
    MAX_BATCH,
    AgentResponse,
    BatchIntent,
    Clarification,
    ClarificationChoice,
    DocumentGrade,
    DraftAnswer,
    Evidence,
    GradeReport,
    GraphFilters,
    GraphIntent,
    GraphLimits,
    GraphPath,
    GraphQueryType,
    GraphResult,
    NextStep,
    QueryRewrite,
    ResponseStatus,
    RetrievalMode,
    RetrievalResult,
    SearchFilters,
    SearchIntent,
    StepAction,
    SufficiencyReport,
    TerminationReason,
)
from agentic_rag.protocol.query import FIELDS, OPS_BY_KIND, Aggregate, Condition, OrderKey, StructuredQuery

__all__ = [
    "FIELDS", "FILTER_APPLIES_TO", "MAX_BATCH", "OPS_BY_KIND", "AgentResponse", "Aggregate", "BatchIntent",
    "Clarification", "ClarificationChoice", "Condition", "DocumentGrade", "DraftAnswer", "EntityRef", "Evidence",
    "GradeReport", "GraphFilters", "GraphIntent", "GraphLimits", "GraphPath", "GraphQueryType", "GraphResult",
    "NextStep", "OrderKey", "ProtocolModel", "QueryRewrite", "Rationale", "ResponseStatus", "RetrievalMode",
    "RetrievalResult", "SearchFilters", "SearchIntent", "ShortText", "StepAction", "StructuredQuery",
    "SufficiencyReport", "SummaryText", "TerminationReason", "Uuid",
]
