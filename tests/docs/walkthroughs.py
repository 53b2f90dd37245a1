"""The shell blocks of README.md and docs/*.md, run as a newcomer pastes them.

Blocks are found with markdown-it-py (a maintained CommonMark parser, already installed with
``rich``), so a fence inside a list, or a ```` ``` ```` inside a block, is read as a reader's
renderer reads it; a regular expression would not. The Python blocks need no second tool:
each is an example file word for word (test_readme_examples.py), and tests/examples runs
every example against a real daemon.

How a block runs (:func:`run_block`): ``bash -e -o pipefail`` (a failing line fails the
block), in a fresh HOME with fresh XDG folders and no ``WEBSHEPHERD_*`` variables, in a fresh
working directory whose entries are links to the repository's (so ``.venv/bin/…``,
``examples/…`` and ``make setup`` work and are no-ops there, and what a block writes stays in
that directory; ``extension/`` is a copy, so ``make extension`` builds there), with
``.venv/bin`` first on PATH (bare ``webshepherd`` and ``python`` are the installed package's,
as after ``. .venv/bin/activate``). The only changes made to a block
are :data:`SUBSTITUTIONS` (a public page becomes the bundled shop on loopback, a fixed port a
free one). A block that ends with a server in the foreground passes when that server says it
is listening; it is then stopped as Ctrl-C stops it. Everything the block started in the
background is stopped at the end.

A block that cannot run here is marked in the page, visibly: a sentence with "not run by the
tests" just before it, then ``<!-- not run in CI: REASON -->`` on the line above the fence.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from markdown_it import MarkdownIt

from tests.fixtures.venvs import IVENV_NAME, VENV_NAME, integrations_python, running_venv

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL = frozenset({"sh", "bash", "shell", "console"})
MARKER = re.compile(r"^<!-- not run in CI: (?P<why>\S.*?) -->\s*$")
VISIBLE = "not run by the tests"
#: what a foreground ``webshepherd serve`` logs once it accepts connections
READY = re.compile(r"webshepherd daemon listening on ")
#: each block's limit: the slowest, docs/rescore.md's blame of the shop's trap (serve, record, then
#: replays), ran past 180 s once on 2 cores under a load of 30; the training loop took 61 s
TIMEOUT_S = 300.0


@dataclass(frozen=True)
class Block:
    """One fenced block of a page: where it starts (1-based line of the fence), its info
    string's language, its text and, when marked, why it is not run."""

    page: str
    line: int
    lang: str
    text: str
    not_run: str | None = None
    told: bool = False  # the paragraph before the marker says "not run by the tests"

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def page_blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page``, with its marker when the line above the fence is one."""
    tokens = MarkdownIt("commonmark").parse(page.read_text("utf-8"))
    name = str(page.relative_to(ROOT))
    out: list[Block] = []
    for i, tok in enumerate(tokens):
        if tok.type != "fence" or tok.map is None:
            continue
        prev = tokens[i - 1] if i else None
        why = told = None
        if prev is not None and prev.type == "html_block":
            m = MARKER.match(prev.content.strip())
            if m is not None:
                why = m["why"]
                said = tokens[i - 3] if i >= 3 and tokens[i - 3].type == "inline" else None
                told = said is not None and VISIBLE in said.content.lower()
        lang = tok.info.split()[0] if tok.info.strip() else ""
        out.append(Block(name, tok.map[0] + 1, lang, tok.content, why, bool(told)))
    return out


def all_blocks() -> list[Block]:
    return [b for page in PAGES for b in page_blocks(page)]


def shell_blocks() -> list[Block]:
    return [b for b in all_blocks() if b.lang in SHELL]


@dataclass(frozen=True)
class Substitution:
    """A change a test must make to a block: ``old`` (a regular expression) becomes ``new``
    (``{page}``: the local page; ``{ports[N]}``: the free port that stands for port N), and
    why."""

    old: str
    new: str
    why: str


#: the fixed ports the pages name (the daemon's default, a page's, model servers'): each one a
#: block names becomes a free port, the same one wherever the block names it
FIXED_PORT = re.compile(r"(?:(?<=:)|(?<=--port )|(?<=http\.server ))(8765|80[0-9]{2})\b")

#: every change made to a block before it runs; nothing else is changed
SUBSTITUTIONS: tuple[Substitution, ...] = (
    Substitution(r"https://example\.com", "{page}", "a public page: the bundled shop, local"),
    Substitution(
        r"(webshepherd serve)(?= )", r"\1 --port 8765", "serve's default port, said (then freed)"
    ),
    Substitution(FIXED_PORT.pattern, "{ports[\\1]}", "a fixed port: a free one"),
)


def substituted(text: str, page: str, ports: dict[int, int]) -> str:
    """``text`` with :data:`SUBSTITUTIONS` applied in order; ``ports``: a free port for each
    fixed one (:func:`fixed_ports`)."""
    for s in SUBSTITUTIONS:
        text = re.sub(s.old, lambda m, s=s: m.expand(s.new).format(page=page, ports=ports), text)
    return text


def fixed_ports(text: str) -> dict[int, int]:
    """A free port for each fixed port the block names, and for serve's default."""
    return {p: free_port() for p in sorted({8765, *map(int, FIXED_PORT.findall(text))})}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def commands(text: str) -> list[str]:
    """The block's commands: continuation lines joined, comments and blank lines dropped."""
    joined = re.sub(r"\\\n", " ", text)
    lines = [re.sub(r"\s+#.*$", "", ln).strip() for ln in joined.splitlines()]
    return [ln for ln in lines if ln and not ln.startswith("#")]


def ends_serving(text: str) -> bool:
    """Whether the block's last command is ``webshepherd serve`` in the foreground."""
    cmds = commands(text)
    return bool(cmds) and "webshepherd serve" in cmds[-1] and not cmds[-1].endswith("&")


def newcomer_env(home: Path, port: int) -> dict[str, str]:
    """A fresh user's environment: no webshepherd settings, fresh HOME and XDG folders,
    ``.venv/bin`` first on PATH, the daemon's address the free port's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WEBSHEPHERD_", "XDG_"))}
    for k in ("VIRTUAL_ENV", "PYTHONPATH", "HF_HOME", "PYTEST_CURRENT_TEST"):
        env.pop(k, None)
    env["HOME"] = str(home)
    for var, sub in (
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_CACHE_HOME", ".cache"),
        ("XDG_STATE_HOME", ".local/state"),
    ):
        (home / sub).mkdir(parents=True, exist_ok=True)
        env[var] = str(home / sub)
    env["PATH"] = f"{running_venv() / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    env["WEBSHEPHERD_URL"] = f"ws://127.0.0.1:{port}/v1"  # the free port, for every client
    return env


def workdir(where: Path) -> Path:
    """A fresh working directory that reads as the repository: a link per top-level entry,
    but ``extension/`` is a copy of its sources (its installed packages linked), so that
    ``make extension`` builds there and never empties the dist/ other tests load."""
    where.mkdir(parents=True, exist_ok=True)
    for entry in ROOT.iterdir():
        if entry.name == "extension":
            _extension_copy(entry, where / entry.name)
        elif entry.name not in (".git", VENV_NAME, IVENV_NAME):
            (where / entry.name).symlink_to(entry)
    # the docs' .venv/bin/... is the venv running the tests (`make test VENV=...` names another),
    # and their .venv-integrations the one the Makefile named (IVENV)
    (where / VENV_NAME).symlink_to(running_venv())
    ivenv = integrations_python().parent.parent
    if ivenv.exists():
        (where / IVENV_NAME).symlink_to(ivenv)
    return where


def _extension_copy(source: Path, target: Path) -> None:
    target.mkdir()
    for entry in source.iterdir():
        if entry.name == "node_modules":
            (target / entry.name).symlink_to(entry)
        elif entry.is_dir() and entry.name not in ("dist", "build"):
            shutil.copytree(entry, target / entry.name, symlinks=True)
        elif entry.is_file():
            shutil.copy2(entry, target / entry.name)


@dataclass(frozen=True)
class Ran:
    """What a block did: its exit status (None: stopped after its server was up), its
    output, seconds taken, and whether its foreground server said it was ready."""

    returncode: int | None
    output: str
    seconds: float
    served: bool


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Ctrl-C to the block's process group, then SIGTERM, then SIGKILL, each given time."""
    for sig, wait in ((signal.SIGINT, 5.0), (signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.2)


def run_block(script: str, cwd: Path, env: dict[str, str], timeout: float, serving: bool) -> Ran:
    """Run ``script`` with bash in its own process group; stop everything it left running."""
    log = cwd / ".block-output"
    start = time.monotonic()
    served = False
    with log.open("wb") as out:
        proc = subprocess.Popen(
            ["bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-c", script],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            while proc.poll() is None and time.monotonic() - start < timeout:
                if serving and READY.search(log.read_text("utf-8", "replace")):
                    served = True
                    break
                time.sleep(0.5)
        finally:
            code = proc.poll()
            _stop(proc)
            proc.wait(timeout=5)
    text = log.read_text("utf-8", "replace")
    if code is None and not served:
        text += f"\n[harness: timed out after {timeout:.0f} s]"
    return Ran(code, text, time.monotonic() - start, served)


@contextmanager
def local_page() -> Iterator[str]:
    """The page a public URL becomes: the bundled shop's home, on loopback."""
    from webshepherd.daemon.demo.shop import ShopServer

    with ShopServer() as shop:
        yield shop.url
