"""Writing rows as Parquet (pyarrow) or JSONL."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from webshepherd.protocol.errors import WebShepherdError


def webprm_schema() -> Any:
    import pyarrow as pa

    turn = pa.struct([("thought", pa.string()), ("action", pa.string())])
    return pa.schema(
        [
            ("task_id", pa.string()),
            ("step_id", pa.int64()),
            ("intent", pa.string()),
            ("website_name", pa.string()),
            ("start_url", pa.string()),
            ("thought_history", pa.list_(pa.string())),
            ("action_history", pa.list_(pa.string())),
            ("current_url", pa.string()),
            ("text_observation", pa.string()),
            ("image_observation", pa.string()),
            ("checklist", pa.string()),
            ("checklist_target_list", pa.list_(pa.string())),
            ("chosen", turn),
            ("rejected", pa.list_(turn)),
        ]
    )


def write_parquet(rows: Sequence[dict[str, Any]], path: Path, schema: Any | None = None) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise WebShepherdError(
            "writing Parquet needs pyarrow: pip install 'webshepherd[eval]' (or use .jsonl)"
        ) from None
    table = (
        pa.Table.from_pylist(list(rows), schema=schema)
        if schema is not None or rows
        else pa.table({})
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, str(path))


def write_jsonl(rows: Sequence[dict[str, Any]], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
