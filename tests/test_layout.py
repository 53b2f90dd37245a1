"""Tests mirror the source tree: every product module ``F/x.py`` has ``tests/F/test_x.py``, or
is listed in :data:`UNMIRRORED` with the reason it has none.

Product modules: every ``.py`` file under the design card's package folders (``protocol/``,
``daemon/``, ``tui/``, ``integrations/``) but ``__init__.py`` and ``__main__.py``. A listed
module that gains its mirrored test (or goes away) must leave the list, so it stays honest.
``python -m tests.test_layout`` prints the counts.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("protocol", "daemon", "tui", "integrations")

# Where a module's behaviour is tested elsewhere, the reason names the test; the rest say why
# a test file of its own would add nothing (declarations only, a re-export, a thin entry point).
_DECLARATIONS = "declarations only (types, constants, a Protocol): checked by mypy, used by all"
_REEXPORT = "a re-export kept for older import paths: the module it re-exports is tested"
UNMIRRORED: dict[str, str] = {
    # -- protocol ----------------------------------------------------------------------------
    "protocol/agents/action_space.py": "action space text: tests/protocol/agents/test_prompts.py",
    "protocol/agents/environment.py": "Environment: tests/protocol/agents/test_loop.py",
    "protocol/client/session.py": "session handle: tests/protocol/client/test_async_client.py",
    "protocol/client/calls.py": (
        "the @session_call marker and the input aliases: tests/protocol/client/test_session_api.py"
    ),
    "protocol/token_store.py": "the token file: tests/protocol/client/test_async_client.py",
    "protocol/errors.py": "the root error and ErrorCode: tests/protocol/test_vectors.py",
    "protocol/replies.py": "wire models: tests/protocol/test_vectors.py and test_union.py",
    "protocol/requests.py": "wire models: tests/protocol/test_vectors.py and test_union.py",
    "protocol/version.py": _DECLARATIONS,
    # -- daemon: the serving core ------------------------------------------------------------
    "daemon/engine/api.py": _DECLARATIONS,
    "daemon/engine/types.py": _DECLARATIONS,
    "daemon/engine/backends/base.py": "the Backend ABC: every backend's tests run through it",
    "daemon/engine/backends/remote_health.py": (
        "the remote server's health and /metrics: tests/daemon/engine/backends/"
        "test_openai_backend.py and tests/vllm/"
    ),
    "daemon/engine/backends/split_attention.py": (
        "one prefill per shared prefix: tests/daemon/engine/backends/"
        "test_transformers_batching.py (split against repeated cache)"
    ),
    "daemon/engine/backends/table.py": _DECLARATIONS,
    "daemon/engine/backends/model_files.py": (
        "a model's folder, cache or hub: tests/daemon/engine/test_loader.py (missing folders, "
        "offline hub ids, positions)"
    ),
    "daemon/engine/backends/transformers_loading.py": (
        "its entry through load_engine: tests/daemon/engine/test_loader.py and test_engine.py"
    ),
    "daemon/engine/backends/vllm_loading.py": (
        "vLLM's loading and refusals: tests/daemon/engine/test_loader.py and tests/vllm/"
    ),
    "daemon/engine/backends/openai_loading.py": (
        "the remote servers' probe and options: tests/daemon/engine/test_loader.py and "
        "backends/test_openai_chat_backend.py"
    ),
    "daemon/engine/backends/decode_rows.py": (
        "the rows both layouts grow: tests/daemon/engine/backends/test_transformers_backend.py "
        "and test_transformers_sampling.py (pieces, stops, streaming, label masses)"
    ),
    "daemon/engine/backends/decode_split.py": (
        "the split layout: tests/daemon/engine/backends/test_transformers_batching.py (split "
        "against repeated cache, merged batches) and test_transformers_vision.py"
    ),
    "daemon/engine/backends/decode_copies.py": (
        "the repeated-cache layout: tests/daemon/engine/backends/test_backend_options.py "
        "(split_attention=False) and test_transformers_batching.py"
    ),
    "daemon/engine/backends/vllm_outputs.py": "vLLM's outputs read: tests/vllm/ (needs vLLM)",
    "daemon/records/stored.py": "the session read back: tests/daemon/server/test_restart.py",
    "daemon/recorder/history.py": (
        "the reading API: tests/daemon/recorder/test_store.py, tests/daemon/server/"
        "test_restart.py and the offline tests read through it"
    ),
    "daemon/recorder/schema.py": "the DDL from the kinds: tests/daemon/records/test_kind.py",
    "daemon/recorder/timeline.py": "tests/daemon/offline/ (every export and report reads it)",
    "daemon/server/fanout.py": "Hub and its queues: tests/daemon/server/test_backpressure.py",
    "daemon/server/handshake.py": "tests/daemon/server/test_security.py (on a real daemon)",
    "daemon/server/access.py": (
        "approvers, pairing and hook keys over real sockets: tests/daemon/server/"
        "test_approvers.py, test_commits_live.py and tests/e2e/test_hook_forgery.py"
    ),
    "daemon/server/server.py": (
        "DaemonServer: tests/daemon/server/test_session_flow.py, test_security.py and the "
        "other live tests there"
    ),
    "daemon/sessions/convert.py": "engine to wire types: tests/daemon/sessions/test_machine.py",
    "daemon/config.py": "bind and origin checks: tests/daemon/server/test_security.py",
    "daemon/redact.py": "redaction: tests/daemon/offline/export/test_rules.py",
    "daemon/sessions/effects.py": _DECLARATIONS,
    "daemon/sessions/plans.py": "plan steps: tests/daemon/sessions/test_machine.py",
    # -- daemon: commands and tooling --------------------------------------------------------
    "daemon/cli/demo.py": "`webshepherd demo`: tests/daemon/demo/test_run.py",
    "daemon/cli/dev.py": "`webshepherd dev`: tests/daemon/dev/test_tiny_model.py",
    "daemon/cli/observe.py": "`webshepherd observe`: tests/e2e/test_observe_cli.py",
    "daemon/cli/rescore.py": "`webshepherd rescore`: tests/daemon/offline/test_rescore.py",
    "daemon/cli/schema.py": "`webshepherd schema`: tests/daemon/cli/test_cli.py",
    "daemon/cli/token.py": "`webshepherd token`: tests/daemon/cli/test_cli.py",
    "daemon/cli/train.py": "`webshepherd train`: tests/daemon/offline/training/test_train.py",
    "daemon/cli/tui.py": "`webshepherd tui`: tests/tui/test_cli_device.py",
    "daemon/browser/actions.py": _REEXPORT,
    "daemon/browser/playwright_env.py": "the Playwright harness: tests/e2e/test_harness.py",
    "daemon/demo/browser.py": "the browser demo: tests/e2e/test_demo_browser.py",
    "daemon/demo/browser_page.py": "the browser demo: tests/e2e/test_demo_browser.py",
    "daemon/demo/browser_report.py": "the browser demo: tests/e2e/test_demo_browser.py",
    "daemon/demo/browser_steps.py": "the browser demo: tests/e2e/test_demo_browser.py",
    "daemon/demo/demo_setup.py": "the demos' setup: tests/daemon/demo/test_run.py",
    "daemon/demo/shop.py": "the bundled shop: tests/daemon/demo/test_run.py, test_variants.py",
    "daemon/dev/model_cache.py": "the caches' paths: tests/daemon/dev/test_tiny_model.py",
    "daemon/dev/openai_completer.py": "the test endpoint: tests/daemon/engine/backends/",
    "daemon/dev/openai_server.py": "the test endpoint: tests/daemon/engine/backends/",
    "daemon/dev/screenshots.py": "tiny vision model data: tests/daemon/dev/test_tiny_vision.py",
    "daemon/dev/tiny_data.py": "tiny judge data: tests/daemon/dev/test_tiny_model.py",
    "daemon/dev/training.py": "tiny vision training: tests/daemon/dev/test_tiny_vision.py",
    "daemon/dev/vllm_serve.py": "vLLM processes for tests/vllm/ and bench/ (needs vLLM)",
    # -- daemon: offline ---------------------------------------------------------------------
    "daemon/offline/evaluation/rows.py": "tests/daemon/offline/evaluation/test_rewardbench.py",
    "daemon/offline/export/llamafactory.py": "tests/daemon/offline/export/test_formats.py",
    "daemon/offline/export/mind2web.py": "tests/daemon/offline/export/test_formats.py",
    "daemon/offline/export/negatives.py": "tests/daemon/offline/export/test_rules.py",
    "daemon/offline/export/redact.py": _REEXPORT,
    "daemon/offline/export/sessions.py": (
        "the per-session loop: tests/daemon/offline/export/test_redaction_everywhere.py"
    ),
    "daemon/offline/export/trl.py": "tests/daemon/offline/export/test_formats.py",
    "daemon/offline/export/webprm.py": "tests/daemon/offline/export/test_export_e2e.py",
    "daemon/offline/export/writers.py": "tests/daemon/offline/export/test_export_e2e.py",
    "daemon/offline/imports/recording.py": "tests/daemon/offline/test_rescore.py",
    "daemon/offline/imports/run.py": _DECLARATIONS,
    "daemon/offline/report/figures.py": "tests/daemon/offline/report/test_render.py",
    "daemon/offline/report/tree.py": "tests/daemon/offline/report/test_tree_report.py",
    # -- tui -----------------------------------------------------------------------------------
    "tui/app.py": "the app under Pilot: tests/tui/test_live.py, test_snapshots.py",
    "tui/device.py": "the Device tab's figures: tests/tui/test_cli_device.py",
    "tui/link.py": "the app's connection: tests/tui/test_live.py",
    "tui/screens/edit_action.py": "tests/tui/test_live.py and test_snapshots.py",
    "tui/screens/help.py": "tests/tui/test_snapshots.py",
    "tui/screens/history.py": "tests/tui/test_report_key.py",
    "tui/screens/main.py": "tests/tui/test_live.py and test_snapshots.py",
    "tui/screens/messages.py": _DECLARATIONS,
    "tui/screens/replay.py": "tests/tui/test_replay_frames.py",
    "tui/widgets/device_panel.py": "tests/tui/test_cli_device.py",
    "tui/widgets/reward_plot.py": "tests/tui/test_live.py",
    "tui/widgets/search_tree.py": "tests/tui/test_search_tree.py",
    "tui/widgets/sessions_table.py": "tests/tui/test_live.py and test_snapshots.py",
    "daemon/sessions/action_targets.py": (
        "what an action does to the page, read by the guards: tests/daemon/sessions/test_guards.py"
    ),
    "daemon/sessions/tree_nodes.py": (
        "a search tree's nodes checked: tests/daemon/server/test_tree_nodes_live.py"
    ),
    # -- integrations --------------------------------------------------------------------------
    "integrations/browsergym_obs.py": (
        "BrowserGym's observations, public through browsergym.py: "
        "tests/integrations/test_browsergym.py"
    ),
    "integrations/browsergym_env.py": (
        "the agent-loop Environment, public through browsergym.py: "
        "tests/integrations/test_browsergym.py (BrowserGymEnvironment)"
    ),
    "integrations/shop_task.py": (
        "the bundled shop as a BrowserGym task: tests/integrations/test_replay.py (recorded, "
        "replayed, its writes refused, blamed)"
    ),
    "integrations/commit_gate_parts.py": (
        "the gate's shared types and asking: tests/integrations/test_commit_gate.py"
    ),
    "integrations/commit_gate_downloads.py": (
        "downloads held: tests/integrations/test_commit_gate_targets.py"
    ),
    "integrations/commit_gate_sockets.py": (
        "WebSocket handshakes (1.44): tests/integrations/test_commit_gate_targets.py; messages "
        "(1.48+): tests/e2e/test_commit_gate_fail_closed.py"
    ),
}


def product_modules(root: Path = ROOT) -> list[str]:
    """Every product module, as a path relative to ``root``."""
    found: list[str] = []
    for package in PACKAGES:
        for path in (root / package).rglob("*.py"):
            if path.name not in ("__init__.py", "__main__.py"):
                found.append(path.relative_to(root).as_posix())
    return sorted(found)


def mirrored_test(module: str) -> str:
    """``daemon/engine/x.py`` -> ``tests/daemon/engine/test_x.py``."""
    path = Path(module)
    return (Path("tests") / path.parent / f"test_{path.name}").as_posix()


def unmirrored(root: Path = ROOT) -> list[str]:
    """The product modules without a test at the mirrored path."""
    return [m for m in product_modules(root) if not (root / mirrored_test(m)).exists()]


def test_every_module_has_a_mirrored_test_or_a_reason() -> None:
    missing = [m for m in unmirrored() if m not in UNMIRRORED]
    assert not missing, (
        "modules without tests/<same path>/test_<name>.py; add the test or list the module in "
        f"UNMIRRORED with the reason: {missing}"
    )


def test_the_list_names_only_modules_still_without_a_test() -> None:
    stale = sorted(set(UNMIRRORED) - set(unmirrored()))
    assert not stale, f"listed in UNMIRRORED but gone or now tested: remove them: {stale}"
    assert all(reason.strip() for reason in UNMIRRORED.values())


def test_the_check_sees_a_planted_module(tmp_path: Path) -> None:
    """The walk finds a module planted in a copy of the layout, and its test once it has one."""
    (tmp_path / "daemon" / "engine").mkdir(parents=True)
    (tmp_path / "daemon" / "engine" / "__init__.py").write_text("")
    (tmp_path / "daemon" / "engine" / "planted.py").write_text("X = 1\n")
    for package in PACKAGES:
        (tmp_path / package).mkdir(exist_ok=True)
    assert unmirrored(tmp_path) == ["daemon/engine/planted.py"]
    (tmp_path / "tests" / "daemon" / "engine").mkdir(parents=True)
    (tmp_path / "tests" / "daemon" / "engine" / "test_planted.py").write_text("")
    assert unmirrored(tmp_path) == []


#: docs/architecture.md's rule: no module over this many lines.
MAX_MODULE_LINES = 600


def long_modules(root: Path = ROOT, limit: int = MAX_MODULE_LINES) -> list[str]:
    """The product modules over ``limit`` lines, with their length."""
    out = []
    for m in product_modules(root):
        lines = len((root / m).read_text(encoding="utf-8").splitlines())
        if lines > limit:
            out.append(f"{m} ({lines} lines)")
    return out


def test_no_module_is_over_600_lines(tmp_path: Path) -> None:
    assert not long_modules(), f"split by responsibility: {long_modules()}"
    (tmp_path / "tui").mkdir()
    (tmp_path / "tui" / "long.py").write_text("x = 1\n" * 601)
    (tmp_path / "tui" / "fine.py").write_text("x = 1\n" * 600)
    assert long_modules(tmp_path) == ["tui/long.py (601 lines)"]


if __name__ == "__main__":
    modules = product_modules()
    without = unmirrored()
    print(f"{len(modules)} product modules, {len(modules) - len(without)} with a mirrored test")
