"""A data dir of recorded sessions as SFT rows for ``webshepherd train --data DATA_DIR``:
what ``webshepherd export --format sft`` writes, targets from ground truth only; and the
sessions ``train --holdout`` keeps out of training to score the judges on."""

from __future__ import annotations

import random
import sys
from collections.abc import Collection, Sequence
from pathlib import Path

from webshepherd.daemon.config import DB_NAME
from webshepherd.daemon.offline.export.llamafactory import sft_rows
from webshepherd.daemon.offline.export.sessions import Summary
from webshepherd.daemon.offline.export.writers import write_jsonl
from webshepherd.daemon.recorder import History
from webshepherd.protocol.errors import WebShepherdError


def export_sft(
    data_dir: Path, out: Path, quiet: bool = False, exclude: Collection[str] = ()
) -> int:
    """Write the SFT rows of every session recorded in ``data_dir`` but ``exclude``'s to
    ``out`` (JSON lines, sharegpt layout); returns how many (0 when every session is held
    out). Unless ``quiet``, says on stderr what was skipped."""
    history = History.open(data_dir / DB_NAME)
    summary = Summary()
    try:
        sessions = [s for s in history.sessions() if s.session_id not in exclude]
        n = write_jsonl(out, sft_rows(history, sessions, summary=summary))
    finally:
        history.close()
    if not quiet and summary.skipped:
        why = ", ".join(f"{k} {v}" for k, v in summary.skipped.items())
        print(f"{data_dir}: skipped {why}", file=sys.stderr)
    if n == 0 and not sessions and exclude:
        return 0  # every session here is held out
    if n == 0:
        left = f" (besides the {len(exclude)} held out)" if exclude else ""
        raise WebShepherdError(
            f"{data_dir}: no training rows{left}: no session has a reference checklist or "
            "ground truth (labels from the environment or a person; docs/training.md)"
        )
    return n


def held_out(
    rankable: Sequence[str], share: float | None, named: Sequence[str], seed: int
) -> list[str]:
    """The sessions to hold out: ``named`` as given, or ``share`` of ``rankable`` (the
    sessions with steps ``eval recorded`` can rank), drawn with ``seed`` from their sorted ids
    (the same sessions on every run), at least one, never all of them."""
    if named:
        return list(dict.fromkeys(named))
    if share is None:
        return []
    if not 0 < share < 1:
        raise WebShepherdError(f"--holdout {share}: a share of the sessions, above 0 and below 1")
    pool = sorted(set(rankable))
    if len(pool) < 2:
        raise WebShepherdError(
            f"--holdout: {len(pool)} recorded session(s) have a step whose right candidate "
            "truth names among two or more; holding out a share needs two (label more "
            "candidates, or name sessions with --holdout-sessions)"
        )
    n = min(len(pool) - 1, max(1, round(share * len(pool))))
    return sorted(random.Random(seed).sample(pool, n))
