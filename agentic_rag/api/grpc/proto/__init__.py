"""The SearchAI gRPC contract (``searchai.proto``) and its generated Python modules (committed, never edited).

Regenerate after editing the proto, from the repository root::

    python -m grpc_tools.protoc -I. --python_out=. --pyi_out=. --grpc_python_out=. \\
        agentic_rag/api/grpc/proto/searchai.proto
"""
