"""``webshepherd serve`` flags map onto DaemonConfig."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from webshepherd.daemon.cli import build_parser
from webshepherd.daemon.cli.serve import DEFAULT_MODEL, config_from_args
from webshepherd.daemon.config import DaemonConfig

from tests.fixtures.ports import closed_port


@pytest.fixture(autouse=True)
def _dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEBSHEPHERD_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("WEBSHEPHERD_DATA_DIR", str(tmp_path / "data"))


def test_defaults_are_the_daemon_defaults(tmp_path: Path) -> None:
    args = build_parser().parse_args(["serve"])
    assert args.model == DEFAULT_MODEL == "WebShepherd/WebShepherd_3B"
    assert config_from_args(args) == DaemonConfig()
    assert config_from_args(args).data_dir == tmp_path / "data"


def test_every_flag_defaults_to_its_setting() -> None:
    """The flags' defaults are the Settings defaults (written once, in the dataclasses)."""
    from webshepherd.daemon.cli.serve import settings_from_args
    from webshepherd.daemon.config import Settings

    assert settings_from_args(build_parser().parse_args(["serve"])) == Settings()


def test_flags_override(tmp_path: Path) -> None:
    args = build_parser().parse_args(
        [
            "serve",
            "--host",
            "::1",
            "--port",
            "0",
            "--samples",
            "3",
            "--data-dir",
            str(tmp_path / "d"),
            "--allow-origin",
            "chrome-extension://abc/",
            "def",
            "--tls-cert",
            "c.pem",
            "--tls-key",
            "k.pem",
            "--insecure",
            "--approval-threshold",
            "-1",
            "--approval-timeout",
            "30",
            "--approval-default",
            "approve",
            "--queue-limit",
            "8",
        ]
    )
    cfg = config_from_args(args)
    assert (cfg.host, cfg.port, cfg.default_samples) == ("::1", 0, 3)
    assert cfg.data_dir == tmp_path / "d"
    assert cfg.allowed_extension_ids == ("abc", "def")
    assert cfg.allowed_origins == {"chrome-extension://abc", "chrome-extension://def"}
    assert (cfg.tls_cert, cfg.tls_key, cfg.insecure) == (Path("c.pem"), Path("k.pem"), True)
    assert cfg.approval_threshold is None  # negative: never ask because of a low reward
    assert (cfg.approval_timeout_s, cfg.approval_default, cfg.queue_limit) == (30, "approve", 8)
    threshold = config_from_args(
        build_parser().parse_args(["serve", "--approval-threshold", "0.5"])
    )
    assert threshold.approval_threshold == 0.5


def test_the_bundled_extension_is_allowed_by_default() -> None:
    from webshepherd.daemon.extension_id import EXTENSION_ID

    cfg = config_from_args(build_parser().parse_args(["serve"]))
    assert cfg.allowed_origins == {f"chrome-extension://{EXTENSION_ID}"}


# -- backends --------------------------------------------------------------------------------

KEY = "sk-serve-test"


def test_backend_flags_parse() -> None:
    args = build_parser().parse_args(["serve"])
    assert (args.backend, args.base_url, args.api_key_env, args.remote_model) == (
        "transformers",
        None,
        None,
        None,
    )
    args = build_parser().parse_args(
        ["serve", "--backend", "openai", "--base-url", "http://h:1/v1", "--api-key-env", "K"]
    )
    assert (args.backend, args.base_url, args.api_key_env) == ("openai", "http://h:1/v1", "K")
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--backend", "tgi"])


def test_scoring_flags_default_to_the_authors_context_and_the_skip_rule() -> None:
    args = build_parser().parse_args(["serve"])
    assert (args.max_context, args.unparsed) == (10_000, "skip")
    args = build_parser().parse_args(["serve", "--max-context", "0", "--unparsed", "zero"])
    assert (args.max_context, args.unparsed) == (0, "zero")  # 0: the model's own context
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--unparsed", "half"])


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--backend", "openai"], "--base-url"),
        (["--base-url", "http://127.0.0.1:9/v1"], "only apply to --backend openai"),
        (
            ["--backend", "openai", "--base-url", "http://127.0.0.1:9/v1", "--api-key-env", "NOPE"],
            "NOPE: that environment variable is not set",
        ),
        (["--backend", "openai", "--base-url", "ftp://h/v1"], "not an http"),
    ],
)
def test_serve_refuses_a_backend_it_cannot_use(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    from webshepherd.daemon.cli import main

    monkeypatch.delenv("NOPE", raising=False)
    assert main(["serve", "--port", "0", *flags]) == 2
    assert message in capsys.readouterr().err


def test_serve_says_when_the_server_is_unreachable(capsys: pytest.CaptureFixture[str]) -> None:
    from webshepherd.daemon.cli import main

    url = f"http://127.0.0.1:{closed_port()}/v1"
    assert (
        main(
            ["serve", "--port", "0", "--backend", "openai", "--base-url", url, "--server-wait", "0"]
        )
        == 2
    )
    assert f"cannot reach the model server at {url}" in capsys.readouterr().err


@pytest.mark.model
async def test_serve_openai_backend_scores_through_a_real_daemon(
    tiny_engine, tiny_model_path: Path, start_daemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    from webshepherd.daemon.cli.serve import engine_from_args
    from webshepherd.daemon.dev.openai_server import OpenAIServer
    from webshepherd.daemon.engine.backends.openai_backend import OpenAIBackend

    from tests.fixtures.daemon import score_without_approval, start_session

    server = OpenAIServer(tiny_engine.backend, "127.0.0.1", 0, api_key=KEY)
    server.start()
    try:
        monkeypatch.setenv("WS_TEST_KEY", KEY)
        args = build_parser().parse_args(
            [
                "serve",
                "--model",
                str(tiny_model_path),
                "--backend",
                "openai",
                "--base-url",
                server.url,
                "--api-key-env",
                "WS_TEST_KEY",
                "--samples",
                "2",
                "--max-context",
                "1500",
                "--unparsed",
                "zero",
            ]
        )
        engine = engine_from_args(args, config_from_args(args))
        assert isinstance(engine.backend, OpenAIBackend) and engine.backend.api_key == KEY
        assert (engine.config.max_context, engine.config.unparsed) == (1500, "zero")
        assert engine.max_context == 1500
        engine.config = replace(engine.config, max_new_tokens=64, checklist_max_new_tokens=64)
        daemon = await start_daemon(engine=engine)
        agent = await daemon.client()
        sid = await start_session(agent)
        scored = await score_without_approval(agent, sid)
        assert scored["type"] == "scored" and len(scored["results"]) == 2
        for r in scored["results"]:
            assert r["probabilities"] == "top_k" and len(r["samples"]) == 2
            # the zero rule: every candidate has a reward; the unparsed samples are counted
            assert r["reward"] is not None
            assert r["unparsed_samples"] == sum(s["reward"] is None for s in r["samples"])
            assert r["parsed_samples"] + r["unparsed_samples"] == 2
        assert scored["timing"]["model_ms"] > 0
    finally:
        server.stop()


@pytest.mark.model
def test_serve_judges_a_vision_checkpoint_with_screenshots_by_default(
    tiny_model_path: Path, tiny_vision_model_path: Path
) -> None:
    from webshepherd.daemon.cli.serve import engine_from_args

    def engine_for(model: Path, *extra: str):
        args = build_parser().parse_args(
            ["serve", "--model", str(model), "--device", "cpu", *extra]
        )
        return engine_from_args(args, config_from_args(args))

    seeing = engine_for(tiny_vision_model_path)
    assert seeing.config.judge_inputs == "text+image"
    assert engine_for(tiny_vision_model_path, "--judge-inputs", "text").config.judge_inputs == (
        "text"
    )
    assert engine_for(tiny_model_path).config.judge_inputs == "text"


def test_serve_shows_the_approval_policy_at_start(capsys: pytest.CaptureFixture[str]) -> None:
    from webshepherd.daemon.cli import main

    url = f"http://127.0.0.1:{closed_port()}/v1"
    args = ["serve", "--port", "0", "--backend", "openai", "--base-url", url, "--server-wait", "0"]
    assert main([*args, "--approval-threshold", "0.5"]) == 2  # the model server is down
    err = capsys.readouterr().err
    assert "Approvals: a score waits for a person when the best reward is below 0.5" in err
    assert "only while an extension or `webshepherd tui` is paired and connected" in err
    assert err.index("Approvals:") < err.index("cannot reach the model server")  # at start


def test_serve_finds_a_used_port_before_loading_the_model(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import socket

    from webshepherd.daemon.cli import main

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        url = f"http://127.0.0.1:{closed_port()}/v1"
        assert main(["serve", "--port", str(port), "--backend", "openai", "--base-url", url]) == 1
    err = capsys.readouterr().err
    assert f"port {port} on 127.0.0.1 is in use" in err and "--port N" in err
    assert "loading" not in err and "cannot reach the model server" not in err  # nothing loaded
    assert len(err.strip().splitlines()) <= 2  # the policy line, then the one error line


@pytest.mark.model
def test_prompt_flag_chooses_the_judge_prompt(tiny_model_path: Path) -> None:
    """``--prompt`` reaches the engine (default: the checkpoints' own prompt), and the engine
    states it in the settings each session records."""
    from webshepherd.daemon.cli.serve import engine_from_args

    assert build_parser().parse_args(["serve"]).prompt == "web-shepherd"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--prompt", "gpt"])
    args = build_parser().parse_args(
        ["serve", "--model", str(tiny_model_path), "--device", "cpu", "--prompt", "baseline"]
    )
    engine = engine_from_args(args, config_from_args(args))
    try:
        assert engine.config.prompt == "baseline" and engine.settings["prompt"] == "baseline"
    finally:
        engine.close()


def test_serve_shows_what_holds_predicts_and_flags_in_one_paragraph(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from webshepherd.daemon.cli import main

    url = f"http://127.0.0.1:{closed_port()}/v1"
    assert (
        main(
            ["serve", "--port", "0", "--backend", "openai", "--base-url", url, "--server-wait", "0"]
        )
        == 2
    )
    err = capsys.readouterr().err
    policy = next(line for line in err.splitlines() if line.startswith("webshepherd: policy:"))
    assert "pauses every request that would commit" in policy  # what holds: the browser
    assert "New sessions start in mode 'ask'" in policy and "refused at once" in policy
    assert "a form sent by a method other than GET" in policy  # what predicts
    assert "another origin" in policy and "a download" in policy
    assert "named with" not in policy  # names: only with --guard-names
    assert "No sandbox origins" in policy and "Approvals: a score waits" in policy
    assert err.index("policy:") < err.index("cannot reach")
    strict = ["--guard-names", "--mode", "stop", "--sandbox-origin", "HTTP://127.0.0.1:*/"]
    args = ["serve", "--port", "0", "--backend", "openai", "--base-url", url, "--server-wait", "0"]
    assert main([*args, *strict]) == 2
    err = capsys.readouterr().err
    assert "named with one of: buy, pay, purchase, order," in err
    assert "New sessions start in mode 'stop'" in err
    assert "never held: http://127.0.0.1:*." in err


def test_guard_flags() -> None:
    from webshepherd.daemon.sessions.guards import ALL_RULES, DEFAULT_WORDS

    default = config_from_args(build_parser().parse_args(["serve"])).guards
    assert default.rules == frozenset(ALL_RULES) - {"name_match"}  # a name alone: opt-in
    assert default.words == DEFAULT_WORDS
    names = config_from_args(build_parser().parse_args(["serve", "--guard-names"])).guards
    assert names.rules == frozenset(ALL_RULES)
    args = ["serve", "--guard-names", "--guard-words", "Wire, pay now ,", "--no-guard", "download"]
    guards = config_from_args(build_parser().parse_args(args)).guards
    assert guards.words == ("Wire", "pay now")
    assert guards.rules == frozenset(ALL_RULES) - {"download"}
    off = config_from_args(build_parser().parse_args(["serve", "--no-guards"])).guards
    assert not off.enabled
    none = config_from_args(build_parser().parse_args(["serve", "--guard-words", ""])).guards
    assert none.words == ()
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--no-guard", "forms"])


def test_mode_and_sandbox_flags() -> None:
    """``--mode`` is a new session's mode (default ask); ``--sandbox-origin`` is checked and
    made canonical (a port or ``*``), repeatable; a bad one is a clear usage error."""
    default = config_from_args(build_parser().parse_args(["serve"]))
    assert default.mode == "ask" and default.sandbox_origins == ()
    args = ["serve", "--mode", "watch", "--sandbox-origin", "http://Shop.Test:80/"]
    config = config_from_args(
        build_parser().parse_args([*args, "--sandbox-origin", "http://127.0.0.1:*"])
    )
    assert config.mode == "watch"
    assert config.sandbox_origins == ("http://shop.test", "http://127.0.0.1:*")
    for bad in (["--mode", "never"], ["--sandbox-origin", "shop.test"]):
        with pytest.raises(SystemExit):
            build_parser().parse_args(["serve", *bad])
    for origin in ("http://a.test/path", "ftp://a.test", "http://a.test:1:*"):
        with pytest.raises(SystemExit):
            build_parser().parse_args(["serve", "--sandbox-origin", origin])


def test_commits_names_gets_that_commit_and_refuses_a_bad_pattern(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from webshepherd.daemon.cli.serve import describe_holds
    from webshepherd.protocol.errors import WebShepherdError

    args = build_parser().parse_args(
        ["serve", "--commits", "get https://Shop.Example/cart/remove*",
         "--commits", "GET https://shop.example/cart/remove*", "--commits", "HEAD http://a.test"]
    )  # fmt: skip
    cfg = config_from_args(args)
    assert cfg.commits == ("GET https://shop.example/cart/remove*", "HEAD http://a.test/")
    policy = describe_holds(cfg)
    assert "GETs that commit (--commits), held like a write: GET https://shop.example" in policy
    assert "other GETs are not held" in policy
    assert "No GET is held" in describe_holds(
        config_from_args(build_parser().parse_args(["serve"]))
    )
    for bad, says in [
        ("POST https://shop.example/orders", "POST requests commit already"),
        ("https://shop.example/cart/remove*", "expected 'METHOD URL'"),
        ("GET shop.example/x", "must start with http:// or https://"),
    ]:
        with pytest.raises(SystemExit) as exited:
            build_parser().parse_args(["serve", "--commits", bad])
        assert exited.value.code == 2
        err = capsys.readouterr().err
        assert "argument --commits" in err and says in err, err
    with pytest.raises(WebShepherdError, match="POST requests commit already"):
        DaemonConfig(commits=("POST https://a.test/x",))
    with pytest.raises(WebShepherdError, match="at most 256 patterns"):
        DaemonConfig(commits=tuple(f"GET https://a.test/{i}*" for i in range(257)))
