"""agentic-rag: question answering over a catalog in PostgreSQL and Qdrant with a code-owned agent loop."""

__version__ = "0.1.0"
