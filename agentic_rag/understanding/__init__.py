"""Question understanding: entity linking against the catalog's names, and reading what is asked.

:mod:`~agentic_rag.understanding.linker` finds every mention (two bounded PostgreSQL round trips);
:mod:`~agentic_rag.understanding.reading` turns the question and its links into a plan of hops and
what to read at the end. The heuristic planner and clarification use both; LLM planners see the
links as a card. Nothing here calls a model.
"""
