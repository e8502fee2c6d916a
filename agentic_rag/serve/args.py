"""Application args (``args:`` of a Serve config) as settings, and what a replica opens from them.

A Serve config's ``args`` are :class:`~agentic_rag.settings.Settings` fields by name. Every
replica builds its own settings from the same args plus its own environment, so a secret given to
the pods as an environment variable (``DATABASE_URL``) never travels inside the application graph.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Mapping
from typing import Any

from pydantic import AliasChoices

from agentic_rag.logs import configure_logging
from agentic_rag.settings import Settings
from agentic_rag.storage.postgres import make_pool, resolve_dsn
from agentic_rag.storage.sql import Pool


def _init_key(name: str) -> str:
    """The keyword Settings accepts for a field: its first alias when it has one (it ignores the bare name)."""
    alias = Settings.model_fields[name].validation_alias
    if isinstance(alias, AliasChoices) and isinstance(alias.choices[0], str):
        return alias.choices[0]
    if isinstance(alias, str):
        return alias
    return name


def settings_from(args: Mapping[str, Any]) -> Settings:
    """Settings with ``args`` (field names) over the environment. An unknown name is an error, not ignored."""
    unknown = sorted(set(args) - set(Settings.model_fields))
    if unknown:
        raise ValueError(f"unknown setting(s) in the application args: {', '.join(unknown)}")
    return Settings(**{_init_key(k): v for k, v in args.items()})


def env_names(name: str) -> tuple[str, ...]:
    """The environment variables that set the field ``name`` (its aliases, else ``RAG_NAME``)."""
    alias = Settings.model_fields[name].validation_alias
    if isinstance(alias, AliasChoices):
        return tuple(c for c in alias.choices if isinstance(c, str))
    return (alias,) if isinstance(alias, str) else (f"RAG_{name.upper()}",)


def env_overridden(args: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> list[str]:
    """Each environment variable that ``args`` override with another value, as a sentence. A config's args win over
    the environment (every replica must read the same value); an operator who set one must hear that it lost."""
    environ = os.environ if environ is None else environ
    said: list[str] = []
    for name in sorted(set(args) & set(Settings.model_fields)):
        for var in env_names(name):
            if var not in environ:
                continue
            try:
                env_value = Settings.model_validate({_init_key(name): environ[var]}).model_dump()[name]
                arg_value = Settings.model_validate({_init_key(name): args[name]}).model_dump()[name]
            except ValueError:  # one of them is invalid: say so as overridden, settings_from reports the rest
                env_value, arg_value = environ[var], args[name]
            if env_value != arg_value:
                said.append(f"{var}={environ[var]!r} is overridden by the config's {name}: {args[name]!r}")
            break
    return said


def replica_settings(args: Mapping[str, Any]) -> Settings:
    """A replica's settings, with its logging configured (JSON lines with request ids, as in-process).

    The lines go to the process's own stderr (which Ray writes to the worker's log file and, locally, to the
    driver's console), not to the ``sys.stderr`` Serve installs in a replica: that one walks the caller's
    stack on every write, which cost the Orchestrator 12% of its CPU under load (docs/benchmarks.md)."""
    settings = settings_from(args)
    configure_logging(settings, stream=sys.__stderr__)
    return settings


async def replica_dsn(settings: Settings) -> str:
    """The PostgreSQL DSN (``build_app`` resolved it once into the args, so replicas do not race to create it)."""
    if settings.database_url:
        return settings.database_url
    return await asyncio.to_thread(resolve_dsn, settings)


async def open_pool(settings: Settings, dsn: str | None = None) -> Pool:
    """An open PostgreSQL pool for a replica."""
    return await make_pool(dsn or await replica_dsn(settings), settings, timeout_s=30)
