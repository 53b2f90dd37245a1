"""An AgentLab / BrowserGym experiment folder: ``step_<n>.pkl.gz`` per step (a pickled
``StepInfo``: ``obs``, ``action``, ``agent_info``), ``screenshot_step_<n>.png`` (or
``.jpg``) beside them, ``goal_object.pkl.gz`` and ``summary_info.json``
(browsergym.experiments.loop's ``StepInfo.save_step_info`` and ``ExpResult``).

Only files under the allowed folders are read (a symlink out of the folder is refused), each
step file inflated with a cap (:mod:`webshepherd.daemon.offline.files`); a screenshot that is
not an image, too big or outside is left out with a warning.

The pickles are read without AgentLab or BrowserGym installed, and without running anything
they name: :class:`SafeUnpickler` builds plain attribute holders for every class, and takes
only a few constructors for real (numpy arrays, containers). The observation text is
``obs["axtree_txt"]`` (what AgentLab's agents put there), else ``obs["pruned_html"]``; the
thought is ``agent_info.think``. A step whose ``action`` is None (the final observation) is
not a step.
"""

from __future__ import annotations

import copyreg
import json
import pickle
import re
from pathlib import Path
from typing import Any, ClassVar

from webshepherd.daemon.offline.files import (
    GZIP_ERRORS,
    FileLimitError,
    Folders,
    open_gzip,
    read_json,
)
from webshepherd.daemon.offline.imports.run import (
    ImageMime,
    ImportedRun,
    ImportedStep,
    ImportFormatError,
    Outcome,
)

STEP_FILE = re.compile(r"step_(\d+)\.pkl\.gz$")
#: Constructors a pickle may call: containers and numpy's array rebuilders (screenshots and
#: counters in ``obs``). Everything else becomes a :class:`Stand`.
_ALLOWED = {
    ("builtins", "set"),
    ("builtins", "frozenset"),
    ("builtins", "tuple"),
    ("builtins", "list"),
    ("builtins", "dict"),
    ("builtins", "complex"),
    ("builtins", "slice"),
    ("collections", "OrderedDict"),
    ("copyreg", "_reconstructor"),
    ("numpy", "dtype"),
    ("numpy", "ndarray"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "scalar"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"),
}


class Stand:
    """Whatever class a pickle names: its state as attributes, its constructor's arguments
    in ``_args``."""

    _module = ""
    _name = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._args = args
        self.__dict__.update(kwargs)

    def __setstate__(self, state: object) -> None:
        if isinstance(state, tuple) and len(state) == 2:  # (dict, slots)
            state = {**(state[0] or {}), **(state[1] or {})}
        if isinstance(state, dict):
            self.__dict__.update(state)

    def get(self, key: str, default: Any = None) -> Any:  # BrowserGym's AgentInfo is dict-like
        return self.__dict__.get(key, default)


class SafeUnpickler(pickle.Unpickler):
    """Unpickles data from files that may not be trusted: no class is imported except the
    allowed constructors."""

    _stands: ClassVar[dict[tuple[str, str], type[Stand]]] = {}

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED:
            if module == "copyreg":
                return copyreg._reconstructor  # type: ignore[attr-defined]
            return super().find_class(module, name)
        key = (module, name)
        if key not in self._stands:
            self._stands[key] = type(name, (Stand,), {"_module": module, "_name": name})
        return self._stands[key]


def safe_load(path: Path, folders: Folders | None = None) -> Any:
    """A gzip'd pickle, inflated with a cap and unpickled by :class:`SafeUnpickler` (with
    ``folders``: only when it lies under one of them)."""
    if folders is not None:
        path = folders.check(path)
    try:
        with open_gzip(path) as f:
            return SafeUnpickler(f).load()
    except FileLimitError:
        raise
    except MemoryError:
        raise ImportFormatError(
            f"{path}: not a readable pickle (it claims more memory than there is)"
        ) from None
    except (*GZIP_ERRORS, pickle.UnpicklingError, ValueError, TypeError) as exc:
        raise ImportFormatError(f"{path}: not a readable pickle ({exc})") from None


def is_agentlab_folder(path: Path) -> bool:
    return path.is_dir() and any(STEP_FILE.search(p.name) for p in path.glob("step_*.pkl.gz"))


def _text(value: object) -> str:
    """A text field of a pickle ("": anything but a string, which is never stringified: a
    pickle can nest or share containers past what ``str`` survives)."""
    return value if isinstance(value, str) else ""


def _goal(obs: dict[str, Any], folder: Path, folders: Folders) -> str | None:
    if _text(obs.get("goal")).strip():
        return str(obs["goal"])
    goal = obs.get("goal_object")
    if goal is None and (folder / "goal_object.pkl.gz").is_file():
        goal = safe_load(folder / "goal_object.pkl.gz", folders)
    if not isinstance(goal, (list, tuple)):
        return None
    texts = [_text(g.get("text")) for g in goal if isinstance(g, dict) and g.get("type") == "text"]
    return "\n".join(t for t in texts if t) or None


def _screenshot(
    folder: Path, step: int, folders: Folders, warnings: list[str]
) -> tuple[bytes | None, ImageMime]:
    for ext in (".png", ".jpg", ".jpeg"):
        p = folder / f"screenshot_step_{step}{ext}"
        if p.is_file():
            got = folders.try_screenshot(p)
            if isinstance(got, str):
                warnings.append(f"screenshot left out: {got}")
                return None, "image/png"
            return got
    return None, "image/png"


def load_agentlab(folder: Path, folders: Folders | None = None) -> ImportedRun:
    """The run in an AgentLab folder (files read only under ``folders``: default, the
    folder itself)."""
    folders = folders or Folders.of(folder)
    warnings: list[str] = []
    files = sorted(
        (int(m.group(1)), p)
        for p in folder.glob("step_*.pkl.gz")
        if (m := STEP_FILE.search(p.name))
    )
    if not files:
        raise ImportFormatError(f"{folder}: no step_<n>.pkl.gz files (not an AgentLab folder)")
    steps: list[ImportedStep] = []
    skipped: list[tuple[int, str]] = []
    intent: str | None = None
    start_url: str | None = None
    for n, path in files:
        info = safe_load(path, folders)
        obs = getattr(info, "obs", None)
        action = getattr(info, "action", None)
        if not isinstance(obs, dict):
            skipped.append((n, "no observation in the step file"))
            continue
        intent = intent or _goal(obs, folder, folders)
        url = _text(obs.get("url"))
        start_url = start_url or url or None
        if not _text(action).strip():
            if n != files[-1][0]:
                skipped.append((n, "no action (the step failed)"))
            continue
        agent_info = getattr(info, "agent_info", None)
        think = agent_info.get("think") if isinstance(agent_info, (dict, Stand)) else None
        tree = _text(obs.get("axtree_txt"))
        text = tree or _text(obs.get("pruned_html"))
        shot, mime = _screenshot(folder, n, folders, warnings)
        steps.append(
            ImportedStep(
                url=url,
                action=str(action),
                thought=_text(think),
                axtree=text or None,
                screenshot=shot,
                screenshot_mime=mime,
                note=None if tree or not text else "pruned HTML (no axtree_txt)",
            )
        )
    if intent is None:
        raise ImportFormatError(f"{folder}: no goal in the observations: give it with --intent")
    outcome: Outcome = "unknown"
    summary = folder / "summary_info.json"
    if summary.is_file():
        try:
            info = read_json(folders.check(summary))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            info = None
        reward = info.get("cum_reward") if isinstance(info, dict) else None
        if isinstance(reward, (int, float)) and reward > 0:
            outcome = "success"
    return ImportedRun(
        kind="agentlab",
        intent=intent,
        start_url=start_url,
        steps=steps,
        agent="agentlab",
        outcome=outcome,
        skipped=skipped,
        warnings=warnings,
    )
