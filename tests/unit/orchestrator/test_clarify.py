"""When a clarification is needless (orchestrator/clarify.py): the readings of a shared title answer alike."""

from __future__ import annotations

from agentic_rag.orchestrator.clarify import readings_to_weigh, same_answer
from agentic_rag.protocol import Clarification, ClarificationChoice, EntityRef
from agentic_rag.protocol.reading import Analysis


def asked(*types: str) -> Clarification:
    return Clarification(question="Which 'zorb' do you mean?", choices=[
        ClarificationChoice(label=f"Zorb ({t})",
                            entity=EntityRef(entity_type=t, id=f"00000000-0000-4000-8000-{i:012d}"))  # type: ignore[arg-type]
        for i, t in enumerate(types)])


def test_an_anime_and_its_manga_asked_a_value_each_has_are_weighed() -> None:
    status = Analysis(intent="attribute", mentions=["zorb"], attr="status")
    assert len(readings_to_weigh(status, asked("anime", "manga"))) == 2
    # two works of one type, a character beside them, or nothing asked of them: different things, asked about
    assert readings_to_weigh(status, asked("anime", "anime")) == []
    assert readings_to_weigh(status, asked("anime", "manga", "character")) == []
    assert readings_to_weigh(Analysis(intent="lookup", mentions=["zorb"]), asked("anime", "manga")) == []


def test_the_same_answer_for_every_reading_makes_the_question_needless() -> None:
    status = Analysis(intent="attribute", mentions=["zorb"], attr="status")
    assert same_answer(status, [{"status": "finished"}, {"status": "finished"}], 2)
    assert same_answer(status, [{"status": "airing"}, {"status": "ongoing"}], 2)  # neither has finished
    assert not same_answer(status, [{"status": "finished"}, {"status": "ongoing"}], 2)
    assert not same_answer(status, [{"status": "finished"}], 2)  # a reading not found
    assert not same_answer(status, [{"status": "finished"}, {}], 2)  # a value not recorded
    year = Analysis(intent="attribute", mentions=["zorb"], attr="year")
    assert same_answer(year, [{"year": 2015}, {"year": 2015}], 2)
    assert not same_answer(year, [{"year": 2012}, {"year": 2015}], 2)


def test_a_title_whose_story_is_explained_needs_no_question() -> None:
    from agentic_rag.orchestrator.clarify import clarification
    from tests.unit.understanding.test_reading import cand, links

    q = "why does Zorbo keep the notebook in Zorb?"
    title = [cand("anime", "Zorb", year=2006), cand("manga", "Zorb", year=2003)]
    linked = links(q, ("Zorbo", [cand("character", "Zorbo")]), ("Zorb", title))
    why = Analysis(intent="lookup", mentions=["Zorb"], types={"Zorb": ("anime", "manga")}, explain=q)
    assert clarification(why, linked) is None
    # a value asked of the title itself: which one is meant matters
    episodes = Analysis(intent="attribute", mentions=["Zorb"], types={"Zorb": ("anime", "manga")}, attr="year",
                        explain=q)
    assert clarification(episodes, linked) is not None
    # the title's story explained with no character beside it is told the same in either form: nothing is asked
    alone = links("why is Zorb so dark?", ("Zorb", title))
    assert clarification(Analysis(intent="lookup", mentions=["Zorb"], types={"Zorb": ("anime", "manga")},
                                  explain="why is Zorb so dark?"), alone) is None
    # ... but beside another work named, it is one of two things asked about
    other = links("why is Zorb so dark next to Blip?", ("Zorb", title), ("Blip", [cand("anime", "Blip")]))
    assert clarification(Analysis(intent="lookup", mentions=["Zorb"], types={"Zorb": ("anime", "manga")},
                                  explain="why is Zorb so dark next to Blip?"), other) is not None


def test_a_title_that_is_only_where_its_people_are_asked_needs_no_question() -> None:
    from agentic_rag.orchestrator.clarify import clarification
    from agentic_rag.protocol import LinkCandidate
    from tests.unit.understanding.test_reading import cand, links

    def of_franchise(c: LinkCandidate) -> LinkCandidate:
        return c.model_copy(update={"franchises": ["00000000-0000-4000-8000-00000000f00d"]})

    title = [of_franchise(cand("anime", "Zorb", year=2006)), of_franchise(cand("manga", "Zorb", year=2003))]
    cast = Analysis(intent="lookup", mentions=["Zorb"], types={"Zorb": ("anime", "manga")})
    q = "new question - who leads the glass troupe in Zorb?"
    assert clarification(cast, links(q, ("Zorb", title)), q) is None
    # the title asked about ("who directed Zorb"), or no franchise shared: which one is meant matters
    q = "who is Zorb about?"
    assert clarification(cast, links(q, ("Zorb", title)), q) is not None
    q = "who leads the glass troupe in Zorb?"
    apart = [cand("anime", "Zorb", year=2006), cand("manga", "Zorb", year=2003)]
    assert clarification(cast, links(q, ("Zorb", apart)), q) is not None


def test_a_title_whose_people_are_asked_needs_no_question_between_its_forms() -> None:
    from agentic_rag.orchestrator.clarify import clarification
    from agentic_rag.protocol import LinkCandidate
    from agentic_rag.understanding.reading.hops import Hop
    from tests.unit.understanding.test_reading import cand, links

    def of_franchise(c: LinkCandidate) -> LinkCandidate:
        return c.model_copy(update={"franchises": ["00000000-0000-4000-8000-00000000f00d"]})

    title = [of_franchise(cand("anime", "Zorb", year=2006)), of_franchise(cand("manga", "Zorb", year=2003))]
    q = "main characters of Zorb?"  # no "who", no "in": the plan itself asks its people
    cast = Analysis(intent="chain", mentions=["Zorb"], types={"Zorb": ("anime", "manga")},
                    hops=[Hop(("features",), roles=("main",))])
    assert clarification(cast, links(q, ("Zorb", title)), q) is None
    # a relation of the title itself ("who directed Zorb") is the title's own: which one matters
    staff = Analysis(intent="chain", mentions=["Zorb"], types={"Zorb": ("anime", "manga")},
                     hops=[Hop(("staff",), roles=("director",))])
    assert clarification(staff, links("who directed Zorb?", ("Zorb", title)), "who directed Zorb?") is not None


def test_what_the_catalog_records_of_nothing_needs_no_question() -> None:
    from agentic_rag.orchestrator.clarify import clarification
    from tests.unit.understanding.test_reading import cand, links

    title = [cand("anime", "Zorb", year=2006), cand("manga", "Zorb", year=2003)]
    q = "who voices the hero of Zorb?"
    a = Analysis(intent="lookup", mentions=["Zorb"], types={"Zorb": ("anime", "manga")})
    assert clarification(a, links(q, ("Zorb", title)), q) is not None
    a.unrecorded = "voice actors"  # not recorded of either reading: nothing to choose
    assert clarification(a, links(q, ("Zorb", title)), q) is None
