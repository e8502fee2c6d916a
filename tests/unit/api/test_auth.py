"""The one API-key check every front door uses."""

from __future__ import annotations

import hmac

import pytest

from agentic_rag.api import auth
from agentic_rag.api.auth import key_matches

KEYS = ["first-key", "second-key", "third-key"]


@pytest.mark.parametrize("offered", [["first-key"], ["third-key"], [None, "second-key"], ["wrong", "first-key"],
                                     [" second-key "]])
def test_a_configured_key_is_accepted(offered: list[str | None]) -> None:
    assert key_matches(offered, KEYS)


@pytest.mark.parametrize("offered", [[], [None], ["", "  "], ["first-ke"], ["first-key-and-more"], ["FIRST-KEY"]])
def test_anything_else_is_refused(offered: list[str | None]) -> None:
    assert not key_matches(offered, KEYS)


def test_no_configured_key_accepts_nothing() -> None:
    assert not key_matches(["anything"], [])


def test_every_key_is_compared_even_after_a_match(monkeypatch: pytest.MonkeyPatch) -> None:
    compared: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(auth.hmac, "compare_digest", spy)
    assert key_matches(["first-key", "other"], KEYS)
    # the match is the first pair; all six pairs are still compared
    assert compared == [(o.encode(), k.encode()) for o in ("first-key", "other") for k in KEYS]
