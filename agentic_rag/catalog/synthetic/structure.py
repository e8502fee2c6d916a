"""The synthetic graph's structure, laid out up front as compact numpy index arrays.

The structure says who appears in what and who is related to whom (a few tens of MB at a million
entities); :mod:`~agentic_rag.catalog.synthetic.rows` turns it into rows.

Shape of the data, at any ``n`` (the number of entities):

* entity mix: 0.3% franchises, 0.3% studios, 3% people, 10% anime, 5% manga, 60% characters and
  the rest episodes (at least one of each);
* popularity is Zipf-distributed: every anime, manga, character, person, studio and franchise has a
  latent fitness ``rank ** -alpha``, and every preferential choice (which anime a character appears
  in, who a character is related to, which studio animates an anime, who directs it) draws by
  fitness, so degrees are heavy-tailed: at a million entities the top anime features tens of
  thousands of characters while the median features a handful. The ``popularity`` column (1-100)
  is the log-scaled actual degree of each entity;
* franchises hold works ordered by year: main-line entries (TV, ONA) form sequel chains of at most
  six, later chains hang off the franchise root as spin-offs or alternative versions, films and OVAs
  are side stories and specials summaries of the latest main entry; a franchise may have an original
  manga that its main line adapts; some standalone anime adapt standalone manga;
* every primary key, unique, check and foreign key of the schema holds by construction, and every
  relation fact is stored once (never both ``(a, b, t)`` and ``(b, a, inverse t)``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from agentic_rag.catalog.synthetic.hashing import _draw, _zipf
from agentic_rag.catalog.synthetic.words import (
    _CHARACTER_INVERSE,
    _CHARACTER_REL_P,
    _FAMILY_DETAILS,
    _FORMAT_P,
    _FORMATS,
    ANIME_STAFF_ROLES,
    CHARACTER_RELATIONS,
    Arr,
)

GENERATOR_VERSION = 1
MIN_ENTITIES = 7  # one of each entity type

# Share of the n entities per type; episodes take the rest.
ENTITY_SHARES: dict[str, float] = {
    "franchise": 0.003, "studio": 0.003, "person": 0.03, "anime": 0.10, "manga": 0.05, "character": 0.60,
}
_MAIN_PER_ANIME = 3  # the most popular characters of each anime have the main role
_SEGMENT = 6  # main-line entries per sequel chain before a franchise branches off


# -- sizes ----------------------------------------------------------------------------------------

def entity_counts(n: int) -> dict[str, int]:
    """How many entities of each type a catalog of ``n`` entities has (they sum to ``n``)."""
    if n < MIN_ENTITIES:
        raise ValueError(f"a synthetic catalog needs at least {MIN_ENTITIES} entities (one of each type), got {n}")
    counts = {t: max(1, int(n * share)) for t, share in ENTITY_SHARES.items()}
    episodes = n - sum(counts.values())
    if episodes < 1:  # tiny n: take the shortfall from the characters
        counts["character"] -= 1 - episodes
        episodes = 1
    counts["episode"] = episodes
    return counts


def fingerprint(n: int, seed: int) -> str:
    """What ``catalog_load`` records for a synthetic load: equal fingerprints mean identical rows."""
    return f"n={n};seed={seed};v={GENERATOR_VERSION}"


def _popularity(degree: Arr) -> Arr:
    """1-100, the log-scaled degree: the best-connected entity of a type scores 100."""
    top = float(np.log1p(degree.max())) if len(degree) else 1.0
    return (1 + np.rint(99 * np.log1p(degree) / max(top, 1e-9))).astype(np.int64)


def _group_starts(sorted_keys: Arr, size: int) -> tuple[Arr, Arr]:
    """For keys sorted ascending in 0..size-1: each key's first position and its count."""
    counts = np.bincount(sorted_keys, minlength=size)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    return starts, counts


def _rank_in_group(group: Arr) -> Arr:
    """Position of each element within its run of equal (sorted) group keys."""
    if len(group) == 0:
        return np.zeros(0, dtype=np.int64)
    first = np.concatenate(([True], group[1:] != group[:-1]))
    start = np.maximum.accumulate(np.where(first, np.arange(len(group)), 0))
    return np.arange(len(group)) - start


# -- the graph's structure ------------------------------------------------------------------------

@dataclass(slots=True)
class _Structure:
    """Every entity attribute that other tables depend on, and every relation as index arrays."""

    counts: dict[str, int]
    # franchises
    fr_year: Arr = field(default_factory=lambda: np.zeros(0))
    fr_anime: Arr = field(default_factory=lambda: np.zeros(0))
    fr_manga: Arr = field(default_factory=lambda: np.zeros(0))
    # anime
    a_fmt: Arr = field(default_factory=lambda: np.zeros(0))
    a_year: Arr = field(default_factory=lambda: np.zeros(0))
    a_month: Arr = field(default_factory=lambda: np.zeros(0))
    a_fr: Arr = field(default_factory=lambda: np.zeros(0))
    a_main_q: Arr = field(default_factory=lambda: np.zeros(0))  # index on the franchise's main line, -1 if not
    a_manga: Arr = field(default_factory=lambda: np.zeros(0))  # manga adapted (-1 none)
    a_eps: Arr = field(default_factory=lambda: np.zeros(0))  # episodes stored
    # manga
    m_fr: Arr = field(default_factory=lambda: np.zeros(0))
    m_kind: Arr = field(default_factory=lambda: np.zeros(0))  # 0 standalone, 1 franchise original, 2 spin-off
    m_year: Arr = field(default_factory=lambda: np.zeros(0))
    m_title_of: Arr = field(default_factory=lambda: np.zeros(0))  # anime whose title a standalone manga shares
    # popularity per entity type
    pop: dict[str, Arr] = field(default_factory=dict)
    # relations: name -> tuple of column arrays
    rel: dict[str, tuple[Arr, ...]] = field(default_factory=dict)


def _build(n: int, seed: int) -> _Structure:
    counts = entity_counts(n)
    F, S, P, A, M, C, E = (counts[t] for t in ("franchise", "studio", "person", "anime", "manga", "character",
                                               "episode"))
    rng = np.random.default_rng([seed, GENERATOR_VERSION])
    st = _Structure(counts)
    _, cdf_f = _zipf(rng, F, 0.6)
    _, cdf_s = _zipf(rng, S, 0.9)
    _, cdf_p = _zipf(rng, P, 0.8)
    w_a, cdf_a = _zipf(rng, A, 0.8)
    w_m, cdf_m = _zipf(rng, M, 0.8)
    w_c, cdf_c = _zipf(rng, C, 0.75)

    # Anime: format, franchise membership (every franchise gets one anime first when there are enough).
    fmt = rng.choice(len(_FORMATS), size=A, p=_FORMAT_P).astype(np.int8)
    a_fr = np.full(A, -1, dtype=np.int64)
    seeded = rng.permutation(A)[: min(F, A)]
    a_fr[seeded] = np.arange(len(seeded))
    rest = np.flatnonzero((a_fr < 0) & (rng.random(A) < 0.35))
    a_fr[rest] = _draw(rng, cdf_f, len(rest))
    fr_year = np.minimum(2025, np.floor(rng.triangular(1960, 2025, 2026, F))).astype(np.int64)
    own_year = np.minimum(2025, np.floor(rng.triangular(1960, 2025, 2026, A))).astype(np.int64)
    fr_offset = np.floor(rng.exponential(6.0, A)).astype(np.int64)
    year = np.where(a_fr >= 0, np.minimum(2025, fr_year[np.maximum(a_fr, 0)] + fr_offset), own_year)
    month = rng.integers(1, 13, A)

    # Franchise order: members by (franchise, year, index); main line = TV/ONA or the franchise's first work.
    members = np.flatnonzero(a_fr >= 0)
    order = members[np.lexsort((members, year[members], a_fr[members]))]
    o_fr = a_fr[order]
    pos = _rank_in_group(o_fr)
    is_main = (pos == 0) | np.isin(fmt[order], (0, 3))
    main_q = np.full(A, -1, dtype=np.int64)
    q = np.cumsum(is_main) - 1
    q_first = np.zeros(len(order), dtype=np.int64)
    if len(order):
        first = pos == 0
        q_first = np.maximum.accumulate(np.where(first, q, 0))
    q_in = q - q_first  # index among the franchise's main entries
    main_q[order[is_main]] = q_in[is_main]
    root = np.full(F, -1, dtype=np.int64)
    root[o_fr[pos == 0]] = order[pos == 0]
    # latest main entry at or before each member (the first member is main, so it always exists)
    last_main = order[np.maximum.accumulate(np.where(is_main, np.arange(len(order)), 0))] if len(order) else order
    src: list[Arr] = []
    dst: list[Arr] = []
    typ: list[Arr] = []
    prev_main_pos = np.maximum.accumulate(np.where(is_main, np.arange(len(order)), -1))
    # main entries after the first: sequel of the previous main entry, or a new branch off the root
    m_idx = np.flatnonzero(is_main & (pos > 0))
    prev_of = np.zeros(len(m_idx), dtype=np.int64)
    if len(m_idx):
        shifted = np.concatenate(([-1], prev_main_pos[:-1]))
        prev_of = order[shifted[m_idx]]
    branch = (q_in[m_idx] % _SEGMENT) == 0
    src.append(np.where(branch, root[o_fr[m_idx]], prev_of))
    dst.append(order[m_idx])
    typ.append(np.where(branch, np.where(rng.random(len(m_idx)) < 0.5, 3, 4), 0))
    # films, OVAs: side stories of the latest main entry; specials summarise it
    s_idx = np.flatnonzero(~is_main)
    special = fmt[order[s_idx]] == 4
    src.append(np.where(special, order[s_idx], last_main[s_idx]))
    dst.append(np.where(special, last_main[s_idx], order[s_idx]))
    typ.append(np.where(special, 2, 1))
    ara = (np.concatenate(src), np.concatenate(dst), np.concatenate(typ).astype(np.int8))

    # Manga: originals for 70% of franchises (the most popular manga go to the most popular franchises),
    # spin-off manga, and standalone manga, some adapted by standalone anime.
    fr_has_orig = rng.random(F) < 0.7
    fr_with = np.flatnonzero(fr_has_orig)
    fr_with = fr_with[np.argsort(-np.bincount(a_fr[a_fr >= 0], minlength=F)[fr_with], kind="stable")]
    by_fitness = np.argsort(-w_m, kind="stable")
    n_orig = min(len(fr_with), M)
    m_fr = np.full(M, -1, dtype=np.int64)
    m_kind = np.zeros(M, dtype=np.int8)
    orig_of = np.full(F, -1, dtype=np.int64)
    orig = by_fitness[:n_orig]
    m_fr[orig], m_kind[orig], orig_of[fr_with[:n_orig]] = fr_with[:n_orig], 1, orig
    spin = np.flatnonzero((m_kind == 0) & (rng.random(M) < 0.12))
    m_fr[spin], m_kind[spin] = _draw(rng, cdf_f, len(spin)), 2
    a_manga = np.full(A, -1, dtype=np.int64)
    adapts = (a_fr >= 0) & (main_q >= 0)
    a_manga[adapts] = orig_of[a_fr[adapts]]
    free_manga = rng.permutation(np.flatnonzero(m_kind == 0))
    solo = np.flatnonzero((a_fr < 0) & (rng.random(A) < 0.3))[: len(free_manga)]
    a_manga[solo] = free_manga[: len(solo)]
    m_title_of = np.full(M, -1, dtype=np.int64)
    m_title_of[free_manga[: len(solo)]] = solo
    m_year = np.minimum(2025, np.floor(rng.triangular(1960, 2025, 2026, M))).astype(np.int64)
    fr_first_year = np.full(F, 2025, dtype=np.int64)
    np.minimum.at(fr_first_year, a_fr[a_fr >= 0], year[a_fr >= 0])
    lead = np.floor(rng.exponential(3.0, M)).astype(np.int64)
    m_year[orig] = np.maximum(1960, fr_first_year[m_fr[orig]] - lead[orig])
    m_year[spin] = np.minimum(2025, fr_first_year[m_fr[spin]] + lead[spin])
    adapted_solo = a_manga[solo]
    year[solo] = np.minimum(2025, np.maximum(year[solo], m_year[adapted_solo] + lead[adapted_solo] % 4))
    arm_a = np.flatnonzero(a_manga >= 0)
    arm = (arm_a, a_manga[arm_a])

    # Studios: a franchise mostly keeps its studio; some anime are co-productions.
    fr_studio = _draw(rng, cdf_s, F)
    studio = _draw(rng, cdf_s, A)
    keep = (a_fr >= 0) & (rng.random(A) < 0.7)
    studio[keep] = fr_studio[a_fr[keep]]
    co = np.flatnonzero(rng.random(A) < 0.15)
    co_studio = _draw(rng, cdf_s, len(co))
    ok = co_studio != studio[co]
    codes = np.unique(np.concatenate((np.arange(A) * S + studio, co[ok] * S + co_studio[ok])))
    ast = (codes // S, codes % S)

    # Manga authors: one mangaka (story and art), or a writer and an artist.
    author = _draw(rng, cdf_p, M)
    duo = np.flatnonzero(rng.random(M) < 0.3)
    artist = _draw(rng, cdf_p, len(duo))
    same = artist == author[duo]
    artist[same] = (artist[same] + 1) % P
    ma_m = np.concatenate((np.arange(M), duo))
    ma_p = np.concatenate((author, artist))
    ma_r = np.concatenate((np.where(np.isin(np.arange(M), duo), 1, 0), np.full(len(duo), 2))).astype(np.int8)
    o = np.lexsort((ma_r, ma_m))
    mau = (ma_m[o], ma_p[o], ma_r[o])

    # Anime staff: one credit per (anime, role); franchises often keep their director.
    fr_director = _draw(rng, cdf_p, F)
    st_a: list[Arr] = []
    st_p: list[Arr] = []
    st_r: list[Arr] = []
    role_p = {"director": 1.0, "chief_director": 0.08, "series_composition": 0.75, "character_design": 0.7,
              "music": 0.8, "producer": 0.5}
    for role, p in role_p.items():
        has = np.flatnonzero(rng.random(A) < p)
        person = _draw(rng, cdf_p, len(has))
        if role == "director":
            same_dir = (a_fr[has] >= 0) & (rng.random(len(has)) < 0.5)
            person[same_dir] = fr_director[a_fr[has][same_dir]]
        st_a.append(has)
        st_p.append(person)
        st_r.append(np.full(len(has), ANIME_STAFF_ROLES.index(role)))
    creator = np.flatnonzero((a_manga >= 0) | (rng.random(A) < 0.15))
    creator_p = _draw(rng, cdf_p, len(creator))
    from_manga = a_manga[creator] >= 0
    creator_p[from_manga] = author[a_manga[creator][from_manga]]
    st_a.append(creator)
    st_p.append(creator_p)
    st_r.append(np.zeros(len(creator), dtype=np.int64))
    sa, sp, sr = np.concatenate(st_a), np.concatenate(st_p), np.concatenate(st_r).astype(np.int8)
    o = np.lexsort((sr, sa))
    ast_ = (sa[o], sp[o], sr[o])

    # Characters in anime: 1-4 appearances; the first by popularity, later ones mostly in the same franchise.
    k = rng.choice(4, size=C, p=(0.3, 0.3, 0.2, 0.2)) + 1
    first = _draw(rng, cdf_a, C)
    fr_sorted = order  # franchise members, grouped by franchise
    fr_start, fr_size = _group_starts(o_fr, F) if F else (np.zeros(0, np.int64), np.zeros(0, np.int64))
    picks_c, picks_a = [np.arange(C)], [first]
    for j in range(1, 4):
        who = np.flatnonzero(k > j)
        f = a_fr[first[who]]
        same_fr = (f >= 0) & (rng.random(len(who)) < 0.75)
        anime = _draw(rng, cdf_a, len(who))
        fs = f[same_fr]
        anime[same_fr] = fr_sorted[fr_start[fs] + np.floor(rng.random(len(fs)) * fr_size[fs]).astype(np.int64)]
        picks_c.append(who)
        picks_a.append(anime)
    codes = np.unique(np.concatenate(picks_a) * C + np.concatenate(picks_c))
    ac_a, ac_c = codes // C, codes % C
    by_pop = np.lexsort((-w_c[ac_c], ac_a))
    ac_role = np.ones(len(ac_a), dtype=np.int8)
    ac_role[by_pop[_rank_in_group(ac_a[by_pop]) < _MAIN_PER_ANIME]] = 0
    ac = (ac_a, ac_c, ac_role)

    # Characters in manga: the manga their first anime adapts, or now and then another manga.
    adapted = a_manga[first]
    in_adapted = (adapted >= 0) & (rng.random(C) < 0.85)
    other = np.flatnonzero(~in_adapted & (rng.random(C) < 0.12))
    mc_m = np.concatenate((adapted[in_adapted], _draw(rng, cdf_m, len(other))))
    mc_c = np.concatenate((np.flatnonzero(in_adapted), other))
    codes = np.unique(mc_m * C + mc_c)
    mc = (codes // C, codes % C)

    # Character relationships: partners from the same anime or popular characters anywhere; one fact per pair.
    out_deg = rng.poisson(5.0, C)
    rs = np.repeat(np.arange(C), out_deg)
    ac_start, ac_size = _group_starts(ac_a, A)
    local = rng.random(len(rs)) < 0.55
    partner = _draw(rng, cdf_c, len(rs))
    home = first[rs[local]]
    partner[local] = ac_c[ac_start[home] + np.floor(rng.random(len(home)) * ac_size[home]).astype(np.int64)]
    rtype = rng.choice(len(CHARACTER_RELATIONS), size=len(rs), p=_CHARACTER_REL_P).astype(np.int8)
    keep = rs != partner
    rs, partner, rtype = rs[keep], partner[keep], rtype[keep]
    flip = rs > partner
    lo, hi = np.where(flip, partner, rs), np.where(flip, rs, partner)
    rtype = np.where(flip, _CHARACTER_INVERSE[rtype], rtype).astype(np.int8)
    codes, idx = np.unique(lo * C + hi, return_index=True)
    detail = np.where(rtype[idx] == 0, np.arange(len(idx)) % len(_FAMILY_DETAILS), -1).astype(np.int8)
    cr = (codes // C, codes % C, rtype[idx], detail)

    # Episodes: the listed episodes go mostly to popular TV/ONA/OVA series, numbered from 1.
    fmt_weight = np.array([1.0, 1e-3, 0.3, 1.0, 1e-3])[fmt]
    ep_cdf = np.cumsum(w_a**0.75 * fmt_weight)
    ep_a = np.sort(_draw(rng, ep_cdf, E))
    ep_n = _rank_in_group(ep_a) + 1
    ep = (ep_a, ep_n)

    st.fr_year, st.a_fmt, st.a_year, st.a_month, st.a_fr = fr_year, fmt, year, month, a_fr
    st.a_main_q, st.a_manga, st.a_eps = main_q, a_manga, np.bincount(ep_a, minlength=A)
    st.m_fr, st.m_kind, st.m_year, st.m_title_of = m_fr, m_kind, m_year, m_title_of
    st.fr_anime = np.bincount(a_fr[a_fr >= 0], minlength=F)
    st.fr_manga = np.bincount(m_fr[m_fr >= 0], minlength=F)
    st.rel = {
        "episode": ep, "anime_related_anime": ara, "anime_related_manga": arm, "anime_character": ac,
        "manga_character": mc, "character_relationship": cr, "anime_studio": ast, "anime_staff": ast_,
        "manga_author": mau,
    }
    bc = np.bincount
    st.pop = {
        "franchise": st.fr_anime + st.fr_manga,
        "studio": bc(ast[1], minlength=S),
        "person": bc(ast_[1], minlength=P) + bc(mau[1], minlength=P),
        "anime": bc(ac_a, minlength=A) + bc(ast_[0], minlength=A) + bc(ast[0], minlength=A) + st.a_eps,
        "manga": bc(mc[0], minlength=M) + bc(mau[0], minlength=M) + bc(arm[1], minlength=M),
        "character": bc(ac_c, minlength=C) + bc(mc[1], minlength=C) + bc(cr[0], minlength=C)
        + bc(cr[1], minlength=C),
    }
    st.pop = {t: _popularity(d) for t, d in st.pop.items()}
    return st
