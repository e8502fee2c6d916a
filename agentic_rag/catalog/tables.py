"""Which catalog tables exist, their columns in load order, and the demo catalog as table rows."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from agentic_rag.catalog.ids import entity_id, episode_key
from agentic_rag.catalog.records import Catalog
from agentic_rag.protocol.vocabulary import EDGE_TYPE_BY_NAME


@dataclass(frozen=True, slots=True)
class Table:
    name: str
    columns: tuple[str, ...]
    key: tuple[str, ...]

    @property
    def value_columns(self) -> tuple[str, ...]:
        return tuple(c for c in self.columns if c not in self.key)


def _t(name: str, columns: str, key: str = "id") -> Table:
    return Table(name, tuple(columns.split()), tuple(key.split()))


# Parents before children: loads go in this order, deletions in reverse.
TABLES: tuple[Table, ...] = (
    _t("franchise", "id key source name description popularity extra"),
    _t("studio", "id key source name founded popularity extra"),
    _t("person", "id key source name native_name aliases popularity extra"),
    _t("anime", "id key source title title_native title_romaji aliases format year end_year episode_count "
                "status genres popularity synopsis franchise_id extra"),
    _t("manga", "id key source title title_native title_romaji aliases year end_year volumes status magazine "
                "genres popularity synopsis franchise_id extra"),
    _t("character", "id key source name name_native aliases description popularity extra"),
    _t("episode", "id key source anime_id number title season aired"),
    _t("anime_related_anime", "anime_id related_anime_id relation_type source",
       "anime_id related_anime_id relation_type"),
    _t("anime_related_manga", "anime_id manga_id relation_type source", "anime_id manga_id relation_type"),
    _t("anime_character", "anime_id character_id role source", "anime_id character_id"),
    _t("manga_character", "manga_id character_id source", "manga_id character_id"),
    _t("character_relationship", "character_id related_character_id relation_type detail source",
       "character_id related_character_id relation_type"),
    _t("anime_studio", "anime_id studio_id source", "anime_id studio_id"),
    _t("anime_staff", "anime_id person_id role source", "anime_id person_id role"),
    _t("manga_author", "manga_id person_id role source", "manga_id person_id role"),
)
# Where an entity's image is (migration 0012): loaded with the demo catalog's tables, apart from TABLES (the
# synthetic catalog has no images).
IMAGE_TABLE = _t("entity_image", "entity_id entity_type location source", "entity_id")
TABLE_BY_NAME = {t.name: t for t in TABLES}
ENTITY_TABLES = ("franchise", "studio", "person", "anime", "manga", "character", "episode")
RELATION_TABLES = tuple(t.name for t in TABLES if t.name not in ENTITY_TABLES)

Row = tuple[Any, ...]


def _once(seen: set[tuple[str, str, str]], a: str, b: str, rel: str) -> bool:
    """False if this link, or its converse (b, a, inverse), was already emitted: one fact, one row."""
    converse = (b, a, EDGE_TYPE_BY_NAME[rel].inverse)
    if (a, b, rel) in seen or converse in seen:
        return False
    seen.add((a, b, rel))
    return True


def demo_rows(cat: Catalog, source: str = "demo") -> dict[str, list[Row]]:
    """Every table's rows for the shipped catalog, ids derived from natural keys."""
    def eid(kind: str, key: str) -> str:
        return str(entity_id(kind, key))

    def js(d: dict[str, Any]) -> dict[str, Any]:  # jsonb goes in as the value itself (storage.postgres codec)
        return dict(sorted(d.items()))

    anime_pop = {a.key: a.popularity for a in cat.anime}
    manga_pop = {m.key: m.popularity for m in cat.manga}
    franchise_pop: dict[str, int] = {}
    for key, fkey in [*cat.anime_franchise.items(), *cat.manga_franchise.items()]:
        pop = anime_pop.get(key, manga_pop.get(key, 0))
        franchise_pop[fkey] = max(franchise_pop.get(fkey, 0), pop)
    rows: dict[str, list[Row]] = {t.name: [] for t in TABLES}
    rows[IMAGE_TABLE.name] = []
    links: set[tuple[str, str, str]] = set()

    for f in cat.franchises:
        rows["franchise"].append(
            (eid("franchise", f.key), f.key, source, f.name, f.description, franchise_pop.get(f.key, 0), "{}")
        )
    studio_works: dict[str, int] = {}
    for a in cat.anime:
        for sk in a.studios:
            studio_works[sk] = studio_works.get(sk, 0) + 1
    for st in cat.studios:
        rows["studio"].append(
            (eid("studio", st.key), st.key, source, st.name, st.founded, min(100, 10 * studio_works.get(st.key, 0)),
             "{}")
        )
    person_works: dict[str, int] = {}
    for a in cat.anime:
        for c in a.staff:
            person_works[c.person] = person_works.get(c.person, 0) + 1
    for m in cat.manga:
        for mc in m.authors:
            person_works[mc.person] = person_works.get(mc.person, 0) + 1
    for p in cat.people:
        rows["person"].append(
            (eid("person", p.key), p.key, source, p.name, p.native_name, list(p.aliases),
             min(100, 10 * person_works.get(p.key, 0)), "{}")
        )
    for a in cat.anime:
        aid = eid("anime", a.key)
        afr = cat.anime_franchise.get(a.key)
        rows["anime"].append(
            (aid, a.key, source, a.title, a.title_native, a.title_romaji, list(a.aliases), a.format, a.year,
             a.end_year, a.episodes, a.status, list(a.genres), a.popularity, a.synopsis,
             eid("franchise", afr) if afr else None, js(a.extra))
        )
        for link in a.relations:
            if _once(links, aid, eid("anime", link.to), link.type):
                rows["anime_related_anime"].append((aid, eid("anime", link.to), link.type, source))
        for mk in a.adapted_from:
            rows["anime_related_manga"].append((aid, eid("manga", mk), "adapted_from", source))
        for sk in a.studios:
            rows["anime_studio"].append((aid, eid("studio", sk), source))
        for c in a.staff:
            rows["anime_staff"].append((aid, eid("person", c.person), c.role, source))
    for m in cat.manga:
        mid = eid("manga", m.key)
        mfr = cat.manga_franchise.get(m.key)
        rows["manga"].append(
            (mid, m.key, source, m.title, m.title_native, m.title_romaji, list(m.aliases), m.year, m.end_year,
             m.volumes, m.status, m.magazine, list(m.genres), m.popularity, m.synopsis,
             eid("franchise", mfr) if mfr else None, js(m.extra))
        )
        for mc in m.authors:
            rows["manga_author"].append((mid, eid("person", mc.person), mc.role, source))
    for ch in cat.characters:
        cid = eid("character", ch.key)
        rows["character"].append(
            (cid, ch.key, source, ch.name, ch.name_native, list(ch.aliases), ch.description, ch.popularity,
             js(ch.extra))
        )
        for ap in ch.appears_in:
            rows["anime_character"].append((eid("anime", ap.anime), cid, ap.role, source))
        for mk in ch.manga:
            rows["manga_character"].append((eid("manga", mk), cid, source))
        for cl in ch.relations:
            if _once(links, cid, eid("character", cl.to), cl.type):
                rows["character_relationship"].append((cid, eid("character", cl.to), cl.type, cl.detail, source))
    for e in cat.episodes:
        key = episode_key(e.anime, e.number)
        rows["episode"].append(
            (eid("episode", key), key, source, eid("anime", e.anime), e.number, e.title, e.season,
             dt.date.fromisoformat(e.aired) if e.aired else None)
        )
    for ref, location in sorted(cat.images.items()):
        kind, key = ref.split(":", 1)
        rows[IMAGE_TABLE.name].append((eid(kind, key), kind, location, source))
    return rows
