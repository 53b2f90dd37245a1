"""The export formats, one entry each in :data:`EXPORTERS`: what ``webshepherd export
--format`` offers, how each writes, and the line it ends with (cli/export.py only reads this
table). A new format is its module plus one entry here."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from webshepherd.protocol.errors import WebShepherdError

if TYPE_CHECKING:  # the CLI reads this table at start: the formats load when one runs
    import pyarrow as pa
    from webshepherd.daemon.offline.export.sessions import ExportInfo, Summary
    from webshepherd.daemon.recorder import History
    from webshepherd.protocol.common import SessionSummary

Progress = Callable[[int], None]


@dataclass(frozen=True)
class ExportOptions:
    """The CLI's options every format is handed (each reads those it has)."""

    redact: Sequence[str] = ()
    sft_layout: str = "sharegpt"  # sft: LLaMA-Factory's sharegpt or alpaca
    screenshots: bool = False  # webprm: also write images/ beside the output
    include_judged: bool = False  # pairs: also the judge's clear negatives (source "judge")
    generated_checklists: bool = False  # webprm, trl-prm: write a generated checklist, marked


@dataclass(frozen=True)
class Exporter:
    help: str
    files: Callable[[Path], list[Path]]  # what ``--out`` becomes (raises on a wrong kind)
    total: Callable[[History, Sequence[SessionSummary]], int]  # the progress bar's steps
    write: Callable[
        [History, Sequence[SessionSummary], list[Path], ExportOptions, Progress], ExportInfo
    ]
    done: Callable[[ExportInfo, int], str]  # the closing line on stderr (info, sessions)


RowMaker: TypeAlias = (
    "Callable[[History, Sequence[SessionSummary], ExportOptions, Path, Progress, Summary], "
    "Iterator[dict[str, Any]]]"
)


def _row_files(name: str) -> Callable[[Path], list[Path]]:
    def files(out: Path) -> list[Path]:
        if out.suffix.lower() in (".parquet", ".jsonl"):
            return [out]
        if out.suffix:
            raise WebShepherdError(f"--out {out}: use a .parquet or .jsonl file, or a folder")
        return [out / f"{name}.parquet", out / f"{name}.jsonl"]

    return files


def _scored_steps(history: History, sessions: Sequence[SessionSummary]) -> int:
    return sum(history.scored_steps(s.session_id) for s in sessions)


def _rows_format(
    name: str,
    help: str,
    make: RowMaker,
    schema: Callable[[], pa.Schema] | None = None,
    after: Callable[[ExportInfo, list[Path], ExportOptions], None] | None = None,
    skipped: str = "steps",
) -> Exporter:
    """A format of rows, written as Parquet and/or JSON lines; ``after`` adds its files."""

    def write(
        history: History,
        sessions: Sequence[SessionSummary],
        files: list[Path],
        opts: ExportOptions,
        progress: Progress,
    ) -> ExportInfo:
        from webshepherd.daemon.offline.export.sessions import Summary
        from webshepherd.daemon.offline.export.writers import write_jsonl, write_parquet

        summary = Summary()
        rows = list(make(history, sessions, opts, files[0].parent, progress, summary))
        for t in files:
            if t.suffix == ".parquet":
                write_parquet(rows, t, schema() if schema is not None else None)
            else:
                write_jsonl(t, rows)
        info = summary.as_dict()
        info["files"] = [str(t) for t in files]
        if after is not None:
            after(info, files, opts)
        return info

    def done(info: ExportInfo, sessions: int) -> str:
        why = ", ".join(f"{k} {v}" for k, v in info["skipped_by_reason"].items()) or "none"
        return (
            f"exported {info['rows']} rows from {sessions} sessions "
            f"({info['skipped']} {skipped} skipped: {why})"
        )

    return Exporter(help, _row_files(name), _scored_steps, write, done)


def _webprm(
    history: History,
    sessions: Sequence[SessionSummary],
    opts: ExportOptions,
    base: Path,
    progress: Progress,
    summary: Summary,
) -> Iterator[dict[str, Any]]:
    from webshepherd.daemon.offline.export.webprm import webprm_rows

    return webprm_rows(
        history,
        sessions,
        opts.redact,
        image_dir=base / "images" if opts.screenshots else None,
        image_ref=lambda p: os.path.relpath(p, base),
        progress=progress,
        summary=summary,
        include_judged=opts.include_judged,
        generated_checklists=opts.generated_checklists,
    )


def _webprm_schema() -> pa.Schema:
    from webshepherd.daemon.offline.export.writers import webprm_schema

    return webprm_schema()


def _sft(
    history: History,
    sessions: Sequence[SessionSummary],
    opts: ExportOptions,
    base: Path,
    progress: Progress,
    summary: Summary,
) -> Iterator[dict[str, Any]]:
    from webshepherd.daemon.offline.export.llamafactory import sft_rows

    return sft_rows(
        history, sessions, opts.redact, layout=opts.sft_layout, progress=progress, summary=summary
    )


def _sft_dataset_info(info: ExportInfo, files: list[Path], opts: ExportOptions) -> None:
    from webshepherd.daemon.offline.export.llamafactory import DATASET_NAME, write_dataset_info

    data_file = next((t for t in files if t.suffix == ".jsonl"), files[0])
    entry = write_dataset_info(data_file.parent, data_file.name, opts.sft_layout)
    info["files"].append(str(entry))
    info["llamafactory_dataset"] = DATASET_NAME


def _trl(kind: str) -> RowMaker:
    def make(
        history: History,
        sessions: Sequence[SessionSummary],
        opts: ExportOptions,
        base: Path,
        progress: Progress,
        summary: Summary,
    ) -> Iterator[dict[str, Any]]:
        from webshepherd.daemon.offline.export.trl import trl_preference_rows, trl_prm_rows

        rows = trl_prm_rows if kind == "prm" else trl_preference_rows
        return rows(
            history,
            sessions,
            opts.redact,
            progress=progress,
            summary=summary,
            include_judged=opts.include_judged,
            generated_checklists=opts.generated_checklists,
        )

    return make


def _mind2web_files(out: Path) -> list[Path]:
    if out.suffix:
        raise WebShepherdError(f"--out {out}: mind2web writes a folder (one per session)")
    return [out]


def _mind2web(
    history: History,
    sessions: Sequence[SessionSummary],
    files: list[Path],
    opts: ExportOptions,
    progress: Progress,
) -> ExportInfo:
    from webshepherd.daemon.offline.export.mind2web import write_mind2web

    info = write_mind2web(history, sessions, files[0], opts.redact, progress)
    info["files"] = [str(files[0])]
    return info


EXPORTERS: dict[str, Exporter] = {
    "webprm": _rows_format("webprm", "WebPRM Collection pairs", _webprm, schema=_webprm_schema),
    "sft": _rows_format(
        "sft",
        "LLaMA-Factory rows (+ dataset_info.json)",
        _sft,
        after=_sft_dataset_info,
        skipped="candidates and checklists",
    ),
    "trl-prm": _rows_format("trl-prm", "TRL stepwise supervision", _trl("prm")),
    "trl-preference": _rows_format(
        "trl-preference", "TRL conversational preference", _trl("preference")
    ),
    "mind2web": Exporter(
        "<out>/<task_id>/result.json + trajectory/ screenshots",
        _mind2web_files,
        lambda history, sessions: sum(s.steps for s in sessions),
        _mind2web,
        lambda info, _n: f"exported {info['rows']} sessions with {info['images']} screenshots",
    ),
}
