"""Secrets never in argv: the flags that took a token or an OTLP header on the command line are
refused (the real command, in a subprocess) with where the secret goes, and the environment and
files give them instead."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from webshepherd.daemon.cli import build_parser
from webshepherd.daemon.cli.serve import config_from_args
from webshepherd.daemon.secrets import OTLP_HEADERS_ENV, token_from_args
from webshepherd.protocol.errors import WebShepherdError

SECRET = "s3cret-value-never-echoed"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, WEBSHEPHERD_KEYRING="0")
    return subprocess.run(
        [sys.executable, "-m", "webshepherd.daemon.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("argv", "where"),
    [
        (["tui", "--token", SECRET], "WEBSHEPHERD_TOKEN or pass --token-file"),
        (["rescore", "run.jsonl", "--token", SECRET], "WEBSHEPHERD_TOKEN or pass --token-file"),
        (
            ["eval", "rewardbench", "--data", "x.jsonl", "--url", "ws://x", "--token", SECRET],
            "WEBSHEPHERD_TOKEN or pass --token-file",
        ),
        (
            ["serve", "--otlp-endpoint", "http://127.0.0.1:9", "--otlp-header", f"k={SECRET}"],
            f"{OTLP_HEADERS_ENV}=KEY=VALUE,... or pass --otlp-headers-file",
        ),
    ],
)
def test_a_secret_flag_is_refused_with_where_it_goes(argv: list[str], where: str) -> None:
    done = run(*argv)
    assert done.returncode == 2, done
    assert "would put a secret in the process arguments" in done.stderr
    assert where in done.stderr
    assert SECRET not in done.stderr + done.stdout


def test_the_dev_server_takes_no_key_in_argv() -> None:
    server = [sys.executable, "-m", "webshepherd.daemon.dev.openai_server", "--model", "x"]
    done = subprocess.run(
        [*server, "--api-key", SECRET],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 2, done
    assert "would put a secret in the process arguments" in done.stderr
    assert "--api-key-env VAR" in done.stderr and SECRET not in done.stderr + done.stdout


def test_the_token_comes_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text(f"{SECRET}\n")
    args = build_parser().parse_args(["tui", "--token-file", str(path)])
    assert token_from_args(args) == SECRET
    assert token_from_args(build_parser().parse_args(["tui"])) is None  # env or local store
    path.write_text("")
    with pytest.raises(WebShepherdError, match="empty"):
        token_from_args(args)
    missing = build_parser().parse_args(["tui", "--token-file", str(tmp_path / "none")])
    with pytest.raises(WebShepherdError, match="cannot read"):
        token_from_args(missing)


def test_otlp_headers_from_the_environment_or_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint = ["serve", "--otlp-endpoint", "http://127.0.0.1:4318"]
    monkeypatch.setenv(OTLP_HEADERS_ENV, f"Authorization=Bearer%20{SECRET}, x-team=web")
    config = config_from_args(build_parser().parse_args(endpoint))
    assert dict(config.otlp_headers) == {"Authorization": f"Bearer {SECRET}", "x-team": "web"}
    path = tmp_path / "headers"
    path.write_text(f"Authorization=Bearer {SECRET}\n\nx-team=shop\n")
    args = build_parser().parse_args([*endpoint, "--otlp-headers-file", str(path)])
    assert dict(config_from_args(args).otlp_headers) == {
        "Authorization": f"Bearer {SECRET}",
        "x-team": "shop",
    }
    path.write_text(f"no-equals-sign-{SECRET}\n")
    with pytest.raises(WebShepherdError, match="header 1 of 1: expected KEY=VALUE") as caught:
        config_from_args(args)
    assert SECRET not in caught.value.message


def test_quota_flags_reach_the_config() -> None:
    args = build_parser().parse_args(
        [
            *("serve", "--max-session-starts", "5", "--max-observations", "0"),
            *("--max-model-jobs", "3", "--max-session-mib", "2"),
        ]
    )
    q = config_from_args(args).quotas
    assert (q.session_starts, q.observations, q.model_jobs, q.session_bytes) == (5, 0, 3, 2 << 20)
