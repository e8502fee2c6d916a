"""The SearchAI gRPC API: the servicer (``service``) and its contract with the generated modules (``proto/``)."""
