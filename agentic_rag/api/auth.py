"""API-key checking, one rule for every front door (HTTP API, gRPC, the OpenAI-compatible server)."""

from __future__ import annotations

import hmac
from collections.abc import Iterable, Sequence


def key_matches(offered: Iterable[str | None], keys: Sequence[str]) -> bool:
    """Whether any offered credential equals any configured key.

    Blank or missing credentials are skipped. Every (credential, key) pair is compared, each with
    ``hmac.compare_digest`` and with no early exit, so how long a check takes says nothing about
    which key matched or how much of one did.
    """
    candidates = [o.strip().encode("utf-8", "replace") for o in offered if o and o.strip()]
    configured = [k.encode("utf-8") for k in keys]
    matched = False
    for candidate in candidates:
        for key in configured:
            matched |= hmac.compare_digest(candidate, key)
    return matched
