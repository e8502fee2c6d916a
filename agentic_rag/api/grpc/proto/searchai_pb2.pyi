from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Mode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MODE_UNSPECIFIED: _ClassVar[Mode]
    MODE_AGENTIC: _ClassVar[Mode]
    MODE_LINEAR: _ClassVar[Mode]

class Status(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    STATUS_UNSPECIFIED: _ClassVar[Status]
    STATUS_ANSWERED: _ClassVar[Status]
    STATUS_NOT_FOUND: _ClassVar[Status]
    STATUS_BEST_EFFORT: _ClassVar[Status]
    STATUS_NEEDS_CLARIFICATION: _ClassVar[Status]
    STATUS_BLOCKED: _ClassVar[Status]

class MatchTier(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MATCH_TIER_UNSPECIFIED: _ClassVar[MatchTier]
    MATCH_TIER_EXACT: _ClassVar[MatchTier]
    MATCH_TIER_PREFIX: _ClassVar[MatchTier]
    MATCH_TIER_FUZZY: _ClassVar[MatchTier]
MODE_UNSPECIFIED: Mode
MODE_AGENTIC: Mode
MODE_LINEAR: Mode
STATUS_UNSPECIFIED: Status
STATUS_ANSWERED: Status
STATUS_NOT_FOUND: Status
STATUS_BEST_EFFORT: Status
STATUS_NEEDS_CLARIFICATION: Status
STATUS_BLOCKED: Status
MATCH_TIER_UNSPECIFIED: MatchTier
MATCH_TIER_EXACT: MatchTier
MATCH_TIER_PREFIX: MatchTier
MATCH_TIER_FUZZY: MatchTier

class EntityRef(_message.Message):
    __slots__ = ("entity_type", "id")
    ENTITY_TYPE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    entity_type: str
    id: str
    def __init__(self, entity_type: _Optional[str] = ..., id: _Optional[str] = ...) -> None: ...

class AskRequest(_message.Message):
    __slots__ = ("question", "mode", "tenant", "request_id", "image", "budget", "conversation_id")
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    BUDGET_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    question: str
    mode: Mode
    tenant: str
    request_id: str
    image: bytes
    budget: RunBudget
    conversation_id: str
    def __init__(self, question: _Optional[str] = ..., mode: _Optional[_Union[Mode, str]] = ..., tenant: _Optional[str] = ..., request_id: _Optional[str] = ..., image: _Optional[bytes] = ..., budget: _Optional[_Union[RunBudget, _Mapping]] = ..., conversation_id: _Optional[str] = ...) -> None: ...

class RunBudget(_message.Message):
    __slots__ = ("max_turns", "deadline_ms", "max_failed_steps")
    MAX_TURNS_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_FAILED_STEPS_FIELD_NUMBER: _ClassVar[int]
    max_turns: int
    deadline_ms: int
    max_failed_steps: int
    def __init__(self, max_turns: _Optional[int] = ..., deadline_ms: _Optional[int] = ..., max_failed_steps: _Optional[int] = ...) -> None: ...

class ClarifyRequest(_message.Message):
    __slots__ = ("trajectory_id", "index", "entity_id", "tenant", "request_id", "budget")
    TRAJECTORY_ID_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    ENTITY_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    BUDGET_FIELD_NUMBER: _ClassVar[int]
    trajectory_id: str
    index: int
    entity_id: str
    tenant: str
    request_id: str
    budget: RunBudget
    def __init__(self, trajectory_id: _Optional[str] = ..., index: _Optional[int] = ..., entity_id: _Optional[str] = ..., tenant: _Optional[str] = ..., request_id: _Optional[str] = ..., budget: _Optional[_Union[RunBudget, _Mapping]] = ...) -> None: ...

class EvidencePath(_message.Message):
    __slots__ = ("nodes", "rels")
    NODES_FIELD_NUMBER: _ClassVar[int]
    RELS_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedCompositeFieldContainer[EntityRef]
    rels: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, nodes: _Optional[_Iterable[_Union[EntityRef, _Mapping]]] = ..., rels: _Optional[_Iterable[str]] = ...) -> None: ...

class Evidence(_message.Message):
    __slots__ = ("paths", "ranked", "facts", "rewritten_query", "termination_reason")
    PATHS_FIELD_NUMBER: _ClassVar[int]
    RANKED_FIELD_NUMBER: _ClassVar[int]
    FACTS_FIELD_NUMBER: _ClassVar[int]
    REWRITTEN_QUERY_FIELD_NUMBER: _ClassVar[int]
    TERMINATION_REASON_FIELD_NUMBER: _ClassVar[int]
    paths: _containers.RepeatedCompositeFieldContainer[EvidencePath]
    ranked: _containers.RepeatedCompositeFieldContainer[EntityRef]
    facts: _containers.RepeatedScalarFieldContainer[str]
    rewritten_query: str
    termination_reason: str
    def __init__(self, paths: _Optional[_Iterable[_Union[EvidencePath, _Mapping]]] = ..., ranked: _Optional[_Iterable[_Union[EntityRef, _Mapping]]] = ..., facts: _Optional[_Iterable[str]] = ..., rewritten_query: _Optional[str] = ..., termination_reason: _Optional[str] = ...) -> None: ...

class ClarificationChoice(_message.Message):
    __slots__ = ("label", "entity")
    LABEL_FIELD_NUMBER: _ClassVar[int]
    ENTITY_FIELD_NUMBER: _ClassVar[int]
    label: str
    entity: EntityRef
    def __init__(self, label: _Optional[str] = ..., entity: _Optional[_Union[EntityRef, _Mapping]] = ...) -> None: ...

class Clarification(_message.Message):
    __slots__ = ("question", "choices")
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    CHOICES_FIELD_NUMBER: _ClassVar[int]
    question: str
    choices: _containers.RepeatedCompositeFieldContainer[ClarificationChoice]
    def __init__(self, question: _Optional[str] = ..., choices: _Optional[_Iterable[_Union[ClarificationChoice, _Mapping]]] = ...) -> None: ...

class AskReply(_message.Message):
    __slots__ = ("trajectory_id", "request_id", "status", "mode", "answer", "confidence", "result_entities", "source_entities", "evidence", "citations", "warnings", "clarification", "turns", "latency_ms", "timings", "conversation_id", "turn")
    class TimingsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    TRAJECTORY_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    RESULT_ENTITIES_FIELD_NUMBER: _ClassVar[int]
    SOURCE_ENTITIES_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_FIELD_NUMBER: _ClassVar[int]
    CITATIONS_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    CLARIFICATION_FIELD_NUMBER: _ClassVar[int]
    TURNS_FIELD_NUMBER: _ClassVar[int]
    LATENCY_MS_FIELD_NUMBER: _ClassVar[int]
    TIMINGS_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    trajectory_id: str
    request_id: str
    status: Status
    mode: Mode
    answer: str
    confidence: float
    result_entities: _containers.RepeatedCompositeFieldContainer[EntityRef]
    source_entities: _containers.RepeatedCompositeFieldContainer[EntityRef]
    evidence: Evidence
    citations: _containers.RepeatedScalarFieldContainer[str]
    warnings: _containers.RepeatedScalarFieldContainer[str]
    clarification: Clarification
    turns: int
    latency_ms: float
    timings: _containers.ScalarMap[str, float]
    conversation_id: str
    turn: int
    def __init__(self, trajectory_id: _Optional[str] = ..., request_id: _Optional[str] = ..., status: _Optional[_Union[Status, str]] = ..., mode: _Optional[_Union[Mode, str]] = ..., answer: _Optional[str] = ..., confidence: _Optional[float] = ..., result_entities: _Optional[_Iterable[_Union[EntityRef, _Mapping]]] = ..., source_entities: _Optional[_Iterable[_Union[EntityRef, _Mapping]]] = ..., evidence: _Optional[_Union[Evidence, _Mapping]] = ..., citations: _Optional[_Iterable[str]] = ..., warnings: _Optional[_Iterable[str]] = ..., clarification: _Optional[_Union[Clarification, _Mapping]] = ..., turns: _Optional[int] = ..., latency_ms: _Optional[float] = ..., timings: _Optional[_Mapping[str, float]] = ..., conversation_id: _Optional[str] = ..., turn: _Optional[int] = ...) -> None: ...

class TrajectoryEvent(_message.Message):
    __slots__ = ("seq", "stage", "type", "payload_json", "latency_ms", "trajectory_id")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    STAGE_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_JSON_FIELD_NUMBER: _ClassVar[int]
    LATENCY_MS_FIELD_NUMBER: _ClassVar[int]
    TRAJECTORY_ID_FIELD_NUMBER: _ClassVar[int]
    seq: int
    stage: str
    type: str
    payload_json: str
    latency_ms: float
    trajectory_id: str
    def __init__(self, seq: _Optional[int] = ..., stage: _Optional[str] = ..., type: _Optional[str] = ..., payload_json: _Optional[str] = ..., latency_ms: _Optional[float] = ..., trajectory_id: _Optional[str] = ...) -> None: ...

class RunUpdate(_message.Message):
    __slots__ = ("event", "reply")
    EVENT_FIELD_NUMBER: _ClassVar[int]
    REPLY_FIELD_NUMBER: _ClassVar[int]
    event: TrajectoryEvent
    reply: AskReply
    def __init__(self, event: _Optional[_Union[TrajectoryEvent, _Mapping]] = ..., reply: _Optional[_Union[AskReply, _Mapping]] = ...) -> None: ...

class SearchRequest(_message.Message):
    __slots__ = ("q", "types", "limit")
    Q_FIELD_NUMBER: _ClassVar[int]
    TYPES_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    q: str
    types: _containers.RepeatedScalarFieldContainer[str]
    limit: int
    def __init__(self, q: _Optional[str] = ..., types: _Optional[_Iterable[str]] = ..., limit: _Optional[int] = ...) -> None: ...

class SearchHit(_message.Message):
    __slots__ = ("entity", "name", "matched", "match", "popularity")
    ENTITY_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    MATCHED_FIELD_NUMBER: _ClassVar[int]
    MATCH_FIELD_NUMBER: _ClassVar[int]
    POPULARITY_FIELD_NUMBER: _ClassVar[int]
    entity: EntityRef
    name: str
    matched: str
    match: MatchTier
    popularity: int
    def __init__(self, entity: _Optional[_Union[EntityRef, _Mapping]] = ..., name: _Optional[str] = ..., matched: _Optional[str] = ..., match: _Optional[_Union[MatchTier, str]] = ..., popularity: _Optional[int] = ...) -> None: ...

class SearchReply(_message.Message):
    __slots__ = ("hits",)
    HITS_FIELD_NUMBER: _ClassVar[int]
    hits: _containers.RepeatedCompositeFieldContainer[SearchHit]
    def __init__(self, hits: _Optional[_Iterable[_Union[SearchHit, _Mapping]]] = ...) -> None: ...
