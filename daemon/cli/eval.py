"""``webshepherd eval rewardbench`` and ``webshepherd eval trajectories``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from webshepherd.daemon.cli.progress import ProgressBar
from webshepherd.daemon.cli.secrets import add_token_arguments, token_from_args
from webshepherd.daemon.engine.engine import DEFAULT_MAX_CONTEXT
from webshepherd.daemon.engine.labels import UNPARSED_RULES
from webshepherd.protocol.errors import WebShepherdError
from webshepherd.protocol.terminal_text import terminal_safe


def add_eval_parser(sub: Any) -> None:
    ev = sub.add_parser("eval", help="evaluate a reward model or agent trajectories")
    esub = ev.add_subparsers(dest="eval_command", metavar="BENCH", required=True)

    rb = esub.add_parser("rewardbench", help="WebRewardBench: MRR, step and trajectory accuracy")
    rb.add_argument("--data", type=Path, required=True, help="rows (.parquet or .jsonl)")
    where = rb.add_mutually_exclusive_group(required=True)
    where.add_argument("--url", default=None, help="a running daemon (ws://…)")
    where.add_argument("--model", default=None, help="score in process with this model")
    add_token_arguments(rb)
    rb.add_argument("--device", default="auto", help="device for --model (default auto)")
    rb.add_argument(
        "--samples",
        type=int,
        default=5,
        help="completions per candidate (default 5 at --temperature 1.0: the paper's best "
        "setting; 1 = greedy, the paper's weaker '1 prob' row)",
    )
    rb.add_argument(
        "--temperature", type=float, default=1.0, help="sampling temperature for --model (1.0)"
    )
    rb.add_argument(
        "--unparsed",
        choices=UNPARSED_RULES,
        default="zero",
        help="a sample without a label: zero (default, the authors' rule: scored 0 and averaged "
        "in) or skip (left out of the mean)",
    )
    rb.add_argument(
        "--max-context",
        type=int,
        default=DEFAULT_MAX_CONTEXT,
        help=f"with --model: prompt + judgement limit in tokens (default {DEFAULT_MAX_CONTEXT})",
    )
    rb.add_argument(
        "--max-new-tokens",
        type=int,
        default=None,
        help="judge output cap (default none: to </answer> within the context, as the authors)",
    )
    rb.add_argument("--json", type=Path, required=True, help="report (resumed when it exists)")
    rb.add_argument("--quiet", action="store_true", help="no progress bar")
    rb.set_defaults(func=cmd_rewardbench)

    tr = esub.add_parser("trajectories", help="planning-framework metrics against gold steps")
    tr.add_argument("--gold", type=Path, required=True, help="gold steps (.jsonl/.csv/.xlsx)")
    tr.add_argument(
        "--agent",
        required=True,
        nargs="+",
        help="agent rows (.jsonl) or recorded session ids",
    )
    tr.add_argument("--references", type=Path, default=None, help="WebArena test.raw.json")
    tr.add_argument("--matcher", choices=["exact", "embedding", "llm"], default="exact")
    tr.add_argument("--threshold", type=float, default=0.75, help="embedding cosine cut-off (0.75)")
    tr.add_argument("--llm-url", default=None, help="OpenAI-compatible base URL (…/v1)")
    tr.add_argument("--llm-model", default="gpt-4o", help="model name for --matcher llm")
    tr.add_argument("--lookahead", type=int, default=3, help="gold steps a step may fulfil")
    tr.add_argument(
        "--recovery-window", type=int, default=5, help="agent steps to get back on track"
    )
    tr.add_argument(
        "--repetition-on",
        choices=["executed", "planned"],
        default="executed",
        help="agent column of the repetitiveness rate",
    )
    tr.add_argument("--data-dir", type=Path, default=None, help="recording, for session ids")
    tr.add_argument("--json", type=Path, required=True, help="report")
    tr.set_defaults(func=cmd_trajectories)


def cmd_rewardbench(args: argparse.Namespace) -> int:
    from webshepherd.daemon.offline.evaluation.rewardbench import (
        DaemonScorer,
        EngineScorer,
        read_bench,
        run,
    )

    if args.samples < 1:
        raise WebShepherdError("--samples: at least 1")
    read_bench(args.data)  # a malformed file fails before any model loads or connects
    scorer: Any
    if args.model:
        from webshepherd.daemon.engine.engine import EngineConfig
        from webshepherd.daemon.engine.loader import load_engine

        cfg = EngineConfig(
            max_new_tokens=args.max_new_tokens,
            temperature=args.temperature,
            max_context=args.max_context or None,
            unparsed=args.unparsed,
        )
        scorer = EngineScorer(load_engine(args.model, device=args.device, config=cfg))
        settings = {
            "temperature": args.temperature,
            "unparsed": args.unparsed,
            "max_context": args.max_context,
            "max_new_tokens": args.max_new_tokens,
        }
    else:
        scorer = DaemonScorer(args.url, token_from_args(args), unparsed=args.unparsed)
        settings = {"unparsed": args.unparsed}
    try:
        report = run(
            args.data,
            scorer,
            args.json,
            samples=args.samples,
            settings=settings,
            progress=ProgressBar("rewardbench", "row", quiet=args.quiet).reached,
        )
    finally:
        if isinstance(scorer, DaemonScorer):
            scorer.close()
        else:
            scorer.engine.close()
    print(f"{'subset':<28} {'steps':>6} {'MRR':>7} {'acc.step':>9} {'acc.traj':>9}")
    for name, m in report["metrics"].items():
        print(
            f"{terminal_safe(name):<28} {m['steps']:>6} {m['mrr']:>7.4f} "
            f"{m['step_accuracy']:>9.4f} {m['trajectory_accuracy']:>9.4f}"
        )
    print(f"report: {args.json}", file=sys.stderr)
    return 0


def cmd_trajectories(args: argparse.Namespace) -> int:
    from webshepherd.daemon.offline.evaluation.matchers import make_matcher
    from webshepherd.daemon.offline.evaluation.planning import Options
    from webshepherd.daemon.offline.evaluation.trajectories import (
        evaluate,
        load_references,
        read_agent,
        read_gold,
        read_sessions,
    )

    gold = read_gold(args.gold)
    first = Path(args.agent[0])
    files = (".jsonl", ".ndjson", ".json", ".csv", ".parquet", ".xlsx")
    if len(args.agent) == 1 and (first.exists() or first.suffix.lower() in files):
        agent = read_agent(first)
    else:
        from webshepherd.daemon.config import default_data_dir

        db = (args.data_dir or default_data_dir()) / "webshepherd.sqlite3"
        agent = read_sessions(db, args.agent)
    refs = load_references(args.references) if args.references else None
    matcher = make_matcher(
        args.matcher,
        threshold=args.threshold,
        llm_url=args.llm_url,
        llm_model=args.llm_model,
        api_key=os.environ.get("OPENAI_API_KEY"),
    )
    opts = Options(args.lookahead, args.recovery_window, args.repetition_on)
    report = evaluate(
        gold,
        agent,
        matcher,
        references=refs,
        options=opts,
        progress=ProgressBar("tasks", "row").reached,
    )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
    print(f"{'metric':<24} {'mean':>7} {'std':>7} {'tasks':>6}")
    for name, m in report["aggregate"].items():
        mean = "-" if m["mean"] is None else f"{m['mean']:.4f}"
        std = "-" if m["std"] is None else f"{m['std']:.4f}"
        print(f"{terminal_safe(name):<24} {mean:>7} {std:>7} {m['tasks']:>6}")
    if report["missing_gold"]:
        print(f"no gold steps for {len(report['missing_gold'])} task(s)", file=sys.stderr)
    print(f"report: {args.json}", file=sys.stderr)
    return 0
