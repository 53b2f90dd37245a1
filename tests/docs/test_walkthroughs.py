"""Every shell block of README.md and docs/*.md runs as a newcomer pastes it (the harness:
walkthroughs.py), unless the page marks it, visibly, as one that cannot run here; those, and
only those, are skipped, and conftest.py prints their list after the run."""

from __future__ import annotations

import json
import re
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.docs.walkthroughs import (
    ROOT,
    SUBSTITUTIONS,
    TIMEOUT_S,
    Block,
    commands,
    ends_serving,
    fixed_ports,
    free_port,
    local_page,
    newcomer_env,
    page_blocks,
    run_block,
    shell_blocks,
    substituted,
    workdir,
)
from tests.fixtures.venvs import VENV_NAME, integrations_python, running_venv


def unique(blocks: list[Block]) -> dict[str, list[Block]]:
    """Blocks by their text: a block shown on two pages is the same commands, run once."""
    by_text: dict[str, list[Block]] = {}
    for b in blocks:
        by_text.setdefault(b.text, []).append(b)
    return by_text


BLOCKS = unique(shell_blocks())


def ids(text: str) -> str:
    return " = ".join(b.where for b in BLOCKS[text])


@pytest.mark.parametrize("text", list(BLOCKS), ids=ids)
def test_a_shell_block_runs_as_typed(text: str, tmp_path: Path) -> None:
    block = BLOCKS[text][0]
    if block.not_run is not None:
        pytest.skip(f"{block.where}: {block.not_run}")
    if any(c.startswith("make ") for c in commands(text)):
        assert_installed(*(["setup-integrations"] if "setup-integrations" in text else []))
    ports = fixed_ports(text)
    with local_page() as page:
        script = substituted(text, page, ports)
        ran = run_block(
            script,
            workdir(tmp_path / "work"),
            newcomer_env(tmp_path / "home", ports[8765]),
            TIMEOUT_S,
            serving=ends_serving(text),
        )
    told = f"{ids(text)} as run:\n{script}\n--- output ({ran.seconds:.0f} s):\n{ran.output}"
    assert ran.served or ran.returncode == 0, told
    assert "Traceback (most recent call last)" not in ran.output, told


def assert_installed(*more: str) -> None:
    """``make setup`` (and ``more`` targets, such as ``setup-integrations``) has nothing to do:
    else a block's ``make`` would reinstall the shared venv from the block's working directory
    (an editable install pointing there)."""
    venvs = [f"VENV={running_venv()}", f"IVENV={integrations_python().parent.parent}"]
    for target in ("setup", *more):
        stale = subprocess.run(
            ["make", "-q", target, *venvs], cwd=ROOT, capture_output=True
        ).returncode
        assert stale == 0, f"pyproject.toml or setup.py changed since the install: make {target}"


def test_every_marked_block_tells_the_reader() -> None:
    """A marker is for the tests; the reader sees the sentence before it."""
    for b in shell_blocks():
        if b.not_run is not None:
            assert b.told, f'{b.where}: say "{"not run by the tests"}" just before the marker'


def test_a_marker_without_a_sentence_is_caught(tmp_path: Path, monkeypatch) -> None:
    import tests.docs.walkthroughs as w

    page = tmp_path / "page.md"
    page.write_text(
        "Needs a GPU; not run by the tests.\n\n"
        "<!-- not run in CI: a GPU -->\n```sh\nnvidia-smi\n```\n"
        "\nA plain paragraph.\n\n<!-- not run in CI: a GPU -->\n```sh\nnvidia-smi -L\n```\n"
        "\n```sh\ntrue\n```\n",
        encoding="utf-8",
    )
    monkeypatch.setattr(w, "ROOT", tmp_path)
    told, untold, plain = page_blocks(page)
    assert (told.not_run, told.told, told.line) == ("a GPU", True, 4)
    assert (untold.not_run, untold.told) == ("a GPU", False)
    assert (plain.not_run, plain.text) == (None, "true\n")


def test_the_substitutions_are_the_declared_ones_and_nothing_else() -> None:
    readme = "\n".join(
        [
            ".venv/bin/webshepherd serve --model x &",
            ".venv/bin/python examples/quickstart.py https://example.com   # any page",
            "python -m http.server 8070 --bind 127.0.0.1 & curl http://127.0.0.1:8070/",
            "webshepherd tui --url ws://127.0.0.1:8765/v1",
            "vllm serve m --port 8001 &",
            "webshepherd serve --backend openai-chat --base-url http://127.0.0.1:8001/v1",
            "curl https://example.org:8443/ --max-time 8000 # not a page or port of the table",
        ]
    )
    ports = fixed_ports(readme)
    assert sorted(ports) == [8001, 8070, 8765] and len(set(ports.values())) == 3
    ports = {8765: 11, 8070: 22, 8001: 33}
    out = substituted(readme, "http://127.0.0.1:5/", ports)
    assert out.splitlines() == [
        ".venv/bin/webshepherd serve --port 11 --model x &",
        ".venv/bin/python examples/quickstart.py http://127.0.0.1:5/   # any page",
        "python -m http.server 22 --bind 127.0.0.1 & curl http://127.0.0.1:22/",
        "webshepherd tui --url ws://127.0.0.1:11/v1",
        "vllm serve m --port 33 &",
        "webshepherd serve --port 11 --backend openai-chat --base-url http://127.0.0.1:33/v1",
        "curl https://example.org:8443/ --max-time 8000 # not a page or port of the table",
    ]
    assert all(s.why for s in SUBSTITUTIONS)


def test_commands_and_a_foreground_server_are_read_from_the_block() -> None:
    block = "make setup   # once\n# a comment\nwebshepherd serve \\\n    --model m   # on\n"
    assert commands(block) == ["make setup", "webshepherd serve      --model m"]
    assert ends_serving(block)
    assert not ends_serving("webshepherd serve --model m &\npython client.py\n")
    assert not ends_serving("webshepherd serve --model m &\n")


def test_a_failing_line_fails_the_block_and_background_jobs_are_stopped(tmp_path: Path) -> None:
    env = newcomer_env(tmp_path / "home", free_port())
    failed = run_block("false\ntrue\n", workdir(tmp_path / "a"), env, 10, serving=False)
    assert failed.returncode == 1
    pidfile = tmp_path / "sleeper.pid"
    ran = run_block(f"sleep 600 &\necho $! > {pidfile}\necho ok\n", tmp_path, env, 10, False)
    assert (ran.returncode, ran.output.strip()) == (0, "ok")
    pid = int(pidfile.read_text())
    assert not Path(f"/proc/{pid}").exists() or "zombie" in _state(pid)


def _state(pid: int) -> str:
    status = Path(f"/proc/{pid}/status").read_text()
    return re.search(r"State:\s+\S+ \((\w+)\)", status)[1]  # type: ignore[index]


def test_a_block_runs_in_a_fresh_home_and_a_copy_of_the_repository(tmp_path: Path) -> None:
    env = newcomer_env(tmp_path / "home", 4242)
    script = textwrap.dedent(
        """\
        echo "home=$HOME"
        echo "url=$WEBSHEPHERD_URL"
        command -v webshepherd
        test -x .venv/bin/webshepherd && test -f examples/quickstart.py
        echo made > written.txt
        """
    )
    ran = run_block(script, workdir(tmp_path / "w"), env, 30, serving=False)
    assert ran.returncode == 0, ran.output
    assert f"home={tmp_path / 'home'}" in ran.output
    assert "url=ws://127.0.0.1:4242/v1" in ran.output
    assert f"{running_venv()}/bin/webshepherd" in ran.output
    assert (tmp_path / "w" / VENV_NAME).resolve() == running_venv().resolve()
    assert (tmp_path / "w" / "written.txt").is_file() and not (ROOT / "written.txt").exists()
    ext = tmp_path / "w" / "extension"
    assert not ext.is_symlink() and (ext / "node_modules").is_symlink()
    assert (ext / "src").is_dir() and not (ext / "dist").exists()


def test_the_rescore_example_is_the_file_the_walkthrough_rescores() -> None:
    """docs/rescore.md's JSONL block is examples/data/run.jsonl, byte for byte, and each
    line is JSON (its screenshot a real PNG: a bad one is left out with a warning)."""
    [block] = [b for b in page_blocks(ROOT / "docs" / "rescore.md") if b.lang == "json"]
    example = (ROOT / "examples" / "data" / "run.jsonl").read_text("utf-8")
    assert block.text == example
    rows = [json.loads(line) for line in example.splitlines()]
    assert rows[0]["intent"] and all(r["action"] for r in rows[1:])
    from webshepherd.daemon.offline.imports import load_run

    run = load_run(ROOT / "examples" / "data" / "run.jsonl")
    assert run.warnings == [] and run.steps[-1].screenshot is not None
