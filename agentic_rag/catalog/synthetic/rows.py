"""The synthetic catalog's rows: exact counts up front, then any table's rows streamed in chunks.

The rows come from the structure laid out by :mod:`~agentic_rag.catalog.synthetic.structure`,
table by table in fixed-size chunks, so a large catalog is never held in Python as rows at once.

Names, titles and synopses are built from syllable and word lists by hashing ``(seed, entity)``,
so any entity's text can be produced independently of every other. Keys start with ``syn-`` and
never collide with the demo catalog; ids are :func:`~agentic_rag.catalog.ids.entity_id`.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cached_property

import numpy as np

from agentic_rag.catalog.ids import episode_key
from agentic_rag.catalog.synthetic.hashing import _hash, _pick, _unit, _word, uuid5_ids
from agentic_rag.catalog.synthetic.structure import _SEGMENT, _build, entity_counts, fingerprint
from agentic_rag.catalog.synthetic.words import (
    _ADJ,
    _ARCHETYPES,
    _EMPTY,
    _FAMILY_DETAILS,
    _FORMAT_WORDS,
    _FORMATS,
    _GEN,
    _GOALS,
    _MAGAZINES,
    _NOMINAL_EPISODES,
    _NOUN,
    _PARTS,
    _STUDIO_FORMS,
    _TRAITS,
    ANIME_RELATIONS,
    ANIME_STAFF_ROLES,
    CHARACTER_RELATIONS,
    CHARACTER_ROLES,
    GENRES,
    MANGA_AUTHOR_ROLES,
    Arr,
    _obj,
)
from agentic_rag.catalog.tables import ENTITY_TABLES, RELATION_TABLES, TABLES, Row

SOURCE = "synthetic"
CHUNK_ROWS = 50_000  # rows per generated chunk; fixed, though the rows do not depend on it


# The entity types a relation table's first two columns refer to.
_REFERENCES: dict[str, tuple[str, str]] = {
    "anime_related_anime": ("anime", "anime"), "anime_related_manga": ("anime", "manga"),
    "anime_character": ("anime", "character"), "manga_character": ("manga", "character"),
    "character_relationship": ("character", "character"), "anime_studio": ("anime", "studio"),
    "anime_staff": ("anime", "person"), "manga_author": ("manga", "person"),
}


def _key(entity_type: str, idx: Arr) -> list[str]:
    return [f"syn-{entity_type}-{i}" for i in idx.tolist()]


class SyntheticCatalog:
    """A generated catalog: exact row counts up front, rows streamed per table in chunks.

    Building it lays out the graph's structure (numpy arrays); :meth:`chunks` then produces any
    table's rows chunk by chunk. The rows are a pure function of ``(n, seed)``.
    """

    def __init__(self, n: int, seed: int = 0) -> None:
        if seed < 0:
            raise ValueError(f"seed must be >= 0, got {seed}")
        self.n, self.seed = n, seed
        self.entities = entity_counts(n)
        self._st = _build(n, seed)
        self._id_cache: dict[str, Arr] = {}

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.n, self.seed)

    @cached_property
    def counts(self) -> dict[str, int]:
        """Rows each table will receive, in load order."""
        out: dict[str, int] = {}
        for t in TABLES:
            out[t.name] = self.entities[t.name] if t.name in ENTITY_TABLES else len(self._st.rel[t.name][0])
        return out

    @property
    def relation_rows(self) -> int:
        """Relation rows: every relation table plus each episode's link to its anime."""
        return sum(self.counts[t] for t in RELATION_TABLES) + self.counts["episode"]

    @cached_property
    def expected_edges(self) -> int:
        """Rows the edge table gains: both directions of every fact (staff credits merged per person)."""
        rel = self._st.rel
        facts = sum(len(rel[t][0]) for t in ("episode", "anime_related_anime", "anime_related_manga",
                                              "anime_character", "manga_character", "character_relationship",
                                              "anime_studio"))
        staff = len(np.unique(rel["anime_staff"][0] * self.entities["person"] + rel["anime_staff"][1]))
        authors = len(np.unique(rel["manga_author"][0] * self.entities["person"] + rel["manga_author"][1]))
        part_of = int((self._st.a_fr >= 0).sum() + (self._st.m_fr >= 0).sum())
        return 2 * (facts + staff + authors + part_of)

    # ids: one S36 array per entity type, computed on first use
    def _ids(self, entity_type: str) -> Arr:
        cache = self._id_cache
        if entity_type not in cache:
            if entity_type == "episode":
                ep_a, ep_n = self._st.rel["episode"]
                keys = [episode_key(f"syn-anime-{a}", k) for a, k in zip(ep_a.tolist(), ep_n.tolist(), strict=True)]
            else:
                keys = _key(entity_type, np.arange(self.entities[entity_type]))
            cache[entity_type] = uuid5_ids(entity_type, keys)
        return cache[entity_type]

    def _id(self, entity_type: str, idx: Arr) -> list[str]:
        out: list[str] = self._ids(entity_type)[idx].astype("U36").tolist()
        return out

    def _opt_id(self, entity_type: str, idx: Arr) -> list[str | None]:
        ids = self._ids(entity_type)[np.maximum(idx, 0)].astype("U36").astype(object)
        ids[idx < 0] = None
        out: list[str | None] = ids.tolist()
        return out

    def _uuid_rank(self, entity_type: str) -> Arr:
        """Each entity's position in uuid order (PostgreSQL's order of uuid values)."""
        ids = self._ids(entity_type)
        rank = np.empty(len(ids), dtype=np.int64)
        rank[np.argsort(ids, kind="stable")] = np.arange(len(ids))
        return rank

    def _order(self, table: str) -> Arr:
        """Rows in primary-key order: index insertion then appends, and foreign-key lookups run in order."""
        if table in ENTITY_TABLES:
            return np.argsort(self._ids(table), kind="stable")
        left, right = _REFERENCES[table]
        cols = self._st.rel[table]
        order: Arr = np.lexsort((self._uuid_rank(right)[cols[1]], self._uuid_rank(left)[cols[0]]))
        return order

    def chunks(self, table: str) -> Iterator[list[Row]]:
        """The rows of ``table`` in chunks of at most :data:`CHUNK_ROWS`, in primary-key order."""
        total = self.counts[table]
        make = getattr(self, f"_rows_{table}")
        order = self._order(table)
        for lo in range(0, total, CHUNK_ROWS):
            rows: list[Row] = make(order[lo:lo + CHUNK_ROWS])
            yield rows

    def rows(self, table: str) -> Iterator[Row]:
        for chunk in self.chunks(table):
            yield from chunk

    # -- entity tables ---------------------------------------------------------------------------

    def _franchise_names(self, f: Arr) -> tuple[Arr, Arr, Arr]:
        """(title, romaji, native) of franchises: 'Kasumi no Tsurugi' or 'Crimson Blade'."""
        h = _hash(self.seed, "franchise-name", f)
        w1, k1 = _word(h, 2, 3, 0)
        w2, k2 = _word(h, 2, 3, 24)
        romaji = w1 + " no " + w2
        native = k1 + "ノ" + k2
        english = _ADJ[_pick(h, len(_ADJ), 50)] + " " + _NOUN[_pick(h, len(_NOUN), 56)]
        title = np.where(_pick(h, 2, 62) == 0, romaji, english)
        return title, romaji, native

    def _standalone_names(self, salt: str, idx: Arr) -> tuple[Arr, Arr, Arr]:
        h = _hash(self.seed, salt, idx)
        w1, k1 = _word(h, 2, 3, 0)
        w2, k2 = _word(h, 2, 3, 24)
        pattern = _pick(h, 3, 60)
        romaji = np.where(pattern == 0, w1 + " " + w2, w1 + " no " + w2)
        native = np.where(pattern == 0, k1 + "・" + k2, k1 + "ノ" + k2)
        english = np.where(pattern == 2, _NOUN[_pick(h, len(_NOUN), 50)] + " of " + w1,
                           _ADJ[_pick(h, len(_ADJ), 50)] + " " + _NOUN[_pick(h, len(_NOUN), 55)])
        title = np.where(_pick(h, 2, 62) == 0, romaji, english)
        return title, romaji, native

    def _anime_titles(self, a: Arr) -> tuple[Arr, Arr, Arr]:
        st = self._st
        fr = st.a_fr[a]
        title, romaji, native = self._standalone_names("anime-title", a)  # adapted manga share these
        inf = np.flatnonzero(fr >= 0)
        if len(inf):
            ft, fro, fn = self._franchise_names(fr[inf])
            q = np.maximum(st.a_main_q[a[inf]], 0)  # films and specials take the franchise's own title
            seg, season = q // _SEGMENT, q % _SEGMENT + 1
            h = _hash(self.seed, "franchise-seg", fr[inf] * 1000 + np.maximum(seg, 0))
            phrase = _ADJ[_pick(h, len(_ADJ))] + " " + _NOUN[_pick(h, len(_NOUN), 8)]
            sub_r, sub_k = _word(h, 2, 3, 16)
            base_t = np.where(seg > 0, ft + ": " + phrase, ft)
            base_r = np.where(seg > 0, fro + ": " + sub_r, fro)
            base_n = np.where(seg > 0, fn + "　" + sub_k, fn)
            fmt = st.a_fmt[a[inf]]
            season_s = np.array([str(s) for s in range(max(2, int(season.max()) + 1))], dtype=object)[season]
            hv = _hash(self.seed, "anime-subtitle", a[inf])
            noun = _NOUN[_pick(hv, len(_NOUN))]
            t = np.where(season > 1, base_t + " Season " + season_s, base_t)
            r = np.where(season > 1, base_r + " Season " + season_s, base_r)
            nv = np.where(season > 1, base_n + " 第" + season_s + "期", base_n)
            t = np.where(fmt == 1, base_t + " the Movie: " + noun, t)
            r = np.where(fmt == 1, "Gekijōban " + base_r, r)
            nv = np.where(fmt == 1, "劇場版 " + base_n, nv)
            t = np.where(fmt == 2, base_t + " OVA", t)
            r = np.where(fmt == 2, base_r + " OVA", r)
            nv = np.where(fmt == 2, base_n + " OVA", nv)
            t = np.where(fmt == 4, base_t + " Recap Special", t)
            r = np.where(fmt == 4, base_r + " Tokubetsu-hen", r)
            nv = np.where(fmt == 4, base_n + " 特別編", nv)
            title[inf], romaji[inf], native[inf] = t, r, nv
        return title, romaji, native

    def _genres(self, salt: str, idx: Arr) -> list[list[str]]:
        h = _hash(self.seed, salt, idx)
        k = 1 + _pick(h, 4)
        g = [_pick(h, len(GENRES), 2 + 5 * j) for j in range(4)]
        out: list[list[str]] = []
        for i, kk in enumerate(k.tolist()):
            seen: list[str] = []
            for j in range(kk):
                name = GENRES[int(g[j][i])]
                if name not in seen:
                    seen.append(name)
            out.append(seen)
        return out

    def _rows_franchise(self, f: Arr) -> list[Row]:
        st = self._st
        title, _, _ = self._franchise_names(f)
        h = _hash(self.seed, "franchise-desc", f)
        genre = _GEN[_pick(h, len(_GEN))]
        desc = [
            f"A {g.replace('_', ' ')} franchise begun in {y}, spanning {na} anime and {nm} manga."
            for g, y, na, nm in zip(genre.tolist(), st.fr_year[f].tolist(), st.fr_anime[f].tolist(),
                                    st.fr_manga[f].tolist(), strict=True)
        ]
        return list(zip(self._id("franchise", f), _key("franchise", f), [SOURCE] * len(f), title.tolist(), desc,
                        st.pop["franchise"][f].tolist(), [{}] * len(f), strict=True))

    def _rows_studio(self, s: Arr) -> list[Row]:
        h = _hash(self.seed, "studio", s)
        w, _ = _word(h, 2, 3, 0)
        forms = _pick(h, len(_STUDIO_FORMS), 40)
        names = [_STUDIO_FORMS[f].format(x) for f, x in zip(forms.tolist(), w.tolist(), strict=True)]
        founded = (1950 + _pick(h, 71, 48)).tolist()
        return list(zip(self._id("studio", s), _key("studio", s), [SOURCE] * len(s), names, founded,
                        self._st.pop["studio"][s].tolist(), [{}] * len(s), strict=True))

    def _person_names(self, salt: str, idx: Arr) -> tuple[Arr, Arr, Arr]:
        h = _hash(self.seed, salt, idx)
        given, gk = _word(h, 2, 3, 0)
        family, fk = _word(h, 2, 4, 24)
        return given + " " + family, fk + "・" + gk, given

    def _rows_person(self, p: Arr) -> list[Row]:
        name, native, _ = self._person_names("person", p)
        return list(zip(self._id("person", p), _key("person", p), [SOURCE] * len(p), name.tolist(), native.tolist(),
                        [[] for _ in range(len(p))], self._st.pop["person"][p].tolist(), [{}] * len(p),
                        strict=True))

    def _rows_anime(self, a: Arr) -> list[Row]:
        st = self._st
        title, romaji, native = self._anime_titles(a)
        h = _hash(self.seed, "anime", a)
        fmt, year = st.a_fmt[a], st.a_year[a]
        airing = (year >= 2023) & (_unit(h) < 0.5) & np.isin(fmt, (0, 3))
        span = np.where(np.isin(fmt, (1, 4)), 0, _pick(h, 3, 20))
        end_year = np.where(airing, -1, np.minimum(2025, year + span))
        nominal = np.array(_NOMINAL_EPISODES)[_pick(h, len(_NOMINAL_EPISODES), 24)]
        nominal = np.select([fmt == 1, fmt == 4, fmt == 2, fmt == 3], [1, 1 + _pick(h, 3, 28), 1 + _pick(h, 6, 28),
                                                                      6 + _pick(h, 8, 28)], nominal)
        episodes = np.maximum(nominal, st.a_eps[a])
        alias = np.where(_unit(_hash(self.seed, "anime-alias", a)) < 0.3, romaji, _EMPTY[0])
        fmt_s = np.array(_FORMATS, dtype=object)[fmt].tolist()
        syn_h = _hash(self.seed, "anime-synopsis", a)
        genres = self._genres("anime-genres", a)
        synopsis = [
            f"A {g[0].replace('_', ' ')} {_FORMAT_WORDS[f]} in which {_ARCHETYPES[x]} {_GOALS[y]}."
            for g, f, x, y in zip(genres, fmt.tolist(), _pick(syn_h, len(_ARCHETYPES)).tolist(),
                                  _pick(syn_h, len(_GOALS), 8).tolist(), strict=True)
        ]
        n = len(a)
        return list(zip(
            self._id("anime", a), _key("anime", a), [SOURCE] * n, title.tolist(), native.tolist(), romaji.tolist(),
            [[x] if x and x != t else [] for x, t in zip(alias.tolist(), title.tolist(), strict=True)],
            fmt_s, year.tolist(), [None if e < 0 else e for e in end_year.tolist()], episodes.tolist(),
            ["airing" if x else "finished" for x in airing.tolist()], genres, st.pop["anime"][a].tolist(),
            synopsis, self._opt_id("franchise", st.a_fr[a]), [{}] * n, strict=True,
        ))

    def _rows_manga(self, m: Arr) -> list[Row]:
        st = self._st
        kind, fr = st.m_kind[m], st.m_fr[m]
        title, romaji, native = self._standalone_names("manga-title", m)
        shared = st.m_title_of[m]
        if (shared >= 0).any():  # a standalone manga adapted by an anime: the anime's title is the manga's
            t2, r2, n2 = self._standalone_names("anime-title", shared[shared >= 0])
            title[shared >= 0], romaji[shared >= 0], native[shared >= 0] = t2, r2, n2
        inf = np.flatnonzero(kind > 0)
        if len(inf):
            ft, fro, fn = self._franchise_names(fr[inf])
            h = _hash(self.seed, "manga-spin", m[inf])
            phrase = _ADJ[_pick(h, len(_ADJ))] + " " + _NOUN[_pick(h, len(_NOUN), 8)]
            sub_r, sub_k = _word(h, 2, 3, 16)
            spin = kind[inf] == 2
            title[inf] = np.where(spin, ft + ": " + phrase, ft)
            romaji[inf] = np.where(spin, fro + " Gaiden: " + sub_r, fro)
            native[inf] = np.where(spin, fn + "外伝　" + sub_k, fn)
        h = _hash(self.seed, "manga", m)
        year = st.m_year[m]
        ongoing = (year >= 2015) & (_unit(h) < 0.4)
        end_year = np.minimum(2025, year + 1 + _pick(h, 12, 20))
        volumes = np.minimum(120, 1 + np.floor(np.exp(_unit(_hash(self.seed, "volumes", m)) * 4.2))).astype(np.int64)
        magazine = np.array(_MAGAZINES, dtype=object)[_pick(h, len(_MAGAZINES), 28)].tolist()
        genres = self._genres("manga-genres", m)
        syn_h = _hash(self.seed, "manga-synopsis", m)
        synopsis = [
            f"A {g[0].replace('_', ' ')} manga in which {_ARCHETYPES[x]} {_GOALS[y]}."
            for g, x, y in zip(genres, _pick(syn_h, len(_ARCHETYPES)).tolist(), _pick(syn_h, len(_GOALS), 8).tolist(),
                               strict=True)
        ]
        n = len(m)
        return list(zip(
            self._id("manga", m), _key("manga", m), [SOURCE] * n, title.tolist(), native.tolist(), romaji.tolist(),
            [[] for _ in range(n)], year.tolist(),
            [None if o else e for o, e in zip(ongoing.tolist(), end_year.tolist(), strict=True)], volumes.tolist(),
            ["ongoing" if o else "finished" for o in ongoing.tolist()], magazine, genres,
            st.pop["manga"][m].tolist(), synopsis, self._opt_id("franchise", fr), [{}] * n, strict=True,
        ))

    def _rows_character(self, c: Arr) -> list[Row]:
        name, native, given = self._person_names("character", c)
        h = _hash(self.seed, "character-extra", c)
        u = _unit(h)
        epithet = "the " + _ADJ[_pick(h, len(_ADJ), 8)] + " " + _NOUN[_pick(h, len(_NOUN), 16)]
        aliases = [
            [g] if x < 0.2 else ([e] if x < 0.25 else [])
            for x, g, e in zip(u.tolist(), given.tolist(), epithet.tolist(), strict=True)
        ]
        desc = [
            f"A {_TRAITS[t]} {_PARTS[p]}."
            for t, p in zip(_pick(h, len(_TRAITS), 24).tolist(), _pick(h, len(_PARTS), 32).tolist(), strict=True)
        ]
        n = len(c)
        return list(zip(self._id("character", c), _key("character", c), [SOURCE] * n, name.tolist(), native.tolist(),
                        aliases, desc, self._st.pop["character"][c].tolist(), [{}] * n, strict=True))

    def _rows_episode(self, e: Arr) -> list[Row]:
        st = self._st
        ep_a, ep_n = (x[e] for x in st.rel["episode"])
        h = _hash(self.seed, "episode", e)
        title = ("The " + _ADJ[_pick(h, len(_ADJ))] + " " + _NOUN[_pick(h, len(_NOUN), 8)]).tolist()
        season = (1 + (ep_n - 1) // 26).tolist()
        start = ((st.a_year[ep_a] - 1970) * 12 + st.a_month[ep_a] - 1).astype("datetime64[M]").astype("datetime64[D]")
        aired = start + (7 * (ep_n - 1)).astype("timedelta64[D]")
        aired_s = aired.astype(object)  # datetime.date values, for the date column
        aired_s[aired > np.datetime64("2025-12-31")] = None
        keys = [episode_key(f"syn-anime-{a}", k) for a, k in zip(ep_a.tolist(), ep_n.tolist(), strict=True)]
        n = len(e)
        return list(zip(self._id("episode", e), keys, [SOURCE] * n, self._id("anime", ep_a), ep_n.tolist(), title,
                        season, aired_s.tolist(), strict=True))

    # -- relation tables -------------------------------------------------------------------------

    def _rel(self, table: str, i: Arr) -> tuple[Arr, ...]:
        return tuple(col[i] for col in self._st.rel[table])

    def _rows_anime_related_anime(self, i: Arr) -> list[Row]:
        a, b, t = self._rel("anime_related_anime", i)
        return list(zip(self._id("anime", a), self._id("anime", b), _obj(ANIME_RELATIONS)[t].tolist(),
                        [SOURCE] * len(i), strict=True))

    def _rows_anime_related_manga(self, i: Arr) -> list[Row]:
        a, m = self._rel("anime_related_manga", i)
        return list(zip(self._id("anime", a), self._id("manga", m), ["adapted_from"] * len(i), [SOURCE] * len(i),
                        strict=True))

    def _rows_anime_character(self, i: Arr) -> list[Row]:
        a, c, r = self._rel("anime_character", i)
        return list(zip(self._id("anime", a), self._id("character", c), _obj(CHARACTER_ROLES)[r].tolist(),
                        [SOURCE] * len(i), strict=True))

    def _rows_manga_character(self, i: Arr) -> list[Row]:
        m, c = self._rel("manga_character", i)
        return list(zip(self._id("manga", m), self._id("character", c), [SOURCE] * len(i), strict=True))

    def _rows_character_relationship(self, i: Arr) -> list[Row]:
        a, b, t, d = self._rel("character_relationship", i)
        details = np.array([*_FAMILY_DETAILS, None], dtype=object)[d]  # -1 picks the trailing None
        return list(zip(self._id("character", a), self._id("character", b), _obj(CHARACTER_RELATIONS)[t].tolist(),
                        details.tolist(), [SOURCE] * len(i), strict=True))

    def _rows_anime_studio(self, i: Arr) -> list[Row]:
        a, s = self._rel("anime_studio", i)
        return list(zip(self._id("anime", a), self._id("studio", s), [SOURCE] * len(i), strict=True))

    def _rows_anime_staff(self, i: Arr) -> list[Row]:
        a, p, r = self._rel("anime_staff", i)
        return list(zip(self._id("anime", a), self._id("person", p), _obj(ANIME_STAFF_ROLES)[r].tolist(),
                        [SOURCE] * len(i), strict=True))

    def _rows_manga_author(self, i: Arr) -> list[Row]:
        m, p, r = self._rel("manga_author", i)
        return list(zip(self._id("manga", m), self._id("person", p), _obj(MANGA_AUTHOR_ROLES)[r].tolist(),
                        [SOURCE] * len(i), strict=True))


def generate(n: int, seed: int = 0) -> dict[str, Iterator[Row]]:
    """Every table's rows of the synthetic catalog of ``n`` entities, each table a lazy stream.

    The streams are independent: consume them in any order, any number at a time. Rows follow the
    column order of :data:`~agentic_rag.catalog.tables.TABLES`.
    """
    cat = SyntheticCatalog(n, seed)
    return {t.name: cat.rows(t.name) for t in TABLES}
