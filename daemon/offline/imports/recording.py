"""webshepherd's own recording (``webshepherd.sqlite3``, or the data dir holding it): one
recorded session, re-scored with today's judge. Each step's executed action is replayed
with the observation recorded at that step; the recorded checklist is kept as the reference
(``--checklist`` replaces it)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from webshepherd.daemon.config import DB_NAME
from webshepherd.daemon.offline.files import Folders
from webshepherd.daemon.offline.imports.run import ImportedRun, ImportedStep, ImportFormatError


def recording_file(path: Path) -> Path | None:
    """The recording at ``path`` (the file, or a data dir that holds one), else None."""
    if path.is_dir() and (path / DB_NAME).is_file():
        return path / DB_NAME
    if path.is_file():
        with path.open("rb") as f:
            if f.read(16) == b"SQLite format 3\x00":
                return path
    return None


def load_recording(
    db_path: Path, session_id: str | None, folders: Folders | None = None
) -> ImportedRun:
    """One session of the recording (``folders``: where it may be read from; default, its
    folder). A recording whose rows do not read back (JSON nested past what Python parses,
    a damaged file) is an error, never a traceback."""
    from webshepherd.daemon.recorder import History

    db_path = (folders or Folders.of(db_path)).check(db_path)
    try:
        history = History.open(db_path)
    except (sqlite3.Error, OSError) as exc:
        raise ImportFormatError(f"{db_path}: not a webshepherd recording ({exc})") from None
    try:
        if session_id is None:
            sessions = history.list_sessions(2)
            if len(sessions) != 1:
                raise ImportFormatError(
                    f"{db_path}: holds {'no' if not sessions else 'several'} sessions: "
                    "name one with --session (`webshepherd report --list --data-dir …`)"
                )
            session_id = sessions[0].session_id
        tl = history.timeline(session_id)
    except (sqlite3.Error, ValueError, TypeError, KeyError, RecursionError, MemoryError) as exc:
        what = type(exc).__name__
        raise ImportFormatError(
            f"{db_path}: a recording that does not read back ({what})"
        ) from None
    finally:
        history.close()
    if tl is None:
        raise ImportFormatError(f"{db_path}: no session {session_id!r}")
    steps: list[ImportedStep] = []
    for step in tl.steps:
        for done in step.executed:
            steps.append(
                ImportedStep(
                    url=step.url,
                    action=done.action,
                    thought=done.thought or "",
                    axtree=step.axtree or None,
                    screenshot=step.screenshot,
                    screenshot_mime=step.screenshot_mime or "image/png",  # type: ignore[arg-type]
                )
            )
    outcome = tl.summary.outcome or "unknown"
    return ImportedRun(
        kind="webshepherd",
        intent=tl.summary.intent,
        start_url=tl.summary.start_url,
        steps=steps,
        checklist=tl.checklist.text if tl.checklist else None,
        agent=tl.summary.agent.name,
        outcome=outcome,
        answer=tl.answer,
    )
