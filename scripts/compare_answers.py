"""Compare two answers files (``agentic-rag eval --answers``) question by question.

    python scripts/compare_answers.py BEFORE.jsonl AFTER.jsonl [--fields status,answer,result_entities,turns]

Prints every question whose compared fields differ, and a summary line (how many questions, how many differ,
how many became right or wrong). Exits 1 when any differs, so a script can require "the same on every question".
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agentic_rag.eval.answers import COMPARED, differences, read_answers


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--fields", default=",".join(COMPARED), help="fields compared (comma-separated)")
    args = ap.parse_args()
    before, after = read_answers(args.before), read_answers(args.after)
    diffs = differences(before, after, args.fields.split(","))
    for qid, field, b, a in diffs:
        print(f"{qid}  {field}:\n    before: {b!r}\n    after:  {a!r}")
    common = before.keys() & after.keys()
    fixed = sum(not before[q]["correct"] and after[q]["correct"] for q in common)
    broken = sum(before[q]["correct"] and not after[q]["correct"] for q in common)
    changed = len({d[0] for d in diffs})
    print(f"{len(common)} questions in both, {changed} differ ({fixed} now right, {broken} now wrong)")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
