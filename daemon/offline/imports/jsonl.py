"""The plain JSONL run format (docs/rescore.md): a first line with the task, then one line
per executed step. Lines are read bounded (length, JSON depth); a screenshot that is not
base64, not an image (PNG, JPEG, WebP) or too big is left out with a warning."""

from __future__ import annotations

import base64
import binascii
import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from webshepherd.daemon.offline.files import FileLimitError, check_image, lines, loads
from webshepherd.daemon.offline.imports.run import ImportedRun, ImportedStep, ImportFormatError


class _Header(BaseModel):
    model_config = ConfigDict(extra="ignore")
    intent: str = Field(min_length=1)
    start_url: str | None = None
    checklist: str | None = None
    agent: str | None = None


class _Step(BaseModel):
    model_config = ConfigDict(extra="ignore")
    url: str
    action: str = Field(min_length=1)
    thought: str | None = None
    axtree: str | None = None
    screenshot: str | None = Field(default=None, description="base64 PNG")


def read_jsonl(path: Path) -> ImportedRun:
    """Read a JSONL run; a line that is not JSON or misses a field is an error naming it."""
    header: _Header | None = None
    steps: list[ImportedStep] = []
    warnings: list[str] = []
    with path.open(encoding="utf-8") as f:
        for n, line in lines(f, path):
            if not line.strip():
                continue
            try:
                data = loads(line, f"{path}:{n}")
            except json.JSONDecodeError as exc:
                raise ImportFormatError(f"{path}:{n}: not JSON ({exc.msg})") from None
            try:
                if header is None:
                    header = _Header.model_validate(data)
                    continue
                step = _Step.model_validate(data)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"]) or "line"
                raise ImportFormatError(f"{path}:{n}: {where}: {first['msg']}") from None
            shot, mime = None, None
            if step.screenshot:
                try:
                    shot = base64.b64decode(step.screenshot, validate=True)
                    mime = check_image(shot, f"{path}:{n}")
                except (binascii.Error, ValueError):
                    warnings.append(f"screenshot left out: {path}:{n}: not base64")
                    shot = None
                except FileLimitError as exc:
                    warnings.append(f"screenshot left out: {exc.message}")
                    shot = None
            steps.append(
                ImportedStep(
                    url=step.url,
                    action=step.action,
                    thought=step.thought or "",
                    axtree=step.axtree or None,
                    screenshot=shot,
                    screenshot_mime=mime or "image/png",
                )
            )
    if header is None:
        raise ImportFormatError(f'{path}: empty (the first line is the task: {{"intent": …}})')
    return ImportedRun(
        kind="jsonl",
        intent=header.intent,
        start_url=header.start_url or (steps[0].url if steps else None),
        steps=steps,
        checklist=header.checklist,
        agent=header.agent or "jsonl",
        warnings=warnings,
    )
