"""Serving pmc-rag over HTTP with Hayhooks: REST endpoints and OpenAI-compatible chat, configured by hayhooks.yml."""
