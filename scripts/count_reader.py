"""Size of the question reader: lines, compiled regular expressions and branches, per module and in total.

    python scripts/count_reader.py [ROOT]

ROOT is a checkout (default: this one). The reader is ``agentic_rag/understanding/`` and the heuristic planner that
reads with it (``agentic_rag/planners/heuristic/``, ``agentic_rag/models/heuristic/`` before issue 36's move).
Branches are ``if``/``elif`` statements and conditional expressions; regular expressions are ``re.compile`` calls.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

READER = ("agentic_rag/understanding", "agentic_rag/planners/heuristic", "agentic_rag/models/heuristic")


def counts(path: Path) -> tuple[int, int, int]:
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    regexes = sum(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "compile"
                  and isinstance(n.func.value, ast.Name) and n.func.value.id == "re" for n in ast.walk(tree))
    branches = sum(isinstance(n, ast.If | ast.IfExp) for n in ast.walk(tree))
    return len(text.splitlines()), regexes, branches


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1]
    total = [0, 0, 0]
    print(f"{'module':52} {'lines':>6} {'regex':>6} {'branch':>6}")
    for folder in READER:
        for p in sorted((root / folder).rglob("*.py")) if (root / folder).is_dir() else []:
            c = counts(p)
            total = [a + b for a, b in zip(total, c, strict=True)]
            print(f"{p.relative_to(root)!s:52} {c[0]:6} {c[1]:6} {c[2]:6}")
    print(f"{'the reader':52} {total[0]:6} {total[1]:6} {total[2]:6}")


if __name__ == "__main__":
    main()
