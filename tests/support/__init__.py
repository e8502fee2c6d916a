"""Helpers the tests share: tiny models built on the spot, the backend conformance suite, generated pictures."""
