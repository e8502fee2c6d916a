"""API-key checking, one rule for every front door (HTTP API, gRPC, the OpenAI-compatible server)."""

from __future__ import annotations

import hmac
from collections.abc import Iterable, Sequence


def matched_key(offered: Iterable[str | None], keys: Sequence[str]) -> str | None:
    """The configured key an offered credential equals, or None.

    Blank or missing credentials are skipped. Every (credential, key) pair is compared, each with
    ``hmac.compare_digest`` and with no early exit, so how long a check takes says nothing about
    which key matched or how much of one did.
    """
    candidates = [o.strip().encode("utf-8", "replace") for o in offered if o and o.strip()]
    matched: str | None = None
    for candidate in candidates:
        for key in keys:
            if hmac.compare_digest(candidate, key.encode("utf-8")) and matched is None:
                matched = key
    return matched


def key_matches(offered: Iterable[str | None], keys: Sequence[str]) -> bool:
    """Whether any offered credential equals any configured key (:func:`matched_key`)."""
    return matched_key(offered, keys) is not None
