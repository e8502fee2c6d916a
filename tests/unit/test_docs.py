"""The map of the code in docs/architecture.md matches the tree: every module is listed, everything listed exists."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "architecture.md"
PACKAGE = REPO / "agentic_rag"
_ENTRY = re.compile(r"^(?P<indent> *)(?P<name>[\w.\-]+/?)(?: {2,}.*)?$")


def listed() -> set[Path]:
    """The paths the layout block names: ``agentic_rag/`` and what is indented under it, two spaces a level."""
    text = DOC.read_text(encoding="utf-8")
    block = text[text.index("## Layout"):]
    block = block[block.index("```\n") + 4:]
    block = block[:block.index("```")]
    stack: list[str] = []
    out: set[Path] = set()
    for line in block.splitlines():
        m = _ENTRY.match(line)
        if m is None or not line.startswith(("agentic_rag/", "  ")):
            continue
        depth = len(m["indent"]) // 2
        name = m["name"]
        del stack[depth:]
        path = Path(*stack, name.rstrip("/"))
        out.add(path)
        if name.endswith("/"):
            stack.append(name.rstrip("/"))
    return out


def modules() -> set[Path]:
    """Every module, SQL migration and packaged YAML of the package (package faces and generated code aside)."""
    found: set[Path] = set()
    for p in PACKAGE.rglob("*"):
        rel = p.relative_to(REPO)
        if "__pycache__" in rel.parts or "_pb2" in p.name or p.name in ("__init__.py", "__main__.py"):
            continue
        if p.suffix in (".py", ".sql") or (p.suffix == ".yaml" and "data" not in rel.parts):
            found.add(rel)
    return found


def test_every_module_is_on_the_map() -> None:
    missing = sorted(str(p) for p in modules() - listed())
    assert not missing, f"docs/architecture.md's layout does not list: {missing}"


def test_everything_on_the_map_exists() -> None:
    gone = sorted(str(p) for p in listed() if not (REPO / p).exists())
    assert not gone, f"docs/architecture.md's layout lists what does not exist: {gone}"
