"""Writing rows as Parquet (pyarrow) or JSONL."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from webshepherd.protocol.errors import WebShepherdError

if TYPE_CHECKING:
    import pyarrow as pa
    from datasets import Features


def webprm_features() -> Features:
    """The WebPRM Collection's ``datasets`` features, as its dataset card gives them
    (WebShepherd/WebPRMCollection_preference_pair): string ids, the screenshot an Image; then
    ours: where each side's truth came from and which checklist was written (strings, null:
    no checklist)."""
    try:
        from datasets import Features, Image, List, Value
    except ImportError:
        raise WebShepherdError(
            "the WebPRM schema needs datasets>=4: pip install '.[eval]' in a clone"
        ) from None
    text = Value("string")
    turn = {"thought": text, "action": text}
    return Features(
        {
            "task_id": text,
            "step_id": text,
            "intent": text,
            "website_name": text,
            "start_url": text,
            "thought_history": List(text),
            "action_history": List(text),
            "current_url": text,
            "text_observation": text,
            "image_observation": Image(),
            "checklist": text,
            "checklist_target_list": text,
            "chosen": turn,
            "rejected": List(turn),
            "chosen_source": text,
            "rejected_source": List(text),
            "checklist_source": text,
        }
    )


def webprm_schema() -> pa.Schema:
    """The Arrow schema of :func:`webprm_features`, with the ``huggingface`` metadata that
    makes ``datasets`` read the columns back as those features."""
    return webprm_features().arrow_schema


def write_parquet(
    rows: Sequence[dict[str, Any]], path: Path, schema: pa.Schema | None = None
) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise WebShepherdError(
            "writing Parquet needs pyarrow: pip install '.[eval]' in a clone (or use .jsonl)"
        ) from None
    table = (
        pa.Table.from_pylist(list(rows), schema=schema)
        if schema is not None or rows
        else pa.table({})
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, str(path))


def _base64(value: object) -> str:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> int:
    """One JSON object a line (bytes, a screenshot's, as base64 text); returns how many."""
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False, default=_base64) + "\n")
            n += 1
    return n
