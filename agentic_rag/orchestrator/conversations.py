"""Conversations in PostgreSQL (migration 0013): claimed a turn at a time, read as a context card, forgotten on
request.

A run without a conversation id starts one: its answer carries the new id, and the conversation's row is written
with its first turn (nothing is written for it before the run ends). A run with an id is a follow-up: it *claims*
the conversation first (one statement that also reads the last turns' cards), so two requests on one conversation
are ordered: while one turn runs, another is refused (:class:`ConversationBusy`, 409, retry once it answers).
A claim lapses at the run's deadline and a margin, so a turn whose replica died does not hold the conversation:
the next turn, on any replica, works once it lapses. Bad ids change nothing: unknown, expired and another
tenant's are the same 404, a conversation at its turn limit a 409 that says to start a new one.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, TypeVar

import asyncpg
from pydantic import BaseModel, ConfigDict, Field

from agentic_rag.errors import Conflict, NotFound, Unavailable
from agentic_rag.protocol.conversation import ConversationContext, Named, PastTurn
from agentic_rag.settings import Settings
from agentic_rag.storage.retry import CONNECTION_ERRORS, with_connection
from agentic_rag.storage.sql import Conn, Pool, Query
from agentic_rag.understanding.cues import words

T = TypeVar("T")

LEASE_MARGIN_S = 5.0  # a claim outlives its run's deadline by this much
MAX_TEXT = 4000  # the CHECK bounds of migration 0013

# The claim, and the cards of the last turns, in one round trip. No row: not claimable (diagnosed by STATE_SQL).
CLAIM_SQL = Query("""
    WITH c AS (
      UPDATE conversations
      SET busy_trajectory = :trajectory_id, busy_until = now() + make_interval(secs => :lease_s)
      WHERE id = :id AND tenant = :tenant AND expires_at > now() AND turns < :max_turns
        AND (busy_until IS NULL OR busy_until < now())
      RETURNING id, turns)
    SELECT c.turns, t.card
    FROM c LEFT JOIN LATERAL (
      SELECT seq, card FROM conversation_turns WHERE conversation_id = c.id ORDER BY seq DESC LIMIT :history
    ) t ON true
    ORDER BY t.seq""")

STATE_SQL = Query("""
    SELECT tenant = :tenant AS ours, expires_at <= now() AS expired, turns, busy_until > now() AS busy
    FROM conversations WHERE id = :id""")

# a first turn: the conversation and its turn, together
START_SQL = Query("""
    WITH c AS (
      INSERT INTO conversations (id, tenant, turns, expires_at)
      VALUES (:id, :tenant, 1, now() + make_interval(secs => :ttl_s))
      ON CONFLICT (id) DO NOTHING
      RETURNING id)
    INSERT INTO conversation_turns (conversation_id, seq, trajectory_id, question, standalone, status, card)
    SELECT c.id, 1, :trajectory_id, :question, :standalone, :status, :card::text::jsonb FROM c""")

# a later turn: only under this run's claim, which it releases
ADD_SQL = Query("""
    WITH c AS (
      UPDATE conversations
      SET turns = turns + 1, updated_at = now(), expires_at = now() + make_interval(secs => :ttl_s),
          busy_trajectory = NULL, busy_until = NULL
      WHERE id = :id AND busy_trajectory = :trajectory_id
      RETURNING id, turns)
    INSERT INTO conversation_turns (conversation_id, seq, trajectory_id, question, standalone, status, card)
    SELECT c.id, c.turns, :trajectory_id, :question, :standalone, :status, :card::text::jsonb FROM c""")

RELEASE_SQL = Query("""
    UPDATE conversations SET busy_trajectory = NULL, busy_until = NULL
    WHERE id = :id AND busy_trajectory = :trajectory_id""")

# the claims of runs closed as abandoned (their process died): the next turn need not wait for the lease to lapse
RELEASE_RUNS_SQL = Query("""
    UPDATE conversations SET busy_trajectory = NULL, busy_until = NULL
    WHERE busy_trajectory = ANY(:trajectory_ids::uuid[])""")

# the conversation a trajectory is a turn of (a clarification resumed by its button continues it)
OF_TRAJECTORY_SQL = Query("""
    SELECT t.conversation_id FROM conversation_turns t JOIN conversations c ON c.id = t.conversation_id
    WHERE t.trajectory_id = :trajectory_id AND c.tenant = :tenant
    ORDER BY t.seq DESC LIMIT 1""")

GET_SQL = Query("""
    SELECT id, turns, created_at, updated_at, expires_at FROM conversations
    WHERE id = :id AND tenant = :tenant AND expires_at > now()""")

TURNS_SQL = Query("""
    SELECT seq, trajectory_id, question, standalone, status, card, created_at FROM conversation_turns
    WHERE conversation_id = :id ORDER BY seq""")

# the descriptions of the characters a turn named: how each is referred to (he or she), for "his" and "the girl"
# (with its other names: "Aunt Mito" says who Mito is where her description does not)
PRONOUN_SQL = Query("""
    SELECT c.id::text, concat_ws('. ', c.description,
                                 (SELECT string_agg(n.name, '. ') FROM entity_name n
                                   WHERE n.entity_id = c.id AND n.kind <> 'primary'))
    FROM character c WHERE c.id = ANY(:ids::uuid[])""")
# (and the nouns a description calls its character: "son of NERV commander Gendo Ikari", "Rukia's older brother"; a
# noun after "his" or "her" is someone else: "devoted to his wife", and "him" an object: "who left him")
_HE = words("he his himself son brother father husband boy man king prince uncle nephew grandfather grandson "
           "boyfriend")
_SHE = words("she her herself daughter sister mother wife girl woman queen princess aunt niece grandmother "
            "granddaughter girlfriend")
_OWNERS = frozenset(("his", "her", "their", "its", "my", "your", "our"))
_BEFORE_OBJECT = frozenset(("to", "with", "for", "by", "of", "from", "at", "on", "about", "protects", "loves"))
_WORDS = re.compile(r"[a-z]+")


def pronoun_of(description: str | None) -> Literal["he", "she"] | None:
    """The pronoun a description uses of its character (or the nouns it calls it), when it uses one kind more than
    the other."""
    words = _WORDS.findall((description or "").lower())
    def of_it(i: int, w: str) -> bool:  # whether word i, a pronoun or a noun, is said of the character
        before = words[i - 1] if i else ""
        if w == "her":
            return before not in _BEFORE_OBJECT
        return w in ("he", "his", "himself", "she", "herself") or before not in _OWNERS

    said = [w for i, w in enumerate(words) if (w in _HE or w in _SHE) and of_it(i, w)]
    he, she = sum(w in _HE for w in said), sum(w in _SHE for w in said)
    return "he" if he > she else "she" if she > he else None


def with_pronouns(card: PastTurn, descriptions: dict[str, str | None]) -> PastTurn:
    """``card`` with each character it names marked by the pronoun its description uses."""
    def mark(names: list[Named]) -> list[Named]:
        return [n.model_copy(update={"pronoun": pronoun_of(descriptions.get(n.ref.id))})
                if n.ref.entity_type == "character" else n for n in names]
    return card.model_copy(update={"subjects": mark(card.subjects), "answers": mark(card.answers)})


DELETE_SQL = Query("DELETE FROM conversations WHERE id = :id AND tenant = :tenant")

EXPIRE_SQL = Query("DELETE FROM conversations WHERE expires_at <= now()")


class ConversationNotFound(NotFound):
    """No such conversation for this tenant: unknown, expired or another tenant's (all alike: nothing leaks)."""


class ConversationBusy(Conflict):
    """Another turn of the conversation is running: retry once it has answered."""


class ConversationFull(Conflict):
    """The conversation holds as many turns as it may: start a new one."""


class ConversationStoreError(Unavailable):
    """PostgreSQL did not answer a conversation's read or write."""


@dataclass(slots=True)
class Claim:
    """A run's hold on its conversation: which one, the turn it will be, and the earlier turns' card."""

    conversation_id: uuid.UUID
    seq: int
    context: ConversationContext = field(default_factory=ConversationContext)
    new: bool = False


class ConversationTurn(BaseModel):
    """One turn, as ``GET /v1/conversations/{id}`` lists it."""

    model_config = ConfigDict(frozen=True)

    seq: int = Field(description="The turn's place in the conversation, from 1.")
    trajectory_id: uuid.UUID = Field(description="The run that answered it (GET /v1/trajectories/{id}).")
    question: str = Field(description="The question as asked.")
    standalone: str = Field(description="The question as read: what the follow-up pointed at, spelled out.")
    status: str = Field(description="How the run ended.")
    answer: str = Field(description="The start of the answer.")
    created_at: datetime


class Conversation(BaseModel):
    """A conversation and its turns, oldest first."""

    model_config = ConfigDict(frozen=True)

    id: uuid.UUID
    turns: list[ConversationTurn]
    created_at: datetime
    updated_at: datetime
    expires_at: datetime = Field(description="When it expires unless another turn comes first.")


def _card(value: Any) -> PastTurn:
    """A stored card (jsonb: a dict through the pool's codec, a string without one)."""
    return PastTurn.model_validate_json(value) if isinstance(value, str | bytes) else PastTurn.model_validate(value)


class ConversationStore:
    """Conversations and their turns (tables of migration 0013)."""

    def __init__(self, pool: Pool, settings: Settings) -> None:
        self._pool = pool
        self._settings = settings
        self._attempts = settings.retry_attempts
        self._timeout = settings.query_timeout_ms / 1000

    async def _execute(self, what: str, op: Callable[[Conn], Awaitable[T]]) -> T:
        try:
            return await with_connection(self._pool, op, attempts=self._attempts, timeout_s=self._timeout)
        except (TimeoutError, asyncpg.QueryCanceledError) as exc:
            raise ConversationStoreError(f"conversations: {what} got no answer within {self._timeout:g} s") from exc
        except CONNECTION_ERRORS as exc:
            raise ConversationStoreError(f"conversations: {what} failed after {self._attempts} attempts: {exc}") \
                from exc

    async def claim(self, conversation_id: uuid.UUID | None, *, tenant: str, trajectory_id: uuid.UUID,
                    deadline_ms: int) -> Claim:
        """Hold ``conversation_id`` for one turn (run as ``trajectory_id``) and read its last turns; a new one when
        None. Raises :class:`ConversationNotFound`, :class:`ConversationBusy` or :class:`ConversationFull`."""
        if conversation_id is None:
            return Claim(uuid.uuid4(), 1, new=True)
        s = self._settings
        params = {"id": conversation_id, "tenant": tenant, "trajectory_id": trajectory_id,
                  "lease_s": deadline_ms / 1000 + LEASE_MARGIN_S, "max_turns": s.conversation_max_turns,
                  "history": s.conversation_history}

        async def run(conn: Conn) -> Claim:
            rows = await CLAIM_SQL.fetch(conn, params)
            if rows:
                turns = [_card(r["card"]) for r in rows if r["card"] is not None]
                return Claim(conversation_id, int(rows[0]["turns"]) + 1, ConversationContext(turns=turns))
            state = await STATE_SQL.fetchrow(conn, params)
            if state is None or not state["ours"]:
                raise ConversationNotFound(f"conversation {conversation_id} not found")
            if state["expired"]:
                raise ConversationNotFound(
                    f"conversation {conversation_id} has expired (after {s.conversation_ttl_s} s without a turn); "
                    "ask again without a conversation_id to start a new one")
            if state["turns"] >= s.conversation_max_turns:
                raise ConversationFull(
                    f"conversation {conversation_id} holds its limit of {s.conversation_max_turns} turns; "
                    "ask again without a conversation_id to start a new one")
            raise ConversationBusy(f"another turn of conversation {conversation_id} is still running; "
                                   "send this one again once it has answered")

        return await self._execute("claim", run)

    async def add(self, claim: Claim, *, trajectory_id: uuid.UUID, tenant: str, question: str, standalone: str,
                  card: PastTurn) -> bool:
        """Record the turn a claim was for, and release the claim; False when the claim had lapsed and another
        turn took the conversation (this turn is then not part of it)."""
        params: dict[str, Any] = {
            "id": claim.conversation_id, "tenant": tenant, "trajectory_id": trajectory_id,
            "question": question[:MAX_TEXT], "standalone": standalone[:MAX_TEXT], "status": card.status,
            "card": card.model_dump_json(), "ttl_s": float(self._settings.conversation_ttl_s)}
        sql = START_SQL if claim.new else ADD_SQL
        characters = sorted({n.ref.id for n in (*card.subjects, *card.answers) if n.ref.entity_type == "character"})

        async def run(conn: Conn) -> bool:
            if characters:
                rows = await PRONOUN_SQL.fetch(conn, {"ids": characters})
                params["card"] = with_pronouns(card, {str(r[0]): r[1] for r in rows}).model_dump_json()
            return (await sql.execute(conn, params)).endswith(" 1")

        return await self._execute("add", run)

    async def release(self, claim: Claim, *, trajectory_id: uuid.UUID) -> None:
        """Give a claim up without a turn (its run failed)."""
        if not claim.new:
            await self._execute("release", lambda conn: RELEASE_SQL.execute(
                conn, {"id": claim.conversation_id, "trajectory_id": trajectory_id}))

    async def release_runs(self, trajectory_ids: Sequence[uuid.UUID]) -> int:
        """Give up the claims of these runs, closed as abandoned; how many conversations were freed."""
        if not trajectory_ids:
            return 0
        status = await self._execute("release_runs", lambda conn: RELEASE_RUNS_SQL.execute(
            conn, {"trajectory_ids": list(trajectory_ids)}))
        return int(status.split()[-1])

    async def of_trajectory(self, trajectory_id: uuid.UUID, *, tenant: str) -> uuid.UUID | None:
        """The conversation whose turn ``trajectory_id`` was, if any."""
        row = await self._execute("of_trajectory", lambda conn: OF_TRAJECTORY_SQL.fetchrow(
            conn, {"trajectory_id": trajectory_id, "tenant": tenant}))
        return None if row is None else uuid.UUID(str(row[0]))

    async def get(self, conversation_id: uuid.UUID, *, tenant: str) -> Conversation | None:
        """The tenant's conversation with its turns; None when unknown, expired or another tenant's."""
        params = {"id": conversation_id, "tenant": tenant}

        async def run(conn: Conn) -> Conversation | None:
            row = await GET_SQL.fetchrow(conn, params)
            if row is None:
                return None
            turns = [ConversationTurn(seq=r["seq"], trajectory_id=r["trajectory_id"], question=r["question"],
                                      standalone=r["standalone"], status=r["status"],
                                      answer=_card(r["card"]).answer, created_at=r["created_at"])
                     for r in await TURNS_SQL.fetch(conn, params)]
            return Conversation(id=row["id"], turns=turns, created_at=row["created_at"],
                                updated_at=row["updated_at"], expires_at=row["expires_at"])

        return await self._execute("get", run)

    async def delete(self, conversation_id: uuid.UUID, *, tenant: str) -> bool:
        """Forget a conversation and its turns; False when there was none for this tenant."""
        status = await self._execute("delete", lambda conn: DELETE_SQL.execute(
            conn, {"id": conversation_id, "tenant": tenant}))
        return status.endswith(" 1")

    async def expire(self) -> int:
        """Delete every expired conversation; how many."""
        status = await self._execute("expire", lambda conn: EXPIRE_SQL.execute(conn))
        return int(status.split()[-1])
