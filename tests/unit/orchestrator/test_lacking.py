"""What an answer says the catalog lacks (orchestrator/state.py: lacking): names linking found no entry for."""

from __future__ import annotations

from agentic_rag.orchestrator import state
from agentic_rag.protocol import EntityLinks
from agentic_rag.protocol.reading import Among, Analysis


def _run(unknown: list[str], reading: Analysis | None = None) -> state.RunState:
    budget = state.Budget(max_turns=3, deadline_ms=1000, max_failed_steps=2)
    run = state.RunState(question="q", mode="agentic", budget=budget)
    run.links, run.reading = EntityLinks(mentions=[], unknown=unknown), reading
    return run


def test_a_name_the_catalog_lacks_is_said_and_a_group_a_choice_is_read_by_is_said_by_its_answer() -> None:
    assert state.lacking(_run(["Kizaru"])) == "Kizaru is not in the catalog."
    among = Among(candidates=["a", "b"], negated=True, said="one of the Legendary Sannin",
                  group=("legendary", "sannin"))
    choice = Analysis(intent="among", mentions=[], among=among)
    assert state.lacking(_run(["Legendary Sannin", "Kizaru"], choice)) == "Kizaru is not in the catalog."
