"""Length limits read from the contracts themselves, so that code cutting a value to fit never copies a number.

A contract declares how long a string or list may be (``Field(max_length=...)``, or a bounded text type such as
:data:`~agentic_rag.protocol.base.ShortText`); :func:`max_len` reads that declaration back from the model's
field metadata, and :func:`clip` cuts a string to it. Both work on any pydantic model, not only the protocol's.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Iterable
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel


def _declared(metadata: Iterable[Any]) -> int | None:
    # MaxLen (from Field(max_length=...)) and StringConstraints both carry a max_length attribute.
    for item in metadata:
        limit = getattr(item, "max_length", None)
        if isinstance(limit, int):
            return limit
    return None


def _unwrap(annotation: Any) -> tuple[Any, list[Any]]:
    """The annotation without ``| None`` and ``Annotated[...]``, and the metadata ``Annotated`` carried."""
    metadata: list[Any] = []
    while True:
        if get_origin(annotation) is Annotated:
            annotation, *extra = get_args(annotation)
            metadata.extend(extra)
        elif get_origin(annotation) in (Union, types.UnionType):
            kept = [arg for arg in get_args(annotation) if arg is not type(None)]
            if len(kept) != 1:
                return annotation, metadata
            annotation = kept[0]
        else:
            return annotation, metadata


@functools.cache
def max_len(model: type[BaseModel], field: str, *, item: bool = False) -> int:
    """The ``max_length`` that ``model.field`` declares: characters of a string, items of a list.

    With ``item=True``, the limit of each item of a list field (``list[ShortText]`` gives 200). Raises
    ``LookupError`` when the field declares none, so a limit removed from a contract fails loudly at import.
    """
    info = model.model_fields[field]
    annotation, metadata = _unwrap(info.annotation)
    if item:
        args = get_args(annotation)
        if get_origin(annotation) is not list or not args:
            raise LookupError(f"{model.__name__}.{field} is not a list, so it has no item limit")
        limit = _declared(_unwrap(args[0])[1])
    else:
        limit = _declared(info.metadata)
        limit = _declared(metadata) if limit is None else limit
    if limit is None:
        what = "items of " if item else ""
        raise LookupError(f"{model.__name__}.{field} declares no max_length for its {what}value")
    return limit


def clip(text: str, model: type[BaseModel], field: str, *, item: bool = False) -> str:
    """``text`` cut to the length ``model.field`` (or, with ``item=True``, each of its items) allows."""
    return text[: max_len(model, field, item=item)]
