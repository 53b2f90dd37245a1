"""``webshepherd serve``: build the daemon's config from the command line, load the model, run."""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import replace
from typing import Any

from webshepherd.daemon.config import DaemonConfig, check_bind
from webshepherd.protocol.errors import ModelUnavailableError


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
    ]:
        value = getattr(args, flag, None)
        if value is not None:
            changes[attr] = value
    if args.allow_origin:
        changes["allowed_extension_ids"] = tuple(
            o.removeprefix("chrome-extension://").strip("/") for o in args.allow_origin
        )
    if args.insecure:
        changes["insecure"] = True
    if args.approval_threshold is not None:
        changes["approval_threshold"] = (
            None if args.approval_threshold < 0 else args.approval_threshold
        )
    return replace(config, **changes)


def serve(args: argparse.Namespace) -> int:
    if args.verbose == 0:
        logging.getLogger("webshepherd").setLevel(logging.INFO)
        logging.getLogger().setLevel(logging.INFO)
    config = config_from_args(args)
    check_bind(config)  # refuse a bad bind before spending a minute loading the model

    from webshepherd.daemon.engine.engine import EngineConfig
    from webshepherd.daemon.engine.loader import load_engine
    from webshepherd.daemon.server import run_daemon

    print(
        f"webshepherd: loading {args.model} (device {args.device}) ...", file=sys.stderr, flush=True
    )
    try:
        engine = load_engine(
            args.model, device=args.device, config=EngineConfig(samples=config.default_samples)
        )
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
