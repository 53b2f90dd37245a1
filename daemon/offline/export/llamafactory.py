"""The SFT export (LLaMA-Factory rows, targets from ground truth only: :func:`sft_rows`,
docs/training.md) and its ``dataset_info.json`` entry, so ``llamafactory-cli`` finds the rows
by name (``dataset: webshepherd_sft`` in a training config whose ``dataset_dir`` is the
export's folder)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, cast

from webshepherd.daemon.browser.actions import read_recorded
from webshepherd.daemon.engine.prompts import checklist_messages, format_trajectory, judge_messages
from webshepherd.daemon.offline.export.sessions import Summary, redacted_sessions
from webshepherd.daemon.offline.export.siblings import labelled, path_done, tree_steps
from webshepherd.daemon.offline.export.truth import label_source
from webshepherd.daemon.offline.files import loads
from webshepherd.daemon.offline.training.targets import (
    checklist_target,
    feedback,
    judge_target,
)
from webshepherd.daemon.recorder import History
from webshepherd.daemon.recorder.timeline import Step
from webshepherd.daemon.redact import mask_password_lines
from webshepherd.protocol.common import ItemLabel, ScoredCandidate, SessionSummary, Turn
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


def _truth(
    st: Step, cands: dict[str, ScoredCandidate], done_before: Sequence[bool]
) -> dict[str, tuple[list[ItemLabel], str]]:
    """Each candidate of ``st`` with ground truth: its item labels and their source. A
    person's labels beat the environment's (the later of one source wins). A person's
    approve, reject or edit gives no labels: it says which action should run, not where each
    item stands (a rejected "Place order" would complete its item), so it makes preference
    pairs (truth.py), never a judgement target."""
    return {
        a: (cast(list[ItemLabel], labels), source)
        for a, (labels, source) in labelled(st, cands, len(done_before)).items()
    }


def sft_rows(
    history: History,
    sessions: Sequence[SessionSummary],
    redact: Sequence[str] = (),
    layout: str = "sharegpt",
    history_steps: int = 10,
    progress: Callable[[int], None] | None = None,
    summary: Summary | None = None,
) -> Iterator[dict[str, Any]]:
    """Instruction-tuning rows with targets from ground truth only (docs/training.md), never
    from the judge's recorded output: per session, the checklist prompt with the reference
    checklist a user gave as target (none for a generated one), and per scored candidate
    with truth (:func:`_truth`) the judge prompt it was scored with and as target the
    judgement written from its labels (``targets.judge_target``). A candidate without truth
    gives no row (``skipped_by_reason``: ``no_ground_truth``). ``source`` says where the
    truth came from: ``reference`` (the checklist row), else ``label`` (``replay``,
    ``rollout``: labels those made), and ``label`` who knew it: ``reference``,
    ``environment``, ``person`` (or the replay's, the rollout's). At a
    tree search's step the trajectory is the tree's path to it, and what was done before it
    the truth of the nearest labelled action on that path (siblings.py)."""
    summ = summary if summary is not None else Summary()
    for s, tl, red in redacted_sessions(history, sessions, redact):
        sid = s.session_id
        summ.per_session[sid] = 0
        cl_text = tl.checklist.text if tl.checklist else ""
        n_items = len(tl.checklist.items) if tl.checklist else 0
        first = next((st for st in tl.steps if st.observed_at is not None), None)
        if tl.checklist is not None and tl.checklist.source == "reference" and first is not None:
            msgs = checklist_messages(
                red.text(s.intent),
                red.text(s.start_url or first.url),
                red.text(mask_password_lines(first.axtree)),
            )
            titles = [red.text(i.title) for i in tl.checklist.items]
            target = checklist_target(red.text(cl_text), titles)
            yield _layout(layout, msgs, target, sid, 0, "reference", "reference")
            summ.rows += 1
            summ.per_session[sid] += 1
        elif tl.checklist is not None:
            summ.skipped["generated_checklist"] += 1
        done_before = [False] * n_items
        tree = tree_steps(tl)
        for st in tl.steps:
            if not st.scorings or st.observed_at is None:
                continue
            if progress:
                progress(1)
            cands: dict[str, ScoredCandidate] = {}
            for scoring in st.scorings:
                for c in scoring.candidates:
                    cands[c.candidate.action] = c  # a later one wins
            at = tree.get(st.step)
            if at is not None:
                done_before = path_done(tl, at, n_items)
            truth = _truth(st, cands, done_before) if n_items else {}
            if len(truth) < len(cands):
                summ.skipped["no_ground_truth"] += len(cands) - len(truth)
            if at is not None:
                path = [(t.thought, t.action) for t in at.history]
            else:
                path = [(x.thought or "", x.action) for x in tl.actions if x.step < st.step]
            hist = [Turn(red.text(t), red.action(a, "")) for t, a in path]
            for action, (labels, source) in truth.items():
                if not read_recorded(action).parsed:
                    summ.unparsed_actions.append({"task_id": sid, "step_id": st.step})
                msgs = judge_messages(
                    intent=red.text(s.intent),
                    trajectory=format_trajectory(hist, history_steps),
                    current_url=red.text(st.url),
                    text_observation=red.text(mask_password_lines(st.axtree)),
                    checklist=red.text(cl_text),
                    thought=red.text(cands[action].candidate.thought or ""),
                    action=red.action(action, st.axtree),
                )
                target = judge_target(labels, feedback(labels, done_before))
                yield _layout(layout, msgs, target, sid, st.step, source, label_source(source))
                summ.rows += 1
                summ.per_session[sid] += 1
            executed = st.executed[-1].action if st.executed else None
            if executed in truth:  # what the executed action completed stays known as done
                done_before = [lab == "yes" for lab in truth[executed][0]]


def _layout(
    layout: str,
    msgs: list[dict[str, str]],
    target: str,
    sid: str,
    step: int,
    label: str,
    source: str,
) -> dict[str, Any]:
    system = "\n\n".join(m["content"] for m in msgs if m["role"] == "system")
    user = "\n\n".join(m["content"] for m in msgs if m["role"] != "system")
    meta = {"task_id": sid, "step_id": step, "label": label, "source": source}
    if layout == "alpaca":
        return {"instruction": user, "input": "", "output": target, "system": system, **meta}
    conv = [{"from": "human", "value": user}, {"from": "gpt", "value": target}]
    return {"conversations": conv, "system": system, **meta}
