"""``webshepherd eval rewardbench``, ``webshepherd eval trajectories`` and ``webshepherd eval
recorded`` (judges scored on your own recordings)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from webshepherd.daemon.cli.progress import ProgressBar
from webshepherd.daemon.config import DB_NAME
from webshepherd.daemon.engine.engine import DEFAULT_MAX_CONTEXT
from webshepherd.daemon.engine.labels import UNPARSED_RULES
from webshepherd.daemon.engine.prompts import PROMPT_STYLES, PromptStyle, samples_single
from webshepherd.daemon.offline.evaluation.rewardbench import LONG_PROMPTS
from webshepherd.daemon.secrets import add_token_arguments, token_from_args
from webshepherd.protocol.errors import WebShepherdError
from webshepherd.protocol.terminal_text import terminal_safe


def add_eval_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
        "--prompt",
        choices=PROMPT_STYLES,
        default="web-shepherd",
        help="with --model: the judge prompt: web-shepherd (default, the checkpoints' own), "
        "baseline (the paper's GPT-4o baselines: the authors' with_checklist prompt) or "
        "baseline-likert (their likert_scale prompt, a 1-5 score)",
    )
    rb.add_argument(
        "--samples",
        type=int,
        default=None,
        help="completions per candidate (default: 5 at --temperature 1.0 with the web-shepherd "
        "prompt, the paper's best setting, 1 = greedy, its '1 prob' row; 1 with a baseline "
        "prompt, drawn at --temperature as the authors' baseline runs)",
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
        "--long-prompts",
        choices=LONG_PROMPTS,
        default="truncate",
        help="with --model: a prompt longer than --max-context: truncate (default: the AX tree "
        "loses lines, visibly) or drop (the published treatment: vLLM refused such a request; "
        "a rejected candidate leaves the ranking, a chosen one ranks last; counted in the report)",
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

    rec = esub.add_parser(
        "recorded",
        help="pick accuracy of judges on your own recorded candidates with truth (no browser)",
        description="Re-score every recorded step whose right candidate truth names (a "
        "person, a label, the outcome) with each judge, from the recording alone, and print "
        "how often each ranks the right candidate strictly first and how many of its outputs "
        "did not parse (docs/training.md).",
    )
    rec.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help=f"the recording: a daemon's data dir or its {DB_NAME} (default: the daemon's)",
    )
    rec.add_argument(
        "--session",
        nargs="+",
        action="extend",
        metavar="ID",
        default=None,
        help="only these sessions (default: every recorded session)",
    )
    rec.add_argument(
        "--model",
        action="append",
        default=[],
        help="a judge loaded in this process (a checkpoint folder or model id; 'tiny': the "
        "shipped tiny judge); give it twice to compare two judges side by side",
    )
    rec.add_argument(
        "--url",
        default=None,
        help="the judge a running daemon serves (default, when no --model: $WEBSHEPHERD_URL "
        "or the local daemon); with --model, compared beside it",
    )
    add_token_arguments(rec)
    rec.add_argument("--device", default="auto", help="device for --model (default auto)")
    rec.add_argument(
        "--max-new-tokens",
        type=int,
        default=None,
        help="with --model: judge output cap (default none: to </answer>, as served)",
    )
    rec.add_argument("--json", type=Path, default=None, help="write every figure and step here")
    rec.add_argument("--quiet", action="store_true", help="no progress bar")
    rec.set_defaults(func=cmd_recorded)


#: How the summary's rows are named on the terminal (the report's keys stay as they are).
SUMMARY_LABELS = {
    "mind2web": "mind2web (3 splits' rows)",
    "mean_of_subsets": "mean of subsets (headline)",
    "pooled": "pooled rows",
}


def default_samples(prompt: PromptStyle) -> int:
    """Samples per candidate when none are asked for: the paper's best setting (5) for the
    checkpoints' prompt; one for a baseline prompt, as the authors' baseline runs."""
    return 1 if samples_single(prompt) else 5


def cmd_rewardbench(args: argparse.Namespace) -> int:
    from webshepherd.daemon.offline.evaluation.rewardbench import (
        DaemonScorer,
        EngineScorer,
        read_bench,
        run,
    )

    samples = args.samples if args.samples is not None else default_samples(args.prompt)
    if samples < 1:
        raise WebShepherdError("--samples: at least 1")
    read_bench(args.data)  # a malformed file fails before any model loads or connects
    scorer: EngineScorer | DaemonScorer
    if args.model:
        from webshepherd.daemon.engine.engine import EngineConfig
        from webshepherd.daemon.engine.loader import load_engine

        drop = args.long_prompts == "drop"
        cfg = EngineConfig(
            max_new_tokens=args.max_new_tokens,
            temperature=args.temperature,
            max_context=args.max_context or None,
            unparsed=args.unparsed,
            prompt=args.prompt,
            # drop: what fits is judged whole, with the rest of the context to write in
            output_reserve=0 if drop else EngineConfig.output_reserve,
            context_margin=0 if drop else EngineConfig.context_margin,
        )
        engine = load_engine(args.model, device=args.device, config=cfg)
        scorer = EngineScorer(engine, long_prompts=args.long_prompts)
        settings = {
            "temperature": args.temperature,
            "unparsed": args.unparsed,
            "max_context": args.max_context,
            "max_new_tokens": args.max_new_tokens,
            "prompt": args.prompt,
            "long_prompts": args.long_prompts,
            "sampling": engine.backend.sampling.describe(),
        }
    else:
        given = [
            flag
            for flag, changed in (
                ("--prompt", args.prompt != "web-shepherd"),
                ("--long-prompts drop", args.long_prompts != "truncate"),
            )
            if changed
        ]
        if given:
            raise WebShepherdError(
                f"{', '.join(given)}: with --url the daemon judges as it was started "
                "(`webshepherd serve --prompt …`); these apply to --model"
            )
        scorer = DaemonScorer(args.url, token_from_args(args), unparsed=args.unparsed)
        settings = {"unparsed": args.unparsed}
    try:
        report = run(
            args.data,
            scorer,
            args.json,
            samples=samples,
            settings=settings,
            progress=ProgressBar("rewardbench", "row", quiet=args.quiet).reached,
        )
    finally:
        if isinstance(scorer, DaemonScorer):
            scorer.close()
        else:
            scorer.engine.close()
    print(f"{'subset':<34} {'steps':>6} {'MRR':>7} {'acc.step':>9} {'acc.traj':>9}")
    for name, m in report["metrics"].items():
        label = SUMMARY_LABELS.get(name) or terminal_safe(name)
        print(
            f"{label:<34} {m['steps']:>6} {m['mrr']:>7.4f} "
            f"{m['step_accuracy']:>9.4f} {m['trajectory_accuracy']:>9.4f}"
        )
    pooled = report["metrics"].get("pooled")
    dropped = pooled["dropped"] if pooled is not None else 0
    if dropped:
        print(f"dropped: {dropped} candidate(s) whose prompt did not fit the context")
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

        db = (args.data_dir or default_data_dir()) / DB_NAME
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


def cmd_recorded(args: argparse.Namespace) -> int:
    from webshepherd.daemon.config import default_data_dir
    from webshepherd.daemon.offline.evaluation.recorded import (
        compare,
        model_judge,
        pick_steps,
        served_judge,
        table,
    )

    picks = pick_steps(args.data_dir or default_data_dir(), args.session)
    if not picks.steps:
        why = ", ".join(f"{k} {n}" for k, n in sorted(picks.skipped.items())) or "none"
        raise WebShepherdError(
            f"{picks.recording}: no recorded step has a right candidate that truth names "
            f"among two or more scored candidates (left out: {why}); label candidates with "
            "session.label(...), or let a person decide held steps (docs/training.md)"
        )
    names = _judge_names(args.model)
    judges = [
        model_judge(m, args.device, args.max_new_tokens, n)
        for m, n in zip(args.model, names, strict=True)
    ]
    if args.url is not None or not args.model:
        judges.append(served_judge(args.url, token_from_args(args)))
    bar = ProgressBar("judging", "step", quiet=args.quiet)
    try:
        result = compare(picks, judges, progress=bar.reached)
    finally:
        bar.close()
    for line in table(result):
        print(terminal_safe(line))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(result.as_dict(), indent=1, ensure_ascii=False), encoding="utf-8"
        )
        print(f"report: {args.json}", file=sys.stderr)
    return 0


def _judge_names(models: list[str]) -> list[str]:
    """Each --model's name in the table: as given, numbered when given twice."""
    seen: dict[str, int] = {}
    out = []
    for m in models:
        seen[m] = seen.get(m, 0) + 1
        out.append(m if seen[m] == 1 else f"{m} ({seen[m]})")
    return out
