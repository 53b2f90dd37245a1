"""What both demos start: the model (the tiny judge, built if not cached, or a named one; with
the note that says the tiny judge knows only this shop), the in-process daemon and the shop."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from webshepherd.daemon.demo.shop import ShopServer
from webshepherd.daemon.sessions.guards import GuardPolicy, describe_guards, session_origin

if TYPE_CHECKING:
    from webshepherd.daemon.demo.variants import ShopVariant
    from webshepherd.daemon.engine.api import EngineAPI
    from webshepherd.daemon.engine.engine import Engine
    from webshepherd.daemon.server.server import DaemonServer

REAL_MODEL = "WebShepherd/WebShepherd_3B"
NOISE_NOTE = (
    "[bold yellow]This tiny judge knows only this shop.[/] It is a small model the project "
    "trains itself (`webshepherd train` on generated episodes of the bundled shop, labelled by "
    "the shop), so that the whole pipeline (prompts, sampling, label probabilities, Eq. 2 "
    "rewards, recording) runs offline with real signal. It has learned this shop's pattern, in "
    "variants it never saw too (--variant N), and nothing about other websites. For real "
    "rewards, on a GPU workstation run\n"
    f"  [bold]webshepherd serve --model {REAL_MODEL}[/]   (or [bold]webshepherd demo --model "
    f"{REAL_MODEL}[/])"
)


VISION_NOTE = (
    "[bold yellow]The tiny vision model's rewards are noise.[/] It is the tiny judge turned "
    "into a vision-language model and trained briefly on made-up pages with images, so that "
    "screenshots travel through the real image path; it has not learned to judge from them."
)


def print_noise_note(console: Console, vision: bool = False) -> None:
    """What the tiny model knows, in a yellow panel."""
    console.print(Panel(VISION_NOTE if vision else NOISE_NOTE, border_style="yellow"))


def load_demo_engine(
    model: str | None, console: Console, vision: bool = False
) -> tuple[Engine, bool]:
    """Load ``model`` (None: the tiny model, or with ``vision`` the tiny vision model, built if
    not cached; ``vision`` judges with ``text+image``); returns the engine and whether it is a
    tiny model."""
    from webshepherd.daemon.build import build_engine
    from webshepherd.daemon.config import ModelSettings, Settings
    from webshepherd.daemon.dev import tiny_model, tiny_vision
    from webshepherd.daemon.engine.engine import EngineConfig

    tiny = model is None
    if tiny:
        if vision:
            path = tiny_vision.default_tiny_vision_path()
            if not tiny_vision.is_complete(path):
                console.print(
                    f"building the tiny vision model at {path} (a minute or two, only once) ..."
                )
            model = str(tiny_vision.ensure_tiny_vision_model(path, progress=True))
        else:
            path = tiny_model.default_tiny_model_path()
            if not tiny_model.is_complete(path):
                console.print(
                    f"training the tiny judge at {path} (about 45 minutes on 2 CPU cores, once) ..."
                )
            model = str(tiny_model.ensure_tiny_model(path, progress=True))
        print_noise_note(console, vision)
    assert model is not None
    console.print(f"loading model {model} ...")
    with contextlib.suppress(Exception):  # keep the demo's output readable
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    settings = Settings(
        engine=EngineConfig(
            max_new_tokens=160 if tiny else None,
            judge_inputs="text+image" if vision else "text",
        ),
        model=ModelSettings(model=model, inputs_from_model=False),
    )
    return build_engine(settings), tiny


def demo_commits(shop_url: str, hold: bool) -> dict[str, Any]:
    """The commit policy of a demo's own daemon (``DaemonConfig`` fields): the daemon's default
    guards and mode, with the shop a sandbox origin (its commits flagged and recorded, never
    held: what ``serve --sandbox-origin http://127.0.0.1:*`` does for a user) unless ``hold``
    (``demo --guards``): then a commit waits for a person, and with nobody paired is refused."""
    origin = session_origin(shop_url)
    sandbox = () if hold or origin is None else (origin,)
    return {"guards": GuardPolicy(), "sandbox_origins": sandbox}


def print_commits_note(console: Console, hold: bool, decider: str | None = None) -> None:
    """The one line a demo prints about what commits and who decides (``decider``: where a
    paired person decides; None: nobody is paired in this demo)."""
    if hold and decider:
        console.print(
            escape(describe_guards(GuardPolicy()))
            + "; each request that commits (adding to the cart, placing the order) waits "
            f"unsent for a decision: {decider}; a refusal ends the demo there"
        )
    elif hold:
        console.print(
            escape(describe_guards(GuardPolicy()))
            + "; nobody is paired in this demo, so the first step that commits is refused"
        )
    else:
        console.print(
            "commits: the shop is a sandbox origin in this demo (as `webshepherd serve "
            "--sandbox-origin http://127.0.0.1:*`), so its agent orders unattended and each "
            "commit is flagged and recorded; --guards holds them for a person instead"
        )


@contextlib.asynccontextmanager
async def demo_servers(
    engine: EngineAPI,
    workdir: Path,
    samples: int,
    shop: ShopVariant | None = None,
    *,
    hold_commits: bool = False,
    **config: Any,
) -> AsyncIterator[tuple[DaemonServer, str, ShopServer]]:
    """The shop and the daemon on ephemeral loopback ports (a fresh token, data and config
    under ``workdir``, no approval rules, the commit policy of :func:`demo_commits`; ``config``:
    more ``DaemonConfig`` fields); yields ``(daemon, token, shop)`` and stops both."""
    from webshepherd.daemon.build import in_process_daemon

    shop_server = ShopServer(variant=shop).start()
    try:
        config = {**demo_commits(shop_server.url, hold_commits), **config}
        async with in_process_daemon(
            engine, workdir / "data", workdir / "config", samples, **config
        ) as (server, token):
            yield server, token, shop_server
    finally:
        shop_server.stop()
