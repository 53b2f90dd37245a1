"""``webshepherd serve``: :class:`~webshepherd.daemon.config.Settings` from the command line
(each flag's default is the Settings default, :func:`settings_from_args`), the model loaded
and the daemon run (``webshepherd.daemon.build``)."""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from webshepherd.daemon.config import (
    DEFAULT_MODEL,
    MIB,
    DaemonConfig,
    ModelSettings,
    Settings,
    check_bind,
    check_port_free,
    default_of,
)
from webshepherd.daemon.engine.engine import EngineConfig
from webshepherd.daemon.engine.labels import UNPARSED_RULES
from webshepherd.daemon.engine.loader import BACKEND_OPTIONS, BACKENDS
from webshepherd.daemon.engine.prompts import PROMPT_STYLES
from webshepherd.daemon.engine.types import JUDGE_INPUTS
from webshepherd.daemon.secrets import add_otlp_header_arguments, otlp_headers
from webshepherd.daemon.sessions.approvals import ApprovalPolicy, describe_policy
from webshepherd.daemon.sessions.guards import ALL_RULES, GuardPolicy
from webshepherd.daemon.sessions.modes import MODES, parse_sandbox
from webshepherd.protocol.commits import parse_commit_pattern
from webshepherd.protocol.errors import ModelUnavailableError

if TYPE_CHECKING:
    from webshepherd.daemon.engine.engine import Engine

__all__ = [
    "DEFAULT_MODEL",
    "add_serve_parser",
    "config_from_args",
    "engine_from_args",
    "settings_from_args",
]

#: flags copied as they are onto DaemonConfig fields: (argparse dest, field)
_DAEMON_FLAGS = (
    ("host", "host"),
    ("port", "port"),
    ("samples", "default_samples"),
    ("allow_origin", "allowed_extension_ids"),
    ("tls_cert", "tls_cert"),
    ("tls_key", "tls_key"),
    ("insecure", "insecure"),
    ("approval_timeout", "approval_timeout_s"),
    ("approval_default", "approval_default"),
    ("queue_limit", "queue_limit"),
    ("batch_sessions", "batch_sessions"),
    ("price_in", "price_in"),
    ("price_out", "price_out"),
    ("max_session_starts", "max_session_starts"),
    ("max_observations", "max_observations"),
    ("max_model_jobs", "max_model_jobs"),
)
#: flags copied as they are onto ModelSettings fields
_MODEL_FLAGS = ("model", "device", "backend")


def _daemon(name: str) -> object:
    return default_of(DaemonConfig, name)


def add_serve_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    s: argparse.ArgumentParser = sub.add_parser("serve", help="run the reward daemon")
    s.add_argument(
        "--model",
        default=default_of(ModelSettings, "model"),
        help="Hugging Face id or local folder (default %(default)s)",
    )
    s.add_argument(
        "--device",
        default=default_of(ModelSettings, "device"),
        help="auto, cpu, cuda, cuda:1, ... (default %(default)s)",
    )
    add_backend_arguments(s)
    s.add_argument("--host", default=_daemon("host"), help="bind address (default %(default)s)")
    s.add_argument(
        "--port",
        type=int,
        default=_daemon("port"),
        help="port (default %(default)s; 0 = any free port)",
    )
    s.add_argument(
        "--samples",
        type=int,
        default=_daemon("default_samples"),
        help="completions per candidate when a request names none (default %(default)s)",
    )
    s.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="where the SQLite recording lives (default: $WEBSHEPHERD_DATA_DIR or the "
        "platform data dir)",
    )
    s.add_argument(
        "--allow-origin",
        dest="allow_origin",
        nargs="+",
        type=lambda o: o.removeprefix("chrome-extension://").strip("/"),
        default=_daemon("allowed_extension_ids"),
        metavar="ID",
        help="Chrome extension ids allowed to connect (chrome-extension://<ID>); "
        "default: the bundled extension's pinned id",
    )
    s.add_argument("--tls-cert", type=Path, default=None, help="PEM certificate: serve wss://")
    s.add_argument("--tls-key", type=Path, default=None, help="PEM private key for --tls-cert")
    s.add_argument(
        "--insecure",
        action="store_true",
        default=_daemon("insecure"),
        help="allow a non-loopback --host without TLS (the token travels in clear)",
    )
    s.add_argument(
        "--approval-threshold",
        type=float,
        default=_daemon("approval_threshold"),
        help="ask a human when the best reward is below this (default %(default)s; <0 = never)",
    )
    s.add_argument(
        "--approval-timeout",
        type=float,
        default=_daemon("approval_timeout_s"),
        help="seconds to wait for a human decision (default %(default)s)",
    )
    s.add_argument(
        "--approval-default",
        choices=["reject", "approve"],
        default=_daemon("approval_default"),
        help="what applies when nobody decides in time (default %(default)s)",
    )
    s.add_argument(
        "--mode",
        choices=MODES,
        default=_daemon("mode"),
        help="a new session's mode (default %(default)s): 'ask' a paired person decides what "
        "would commit (nobody paired: refused at once), 'watch' it runs and is flagged, "
        "'stop' it is refused without asking; a paired person changes a session's mode",
    )
    s.add_argument(
        "--sandbox-origin",
        dest="sandbox_origin",
        action="append",
        default=[],
        type=_sandbox,
        metavar="ORIGIN",
        help="a site whose commits (to it, or from its pages) are flagged and recorded, never "
        "held (repeatable): scheme://host[:port], or http://127.0.0.1:* for any port",
    )
    s.add_argument(
        "--commits",
        action="append",
        default=[],
        type=_commit_pattern,
        metavar="'GET URL'",
        help="GET requests that commit on your sites (repeatable): 'GET URL' with * for any run, "
        "e.g. 'GET https://shop.example/cart/remove*'; every gate holds them like a write "
        "(other GETs are not held)",
    )
    s.add_argument(
        "--guard-names",
        action="store_true",
        help="the stricter policy: a step that activates an element named with one of the "
        "guard words counts as committing (name_match; off by default: a name alone never "
        "refuses a step)",
    )
    s.add_argument(
        "--guard-words",
        default=None,
        metavar="WORDS",
        help="comma-separated words for --guard-names (replaces the default list that serve "
        "prints; '' for none)",
    )
    s.add_argument(
        "--no-guard",
        action="append",
        default=[],
        choices=ALL_RULES,
        metavar="RULE",
        help=f"turn one guard rule off (repeatable): {', '.join(ALL_RULES)}",
    )
    s.add_argument(
        "--no-guards",
        action="store_true",
        help="hold no action for its kind, only for its reward (the guards are on by default)",
    )
    s.add_argument(
        "--queue-limit",
        type=int,
        default=_daemon("queue_limit"),
        help="requests queued before 'overloaded' (default %(default)s)",
    )
    s.add_argument(
        "--batch-sessions",
        type=int,
        default=_daemon("batch_sessions"),
        help="score requests of up to this many sessions share one model call "
        "(default %(default)s; 1: off)",
    )
    s.add_argument(
        "--otlp-endpoint",
        default=_daemon("otlp_endpoint"),
        metavar="URL",
        help="export each session as an OpenTelemetry trace over OTLP/HTTP (e.g. "
        "http://localhost:4318; needs the 'otel' extra)",
    )
    add_otlp_header_arguments(s)
    for flag, default, what in (
        (
            "--max-session-starts",
            _daemon("max_session_starts"),
            "session starts per connection in any 60 s",
        ),
        (
            "--max-observations",
            _daemon("max_observations"),
            "observations per connection in any 60 s",
        ),
        (
            "--max-model-jobs",
            _daemon("max_model_jobs"),
            "model jobs one connection may have queued or running",
        ),
        ("--max-session-mib", DaemonConfig.max_session_bytes // MIB, "MiB one session may record"),
    ):
        s.add_argument(
            flag,
            type=int,
            default=default,
            metavar="N",
            help=f"{what}, past which requests get 'overloaded' (default %(default)s; 0: no limit)",
        )
    s.set_defaults(func=serve)


def add_backend_arguments(s: argparse.ArgumentParser) -> None:
    """``serve``'s model backend and scoring flags."""
    kinds = [f"{name} ({kind.help})" for name, kind in BACKENDS.items()]
    s.add_argument(
        "--backend",
        choices=list(BACKENDS),
        default=default_of(ModelSettings, "backend"),
        help=f"{', '.join(kinds[:-1])} or {kinds[-1]}; default %(default)s",
    )
    for name, o in BACKEND_OPTIONS.items():
        given: dict[str, Any] = {"metavar": o.metavar, "type": o.type, "choices": o.choices}
        s.add_argument(
            o.flag,
            dest=name,
            default=o.default,
            help=o.help,
            **{k: v for k, v in given.items() if v is not None},
        )
    s.add_argument(
        "--max-context",
        type=int,
        default=default_of(EngineConfig, "max_context") or 0,
        metavar="TOKENS",
        help="prompt + judgement limit in tokens (default %(default)s, the authors' "
        "--max-model-len, or the model's own positions when fewer; 0: the model's own); "
        "longer AX trees lose whole lines, visibly",
    )
    for flag, what in (("--price-in", "prompt"), ("--price-out", "generated")):
        s.add_argument(
            flag,
            type=float,
            default=None,
            metavar="USD",
            help=f"the judge's price per million {what} tokens: stats and the TUI's Device tab "
            "show the cost (e.g. an API judge's list price)",
        )
    s.add_argument(
        "--judge-inputs",
        choices=JUDGE_INPUTS,
        default=None,
        help="what the judge sees: text (the AX tree) or text+image (the latest screenshot "
        "too, the authors' multimodal prompt; an observation without one is judged as text "
        "and the scored reply says so); default: what the checkpoint was trained on (text+image "
        "for a vision-language checkpoint through transformers, else text)",
    )
    s.add_argument(
        "--unparsed",
        choices=UNPARSED_RULES,
        default=default_of(EngineConfig, "unparsed"),
        help="a judge sample without a label (or cut by the context): skip it in the mean "
        "(null reward when none parses) or count it as 0 (zero: the authors' rule); "
        "default %(default)s",
    )
    s.add_argument(
        "--prompt",
        choices=PROMPT_STYLES,
        default=default_of(EngineConfig, "prompt"),
        help="the judge prompt (default %(default)s): web-shepherd (the checkpoints' own), "
        "baseline (the paper's GPT-4o(-mini) baselines: the authors' with_checklist judge and "
        "default checklist prompts, one sample drawn at T=1.0) or baseline-likert (their "
        "likert_scale prompt: a 1-5 score, reward SCORE/5); with a chat API (--backend "
        "openai-chat) or a local checkpoint",
    )


def settings_from_args(args: argparse.Namespace) -> Settings:
    """The :class:`Settings` ``serve``'s flags describe (each flag defaults to its setting)."""
    daemon: dict[str, Any] = {field: getattr(args, dest) for dest, field in _DAEMON_FLAGS}
    daemon["allowed_extension_ids"] = tuple(args.allow_origin)
    daemon["max_session_bytes"] = args.max_session_mib * MIB
    threshold = args.approval_threshold
    daemon["approval_threshold"] = None if threshold is None or threshold < 0 else threshold
    if args.data_dir is not None:
        daemon["data_dir"] = args.data_dir
    daemon["guards"] = guards_from_args(args)
    daemon["mode"] = args.mode
    daemon["sandbox_origins"] = tuple(dict.fromkeys(args.sandbox_origin))
    daemon["commits"] = tuple(dict.fromkeys(args.commits))
    if args.otlp_endpoint:
        from webshepherd.daemon.server.telemetry import parse_headers, traces_url

        traces_url(args.otlp_endpoint)  # a bad URL fails before the model loads
        daemon["otlp_endpoint"] = args.otlp_endpoint
        daemon["otlp_headers"] = tuple(parse_headers(otlp_headers(args)).items())
    engine = replace(
        EngineConfig(),
        max_context=args.max_context or None,
        unparsed=args.unparsed,
        prompt=args.prompt,
        **({"judge_inputs": args.judge_inputs} if args.judge_inputs else {}),
    )
    model = ModelSettings(
        **{name: getattr(args, name) for name in _MODEL_FLAGS},
        options={  # those given (a default is the option's, as in Settings())
            name: getattr(args, name)
            for name, o in BACKEND_OPTIONS.items()
            if getattr(args, name) != o.default
        },
        inputs_from_model=args.judge_inputs is None,
    )
    return Settings(DaemonConfig(**daemon), engine, model)


def _sandbox(text: str) -> str:
    try:
        return parse_sandbox(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _commit_pattern(text: str) -> str:
    try:
        return parse_commit_pattern(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def guards_from_args(args: argparse.Namespace) -> GuardPolicy:
    """The guard policy of ``--guard-names``, ``--guard-words``, ``--no-guard`` and
    ``--no-guards``."""
    if args.no_guards:
        return GuardPolicy(rules=frozenset())
    policy = GuardPolicy()
    if args.guard_names:
        policy = GuardPolicy(policy.rules | {"name_match"}, policy.words, policy.extensions)
    if args.guard_words is not None:
        words = tuple(w.strip() for w in args.guard_words.split(",") if w.strip())
        policy = GuardPolicy(policy.rules, words, policy.extensions)
    return policy.without(*args.no_guard)


def describe_holds(config: DaemonConfig) -> str:
    """What the daemon holds, predicts and flags, in one paragraph (``serve`` prints it)."""
    rules = config.guards.rules
    named = [
        text
        for rule, text in (
            ("form_submit", "a form sent by a method other than GET"),
            ("leaves_origin", "a step to another origin"),
            ("download", "a download"),
            ("commit_get", "a GET that commits (a link or GET form named for deleting)"),
            ("name_match", f"an element named with one of: {', '.join(config.guards.words)}"),
        )
        if rule in rules
    ]
    if config.guards.enabled:
        predicts = (
            f"The rules read each candidate from the page ({'; '.join(named)}) and show it on "
            "the card; in a session whose browser holds commits they only predict, for a "
            "text-only client they hold the step for a person."
        )
    else:
        predicts = "The rules are off (--no-guards): no step is held or predicted for its kind."
    sandboxes = (
        f"Sandbox origins, flagged and recorded, never held: {', '.join(config.sandbox_origins)}."
        if config.sandbox_origins
        else "No sandbox origins (--sandbox-origin ORIGIN: a site's commits flagged, not held)."
    )
    gets = (
        f"GETs that commit (--commits), held like a write: {', '.join(config.commits)}; "
        "other GETs are not held."
        if config.commits
        else "No GET is held (--commits 'GET URL*': GETs that commit on your sites)."
    )
    policy = ApprovalPolicy(config.approval_threshold, config.approval_drop)
    rewards = describe_policy(policy, config.approval_timeout_s, config.approval_default)
    return (
        "policy: a browser a client drives with holds='browser' (the extension, the SDK's "
        "gate) pauses every request that would commit (a method other than GET, HEAD or "
        "OPTIONS; a top-level navigation to another origin; a download) before it leaves and "
        f"asks the daemon. New sessions start in mode '{config.mode}': 'ask' a paired person "
        "decides (nobody paired: refused at once), 'watch' it runs and is flagged, 'stop' it "
        f"is refused without asking; a paired person switches a session's mode. {predicts} "
        f"{gets} {sandboxes} {rewards[0].upper()}{rewards[1:]}; in 'watch' a reward never "
        "waits, in 'stop' such a step is refused."
    )


def config_from_args(args: argparse.Namespace) -> DaemonConfig:
    """The daemon's part of :func:`settings_from_args`."""
    return settings_from_args(args).daemon


def engine_from_args(args: argparse.Namespace, config: DaemonConfig | None = None) -> Engine:
    """Load the engine the flags describe; ``ModelUnavailableError`` says what to fix.
    (``config`` is not read; older callers pass it.)"""
    from webshepherd.daemon.build import build_engine

    return build_engine(settings_from_args(args))


def serve(args: argparse.Namespace) -> int:
    if args.verbose == 0:
        logging.getLogger("webshepherd").setLevel(logging.INFO)
        logging.getLogger().setLevel(logging.INFO)
    settings = settings_from_args(args)
    config = settings.daemon
    check_bind(config)  # refuse a bad bind before spending a minute loading the model
    check_port_free(config)
    print(f"webshepherd: {describe_holds(config)}", file=sys.stderr, flush=True)
    from webshepherd.protocol.client.wait import starting_marker

    # clients started meanwhile (`serve … &` then the agent) wait for it, not fail
    with starting_marker(f"ws://{config.host}:{config.port}/v1", config.config_dir):
        return _load_and_serve(settings)


def _load_and_serve(settings: Settings) -> int:
    from webshepherd.daemon.build import build_engine, run_until_signal

    config = settings.daemon

    m = settings.model
    remote = m.backend in BACKENDS and BACKENDS[m.backend].remote
    where = f"at {m.options.get('base_url')}" if remote else f"device {m.device}"
    shown = m.model
    if m.backend in BACKENDS and BACKENDS[m.backend].judges_remote_model:
        shown = str(m.options.get("remote_model") or "the served model")
    print(f"webshepherd: loading {shown} ({m.backend}, {where}) ...", file=sys.stderr, flush=True)
    try:
        engine = build_engine(settings)
    except ModelUnavailableError as exc:
        print(f"webshepherd: the model could not be loaded.\n{exc.message}", file=sys.stderr)
        return 2
    print(
        f"webshepherd: model loaded; recording to {config.db_path}; "
        "`webshepherd token` prints the pairing token",
        file=sys.stderr,
        flush=True,
    )
    run_until_signal(settings, engine)
    return 0
