"""The daemon's settings, written once: :class:`Settings` (the daemon's :class:`DaemonConfig`,
the engine's ``EngineConfig``, the model to load: :class:`ModelSettings`), which ``webshepherd
serve``'s flags default to and :func:`webshepherd.daemon.build.build_daemon` builds from; and
the checks made before the daemon binds."""

from __future__ import annotations

import errno
import ipaddress
import logging
import os
import secrets
import socket
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from webshepherd.daemon.engine.engine import EngineConfig
from webshepherd.daemon.extension_id import EXTENSION_ID
from webshepherd.daemon.sessions import approvals
from webshepherd.daemon.sessions.guards import GuardPolicy
from webshepherd.daemon.sessions.modes import MODES, parse_sandbox
from webshepherd.protocol.commits import MAX_COMMIT_PATTERNS, parse_commit_pattern
from webshepherd.protocol.common import CommitMode
from webshepherd.protocol.errors import WebShepherdError
from webshepherd.protocol.token_store import APP_NAME, default_config_dir
from webshepherd.protocol.version import DEFAULT_HOST, DEFAULT_PATH, DEFAULT_PORT, MAX_FRAME_BYTES

log = logging.getLogger(__name__)

#: the recording's file in a data dir
DB_NAME = "webshepherd.sqlite3"
MIB = 1024 * 1024


@dataclass(frozen=True)
class QuotaLimits:
    """What one connection may ask and one session may record (enforced by server/quotas.py;
    0: no limit)."""

    session_starts: int = 1200  # per connection, in any 60 s
    observations: int = 6000  # per connection, in any 60 s
    model_jobs: int = 32  # per connection, queued or running
    session_bytes: int = 1024 * MIB  # per session, recorded


def output_dir(data_dir: Path, kind: str) -> Path:
    """Where ``export`` and ``report`` write without ``--out``: ``<data dir>/<kind>/``, never
    the current directory (a repository's root, often)."""
    return data_dir / kind


def default_data_dir() -> Path:
    """``WEBSHEPHERD_DATA_DIR``, else the platformdirs user data dir."""
    env = os.environ.get("WEBSHEPHERD_DATA_DIR")
    if env:
        return Path(env)
    from platformdirs import user_data_dir

    return Path(user_data_dir(APP_NAME))


@dataclass
class DaemonConfig:
    """Everything the server, scheduler, recorder and approval gate are told."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT  # 0: an ephemeral port (tests)
    path: str = DEFAULT_PATH
    max_frame_bytes: int = MAX_FRAME_BYTES
    # each becomes chrome-extension://<id>; default: the bundled extension (its id is pinned)
    allowed_extension_ids: tuple[str, ...] = (EXTENSION_ID,)
    tls_cert: Path | None = None
    tls_key: Path | None = None
    insecure: bool = False  # allow a non-loopback bind without TLS (loudly logged)
    data_dir: Path = field(default_factory=default_data_dir)
    config_dir: Path = field(default_factory=default_config_dir)
    token: str | None = None  # None: read or create it with TokenStore(config_dir)
    # the approval policy's defaults live in sessions/approvals.py
    approval_threshold: float | None = approvals.DEFAULT_THRESHOLD
    approval_drop: float | None = approvals.DEFAULT_DROP
    approval_timeout_s: float = approvals.DEFAULT_TIMEOUT_S
    approval_default: str = approvals.DEFAULT_ON_TIMEOUT  # "reject" or "approve"
    # actions held for a person whatever their reward (sessions/guards.py; on by default)
    guards: GuardPolicy = field(default_factory=GuardPolicy)
    # a new session's mode (ask / watch / stop: sessions/modes.py; a paired person changes it)
    mode: CommitMode = "ask"
    # origins whose commits are flagged, never held (sessions/modes.py's parse_sandbox: each
    # scheme://host[:port], or scheme://host:* for any port of that host)
    sandbox_origins: tuple[str, ...] = ()
    # GET (HEAD, OPTIONS) requests that commit, 'METHOD URL' with * for any run (serve
    # --commits; protocol/commits.py's parse_commit_pattern): every gate holds them, told by
    # session.started.commits, and the rules predict a step that sends one
    commits: tuple[str, ...] = ()
    request_timeout_s: float = 300.0
    queue_limit: int = 64
    batch_sessions: int = 8  # score jobs of up to this many sessions share one model call; 1: off
    default_samples: int = 5
    stats_interval_s: float = 1.0
    send_queue_size: int = 256  # frames queued for one connection before events are dropped
    send_queue_bytes: int = 16 * 1024 * 1024  # ... or bytes (a reply is always queued)
    slow_consumer_s: float = 2.0  # over a bound, nothing written this long: closed with 1013
    hello_timeout_s: float = 5.0
    idle_evict_s: float = 900.0  # a session untouched this long leaves memory (not the record)
    otlp_endpoint: str | None = None  # export sessions as OTLP/HTTP traces here
    otlp_headers: tuple[tuple[str, str], ...] = ()  # e.g. an API key header for the collector
    price_in: float | None = None  # USD per million prompt tokens (stats' judge cost)
    price_out: float | None = None  # USD per million generated tokens
    otlp_queue_size: int = 4096  # events waiting for the export thread before drops
    # quotas (server/quotas.py; 0: no limit): per connection in any 60 s, per connection at
    # any moment, per session recorded
    max_session_starts: int = QuotaLimits.session_starts
    max_observations: int = QuotaLimits.observations
    max_model_jobs: int = QuotaLimits.model_jobs
    max_session_bytes: int = QuotaLimits.session_bytes

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise WebShepherdError(f"mode {self.mode!r}: one of {', '.join(MODES)}")
        try:
            self.sandbox_origins = tuple(parse_sandbox(o) for o in self.sandbox_origins)
            self.commits = tuple(dict.fromkeys(parse_commit_pattern(p) for p in self.commits))
            if len(self.commits) > MAX_COMMIT_PATTERNS:
                raise ValueError(f"--commits: at most {MAX_COMMIT_PATTERNS} patterns")
        except ValueError as exc:
            raise WebShepherdError(str(exc)) from None

    @property
    def quotas(self) -> QuotaLimits:
        return QuotaLimits(
            self.max_session_starts,
            self.max_observations,
            self.max_model_jobs,
            self.max_session_bytes,
        )

    @property
    def allowed_origins(self) -> frozenset[str]:
        return frozenset(f"chrome-extension://{i}" for i in self.allowed_extension_ids)

    @property
    def tls(self) -> bool:
        return self.tls_cert is not None

    @property
    def db_path(self) -> Path:
        return self.data_dir / DB_NAME


#: the judge ``webshepherd serve`` loads when no --model is given
DEFAULT_MODEL = "WebShepherd/WebShepherd_3B"


@dataclass(frozen=True)
class ModelSettings:
    """The model to load and where (``webshepherd.daemon.build.build_engine``)."""

    model: str = DEFAULT_MODEL  # a Hugging Face id or a local folder
    device: str = "auto"  # auto, cpu, cuda, cuda:1, ...
    backend: str = "transformers"  # engine/loader.py's BACKENDS
    # the backend's settings by engine/loader.py's BACKEND_OPTIONS names (e.g. base_url,
    # api_key_env, vllm_memory, dtype); one left out keeps its default
    options: Mapping[str, object] = field(default_factory=dict)
    # judge with what the checkpoint was trained on (text+image for a vision-language one in
    # this process) rather than the engine's judge_inputs
    inputs_from_model: bool = True


@dataclass(frozen=True)
class Settings:
    """Everything one daemon is built from: the server's, the engine's and the model's settings.
    Their defaults are written once, in the three dataclasses; ``webshepherd serve``'s flags
    start from them (:func:`default_of`)."""

    daemon: DaemonConfig = field(default_factory=DaemonConfig)
    engine: EngineConfig = field(default_factory=EngineConfig)
    model: ModelSettings = field(default_factory=ModelSettings)

    @classmethod
    def local(
        cls,
        workdir: Path,
        *,
        engine: EngineConfig | None = None,
        model: ModelSettings | None = None,
        **daemon: Any,
    ) -> Settings:
        """A daemon for this process's own use (demos, benches, tests): loopback, any free port,
        data and config under ``workdir``, a fresh token; ``daemon``: more DaemonConfig fields."""
        values: dict[str, Any] = {
            "host": DEFAULT_HOST,
            "port": 0,
            "data_dir": workdir / "data",
            "config_dir": workdir / "config",
            "token": secrets.token_urlsafe(24),
            **daemon,
        }
        return cls(DaemonConfig(**values), engine or EngineConfig(), model or ModelSettings())

    def with_daemon(self, **changes: Any) -> Settings:
        """These settings with some DaemonConfig fields changed."""
        return replace(self, daemon=replace(self.daemon, **changes))


def default_of(cls: type, name: str) -> object:
    """The default a settings dataclass gives field ``name`` (a flag's default); a field made by
    a factory (``data_dir``: it reads the environment) has none here: ``None``."""
    for f in fields(cls):
        if f.name == name:
            return None if f.default is MISSING else f.default
    raise AttributeError(f"{cls.__name__} has no field {name!r}")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(config: DaemonConfig) -> None:
    """Refuse a non-loopback bind unless TLS is configured or ``insecure`` is set."""
    if config.approval_default not in ("reject", "approve"):
        raise WebShepherdError("approval_default must be 'reject' or 'approve'")
    if (config.tls_cert is None) != (config.tls_key is None):
        raise WebShepherdError("TLS needs both a certificate and a key")
    if is_loopback(config.host):
        return
    if config.tls:
        return
    if not config.insecure:
        raise WebShepherdError(
            f"refusing to bind {config.host!r}: a non-loopback address needs a TLS certificate "
            "(tls_cert/tls_key) or the explicit insecure flag"
        )
    log.warning(
        "!!! INSECURE: listening on %s without TLS; the pairing token travels in clear text !!!",
        config.host,
    )


def check_port_free(config: DaemonConfig) -> None:
    """Refuse a port another process listens on, before the model loads (a minute or more)."""
    if config.port == 0:
        return
    family = socket.AF_INET6 if ":" in config.host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds
        try:
            probe.bind((config.host, config.port))
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise WebShepherdError(f"cannot bind {config.host}:{config.port}: {exc}") from None
            raise WebShepherdError(
                f"port {config.port} on {config.host} is in use (another `webshepherd serve`?): "
                "stop that process or pass --port N"
            ) from None


def allowed_hosts(port: int) -> frozenset[str]:
    """Host header values accepted (protection against DNS rebinding)."""
    return frozenset({f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"})
