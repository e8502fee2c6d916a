"""How many answers repeat a context card's notation (:mod:`agentic_rag.eval.syntax`), per answers file.

    .venv/bin/python scripts/card_syntax.py /tmp/rec/base/*.jsonl [--show 3]

Reads files written by ``agentic-rag eval --answers`` or ``scripts/bench_planner.py --answers``; prints, per
file, the drafted answers (a clarification is no draft: its choices are labelled "Naruto (anime, 2002)" on
purpose), how many hold card notation, and the first ``--show`` of them.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from agentic_rag.eval.answers import read_answers
from agentic_rag.eval.syntax import card_syntax


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", type=Path, nargs="+")
    ap.add_argument("--show", type=int, default=0, help="Answers with card notation to print per file.")
    args = ap.parse_args()
    total = flagged = 0
    for path in args.files:
        records = {k: r for k, r in read_answers(path).items() if r["status"] != "needs_clarification"}
        hits = [(r["id"], r["answer"], found) for r in records.values() if (found := card_syntax(r["answer"] or ""))]
        total, flagged = total + len(records), flagged + len(hits)
        print(f"{path.name}: {len(hits)} of {len(records)} answers hold card notation")
        for qid, answer, found in hits[: args.show]:
            print(f"  {qid}: {found[:3]} in {answer[:200]!r}")
    print(f"all: {flagged} of {total}")


if __name__ == "__main__":
    main()
