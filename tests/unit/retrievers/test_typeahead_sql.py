"""The typo probes and the indexes they need are written in two places; these tests keep them one."""

from __future__ import annotations

import re
from importlib import resources

import pytest
from pydantic import ValidationError

from agentic_rag.retrievers.typeahead import DELETION_DEPTH, TYPO_SQL, TypeaheadQuery, _typo_keys, deletion_expr

MIGRATION = resources.files("agentic_rag.storage").joinpath("migrations/0007_typeahead_edits.sql")


def test_every_deletion_probe_has_its_index() -> None:
    indexed = re.findall(r"ON entity_name \(\((.+)\) text_pattern_ops\);", MIGRATION.read_text())
    assert indexed == [deletion_expr(p, "norm") for p in range(DELETION_DEPTH)]


def test_the_probe_keys_are_exactly_the_query_parameters() -> None:
    assert set(_typo_keys("monkey d. lufy")) | {"norm", "types", "cand"} == set(TYPO_SQL.names)


def test_a_short_query_leaves_the_probes_it_cannot_fill_empty() -> None:
    keys = _typo_keys("luf")
    assert keys["d0_lo"] == "uf" and keys["d1_lo"] == "lf" and keys["d2_lo"] is None
    assert keys["sw0"] == "ulf" and keys["sw2"] is None and keys["edits"] == 1


@pytest.mark.parametrize("q", ["nar\x00uto", "nar\ud800uto"])
def test_a_typeahead_text_postgresql_cannot_hold_is_the_client_s_error(q: str) -> None:
    # whichever API it came through (HTTP, GraphQL, gRPC): a clear validation error, never a database failure
    with pytest.raises(ValidationError, match=r"(?i)NUL|unicode"):
        TypeaheadQuery(q=q)
