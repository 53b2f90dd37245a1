"""``webshepherd prompt judge|checklist --row FILE``: the exact messages the model gets, and the
settings it would be judged with (prompt style, temperature, the checkpoint's sampling)."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from webshepherd.daemon.engine.engine import (
    DEFAULT_MAX_CONTEXT,
    EngineConfig,
    fit_axtree,
    judging_settings,
)
from webshepherd.daemon.engine.prompts import PROMPT_STYLES
from webshepherd.daemon.offline.evaluation.rows import DataError, need_str, read_rows
from webshepherd.daemon.offline.files import loads
from webshepherd.protocol.errors import WebShepherdError
from webshepherd.protocol.terminal_text import json_terminal_safe

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

_CANDIDATE = re.compile(r"^(?:chosen|rejected:(\d+))$")


def add_prompt_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "prompt",
        help="print the chat messages the model gets for a row (WebPRM schema), as JSON",
    )
    psub = p.add_subparsers(dest="prompt_command", metavar="KIND", required=True)
    judge = psub.add_parser("judge", help="the judge prompt of one candidate")
    judge.add_argument(
        "--candidate",
        default="chosen",
        help="chosen (default) or rejected:K (K counts from 0 in the row's rejected list)",
    )
    checklist = psub.add_parser("checklist", help="the checklist-generation prompt")
    for q in (judge, checklist):
        q.add_argument(
            "--row",
            type=Path,
            required=True,
            help="one row in the official WebPRM schema (.json object, or a one-row "
            ".jsonl/.parquet); step_id may be a string",
        )
        q.add_argument(
            "--model",
            default=None,
            metavar="PATH",
            help="also print prompt_tokens from this model's tokenizer and chat template, "
            "with the AX tree cut to --max-context as the engine cuts it",
        )
        q.add_argument(
            "--prompt",
            choices=PROMPT_STYLES,
            default="web-shepherd",
            help="the prompt style: web-shepherd (default), baseline or baseline-likert (the "
            "paper's baseline judges' prompts)",
        )
        q.add_argument(
            "--max-context",
            type=int,
            default=DEFAULT_MAX_CONTEXT,
            help=f"with --model: the context the tree must fit (default {DEFAULT_MAX_CONTEXT})",
        )
        q.set_defaults(func=cmd_prompt)


def read_one_row(path: Path) -> dict[str, Any]:
    """The single row of ``path``: a JSON object, or a file of rows holding exactly one."""
    if path.suffix.lower() == ".json" and path.exists():
        try:
            data = loads(path.read_text(encoding="utf-8"), path)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise DataError(path, None, None, f"not valid JSON ({e})") from None
        if isinstance(data, dict):
            return data
    rows = [row for _, row in read_rows(path)]
    if len(rows) != 1:
        raise DataError(path, None, None, f"holds {len(rows)} rows; --row needs exactly one")
    return rows[0]


def _candidate(spec: str, rejected: int) -> int:
    """The engine's candidate index (chosen first, then the rejected ones) for ``spec``."""
    m = _CANDIDATE.match(spec)
    if m is None:
        raise WebShepherdError(f"--candidate {spec!r}: chosen or rejected:K (K from 0)")
    if m.group(1) is None:
        return 0
    k = int(m.group(1))
    if k >= rejected:
        raise WebShepherdError(f"--candidate {spec}: the row has {rejected} rejected actions")
    return 1 + k


def _tokenizer(model: str) -> PreTrainedTokenizerBase:
    try:
        from transformers import AutoTokenizer
    except ImportError:
        raise WebShepherdError(
            "--model needs transformers: pip install '.[daemon]' in a clone"
        ) from None
    try:
        return AutoTokenizer.from_pretrained(model, local_files_only=Path(model).exists())
    except Exception as e:
        raise WebShepherdError(f"--model {model}: no tokenizer could be loaded ({e})") from None


def cmd_prompt(args: argparse.Namespace) -> int:
    from webshepherd.daemon.engine.backends.tokenizer_text import (
        encode_plain,
        render_chat_template,
    )
    from webshepherd.daemon.engine.prompts import checklist_messages, step_judge_messages
    from webshepherd.daemon.engine.sampling import NO_SAMPLING, read_sampling
    from webshepherd.daemon.offline.evaluation.rewardbench import parse_row, step_input

    row = read_one_row(args.row)
    config = EngineConfig(prompt=args.prompt, max_context=args.max_context)
    if args.prompt_command == "judge":
        step = step_input(parse_row(args.row, 1, row))
        k = _candidate(args.candidate, len(step.candidates) - 1)

        def messages(tree: str | None = None) -> list[dict[str, str]]:
            return step_judge_messages(step, k, config.history_steps, tree, style=args.prompt)

        axtree = step.axtree
    else:
        intent = need_str(args.row, 1, row, "intent")
        start_url = need_str(args.row, 1, row, "start_url", optional=True)
        axtree = need_str(args.row, 1, row, "text_observation")

        def messages(tree: str | None = None) -> list[dict[str, str]]:
            return checklist_messages(
                intent, start_url, axtree if tree is None else tree, args.prompt
            )

    sampling = read_sampling(args.model) if args.model else NO_SAMPLING
    settings = judging_settings(config, sampling, args.max_context)
    if args.prompt_command == "checklist":
        settings = {**settings, "temperature": 0.0}  # checklists are written greedily
    out: dict[str, Any] = {"messages": messages(), "settings": settings}
    if args.model:
        tok = _tokenizer(args.model)

        def tokens(tree: str) -> int:
            return len(encode_plain(tok, render_chat_template(tok, messages(tree))))

        tree, cut = fit_axtree(
            axtree, tokens, args.max_context, config.output_reserve + config.context_margin
        )
        out = {
            "messages": messages(tree),
            "prompt_tokens": tokens(tree),
            "truncated_axtree": cut,
            "settings": settings,
        }
    print(json_terminal_safe(json.dumps(out, ensure_ascii=False, indent=1)))
    return 0
