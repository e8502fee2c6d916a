"""The roles' deciders: the rule-based planner and validator (``heuristic/``), what an LLM is shown and fills in
(``llm/``: prompts, forms), and ``factory``, which turns settings into the planner and validator of a run."""
