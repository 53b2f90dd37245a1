"""An AgentLab / BrowserGym experiment folder: ``step_<n>.pkl.gz`` per step (a pickled
``StepInfo``: ``obs``, ``action``, ``agent_info``), ``screenshot_step_<n>.png`` (or
``.jpg``) beside them, ``goal_object.pkl.gz`` and ``summary_info.json``
(browsergym.experiments.loop's ``StepInfo.save_step_info`` and ``ExpResult``).

The pickles are read without AgentLab or BrowserGym installed, and without running anything
they name: :class:`SafeUnpickler` builds plain attribute holders for every class, and takes
only a few constructors for real (numpy arrays, containers). The observation text is
``obs["axtree_txt"]`` (what AgentLab's agents put there), else ``obs["pruned_html"]``; the
thought is ``agent_info.think``. A step whose ``action`` is None (the final observation) is
not a step.
"""

from __future__ import annotations

import copyreg
import gzip
import io
import json
import pickle
import re
from pathlib import Path
from typing import Any, ClassVar

from webshepherd.daemon.offline.imports.run import (
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

    def __setstate__(self, state: Any) -> None:
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


def safe_load(path: Path) -> Any:
    try:
        with gzip.open(path, "rb") as f:
            return SafeUnpickler(io.BytesIO(f.read())).load()
    except (OSError, EOFError, pickle.UnpicklingError, ValueError, TypeError) as exc:
        raise ImportFormatError(f"{path}: not a readable pickle ({exc})") from None


def is_agentlab_folder(path: Path) -> bool:
    return path.is_dir() and any(STEP_FILE.search(p.name) for p in path.glob("step_*.pkl.gz"))


def _goal(obs: dict[str, Any], folder: Path) -> str | None:
    if isinstance(obs.get("goal"), str) and obs["goal"].strip():
        return str(obs["goal"])
    goal = obs.get("goal_object")
    if goal is None and (folder / "goal_object.pkl.gz").is_file():
        goal = safe_load(folder / "goal_object.pkl.gz")
    texts = [
        str(g.get("text")) for g in goal or [] if isinstance(g, dict) and g.get("type") == "text"
    ]
    return "\n".join(texts) or None


def _screenshot(folder: Path, step: int) -> tuple[bytes | None, str]:
    for ext, mime in ((".png", "image/png"), (".jpg", "image/jpeg"), (".jpeg", "image/jpeg")):
        p = folder / f"screenshot_step_{step}{ext}"
        if p.is_file():
            return p.read_bytes(), mime
    return None, "image/png"


def load_agentlab(folder: Path) -> ImportedRun:
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
        info = safe_load(path)
        obs = getattr(info, "obs", None)
        action = getattr(info, "action", None)
        if not isinstance(obs, dict):
            skipped.append((n, "no observation in the step file"))
            continue
        intent = intent or _goal(obs, folder)
        url = str(obs.get("url") or "")
        start_url = start_url or url or None
        if not isinstance(action, str) or not action.strip():
            if n != files[-1][0]:
                skipped.append((n, "no action (the step failed)"))
            continue
        agent_info = getattr(info, "agent_info", None)
        think = agent_info.get("think") if agent_info is not None else None
        text = obs.get("axtree_txt") or obs.get("pruned_html")
        shot, mime = _screenshot(folder, n)
        steps.append(
            ImportedStep(
                url=url,
                action=action,
                thought=str(think or ""),
                axtree=str(text) if text else None,
                screenshot=shot,
                screenshot_mime=mime,  # type: ignore[arg-type]
                note=None if obs.get("axtree_txt") or not text else "pruned HTML (no axtree_txt)",
            )
        )
    if intent is None:
        raise ImportFormatError(f"{folder}: no goal in the observations: give it with --intent")
    outcome: Outcome = "unknown"
    summary = folder / "summary_info.json"
    if summary.is_file():
        try:
            info = json.loads(summary.read_text(encoding="utf-8"))
            if isinstance(info, dict) and (info.get("cum_reward") or 0) > 0:
                outcome = "success"
        except (OSError, json.JSONDecodeError):
            pass
    return ImportedRun(
        kind="agentlab",
        intent=intent,
        start_url=start_url,
        steps=steps,
        agent="agentlab",
        outcome=outcome,
        skipped=skipped,
    )
