"""Everything under tests/gpu/ is marked ``gpu`` and skipped where there is no CUDA device."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path

import pytest


def _skip_reason() -> str | None:
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "needs a CUDA device"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = _skip_reason()
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.gpu)
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def build_tiny_model() -> Callable[[Path], Path]:
    """``tests/models/tiny.py``'s builder, loaded by path (tests/ is not a package)."""
    path = Path(__file__).resolve().parents[1] / "models" / "tiny.py"
    name = "agentic_rag_tests_tiny_model"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None, path
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    builder: Callable[[Path], Path] = sys.modules[name].build_tiny_model
    return builder
