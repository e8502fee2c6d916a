"""Deterministic randomness for the synthetic catalog: per-index hashes, Zipf draws, words and ids.

Everything here is a pure function of its arguments (a seed, a salt, indices), so any entity's
values can be produced independently of every other.
"""

from __future__ import annotations

import hashlib

import numpy as np

from agentic_rag.catalog.ids import ID_NAMESPACE
from agentic_rag.catalog.synthetic.words import _EMPTY, _SYL_K, _SYL_R, _SYL_RC, _SYLLABLES, Arr

UUID_BYTES = 16  # a UUID5 is the first 16 bytes of the SHA-1 digest, version and variant bits set

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


def uuid5_ids(entity_type: str, keys: list[str]) -> Arr:
    """``str(entity_id(entity_type, key))`` for many keys at once, as a numpy ``S36`` array."""
    prefix = ID_NAMESPACE.bytes + f"{entity_type}:".encode()
    raw = b"".join(hashlib.sha1(prefix + k.encode()).digest()[:UUID_BYTES] for k in keys)
    b = np.frombuffer(raw, dtype=np.uint8).reshape(-1, UUID_BYTES).copy()
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
