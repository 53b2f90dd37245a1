"""Model backends behind :class:`~webshepherd.daemon.engine.backends.base.Backend`:
transformers (with split prefix attention), vLLM and OpenAI-compatible servers."""
