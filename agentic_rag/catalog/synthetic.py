"""A synthetic catalog of any size, deterministic by seed, streamed straight into PostgreSQL.

The generator builds the *structure* of the graph up front as compact numpy index arrays (who
appears in what, who is related to whom: a few tens of MB at a million entities) and streams the
*rows* table by table in fixed-size chunks, so neither a million entities nor five million
relation rows are ever held in Python as rows at once.

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

Names, titles and synopses are built from syllable and word lists by hashing ``(seed, entity)``,
so any entity's text can be produced independently of every other. Keys start with ``syn-`` and
never collide with the demo catalog; ids are :func:`~agentic_rag.catalog.vocabulary.entity_id`.

:func:`load_synthetic` replaces the database's synthetic rows with a generated catalog in one
transaction (COPY into the real tables, then the edge table from the ``edge_source`` view), and is
a no-op when the same ``(n, seed)`` is already loaded.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import sql

from agentic_rag.catalog.tables import ENTITY_TABLES, RELATION_TABLES, TABLE_BY_NAME, TABLES, Row
from agentic_rag.catalog.vocabulary import ID_NAMESPACE, episode_key
from agentic_rag.storage.postgres import migrate

Arr = npt.NDArray[Any]
Progress = Callable[[str, int, int], None]

SOURCE = "synthetic"
GENERATOR_VERSION = 1
CHUNK_ROWS = 50_000  # rows per generated chunk; fixed, though the rows do not depend on it
MIN_ENTITIES = 7  # one of each entity type

# Share of the n entities per type; episodes take the rest.
ENTITY_SHARES: dict[str, float] = {
    "franchise": 0.003, "studio": 0.003, "person": 0.03, "anime": 0.10, "manga": 0.05, "character": 0.60,
}

# -- vocabularies ---------------------------------------------------------------------------------

_SYLLABLES = (
    ("ka", "カ"), ("ki", "キ"), ("ku", "ク"), ("ke", "ケ"), ("ko", "コ"), ("sa", "サ"), ("shi", "シ"),
    ("su", "ス"), ("se", "セ"), ("so", "ソ"), ("ta", "タ"), ("chi", "チ"), ("tsu", "ツ"), ("te", "テ"),
    ("to", "ト"), ("na", "ナ"), ("ni", "ニ"), ("no", "ノ"), ("ne", "ネ"), ("ha", "ハ"), ("hi", "ヒ"),
    ("fu", "フ"), ("ho", "ホ"), ("ma", "マ"), ("mi", "ミ"), ("mu", "ム"), ("me", "メ"), ("mo", "モ"),
    ("ya", "ヤ"), ("yu", "ユ"), ("yo", "ヨ"), ("ra", "ラ"), ("ri", "リ"), ("ru", "ル"), ("re", "レ"),
    ("ro", "ロ"), ("wa", "ワ"), ("ga", "ガ"), ("gi", "ギ"), ("go", "ゴ"), ("da", "ダ"), ("do", "ド"),
    ("ba", "バ"), ("bi", "ビ"), ("ji", "ジ"), ("ze", "ゼ"), ("ryu", "リュウ"), ("kyo", "キョウ"),
    ("sho", "ショウ"), ("hana", "ハナ"), ("a", "ア"), ("i", "イ"), ("e", "エ"), ("o", "オ"),
)
_ADJECTIVES = (
    "Crimson", "Silent", "Eternal", "Hidden", "Broken", "Golden", "Last", "Iron", "Wandering", "Burning",
    "Frozen", "Hollow", "Scarlet", "Azure", "Forgotten", "Shattered", "Radiant", "Phantom", "Restless",
    "Midnight", "Distant", "Savage", "Gentle", "Endless",
)
_NOUNS = (
    "Blade", "Sky", "Kingdom", "Promise", "Garden", "Storm", "Requiem", "Frontier", "Covenant", "Horizon",
    "Tide", "Lantern", "Chronicle", "Oath", "Citadel", "Labyrinth", "Melody", "Ember", "Harbor", "Crown",
    "Signal", "Orbit", "Moon", "Rebellion",
)
GENRES = (
    "action", "adventure", "comedy", "drama", "fantasy", "dark_fantasy", "sci_fi", "mecha", "mystery",
    "romance", "slice_of_life", "sports", "supernatural", "horror", "psychological", "historical",
    "martial_arts", "thriller",
)
_MAGAZINES = (
    "Weekly Shōnen Kite", "Monthly Comic Lantern", "Weekly Young Harbor", "Shōnen Orbit+",
    "Monthly Shōjo Ember", "Comic Frontier", "Big Comic Tide", "Seinen Citadel", "Web Manga Signal",
)
_ARCHETYPES = (
    "an orphaned swordsman", "a reluctant prodigy", "a disgraced knight", "a young alchemist", "a street thief",
    "an exiled princess", "a rookie pilot", "a retired assassin", "a wandering healer", "a high-school detective",
    "a cursed mage", "a stubborn apprentice",
)
_GOALS = (
    "must unravel a conspiracy", "searches for a lost sibling", "fights to protect a small town",
    "seeks revenge for a fallen master", "tries to break an ancient curse", "enters a deadly tournament",
    "races to stop a coming war", "hunts the monsters that destroyed their home",
    "sets out to map the unknown world", "struggles to keep a promise",
)
_TRAITS = (
    "hot-headed", "calm", "cheerful", "ruthless", "loyal", "mysterious", "clumsy", "brilliant", "proud", "kind",
)
_PARTS = (
    "swordsman", "mage", "strategist", "pilot", "healer", "captain", "detective", "rival", "villain", "mentor",
    "student", "sniper",
)
_STUDIO_FORMS = ("Studio {}", "{} Animation", "{} Pictures", "{} Works", "Team {}", "{} Studio")
_FORMATS = ("tv", "movie", "ova", "ona", "special")
_FORMAT_P = (0.55, 0.15, 0.10, 0.12, 0.08)
_FORMAT_WORDS = ("TV series", "film", "OVA", "web series", "special")
_NOMINAL_EPISODES = (12, 13, 24, 25, 26, 50, 64, 148)
ANIME_RELATIONS = ("sequel", "side_story", "summary", "spinoff", "alternative_version")
ANIME_STAFF_ROLES = (
    "original_creator", "director", "chief_director", "series_composition", "character_design", "music",
    "producer",
)
MANGA_AUTHOR_ROLES = ("story_and_art", "story", "art")
CHARACTER_ROLES = ("main", "supporting")
# Character relationship types, their inverse, how often they occur, and what details they carry.
CHARACTER_RELATIONS = ("family", "ally", "rival", "enemy", "teammate", "romantic", "mentor_of", "student_of")
_CHARACTER_INVERSE = np.array([0, 1, 2, 3, 4, 5, 7, 6], dtype=np.int8)
_CHARACTER_REL_P = (0.15, 0.25, 0.14, 0.14, 0.15, 0.05, 0.12, 0.0)
_FAMILY_DETAILS = ("brother", "sister", "father", "mother", "cousin", "grandfather", "uncle", "aunt", "son", "daughter")
_MAIN_PER_ANIME = 3  # the most popular characters of each anime have the main role
_SEGMENT = 6  # main-line entries per sequel chain before a franchise branches off


def _check_vocabularies() -> None:
    """Every word is safe as an unquoted COPY text field and as a quoted array element."""
    words = [w for pair in _SYLLABLES for w in pair]
    words += [*_ADJECTIVES, *_NOUNS, *GENRES, *_MAGAZINES, *_ARCHETYPES, *_GOALS, *_TRAITS, *_PARTS]
    words += [*(f.format("x") for f in _STUDIO_FORMS), *_FAMILY_DETAILS]
    bad = [w for w in words if any(ch in w for ch in '\\\t\n\r"{},')]
    if bad:
        raise AssertionError(f"vocabulary words need escaping: {bad}")


_check_vocabularies()

_SYL_R = np.array([r for r, _ in _SYLLABLES], dtype=object)
_SYL_RC = np.array([r.capitalize() for r, _ in _SYLLABLES], dtype=object)
_SYL_K = np.array([k for _, k in _SYLLABLES], dtype=object)
_EMPTY = np.array([""], dtype=object)


def _obj(words: tuple[str, ...]) -> Arr:
    return np.array(words, dtype=object)


_ADJ, _NOUN, _GEN = _obj(_ADJECTIVES), _obj(_NOUNS), _obj(GENRES)


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


# -- deterministic randomness ---------------------------------------------------------------------

_M64 = (1 << 64) - 1


def _mix(x: Arr) -> Arr:
    """splitmix64 finaliser over a uint64 array (wrapping arithmetic)."""
    z: Arr = x + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    out: Arr = z ^ (z >> np.uint64(31))
    return out


def _hash(seed: int, salt: str, idx: Arr) -> Arr:
    """A pseudo-random uint64 per index, a pure function of (seed, salt, index)."""
    key = int.from_bytes(hashlib.blake2b(f"{seed}:{salt}".encode(), digest_size=8).digest(), "little")
    with np.errstate(over="ignore"):
        return _mix(idx.astype(np.uint64) ^ np.uint64(key & _M64))


def _pick(h: Arr, k: int, shift: int = 0) -> Arr:
    """An index below k from bits of the hash."""
    return ((h >> np.uint64(shift)) % np.uint64(k)).astype(np.int64)


def _unit(h: Arr) -> Arr:
    """A float in [0, 1) from the top 53 bits of the hash."""
    return (h >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def _zipf(rng: np.random.Generator, size: int, alpha: float) -> tuple[Arr, Arr]:
    """Latent fitness ``rank ** -alpha`` over a random ranking, and its cumulative sum for draws."""
    rank = rng.permutation(size).astype(np.float64) + 1.0
    weight = rank ** -alpha
    return weight, np.cumsum(weight)


def _draw(rng: np.random.Generator, cdf: Arr, size: int) -> Arr:
    """``size`` preferential draws: index i with probability proportional to its weight."""
    if size == 0:
        return np.zeros(0, dtype=np.int64)
    u: Arr = rng.random(size) * cdf[-1]
    out: Arr = np.minimum(np.searchsorted(cdf, u, side="right"), len(cdf) - 1).astype(np.int64)
    return out


def _word(h: Arr, lo: int = 2, hi: int = 3, shift: int = 0) -> tuple[Arr, Arr]:
    """Capitalised romaji words of lo..hi syllables and their katakana, as object arrays."""
    n_syl = len(_SYLLABLES)
    k = lo + _pick(h, hi - lo + 1, shift)
    romaji = _SYL_RC[_pick(h, n_syl, shift + 4)]
    kana = _SYL_K[_pick(h, n_syl, shift + 4)]
    for j in range(1, hi):
        s = _pick(h, n_syl, shift + 4 + 7 * j)
        use = k > j
        romaji = romaji + np.where(use, _SYL_R[s], _EMPTY[0])
        kana = kana + np.where(use, _SYL_K[s], _EMPTY[0])
    return romaji, kana


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


def uuid5_ids(entity_type: str, keys: list[str]) -> Arr:
    """``str(entity_id(entity_type, key))`` for many keys at once, as a numpy ``S36`` array."""
    prefix = ID_NAMESPACE.bytes + f"{entity_type}:".encode()
    raw = b"".join(hashlib.sha1(prefix + k.encode()).digest()[:16] for k in keys)
    b = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 16).copy()
    b[:, 6] = (b[:, 6] & 0x0F) | 0x50  # version 5
    b[:, 8] = (b[:, 8] & 0x3F) | 0x80  # RFC 4122 variant
    hexd = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
    h = np.empty((len(keys), 32), dtype=np.uint8)
    h[:, 0::2] = hexd[b >> 4]
    h[:, 1::2] = hexd[b & 0x0F]
    out = np.full((len(keys), 36), ord("-"), dtype=np.uint8)
    out[:, 0:8], out[:, 9:13], out[:, 14:18] = h[:, 0:8], h[:, 8:12], h[:, 12:16]
    out[:, 19:23], out[:, 24:36] = h[:, 16:20], h[:, 20:32]
    return out.view("S36").ravel()


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


# -- rows -----------------------------------------------------------------------------------------

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
                        st.pop["franchise"][f].tolist(), ["{}"] * len(f), strict=True))

    def _rows_studio(self, s: Arr) -> list[Row]:
        h = _hash(self.seed, "studio", s)
        w, _ = _word(h, 2, 3, 0)
        forms = _pick(h, len(_STUDIO_FORMS), 40)
        names = [_STUDIO_FORMS[f].format(x) for f, x in zip(forms.tolist(), w.tolist(), strict=True)]
        founded = (1950 + _pick(h, 71, 48)).tolist()
        return list(zip(self._id("studio", s), _key("studio", s), [SOURCE] * len(s), names, founded,
                        self._st.pop["studio"][s].tolist(), ["{}"] * len(s), strict=True))

    def _person_names(self, salt: str, idx: Arr) -> tuple[Arr, Arr, Arr]:
        h = _hash(self.seed, salt, idx)
        given, gk = _word(h, 2, 3, 0)
        family, fk = _word(h, 2, 4, 24)
        return given + " " + family, fk + "・" + gk, given

    def _rows_person(self, p: Arr) -> list[Row]:
        name, native, _ = self._person_names("person", p)
        return list(zip(self._id("person", p), _key("person", p), [SOURCE] * len(p), name.tolist(), native.tolist(),
                        [[] for _ in range(len(p))], self._st.pop["person"][p].tolist(), ["{}"] * len(p),
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
            synopsis, self._opt_id("franchise", st.a_fr[a]), ["{}"] * n, strict=True,
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
            st.pop["manga"][m].tolist(), synopsis, self._opt_id("franchise", fr), ["{}"] * n, strict=True,
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
                        aliases, desc, self._st.pop["character"][c].tolist(), ["{}"] * n, strict=True))

    def _rows_episode(self, e: Arr) -> list[Row]:
        st = self._st
        ep_a, ep_n = (x[e] for x in st.rel["episode"])
        h = _hash(self.seed, "episode", e)
        title = ("The " + _ADJ[_pick(h, len(_ADJ))] + " " + _NOUN[_pick(h, len(_NOUN), 8)]).tolist()
        season = (1 + (ep_n - 1) // 26).tolist()
        start = ((st.a_year[ep_a] - 1970) * 12 + st.a_month[ep_a] - 1).astype("datetime64[M]").astype("datetime64[D]")
        aired = start + (7 * (ep_n - 1)).astype("timedelta64[D]")
        aired_s = np.datetime_as_string(aired, unit="D").astype(object)
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


# -- loading ----------------------------------------------------------------------------------------

@dataclass(slots=True)
class SyntheticReport:
    """What a synthetic load did: rows per table, edge rows, timings."""

    n: int
    seed: int
    fingerprint: str
    tables: dict[str, int] = field(default_factory=dict)
    edges: int = 0
    names: int = 0  # typeahead names derived into entity_name
    deleted: int = 0  # rows of an earlier synthetic load removed first (edges included)
    seconds: float = 0.0
    skipped: bool = False  # the same (n, seed) was already loaded: nothing was changed
    phases: dict[str, float] = field(default_factory=dict)  # seconds per phase: generate, delete, copy, edge...

    @property
    def entity_rows(self) -> int:
        return sum(self.tables.get(t, 0) for t in ENTITY_TABLES)

    @property
    def relation_rows(self) -> int:
        """Rows of the relation tables plus each episode's link to its anime."""
        return sum(self.tables.get(t, 0) for t in RELATION_TABLES) + self.tables.get("episode", 0)

    @property
    def rows(self) -> int:
        """Every row written: entity and relation tables, and edges."""
        return sum(self.tables.values()) + self.edges

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 and not self.skipped else 0.0

    def describe(self) -> str:
        if self.skipped:
            return (f"synthetic catalog n={self.n} seed={self.seed} already loaded "
                    f"({self.entity_rows} entities, {self.relation_rows} relation rows, {self.edges} edges): "
                    "nothing changed.")
        per_table = ", ".join(f"{t} {c}" for t, c in self.tables.items())
        return (f"synthetic catalog n={self.n} seed={self.seed}: {self.entity_rows} entities, "
                f"{self.relation_rows} relation rows, {self.edges} edges in {self.seconds:.1f} s "
                f"({self.rows_per_second:,.0f} rows/s; replaced {self.deleted} earlier rows).\n  {per_table}")


_LOCK_KEY = 7243002  # serialises synthetic loads (migrations use 7243001)
_BULK_SETTINGS = (
    "SET LOCAL synchronous_commit = off",
    "SET LOCAL statement_timeout = 0",
    "SET LOCAL work_mem = '256MB'",
    "SET LOCAL maintenance_work_mem = '512MB'",
)
_INSERT_EDGES = (
    "INSERT INTO edge (src_id, rel, dst_id, src_type, dst_type, detail, source) "
    "SELECT DISTINCT ON (src_id, rel, dst_id) src_id, rel, dst_id, src_type, dst_type, detail, source "
    "FROM edge_source WHERE source = %s ORDER BY src_id, rel, dst_id, detail NULLS LAST"
)
_INSERT_NAMES = (
    "INSERT INTO entity_name (entity_id, norm, entity_type, name, kind, popularity, source) "
    "SELECT entity_id, norm, entity_type, name, kind, popularity, source FROM entity_name_source WHERE source = %s"
)
Cursor = psycopg.AsyncCursor[tuple[Any, ...]]


async def _loaded(cur: Cursor, fp: str) -> dict[str, int] | None:
    """The recorded counts if this exact catalog is loaded (and its small tables still hold it)."""
    await cur.execute("SELECT fingerprint, counts FROM catalog_load WHERE source = %s", (SOURCE,))
    row = await cur.fetchone()
    if row is None or row[0] != fp:
        return None
    counts: dict[str, int] = {str(k): int(v) for k, v in row[1].items()}
    for table in ("franchise", "studio", "anime"):
        await cur.execute(
            sql.SQL("SELECT count(*) FROM {} WHERE source = %s").format(sql.Identifier(table)), (SOURCE,)
        )
        got = await cur.fetchone()
        if got is None or int(got[0]) != counts.get(table):
            return None
    return counts


async def _delete_synthetic(cur: Cursor) -> int:
    """Remove every synthetic row, derived tables and children first; demo rows are never touched."""
    deleted = 0
    for name in ("edge", "entity_name", *(t.name for t in reversed(TABLES))):
        await cur.execute(sql.SQL("DELETE FROM {} WHERE source = %s").format(sql.Identifier(name)), (SOURCE,))
        deleted += max(cur.rowcount, 0)
    return deleted


async def _copy_table(cur: Cursor, cat: SyntheticCatalog, table: str, progress: Progress) -> int:
    t = TABLE_BY_NAME[table]
    total, done = cat.counts[table], 0
    progress(table, 0, total)
    stmt = sql.SQL("COPY {} ({}) FROM STDIN").format(
        sql.Identifier(t.name), sql.SQL(", ").join(sql.Identifier(c) for c in t.columns)
    )
    async with cur.copy(stmt) as copy:
        for chunk in cat.chunks(table):
            for row in chunk:
                await copy.write_row(row)
            done += len(chunk)
            progress(table, done, total)
    return done


async def load_synthetic(
    dsn: str, n: int, seed: int = 0, *, progress: Progress | None = None,
) -> SyntheticReport:
    """Replace the database's synthetic catalog with the one generated from ``(n, seed)``.

    Migrates first. If ``catalog_load`` says this very catalog is loaded, nothing is changed and the
    report says ``skipped``. Otherwise one transaction deletes the earlier synthetic rows, COPYs every
    table (parents first, so the foreign keys are checked as rows arrive), derives the edge table from
    the ``edge_source`` view and records the load; then the tables are analysed. Demo rows are never
    touched. ``progress(table, rows_done, rows_total)`` is called as each table's rows go in.
    """
    from agentic_rag.catalog.records import CatalogError

    entity_counts(n)  # validate before touching the database
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    step: Progress = progress or (lambda _t, _d, _n: None)
    fp = fingerprint(n, seed)
    report = SyntheticReport(n=n, seed=seed, fingerprint=fp)
    await migrate(dsn)
    t0 = time.perf_counter()
    current = "catalog_load"
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        async with conn.cursor() as cur:
            recorded = await _loaded(cur, fp)
        if recorded is None:
            t = time.perf_counter()
            cat = SyntheticCatalog(n, seed)
            report.phases["structure"] = time.perf_counter() - t
            try:
                async with conn.transaction(), conn.cursor() as cur:
                    await cur.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
                    recorded = await _loaded(cur, fp)  # a concurrent run may have just loaded it
                    if recorded is None:
                        for setting in _BULK_SETTINGS:
                            await cur.execute(setting)
                        t = time.perf_counter()
                        current = "delete"
                        report.deleted = await _delete_synthetic(cur)
                        report.phases["delete"] = time.perf_counter() - t
                        for table in TABLES:
                            t, current = time.perf_counter(), table.name
                            report.tables[table.name] = await _copy_table(cur, cat, table.name, step)
                            report.phases[f"copy {table.name}"] = time.perf_counter() - t
                        t, current = time.perf_counter(), "edge"
                        step("edge", 0, cat.expected_edges)
                        await cur.execute(_INSERT_EDGES, (SOURCE,))
                        report.edges = cur.rowcount
                        step("edge", report.edges, cat.expected_edges)
                        report.phases["edge"] = time.perf_counter() - t
                        t, current = time.perf_counter(), "entity_name"
                        await cur.execute(_INSERT_NAMES, (SOURCE,))
                        report.names = cur.rowcount
                        report.phases["entity_name"] = time.perf_counter() - t
                        current = "catalog_load"
                        await cur.execute(
                            "INSERT INTO catalog_load (source, fingerprint, counts) VALUES (%s, %s, %s) "
                            "ON CONFLICT (source) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, "
                            "counts = EXCLUDED.counts, loaded_at = now()",
                            (SOURCE, fp, json.dumps({**report.tables, "edge": report.edges})),
                        )
            except psycopg.Error as exc:
                diag = exc.diag
                detail = f" ({diag.message_detail})" if diag.message_detail else ""
                raise CatalogError(
                    f"synthetic load failed at {current}, nothing was changed: {diag.message_primary or exc}{detail}"
                ) from exc
            if recorded is None:
                t = time.perf_counter()
                names = sql.SQL(", ").join(sql.Identifier(x) for x in (*(t.name for t in TABLES), "edge",
                                                                        "entity_name"))
                # after a replacement, VACUUM too: the old rows are dead tuples that slow the next load
                verb = sql.SQL("VACUUM (ANALYZE)" if report.deleted else "ANALYZE")
                await conn.execute(sql.SQL("{} {}").format(verb, names))
                report.phases["vacuum analyze" if report.deleted else "analyze"] = time.perf_counter() - t
    if recorded is not None:
        report.skipped = True
        report.edges = recorded.pop("edge", 0)
        report.tables = recorded
    report.seconds = time.perf_counter() - t0
    return report
