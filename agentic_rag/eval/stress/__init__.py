"""A paraphrase stress set: evaluation questions generated from catalog facts, phrased many ways.

Gold entities and answers come from the catalog records alone (``load_catalog``, as ingestion
reads them); phrasing comes from templates, at least twelve per question type, each assigned to
the ``tune`` or the ``held`` half; noise (typos, aliases, surname-first names, casing, chatter) is
drawn per question. Typical use::

    questions = build_stress_set(seed=7)
    write_stress_set("stress.jsonl", questions)
"""

from agentic_rag.eval.stress.build import (
    DEFAULT_PER_TYPE,
    DEFAULT_SEED,
    SplitChoice,
    StressQuestion,
    build_facts,
    build_stress_set,
    question_id,
    to_jsonl,
    write_stress_set,
)
from agentic_rag.eval.stress.templates import TEMPLATES, Split, Template, template_split

__all__ = [
    "DEFAULT_PER_TYPE", "DEFAULT_SEED", "TEMPLATES", "Split", "SplitChoice", "StressQuestion", "Template",
    "build_facts", "build_stress_set", "question_id", "template_split", "to_jsonl", "write_stress_set",
]
