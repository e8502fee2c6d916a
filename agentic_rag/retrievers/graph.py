"""Bounded graph primitives over PostgreSQL: neighbors, k_hop, path, compare.

``PostgresGraphExecutor.execute(GraphIntent) -> GraphResult`` is the one seam for graph work.
Only the fixed SQL below ever runs. Traversal goes level by level: each level is one query that
expands every frontier node through a ``LATERAL ... LIMIT fanout`` index scan, so a hub of
degree 100k costs ``fanout`` index entries, never 100k; the frontier itself is capped, and visited
nodes are never expanded twice (a recursive CTE re-expands cycles, see LightRAG PR #3103). Every
limit the intent asks for is clamped to the server's caps, every query has a server-side
``statement_timeout`` and a client-side timeout, and transient failures are retried with
backoff before surfacing as one :class:`~agentic_rag.retrievers.errors.RetrievalError`.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg

from agentic_rag import tracing
from agentic_rag.protocol import EntityRef, GraphIntent, GraphPath, GraphResult
from agentic_rag.protocol.base import clip_lines
from agentic_rag.protocol.limits import max_len
from agentic_rag.protocol.vocabulary import EDGE_TYPE_BY_NAME, STORED_EDGE_TYPES
from agentic_rag.retrievers.compare import compare_entities
from agentic_rag.retrievers.errors import RetrievalError
from agentic_rag.retrievers.hydrate import exists, labels
from agentic_rag.settings import Settings
from agentic_rag.storage.retry import CONNECTION_ERRORS, with_connection
from agentic_rag.storage.sql import Conn, Pool, Query

HOP_FACTS = 20  # edge qualifiers a path result states
_PATHS = max_len(GraphResult, "paths")
_NODES = max_len(GraphResult, "node_ids")

# Derived edges are two stored hops through an intermediate node.
DERIVED_HOPS: dict[str, tuple[str, str]] = {
    "same_studio": ("animated_by", "animated"),
    "shared_staff": ("staff", "worked_on"),
    "co_appears": ("appears_in", "features"),
    "shares_franchise": ("part_of", "includes"),
}

EXPAND_SQL = Query("""
    SELECT f.src::text, e.rel, e.dst_id::text, e.dst_type, e.detail
    FROM unnest(:frontier::uuid[]) AS f(src)
    CROSS JOIN LATERAL (
        SELECT rel, dst_id, dst_type, detail FROM edge
        WHERE edge.src_id = f.src AND edge.rel = ANY(:rels::text[])
        LIMIT :fanout
    ) e""")

# The qualifier of an edge (a staff role, "main", "younger sister") is stored on one direction only.
DETAIL_SQL = Query("""
    SELECT src_id::text, rel, dst_id::text, detail FROM edge
    WHERE src_id = ANY(:ids::uuid[]) AND dst_id = ANY(:ids::uuid[]) AND detail IS NOT NULL""")

YEARS_SQL = Query("""
    SELECT id::text, year FROM anime WHERE id = ANY(:ids::uuid[])
    UNION ALL SELECT id::text, year FROM manga WHERE id = ANY(:ids::uuid[])""")


@dataclass(frozen=True, slots=True)
class Caps:
    """Server-side ceilings; an intent can ask for less, never more."""

    max_hops: int
    max_results: int
    max_fanout: int
    max_frontier: int
    max_paths: int

    @classmethod
    def from_settings(cls, s: Settings) -> Caps:
        return cls(s.graph_max_hops, s.graph_max_results, s.graph_max_fanout, s.graph_max_frontier,
                   s.graph_max_paths)


@dataclass(slots=True)
class Hop:
    src: str
    rel: str
    dst: str
    dst_type: str
    detail: str | None


def capped(meta: dict[str, Any]) -> bool:
    """Whether a primitive's result was cut by a cap: a limit clamped to the server's, or a frontier truncated."""
    return bool(meta.get("clamped") or meta.get("frontier_truncated") or "frontier_truncated_at_hop" in meta)


class PostgresGraphExecutor:
    """Runs :class:`GraphIntent` against the ``edge`` table with hard caps and timeouts."""

    def __init__(self, pool: Pool, settings: Settings) -> None:
        self._pool = pool
        self._caps = Caps.from_settings(settings)
        self._timeout = settings.query_timeout_ms / 1000
        self._attempts = settings.retry_attempts

    async def execute(self, intent: GraphIntent) -> GraphResult:
        """Run one primitive. No match is a result with count 0; failures raise ``RetrievalError``."""
        try:
            with tracing.span("graph", {"agentic_rag.primitive": intent.query_type,
                                        "agentic_rag.entity_type": intent.start.entity_type}) as span:
                result = await with_connection(self._pool, lambda conn: self._run(conn, intent),
                                               attempts=self._attempts)
                span.set_attributes({"agentic_rag.rows": result.count, "agentic_rag.capped": capped(result.meta)})
                return result
        except (TimeoutError, asyncpg.QueryCanceledError) as exc:
            raise RetrievalError("pg_graph", "timeout", f"graph {intent.query_type} ran past its time limit") from exc
        except CONNECTION_ERRORS as exc:
            raise RetrievalError("pg_graph", "unavailable", f"graph {intent.query_type} failed after "
                                 f"{self._attempts} attempts: {exc}") from exc

    async def _q(self, conn: Conn, query: Query, params: dict[str, Any]) -> list[asyncpg.Record]:
        async with asyncio.timeout(self._timeout):
            return await query.fetch(conn, params)  # fixed text above; values bound

    async def _run(self, conn: Conn, intent: GraphIntent) -> GraphResult:
        clamped: dict[str, list[int]] = {}

        def clamp(name: str, asked: int, cap: int) -> int:
            if asked > cap:
                clamped[name] = [asked, cap]
            return min(asked, cap)

        hops = clamp("max_hops", intent.max_hops, self._caps.max_hops)
        results = clamp("max_results", intent.limits.max_results, self._caps.max_results)
        fanout = clamp("max_fanout_per_hop", intent.limits.max_fanout_per_hop, self._caps.max_fanout)
        meta: dict[str, Any] = {"query_type": intent.query_type}
        if clamped:
            meta["clamped"] = clamped
        for ref in (intent.start, intent.end):
            if ref is not None and not await exists(conn, ref):
                return GraphResult(summary=f"No {ref.entity_type} with id {ref.id} exists in the catalog.",
                                   count=0, meta={**meta, "missing": ref.id})
        run: dict[str, Callable[[], Awaitable[GraphResult]]] = {
            "neighbors": lambda: self._neighbors(conn, intent, results, meta),
            "k_hop": lambda: self._k_hop(conn, intent, hops, results, fanout, meta),
            "path": lambda: self._path(conn, intent, hops, fanout, meta),
            "compare": lambda: compare_entities(conn, intent, meta, self._q),
        }
        return await run[intent.query_type]()

    # -- traversal ------------------------------------------------------------------------------------

    async def _expand(self, conn: Conn, frontier: Sequence[str], rels: Sequence[str], fanout: int) -> list[Hop]:
        if not frontier or not rels:
            return []
        rows = await self._q(conn, EXPAND_SQL, {"frontier": list(frontier), "rels": list(rels), "fanout": fanout})
        return [Hop(*r) for r in rows]

    @staticmethod
    def _stored_rels(edge_types: Sequence[str]) -> list[str]:
        """The stored edge types a traversal follows; derived ones become their two stored hops."""
        if not edge_types:
            return list(STORED_EDGE_TYPES)
        out: list[str] = []
        for name in edge_types:
            for rel in DERIVED_HOPS.get(name, (name,)):
                if rel not in out:
                    out.append(rel)
        return out

    async def _keep(self, conn: Conn, intent: GraphIntent, nodes: list[EntityRef]) -> list[EntityRef]:
        """Apply the intent's node filters (type, year range) to result nodes."""
        f = intent.filters
        if f.node_types:
            nodes = [n for n in nodes if n.entity_type in f.node_types]
        if f.year_min is None and f.year_max is None:
            return nodes
        years = {r[0]: r[1] for r in await self._q(conn, YEARS_SQL, {"ids": [n.id for n in nodes]})}
        lo, hi = f.year_min or -10**6, f.year_max or 10**6
        return [n for n in nodes if n.id not in years or lo <= years[n.id] <= hi]

    async def _neighbors(self, conn: Conn, intent: GraphIntent, results: int, meta: dict[str, Any]) -> GraphResult:
        start = intent.start
        wanted: list[str] = list(intent.edge_types) or list(STORED_EDGE_TYPES)
        stored = [r for r in wanted if r not in DERIVED_HOPS]
        paths: list[GraphPath] = []
        found: dict[str, EntityRef] = {}
        details: dict[str, str] = {}
        for h in await self._expand(conn, [start.id], stored, results):
            if h.detail and h.detail not in details.get(h.dst, "").split(", "):
                details[h.dst] = f"{details[h.dst]}, {h.detail}" if h.dst in details else h.detail
            if h.dst not in found:
                found[h.dst] = EntityRef(entity_type=h.dst_type, id=h.dst)
                paths.append(GraphPath(nodes=[start, found[h.dst]], rels=[h.rel]))
        for derived in (r for r in wanted if r in DERIVED_HOPS):
            first, second = DERIVED_HOPS[derived]
            mids = await self._expand(conn, [start.id], [first], results)
            mid_ref = {m.dst: EntityRef(entity_type=m.dst_type, id=m.dst) for m in mids}
            for h in await self._expand(conn, list(mid_ref), [second], results):
                if h.dst != start.id and h.dst not in found:
                    found[h.dst] = EntityRef(entity_type=h.dst_type, id=h.dst)
                    paths.append(GraphPath(nodes=[start, mid_ref[h.src], found[h.dst]],
                                           rels=[first, second]))
        kept = {n.id for n in await self._keep(conn, intent, list(found.values()))}
        paths = [p for p in paths if p.nodes[-1].id in kept]
        names = await labels(conn, [start, *(n for p in paths for n in p.nodes)])
        years = {n.id: int(y) for n in found.values() for y in [_year(names.get(n.id, ""))] if y}
        paths.sort(key=lambda p: (p.rels[-1] if len(p.rels) == 1 else f"~{intent.edge_types}",
                                  years.get(p.nodes[-1].id, 0), names.get(p.nodes[-1].id, "")))
        paths = paths[:results]
        who = names.get(start.id, start.id)
        via = ", ".join(intent.edge_types) or "any relation"
        if not paths:
            return GraphResult(summary=f"{who} has no neighbors via {via}.", count=0, meta=meta)
        lines = [f"Neighbors of {who} via {via} ({len(paths)}):"]
        lines += [f"- {_describe(p, names)}" + (f" ({details[p.nodes[-1].id]})" if len(p.rels) == 1 and
                                                 p.nodes[-1].id in details else "") for p in paths]
        # the edge qualifiers (staff role, main/supporting, how relatives relate) of direct neighbors
        meta["details"] = {p.nodes[-1].id: details[p.nodes[-1].id] for p in paths
                           if len(p.rels) == 1 and p.nodes[-1].id in details}
        nodes = _unique([start, *(p.nodes[-1] for p in paths)])
        return GraphResult(summary=clip_lines(lines), paths=paths[:_PATHS], node_ids=nodes, count=len(paths), meta=meta)

    async def _k_hop(self, conn: Conn, intent: GraphIntent, hops: int, results: int, fanout: int,
                     meta: dict[str, Any]) -> GraphResult:
        start, rels = intent.start, self._stored_rels(intent.edge_types)
        parent: dict[str, tuple[str, str] | None] = {start.id: None}
        refs: dict[str, EntityRef] = {start.id: start}
        depth: dict[str, int] = {start.id: 0}
        frontier = [start.id]
        for level in range(1, hops + 1):
            nxt: list[str] = []
            for h in await self._expand(conn, frontier, rels, fanout):
                if h.dst not in parent:
                    parent[h.dst] = (h.src, h.rel)
                    refs[h.dst] = EntityRef(entity_type=h.dst_type, id=h.dst)
                    depth[h.dst] = level
                    nxt.append(h.dst)
            if len(nxt) > self._caps.max_frontier:
                meta["frontier_truncated_at_hop"] = level
                nxt = nxt[: self._caps.max_frontier]
            frontier = nxt
            if not frontier or len(parent) > results * 4:
                break
        reached = await self._keep(conn, intent, [refs[n] for n in parent if n != start.id])
        reached = sorted(reached, key=lambda r: depth[r.id])[:results]
        paths = [_chain(r.id, parent, refs) for r in reached[:_PATHS]]
        names = await labels(conn, [start, *(n for p in paths for n in p.nodes)])
        who = names.get(start.id, start.id)
        if not reached:
            return GraphResult(summary=f"Nothing is reachable from {who} within {hops} hops.", count=0, meta=meta)
        meta["depths"] = {r.id: depth[r.id] for r in reached}
        lines = [f"Within {hops} hops of {who} ({len(reached)} nodes, nearest first):"]
        lines += [f"- [{depth[p.nodes[-1].id]}] {_describe(p, names)}" for p in paths]
        return GraphResult(summary=clip_lines(lines), paths=paths, node_ids=_unique([start, *reached]),
                           count=len(reached), meta=meta)

    async def _path(self, conn: Conn, intent: GraphIntent, hops: int, fanout: int,
                    meta: dict[str, Any]) -> GraphResult:
        """Bidirectional breadth-first search; returns up to max_paths shortest chains."""
        assert intent.end is not None  # GraphIntent guarantees it for path
        start, end = intent.start, intent.end
        rels = self._stored_rels(intent.edge_types)
        back_rels = list(dict.fromkeys(EDGE_TYPE_BY_NAME[r].inverse for r in rels))
        refs = {start.id: start, end.id: end}
        # fwd[x]: ways to reach x from start as (prev, rel prev->x); bwd[x]: (next, rel x->next) toward end
        fwd: dict[str, list[tuple[str, str]]] = {start.id: []}
        bwd: dict[str, list[tuple[str, str]]] = {end.id: []}
        dist_f, dist_b = {start.id: 0}, {end.id: 0}
        front_f, front_b = [start.id], [end.id]
        while not (set(fwd) & set(bwd)) and dist_f[front_f[0]] + dist_b[front_b[0]] < hops:
            forward = len(front_f) <= len(front_b)
            frontier, seen, dist = (front_f, fwd, dist_f) if forward else (front_b, bwd, dist_b)
            nxt: list[str] = []
            for h in await self._expand(conn, frontier, rels if forward else back_rels, fanout):
                link = (h.src, h.rel if forward else EDGE_TYPE_BY_NAME[h.rel].inverse)
                if h.dst not in seen:
                    seen[h.dst] = [link]
                    dist[h.dst] = dist[h.src] + 1
                    refs[h.dst] = EntityRef(entity_type=h.dst_type, id=h.dst)
                    nxt.append(h.dst)
                elif dist[h.dst] == dist[h.src] + 1 and len(seen[h.dst]) < 4:
                    seen[h.dst].append(link)
            if len(nxt) > self._caps.max_frontier:
                meta["frontier_truncated"] = True
                nxt = nxt[: self._caps.max_frontier]
            if not nxt:
                break
            if forward:
                front_f = nxt
            else:
                front_b = nxt
        meet = set(fwd) & set(bwd)
        names = await labels(conn, [start, end])
        a, b = names.get(start.id, start.id), names.get(end.id, end.id)
        if not meet:
            return GraphResult(summary=f"No path between {a} and {b} within {hops} hops.", count=0, meta=meta)
        best = min(dist_f[m] + dist_b[m] for m in meet)
        paths: list[GraphPath] = []
        for m in sorted(m for m in meet if dist_f[m] + dist_b[m] == best):
            for head in _walk(m, fwd, reverse=True):
                for tail in _walk(m, bwd, reverse=False):
                    nodes, edge_rels = head[0] + tail[0][1:], head[1] + tail[1]
                    path = GraphPath(nodes=[refs[n] for n in nodes], rels=edge_rels)
                    if path not in paths:
                        paths.append(path)
        paths = paths[: self._caps.max_paths]
        names = await labels(conn, [n for p in paths for n in p.nodes])
        meta["hops"] = best
        facts = await self._hop_facts(conn, paths, names)
        if facts:
            meta["facts"] = facts
        lines = [f"{len(paths)} shortest path(s) of {best} hop(s) between {a} and {b}:"]
        lines += [f"- {_describe(p, names, full=True)}" for p in paths]
        lines += [f"- {f}" for f in facts]
        return GraphResult(summary=clip_lines(lines), paths=paths,
                           node_ids=_unique([n for p in paths for n in p.nodes]), count=len(paths), meta=meta)


    async def _hop_facts(self, conn: Conn, paths: list[GraphPath], names: dict[str, str]) -> list[str]:
        """Readable qualifiers of the paths' edges ("Pan is Son Goku's granddaughter"), read in either
        direction because a qualifier is stored on one direction of an edge pair only."""
        ids = list({n.id for p in paths for n in p.nodes})
        stored = {(a, r, b): d for a, r, b, d in await self._q(conn, DETAIL_SQL, {"ids": ids})}
        out: list[str] = []
        for p in paths:
            for rel, x, y in zip(p.rels, p.nodes, p.nodes[1:], strict=False):
                nx, ny = (_bare(names.get(n.id, n.id)) for n in (x, y))
                if d := stored.get((x.id, rel, y.id)):
                    fact = _detail_fact(ny, nx, d, rel)
                elif d := stored.get((y.id, EDGE_TYPE_BY_NAME[rel].inverse, x.id)):
                    fact = _detail_fact(nx, ny, d, EDGE_TYPE_BY_NAME[rel].inverse, rel)
                else:
                    continue
                if fact not in out:
                    out.append(fact)
        return out[:HOP_FACTS]


# what the far end of an edge is to its near end, when the edge's detail is no such word ("Team 7")
_ROLE_OF = {"teammate": "teammate", "ally": "ally", "rival": "rival", "enemy": "enemy", "mentor_of": "student",
            "student_of": "teacher", "family": "relative", "romantic": "partner"}
# a detail that is no role word: a group ("Team 7", "6th Division"), a clause ("after Geto became a curse user"), or
# a role said with its own pronoun ("his adjutant")
_NOT_A_ROLE = re.compile(r"^(?:[A-Z0-9]|(?:his|her|their|its|she|he|they|after|before|when|the|a|an)\b)|"
                         r"\b(?:team|division|army|crew|pirates|corps|squad|clan|organization)$")


def _detail_fact(far: str, near: str, detail: str, rel: str, said: str | None = None) -> str:
    """An edge's detail as a fact: "Pan is Son Goku's granddaughter (family)" where the detail is a role word, else
    the role the edge says with the detail beside it ("Shuichi Aizawa is L Lawliet's teammate (Kira investigation
    team) (teammate)"). ``rel``: the edge from ``near`` to ``far``; ``said``: the edge the path named."""
    if _NOT_A_ROLE.search(detail) is None:
        return f"{far} is {near}'s {detail} ({said or rel})"
    return f"{far} is {near}'s {_ROLE_OF.get(rel, rel.replace('_', ' '))} ({detail}) ({said or rel})"


def _bare(label: str) -> str:
    """ "Name (type, year)" -> "Name" """
    return label.rsplit(" (", 1)[0]


def _walk(node: str, links: dict[str, list[tuple[str, str]]], *, reverse: bool,
          limit: int = 8) -> list[tuple[list[str], list[str]]]:
    """Chains of (nodes, rels) from the search root to ``node`` (reverse) or from ``node`` to it."""
    if not links[node]:
        return [([node], [])]
    out: list[tuple[list[str], list[str]]] = []
    for other, rel in links[node]:
        for nodes, rels in _walk(other, links, reverse=reverse, limit=limit):
            out.append(([*nodes, node], [*rels, rel]) if reverse else ([node, *nodes], [rel, *rels]))
            if len(out) >= limit:
                return out
    return out


def _chain(node: str, parent: dict[str, tuple[str, str] | None], refs: dict[str, EntityRef]) -> GraphPath:
    nodes: list[str] = [node]
    rels: list[str] = []
    while (link := parent[nodes[0]]) is not None:
        nodes.insert(0, link[0])
        rels.insert(0, link[1])
    return GraphPath(nodes=[refs[n] for n in nodes], rels=rels)


def _describe(path: GraphPath, names: dict[str, str], *, full: bool = False) -> str:
    if not full and len(path.rels) == 1:
        return f"{path.rels[0]}: {names.get(path.nodes[-1].id, path.nodes[-1].id)} [id {path.nodes[-1].id}]"
    parts = [names.get(path.nodes[0].id, path.nodes[0].id)]
    for rel, node in zip(path.rels, path.nodes[1:], strict=True):
        parts.append(f"--{rel}--> {names.get(node.id, node.id)}")
    return " ".join(parts) + f" [end id {path.nodes[-1].id}]"


def _year(label: str) -> str | None:
    tail = label.rsplit(", ", 1)[-1].rstrip(")")
    return tail if tail.isdigit() else None


def _unique(refs: Sequence[EntityRef]) -> list[EntityRef]:
    return list(dict.fromkeys(refs))[:_NODES]
