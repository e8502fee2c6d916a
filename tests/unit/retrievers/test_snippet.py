"""The start of a record's stored text a lookup answers from (retrievers/vector.py): a long head is cut, not the
description, and the description is cut at a sentence's end."""

from __future__ import annotations

from agentic_rag.retrievers.vector import ABOUT_CHARS, SNIPPET_CHARS, snippet


def test_a_short_text_is_kept_whole() -> None:
    assert snippet("Death Note. Anime. A notebook that kills.", 20) == ("Death Note. Anime. A notebook that kills.", 20)


def test_a_long_head_is_cut_and_the_description_kept_whole() -> None:
    head = "Izuku Midoriya. Character in " + ", ".join(f"My Hero Academia Season {i}" for i in range(2, 14)) + ". "
    story = "A boy born without a Quirk who inherits One For All from All Might and trains at U.A. High School."
    text, at = snippet(head + story, len(head))
    assert len(text) <= SNIPPET_CHARS and at is not None
    assert text[at:] == story and text.startswith("Izuku Midoriya. Character in My Hero Academia")


def test_a_long_description_ends_at_a_sentence() -> None:
    head = "Naruto. Anime from 2002. "
    story = "First sentence of the synopsis, which is short. " + "A second sentence that runs on and on " * 20 + "."
    text, at = snippet(head + story, len(head))
    assert at == len(head) and text[at:] == "First sentence of the synopsis, which is short."
    assert len(text) <= max(SNIPPET_CHARS, len(head) + ABOUT_CHARS)


def test_a_text_with_no_description_is_its_start() -> None:
    assert snippet("x" * 1000, None) == ("x" * SNIPPET_CHARS, None)
