"""Developer tools, not part of serving: the tiny test model (built and trained here) and an
OpenAI-compatible test server over a local model."""
