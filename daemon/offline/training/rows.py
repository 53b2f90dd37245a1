"""SFT rows: the one shape the SFT export writes and ``webshepherd train`` reads.

A row is LLaMA-Factory's ``sharegpt`` layout (``conversations`` of ``human``/``gpt`` turns and a
``system`` string) or its ``alpaca`` layout (``instruction``/``input``/``output``/``system``),
plus ``task_id``, ``step_id`` and ``label``. Read back, a row is the chat messages the model is
served with and the answer to learn.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from webshepherd.daemon.offline.files import lines, loads
from webshepherd.protocol.errors import WebShepherdError


@dataclass(frozen=True)
class Example:
    """One training example: the prompt's chat messages and the target answer."""

    messages: list[dict[str, str]]
    answer: str
    task_id: str = ""


def sft_row(
    layout: str, msgs: Sequence[dict[str, str]], target: str, meta: dict[str, Any]
) -> dict[str, Any]:
    """``msgs`` (the prompt's chat messages) and ``target`` as a row in ``layout``."""
    system = "\n\n".join(m["content"] for m in msgs if m["role"] == "system")
    user = "\n\n".join(m["content"] for m in msgs if m["role"] != "system")
    if layout == "alpaca":
        return {"instruction": user, "input": "", "output": target, "system": system, **meta}
    conv = [{"from": "human", "value": user}, {"from": "gpt", "value": target}]
    return {"conversations": conv, "system": system, **meta}


def example_of(row: dict[str, Any], where: str = "row") -> Example:
    """A row (either layout) as chat messages and answer. A ``system`` key, even empty, gives a
    system message, as the packaged templates have one."""
    system = row.get("system")
    head = [{"role": "system", "content": system}] if isinstance(system, str) else []
    task = str(row.get("task_id", ""))
    if "conversations" in row:
        turns = row["conversations"]
        if not isinstance(turns, list) or len(turns) < 2:
            raise WebShepherdError(f"{where}: 'conversations' needs a human and a gpt turn")
        roles = {"human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant"}
        msgs = []
        for t in turns:
            role = roles.get(str(t.get("from", t.get("role", ""))))
            if role is None:
                raise WebShepherdError(f"{where}: unknown turn role in {t!r:.80}")
            msgs.append({"role": role, "content": str(t.get("value", t.get("content", "")))})
        if msgs[-1]["role"] != "assistant":
            raise WebShepherdError(f"{where}: the last turn must be the model's (gpt)")
        return Example(head + msgs[:-1], msgs[-1]["content"], task)
    if "instruction" in row and "output" in row:
        user = str(row["instruction"]) + (f"\n\n{row['input']}" if row.get("input") else "")
        return Example([*head, {"role": "user", "content": user}], str(row["output"]), task)
    raise WebShepherdError(
        f"{where}: not an SFT row (expected 'conversations' or 'instruction'/'output'; "
        "write rows with `webshepherd export --format sft`)"
    )


def read_rows(path: Path) -> Iterator[dict[str, Any]]:
    """The rows of a ``.jsonl`` or ``.parquet`` file, or of every such file in a folder."""
    if path.is_dir():
        files = sorted([*path.glob("*.jsonl"), *path.glob("*.parquet")])
        jsonl = {f.stem for f in files if f.suffix == ".jsonl"}
        for f in files:  # an export folder holds both: read the JSONL once
            if f.suffix == ".parquet" and f.stem in jsonl:
                continue
            yield from read_rows(f)
        return
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        yield from pq.read_table(path).to_pylist()
        return
    with path.open(encoding="utf-8") as fh:
        for n, line in lines(fh, path):
            if line.strip():
                try:
                    yield loads(line, f"{path}:{n}")
                except json.JSONDecodeError as e:
                    raise WebShepherdError(f"{path}:{n}: not JSON ({e.msg})") from e
