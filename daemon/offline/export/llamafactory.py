"""LLaMA-Factory's ``dataset_info.json`` entry for the SFT export, so ``llamafactory-cli``
finds the rows by name (``dataset: webshepherd_sft`` in a training config whose
``dataset_dir`` is the export's folder)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from webshepherd.daemon.offline.files import loads
from webshepherd.protocol.errors import WebShepherdError

DATASET_NAME = "webshepherd_sft"


def dataset_info_entry(file_name: str, layout: str) -> dict[str, Any]:
    """The entry for rows written by ``sft_rows`` in ``layout`` (sharegpt or alpaca)."""
    if layout == "alpaca":
        return {
            "file_name": file_name,
            "columns": {
                "prompt": "instruction",
                "query": "input",
                "response": "output",
                "system": "system",
            },
        }
    return {
        "file_name": file_name,
        "formatting": "sharegpt",
        "columns": {"messages": "conversations", "system": "system"},
        "tags": {
            "role_tag": "from",
            "content_tag": "value",
            "user_tag": "human",
            "assistant_tag": "gpt",
        },
    }


def write_dataset_info(folder: Path, file_name: str, layout: str, name: str = DATASET_NAME) -> Path:
    """Add (or replace) ``name`` in ``folder/dataset_info.json``, keeping other entries."""
    path = folder / "dataset_info.json"
    info: dict[str, Any] = {}
    if path.exists():
        try:
            info = loads(path.read_text(encoding="utf-8"), path)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise WebShepherdError(f"{path}: not valid JSON ({e}); fix or remove it") from e
        if not isinstance(info, dict):
            raise WebShepherdError(f"{path}: expected a JSON object of dataset entries")
    info[name] = dataset_info_entry(file_name, layout)
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(info, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
