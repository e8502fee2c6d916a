"""Everything under tests/gpu/ is marked ``gpu`` and skipped where there is no CUDA device."""

from __future__ import annotations

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
    """tests/support/tiny.py's builder."""
    from tests.support.tiny import build_tiny_model

    return build_tiny_model
