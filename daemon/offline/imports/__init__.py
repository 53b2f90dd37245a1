"""Finished runs made without webshepherd (or recorded by it), read for ``webshepherd
rescore``: browser-use histories, AgentLab/BrowserGym experiment folders, webshepherd's own
recordings and mind2web exports, and the plain JSONL format (docs/rescore.md).
:func:`load_run` tells them apart. Files are read only under the run's own folder or a
folder named with ``--allow-dir``, and bounded (:mod:`webshepherd.daemon.offline.files`)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from webshepherd.daemon.offline.files import Folders, read_json
from webshepherd.daemon.offline.imports.agentlab import is_agentlab_folder, load_agentlab
from webshepherd.daemon.offline.imports.browser_use import looks_like_browser_use, read_browser_use
from webshepherd.daemon.offline.imports.jsonl import read_jsonl
from webshepherd.daemon.offline.imports.mind2web import is_mind2web_folder, load_mind2web
from webshepherd.daemon.offline.imports.recording import load_recording, recording_file
from webshepherd.daemon.offline.imports.run import ImportedRun, ImportedStep, ImportFormatError

__all__ = ["ImportFormatError", "ImportedRun", "ImportedStep", "load_run"]


def load_run(path: Path, session_id: str | None = None, allow: Iterable[Path] = ()) -> ImportedRun:
    """The run at ``path``: an AgentLab folder, a webshepherd recording (``session_id``: which
    session), a mind2web trajectory folder, a browser-use history (``.json``) or a JSONL run
    (``.jsonl``). Files it names are read only under its folder and ``allow``."""
    if not path.exists():
        raise ImportFormatError(f"{path}: no such file or folder")
    folders = Folders.of(path, allow)
    if is_agentlab_folder(path):
        return load_agentlab(path, folders)
    db = recording_file(path)
    if db is not None:
        return load_recording(db, session_id, folders)
    if is_mind2web_folder(path):
        return load_mind2web(path, folders)
    if path.is_dir():
        raise ImportFormatError(
            f"{path}: a folder with neither step_<n>.pkl.gz files (AgentLab), a "
            "webshepherd.sqlite3 recording, nor a result.json trajectory (mind2web)"
        )
    if path.suffix == ".jsonl":
        return read_jsonl(path)
    try:
        data = read_json(path)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ImportFormatError(
            f"{path}: neither JSON (a browser-use history) nor a .jsonl run ({exc})"
        ) from None
    if looks_like_browser_use(data):
        return read_browser_use(path, data, folders)
    raise ImportFormatError(
        f"{path}: JSON, but not a browser-use history (no 'history' list of steps)"
    )
