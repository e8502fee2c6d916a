"""``agentic-rag``: the command line. Each command resolves settings once and passes them down."""

from agentic_rag.cli import agent, catalog, chat, evalset, loadtest, mcp, models, prune, serve
from agentic_rag.cli._app import app

__all__ = ["agent", "app", "catalog", "chat", "evalset", "loadtest", "mcp", "models", "prune", "serve"]
