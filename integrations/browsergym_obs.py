"""BrowserGym's observations as webshepherd reads them: the keys it uses, the AX-tree text
it scores (BrowserGym's own flattening, byte for byte what the extension sends), the screenshot
as PNG, the goal's text; and :func:`use_chromium` for BrowserGym's launches. Public through
:mod:`webshepherd.integrations.browsergym`."""

from __future__ import annotations

import base64
import io
import os
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

from browsergym.utils.obs import IGNORED_AXTREE_ROLES, flatten_axtree_to_str

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

#: Roles left out of the text: BrowserGym's own, and Chromium's InlineTextBox (not in training).
OBSERVATION_IGNORED_ROLES = [*IGNORED_AXTREE_ROLES, "InlineTextBox"]


class GoalPart(TypedDict, total=False):
    """One part of a BrowserGym goal (``obs["goal_object"]``, chat-message content)."""

    type: str
    text: str


class BrowserGymObs(TypedDict, total=False):
    """The keys of a BrowserGym observation read or written here (BrowserGym's has more)."""

    url: str
    goal: str
    goal_object: list[GoalPart]
    axtree_object: dict[str, object]  # the AX tree as CDP gave it (flatten_axtree_to_str)
    screenshot: npt.NDArray[np.uint8]  # RGB, height x width x 3
    last_action: str
    last_action_error: str


class ObservationFields(TypedDict):
    """A BrowserGym obs as the wire's observation fields (``observe(**fields)``)."""

    url: str
    axtree: str
    screenshot: dict[str, str] | None


#: ``info`` as BrowserGym returns it, with ``"webshepherd"`` added here: JSON-like values of
#: many shapes, which callers index (``info["webshepherd"]["reward"]``).
Info = dict[str, Any]


class BrowserGymEnv(Protocol):
    """What is called on a BrowserGym env (a ``gymnasium.Env`` of ``browsergym/...``)."""

    def reset(self, **kwargs: object) -> tuple[BrowserGymObs, Info]: ...

    def step(self, action: str) -> tuple[BrowserGymObs, float, bool, bool, Info]: ...

    def close(self) -> None: ...


def observation_text(obs: BrowserGymObs) -> str:
    """The AX-tree text webshepherd scores: BrowserGym's flattening, as the extension sends it."""
    return str(flatten_axtree_to_str(obs["axtree_object"], ignored_roles=OBSERVATION_IGNORED_ROLES))


def screenshot_png(obs: BrowserGymObs) -> dict[str, str] | None:
    """The env's screenshot (an RGB array) as a base64 PNG, or None when the obs has none."""
    shot = obs.get("screenshot")
    if shot is None or getattr(shot, "size", 0) == 0:
        return None
    from PIL import Image

    buf = io.BytesIO()
    # the fastest deflate: a page's flat colours compress well at any level, and this runs
    # once a step (PIL's default level 6 takes about three times as long)
    Image.fromarray(shot).save(buf, format="PNG", compress_level=1)
    return {"mime": "image/png", "data": base64.b64encode(buf.getvalue()).decode("ascii")}


def observation(obs: BrowserGymObs) -> ObservationFields:
    """The protocol's observation (url, AX-tree text, screenshot) for a BrowserGym obs."""
    return {"url": obs["url"], "axtree": observation_text(obs), "screenshot": screenshot_png(obs)}


def goal_text(obs: BrowserGymObs) -> str:
    """The goal's text parts (an image part, as VisualWebArena's, is not text: BrowserGym's
    legacy ``obs["goal"]`` then holds a warning instead of the goal)."""
    parts = [m.get("text", "") for m in obs.get("goal_object", []) if m.get("type") == "text"]
    return "\n".join(parts) or "(no goal)"


#: A playwright browser build's folder (``chromium-1117``): what the link goes under.
_BUILD = re.compile(r"chromium(-headless-shell)?-\d+")


def use_chromium(chromium: str | os.PathLike[str] | None = None) -> str:
    """Let every Chromium that playwright launches in this process run: playwright's own when
    it has one, else ``chromium`` (default ``$CHROMIUM``, else ``chromium`` on ``PATH``),
    linked where playwright looks for its build, in ``$XDG_CACHE_HOME/webshepherd/ms-playwright``
    (``~/.cache`` without it), with ``PLAYWRIGHT_BROWSERS_PATH`` (the folder playwright reads
    its browsers from, a variable of its own) set to that folder. BrowserGym launches its chat
    window without ``pw_chromium_kwargs``, so an ``executable_path`` alone is not enough.

    Call it before the first env's ``reset`` (playwright reads the variable when it starts).
    Returns the executable the launches will run. No Chromium at all is a
    ``FileNotFoundError`` that says what to install."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        expected = Path(pw.chromium.executable_path)
    if expected.exists():
        return str(expected)
    found = str(chromium) if chromium else os.environ.get("CHROMIUM") or shutil.which("chromium")
    if not found or not Path(found).is_file():
        raise FileNotFoundError(
            f"no Chromium for playwright: {found or 'none on PATH'} is not a file, and "
            f"playwright has no browser of its own at {expected}; install one (Debian: apt "
            "install chromium), pass use_chromium(PATH) or set CHROMIUM, or run `playwright "
            "install chromium`"
        )
    build = next((p for p in expected.parents if _BUILD.fullmatch(p.name)), None)
    if build is None:
        raise FileNotFoundError(f"playwright looks for Chromium at {expected}: no build folder")
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    browsers = cache / "webshepherd" / "ms-playwright"
    link = browsers / expected.relative_to(build.parent)
    target = os.path.realpath(found)
    if not (link.is_symlink() and os.readlink(link) == target):
        link.parent.mkdir(parents=True, exist_ok=True)
        fresh = link.with_name(f".{link.name}.{os.getpid()}")
        fresh.unlink(missing_ok=True)
        fresh.symlink_to(target)
        os.replace(fresh, link)  # another process's link is replaced whole, never half made
    os.environ["PLAYWRIGHT_BROWSERS_PATH"] = str(browsers)
    return target
