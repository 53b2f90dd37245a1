"""Root conftest: shared fixtures live in tests/fixtures/ and are registered here."""

pytest_plugins = [
    "tests.fixtures.tiny_model",
    "tests.fixtures.daemon",
    "tests.fixtures.shop_recording",
]

# tests/integrations/ run in their own venv (`make test-integrations`, part of `make test`):
# BrowserGym pins playwright==1.44, the extension tests use the main venv's newer one.
# tests/vllm/ (the real vLLM engine, `make test-vllm`, part of `make test`) run in .venv-vllm.
collect_ignore = ["tests/integrations", "tests/vllm"]
