"""A route's or a tool's parameter read as a model built at start-up, for the frameworks that take a parameter's
model from the function's signature (FastAPI, the MCP SDK): the code stays typed with the static model."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def retyped(**annotations: Any) -> Callable[[F], F]:
    """Decorate a function so that its signature gives these parameters these annotations (a subclass of the static
    type, with this server's bounds: :func:`~agentic_rag.api.http.models.request_models`)."""
    def apply(fn: F) -> F:
        signature = inspect.signature(fn, eval_str=True)  # the rest resolved as the framework would
        missing = set(annotations) - set(signature.parameters)
        if missing:
            raise TypeError(f"{fn.__name__} has no parameter {sorted(missing)}")
        fn.__signature__ = signature.replace(parameters=[  # type: ignore[attr-defined]
            p.replace(annotation=annotations.get(p.name, p.annotation)) for p in signature.parameters.values()])
        return fn

    return apply
