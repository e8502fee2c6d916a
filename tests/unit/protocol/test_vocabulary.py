"""The closed vocabularies agree with each other and with the SQL migrations; entity ids are stable."""

from __future__ import annotations

import re
from importlib import resources
from typing import get_args

from agentic_rag.catalog.ids import entity_id
from agentic_rag.protocol import vocabulary as v

MIGRATION = resources.files("agentic_rag.storage").joinpath("migrations/0001_catalog.sql").read_text()


def _check_list(column: str) -> set[str]:
    """The values of the first ``CHECK (<column> IN (...))`` in the migration."""
    m = re.search(rf"CHECK \({column} IN\s*\(([^)]*)\)", MIGRATION)
    assert m, column
    return set(re.findall(r"'([a-z_]+)'", m.group(1)))


def test_edge_type_literal_matches_the_edge_table() -> None:
    assert set(get_args(v.EdgeTypeName)) == set(v.EDGE_TYPE_BY_NAME)
    assert len(v.EDGE_TYPES) == len(v.EDGE_TYPE_BY_NAME)


def test_every_edge_type_has_an_inverse_whose_inverse_is_itself() -> None:
    for e in v.EDGE_TYPES:
        inverse = v.EDGE_TYPE_BY_NAME[e.inverse]
        assert inverse.inverse == e.name, e.name
        assert set(inverse.src) == set(e.dst) and set(inverse.dst) == set(e.src), e.name


def test_the_migration_seeds_exactly_the_python_edge_vocabulary() -> None:
    rows = re.findall(r"^\s*\('([a-z_]+)', '([a-z_]+)'", MIGRATION, flags=re.MULTILINE)
    assert {name: inverse for name, inverse in rows} == {e.name: e.inverse for e in v.EDGE_TYPES}


def test_relation_checks_in_sql_match_the_python_literals() -> None:
    assert _check_list("relation_type") == set(get_args(v.AnimeRelation))
    char_check = re.findall(r"CHECK \(relation_type IN\s*\(([^)]*)\)", MIGRATION)[2]
    assert set(re.findall(r"'([a-z_]+)'", char_check)) == set(get_args(v.CharacterRelation))
    assert _check_list("role") == set(get_args(v.CharacterRole))
    assert _check_list("format") == set(get_args(v.AnimeFormat))


def test_ids_are_stable_uuid5_of_the_natural_key() -> None:
    a = entity_id("character", "monkey-d-luffy")
    assert a == entity_id("character", "monkey-d-luffy")
    assert a.version == 5
    assert a != entity_id("anime", "monkey-d-luffy")
    # pinned: a changed namespace or key scheme would silently re-key every stored entity
    assert str(a) == "bbf3cd00-2f73-5e76-b929-4aae34b0c68e"


def test_every_edge_is_said_in_words_and_no_words_name_an_edge_the_vocabulary_lacks() -> None:
    assert list(v.EDGE_WORDS) != [] and set(v.EDGE_WORDS) == set(v.EDGE_TYPE_BY_NAME)
    for name, w in v.EDGE_WORDS.items():
        assert w.links and "{x}" in w.step, name
    assert len({w.step for w in v.EDGE_WORDS.values()}) == len(v.EDGE_WORDS)  # a form tells every step apart


def test_the_tables_keyed_by_edge_name_name_only_edges_of_the_vocabulary() -> None:
    from agentic_rag.planners.heuristic.sentences import EDGE_PHRASES, PEOPLE_RELATIONS
    from agentic_rag.planners.llm.forms import STEP_WORDS, UNOFFERED
    from agentic_rag.retrievers.compare import _SHARED_ORDER, SHARED_BY

    for table in (EDGE_PHRASES, PEOPLE_RELATIONS, STEP_WORDS, UNOFFERED, SHARED_BY, v.PREFERRED_RANGE,
                  {e for hop in v.UNTYPED_HOPS for e in hop}):
        assert set(table) <= set(v.EDGE_TYPE_BY_NAME), set(table) - set(v.EDGE_TYPE_BY_NAME)
    # compare groups every edge the words give a group, in its own order
    assert set(_SHARED_ORDER) == {name for name, w in v.EDGE_WORDS.items() if w.shared}
    assert {name: w.shared for name, w in v.EDGE_WORDS.items() if w.shared} == SHARED_BY


def test_the_preferred_range_is_one_of_the_types_the_edge_leads_to() -> None:
    for name, t in v.PREFERRED_RANGE.items():
        assert len(v.EDGE_TYPE_BY_NAME[name].dst) > 1 and t in v.EDGE_TYPE_BY_NAME[name].dst, name


def test_a_hops_domain_and_range_are_the_vocabularys_src_and_dst_but_for_the_documented_overrides() -> None:
    for e in v.EDGE_TYPES:
        hop = (e.name,)
        if hop in v.UNTYPED_HOPS:
            assert v.hop_domain(hop) is None and v.hop_range(hop) is None
            continue
        assert v.hop_domain(hop) == (e.src[0] if len(e.src) == 1 else None), e.name
        leads = (v.PREFERRED_RANGE[e.name],) if e.name in v.PREFERRED_RANGE else e.dst
        assert v.hop_range(hop) == (leads[0] if len(leads) == 1 else None), e.name
    # a hop along several edges is typed where they agree
    assert v.hop_domain(("side_story", "spinoff")) == "anime" and v.hop_range(("family", "romantic")) == "character"
    assert v.hop_domain(("appears_in", "sequel")) is None


def test_the_reader_types_its_hops_as_the_vocabulary_does() -> None:
    import importlib
    import pkgutil

    from agentic_rag.protocol.reading import Hop
    from agentic_rag.understanding import reading
    from agentic_rag.understanding.reading.coerce import _COERCE

    passes = [importlib.import_module(f"{reading.__name__}.{m.name}") for m in pkgutil.iter_modules(reading.__path__)]
    # one source: the vocabulary
    assert passes and not any(hasattr(p, "_DOMAIN") or hasattr(p, "_RANGE") for p in passes)
    for h in [*(h for p in passes for h in vars(p).values() if isinstance(h, Hop)), *_COERCE.values()]:
        assert set(h.edges) <= set(v.EDGE_TYPE_BY_NAME), h.edges
        if len(h.node_types) == 1 and v.hop_range(h.edges) is not None:
            # a hop kept to one type keeps one the edge leads to
            assert h.node_types[0] in {t for e in h.edges for t in v.EDGE_TYPE_BY_NAME[e].dst}, h
