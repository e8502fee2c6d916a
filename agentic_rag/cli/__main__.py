from agentic_rag.cli import app

app()
