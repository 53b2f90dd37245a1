"""A data dir of recorded sessions as SFT rows for ``webshepherd train --data DATA_DIR``:
what ``webshepherd export --format sft`` writes, targets from ground truth only."""

from __future__ import annotations

import sys
from pathlib import Path

from webshepherd.daemon.config import DB_NAME
from webshepherd.daemon.offline.export.llamafactory import sft_rows
from webshepherd.daemon.offline.export.sessions import Summary
from webshepherd.daemon.offline.export.writers import write_jsonl
from webshepherd.daemon.recorder import History
from webshepherd.protocol.errors import WebShepherdError


def export_sft(data_dir: Path, out: Path, quiet: bool = False) -> int:
    """Write the SFT rows of every session recorded in ``data_dir`` to ``out`` (JSON lines,
    sharegpt layout); returns how many. Unless ``quiet``, says on stderr what was skipped."""
    history = History.open(data_dir / DB_NAME)
    summary = Summary()
    try:
        n = write_jsonl(out, sft_rows(history, history.sessions(), summary=summary))
    finally:
        history.close()
    if not quiet and summary.skipped:
        why = ", ".join(f"{k} {v}" for k, v in summary.skipped.items())
        print(f"{data_dir}: skipped {why}", file=sys.stderr)
    if n == 0:
        raise WebShepherdError(
            f"{data_dir}: no training rows: no session has a reference checklist or ground "
            "truth (labels from the environment or a person; docs/training.md)"
        )
    return n
