"""What a language model is asked: prompts per role from ``templates/`` (``prompts``), and the short forms a small
model fills instead of a whole contract (``forms``). The backends that generate are in :mod:`agentic_rag.models`."""
