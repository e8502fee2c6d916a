"""The HTTP API (v1): the app (``app``), its request and response bodies (``models``), how one run is served as
JSON or server-sent events (``runs``), errors and the outermost middleware (``errors``), and its metrics."""
