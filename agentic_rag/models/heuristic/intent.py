"""Reading a question without a model: what it asks (intent), which names it mentions, of what type.

Fixed patterns over the normalised question, most specific first. The result drives the heuristic
planner: which entity types to resolve each mention as, and which graph primitive or structured
query answers the intent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from agentic_rag.catalog.vocabulary import EntityType

Intent = Literal[
    "relation", "compare", "appears_in", "cast", "adaptation", "sequel", "prequel", "staff", "studio",
    "family", "episode_count", "studio_works", "count_by_studio", "year", "lookup",
]

# How each intent resolves its mentions (types tried in order) and what it needs afterwards.
MENTION_TYPES: dict[Intent, tuple[EntityType, ...]] = {
    "relation": ("character", "anime", "person", "manga"),
    "compare": ("anime", "manga", "character", "studio", "person"),
    "appears_in": ("character",),
    "cast": ("anime", "manga"),
    "adaptation": ("anime", "manga"),
    "sequel": ("anime",),
    "prequel": ("anime",),
    "staff": ("anime", "manga"),
    "studio": ("anime",),
    "family": ("character",),
    "episode_count": ("anime",),
    "studio_works": ("studio",),
    "count_by_studio": ("studio",),
    "year": ("anime", "manga"),
    "lookup": ("character", "anime", "manga", "person", "studio", "franchise"),
}

_NAME = r"(.+?)"
_END = r"\s*[?.!]*$"
# (intent, pattern); the groups are the mentions, in order. First match wins.
_RAW: tuple[tuple[Intent, str], ...] = (
    ("relation", rf"^how (?:is|are|was|were) {_NAME} (?:related|connected|linked) (?:to|with) {_NAME}{_END}"),
    ("relation", rf"^what(?:'s| is) the (?:relationship|relation|connection|link) between {_NAME} and {_NAME}{_END}"),
    ("compare", rf"^compare {_NAME} (?:and|with|to|vs\.?|versus) {_NAME}{_END}"),
    ("compare", rf"^(?:what(?:'s| is| are) the )?difference(?:s)? between {_NAME} and {_NAME}{_END}"),
    ("compare", rf"^{_NAME} (?:vs\.?|versus) {_NAME}{_END}"),
    ("family", rf"^who (?:is|are|was|were) {_NAME}'s? (?:father|mother|parents?|brothers?|sisters?|siblings?|"
               rf"sons?|daughters?|children|grandfather|grandmother|family|wife|husband){_END}"),
    ("appears_in", rf"^(?:which|what|in which|in what) (?:anime|series|shows?)(?: does| is| do| are)? {_NAME} "
                   rf"(?:appear|star|feature)?\s*(?:in|from)?{_END}"),
    ("appears_in", rf"^where (?:is|does) {_NAME} (?:from|appear){_END}"),
    ("cast", rf"^(?:who are|list|name) the (?:main )?(?:characters|cast) (?:of|in) {_NAME}{_END}"),
    ("cast", rf"^which characters (?:appear|are) in {_NAME}{_END}"),
    ("adaptation", rf"^(?:what|which) (?:manga|source) (?:is|was) {_NAME} (?:based on|adapted from){_END}"),
    ("adaptation", rf"^is {_NAME} based on a manga{_END}"),
    ("adaptation", rf"^(?:what|which) anime (?:adapts?|adapted) {_NAME}{_END}"),
    ("sequel", rf"^(?:what|which) (?:is|are) the sequels? (?:to|of) {_NAME}{_END}"),
    ("sequel", rf"^what (?:comes|came) after {_NAME}{_END}"),
    ("sequel", rf"^(?:in )?what order (?:should i watch|do i watch|are) {_NAME}{_END}"),
    ("prequel", rf"^(?:what|which) (?:is|are) the prequels? (?:to|of) {_NAME}{_END}"),
    ("prequel", rf"^what (?:comes|came) before {_NAME}{_END}"),
    ("staff", rf"^who (?:directed|created|wrote|drew|made|composed the music for|did the music for) {_NAME}{_END}"),
    ("staff", rf"^who (?:is|was) the (?:director|creator|author|composer) of {_NAME}{_END}"),
    ("studio", rf"^(?:which|what) studio (?:made|animated|produced|is behind) {_NAME}{_END}"),
    ("studio", rf"^who animated {_NAME}{_END}"),
    ("episode_count", rf"^how many episodes (?:does|did|do|are in|are there in|has) {_NAME}(?: have| has)?{_END}"),
    ("count_by_studio", rf"^how many anime (?:did|has|have) {_NAME} (?:make|made|animate|animated|produce|"
                        rf"produced){_END}"),
    ("studio_works", rf"^(?:which|what) anime (?:did|has|have) {_NAME} (?:make|made|animate|animated|produce|"
                     rf"produced)(?P<when> (?:after|since|before|in) \d{{4}})?{_END}"),
    ("year", rf"^when (?:did|was) {_NAME} (?:air|start|come out|released|premiere|first air)(?:ed)?{_END}"),
    ("lookup", rf"^(?:tell me about|who is|who's|what is|what's|describe|info on|about) {_NAME}{_END}"),
)
PATTERNS: tuple[tuple[Intent, re.Pattern[str]], ...] = tuple((i, re.compile(p, re.IGNORECASE)) for i, p in _RAW)
_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)
_YEAR_CLAUSE = re.compile(r"(after|since|before|in) (\d{4})", re.IGNORECASE)


@dataclass(slots=True)
class Analysis:
    """What a question asks and which names it mentions."""

    intent: Intent
    mentions: list[str]
    year_op: Literal["gt", "gte", "lt", "eq"] | None = None
    year: int | None = None
    types: dict[str, tuple[EntityType, ...]] = field(default_factory=dict)


def clean(text: str) -> str:
    return _ARTICLE.sub("", text.strip().strip("\"'“”‘’").strip())


def analyze(question: str) -> Analysis:
    """The intent and mentions of ``question``; unknown shapes become a lookup of the whole question."""
    q = " ".join(question.split())
    for intent, pattern in PATTERNS:
        m = pattern.match(q)
        if m is None:
            continue
        mentions = [clean(g) for g in m.groups()[: pattern.groups - (1 if "when" in pattern.groupindex else 0)] if g]
        a = Analysis(intent=intent, mentions=[x for x in mentions if x])
        when = m.groupdict().get("when")
        if when and (ym := _YEAR_CLAUSE.search(when)):
            a.year_op = {"after": "gt", "since": "gte", "before": "lt", "in": "eq"}[ym.group(1).lower()]  # type: ignore[assignment]
            a.year = int(ym.group(2))
        if a.mentions:
            a.types = {x: MENTION_TYPES[intent] for x in a.mentions}
            return a
    rest = clean(q.rstrip("?.! "))
    return Analysis(intent="lookup", mentions=[rest] if rest else [], types={rest: MENTION_TYPES["lookup"]})
