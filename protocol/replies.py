"""Messages the daemon sends: replies (carry the request's ``id``) and events (no ``id``).

Some types are both: ``session.started``, ``observed``, ``scored``, ``action``,
``session.ended`` and ``approval.resolved`` answer the requester with its ``id``
and reach subscribers as events without one.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field
from webshepherd.protocol.commits import MAX_COMMIT_PATTERNS
from webshepherd.protocol.common import (
    AgentInfo,
    ApprovalCard,
    ApprovalReason,
    Candidate,
    CandidateResult,
    ChecklistItem,
    ChecklistSource,
    CommitMode,
    DaemonInfo,
    DecisionInfo,
    GuardHit,
    HeldRequest,
    Model,
    Outcome,
    Prediction,
    RequestId,
    Role,
    Screenshot,
    SessionId,
    SessionSource,
    SessionSummary,
    Source,
    Timing,
    TreeNodeFields,
)
from webshepherd.protocol.errors import ErrorCode


class Welcome(Model):
    type: Literal["welcome"] = "welcome"
    id: RequestId
    protocol: int
    daemon: DaemonInfo
    role: Role = Field(
        default="agent",
        description="The role the daemon gave this connection: 'agent' unless `hello` carried "
        "a valid approver credential, whose pairing set the role (addition to v1).",
    )
    approver: bool = Field(
        default=False,
        description="This connection may decide approvals and label as a person (addition to v1).",
    )


class Paired(Model):
    """Reply to ``pair``: the approver credential, shown once (addition to v1)."""

    type: Literal["paired"] = "paired"
    id: RequestId
    credential: str
    role: Role
    name: str


class Error(Model):
    type: Literal["error"] = "error"
    id: str | None = None
    code: ErrorCode
    message: str
    retryable: bool = False


class SessionStarted(Model):
    type: Literal["session.started"] = "session.started"
    id: str | None = None
    session_id: SessionId
    intent: str | None = None
    start_url: str | None = None
    agent: AgentInfo | None = None
    source: SessionSource | None = None
    mode: CommitMode | None = Field(
        default=None, description="The session's mode at start (addition to v1)."
    )
    holds: Literal["browser"] | None = Field(
        default=None, description="Echo of session.start's holds (addition to v1)."
    )
    commits: list[Annotated[str, Field(max_length=2100)]] | None = Field(
        default=None,
        max_length=MAX_COMMIT_PATTERNS,
        description="The operator's patterns of GET (HEAD, OPTIONS) requests that commit, "
        "'METHOD URL' with * for any run (serve --commits): every gate holds a matching request "
        "like a write; null: none (addition to v1).",
    )


class Checklist(Model):
    type: Literal["checklist"] = "checklist"
    session_id: SessionId
    source: ChecklistSource
    items: list[ChecklistItem]
    text: str


class Observed(Model):
    type: Literal["observed"] = "observed"
    id: str | None = None
    session_id: SessionId | None = None
    step: int = Field(ge=0)
    url: str | None = None
    axtree: str | None = None
    screenshot: Screenshot | None = Field(
        default=None, description="Events carry the mime only (data null)."
    )


class ScoreProgress(Model):
    type: Literal["score.progress"] = "score.progress"
    session_id: SessionId
    request: str
    candidate: int = Field(ge=0)
    sample: int = Field(ge=0)
    delta: str


class Scored(Model):
    type: Literal["scored"] = "scored"
    id: str | None = None
    session_id: SessionId
    step: int = Field(ge=0)
    results: list[CandidateResult]
    best: int | None
    decision: DecisionInfo
    timing: Timing = Field(default_factory=Timing)
    candidates: list[Candidate] | None = Field(
        default=None, description="Echo of the scored candidates (events)."
    )
    guarded: list[int] | None = Field(
        default=None,
        description="Indices of the candidates that meet a guard rule, null when none "
        "(addition to v1): the decision covers the held best; an agent that would run another "
        "of them scores it alone first, so the guards hold it for a person.",
    )
    predicted: list[Prediction] | None = Field(
        default=None,
        description="What the page says each candidate will do, by the guard rules, null when "
        "nothing (addition to v1). In a session whose browser holds commits these inform only.",
    )


class ApprovalRequest(Model):
    type: Literal["approval.request"] = "approval.request"
    request_id: str
    session_id: SessionId
    step: int = Field(ge=0)
    candidate: Candidate
    candidate_index: int | None = None
    reward: float | None
    feedback: str = ""
    reason: ApprovalReason
    expires_in_s: float
    guard: list[GuardHit] = Field(
        default_factory=list,
        description="The guard rules the action met (addition to v1); held whatever the reward.",
    )
    card: ApprovalCard | None = Field(
        default=None, description="What a person needs to judge it (addition to v1)."
    )
    threshold: float | None = Field(
        default=None,
        description="The approval threshold in force when the step was held (addition to v1): "
        "a reward at or above it is high, below it low (judge-person agreement).",
    )


class CommitDecided(Model):
    """The answer to ``commit.check`` (reply with ``id``; an event to approvers and
    subscribers without it). ``request_digest`` names the one request it answers
    (``protocol.commits.request_digest``): a client lets only that request go."""

    type: Literal["commit.decided"] = "commit.decided"
    id: str | None = None
    session_id: SessionId
    request: HeldRequest
    request_digest: str = Field(min_length=64, max_length=64)
    decision: DecisionInfo
    flagged: bool = Field(
        default=False, description="It ran unheld (watch mode, a sandbox origin) and is flagged."
    )


class ModeSet(Model):
    """A session's mode changed (reply to ``session.mode``; an event to approvers and
    subscribers)."""

    type: Literal["mode.set"] = "mode.set"
    id: str | None = None
    session_id: SessionId
    mode: CommitMode
    by: str | None = None


class ApprovalResolved(Model):
    type: Literal["approval.resolved"] = "approval.resolved"
    id: str | None = None
    request_id: str
    session_id: SessionId | None = None
    decision: Literal["approve", "reject", "edit", "timeout"]
    action: str | None = None
    by: str | None = None
    note: str | None = None


class ActionRecorded(Model):
    """Reply to ``action``; subscribers receive the ``action`` event instead."""

    type: Literal["action.recorded"] = "action.recorded"
    id: RequestId
    session_id: SessionId
    step: int = Field(ge=0)


class ActionEvent(Model):
    type: Literal["action"] = "action"
    session_id: SessionId
    step: int = Field(ge=0)
    action: str
    thought: str | None = None
    source: Source = "agent"


class Signal(Model):
    """A live process signal about one executed action (addition to v1; see protocol-additions.md).

    ``repeated_action``: the same action again on an unchanged observation (``repeats``
    counts the consecutive executions). ``element_mismatch``: the action the agent announced
    in its thought (``planned``) differs from the executed one. ``plan_adherence``: for
    ``plan`` agents, whether the action follows the declared plan (``plan_step``, 1-based).
    ``stalled``: no checklist item has advanced for ``stalled_steps`` executed steps (at
    least the session's ``agent.stalled_after``). ``proven_bad_step``: replays proved the
    action at ``step`` lost (a ``label`` with source ``replay``, every item ``no``:
    ``webshepherd blame``'s proven first bad step); ``detail`` is the proof.
    """

    type: Literal["signal"] = "signal"
    session_id: SessionId
    step: int = Field(ge=0)
    kind: Literal[
        "repeated_action", "element_mismatch", "plan_adherence", "stalled", "proven_bad_step"
    ]
    action: str
    ok: bool = Field(description="False when the signal is a warning.")
    repeats: int | None = Field(default=None, ge=2)
    planned: str | None = None
    plan_step: int | None = Field(default=None, ge=1)
    rate: float | None = Field(
        default=None, ge=0, le=1, description="Running element accuracy or plan adherence."
    )
    stalled_steps: int | None = Field(
        default=None,
        ge=1,
        description="stalled: executed steps in a row with no checklist item advanced.",
    )
    detail: str = ""


class SessionEnded(Model):
    type: Literal["session.ended"] = "session.ended"
    id: str | None = None
    session_id: SessionId
    outcome: Outcome
    answer: str | None = None


class Subscribed(Model):
    type: Literal["subscribed"] = "subscribed"
    id: RequestId
    sessions: Literal["*"] | list[SessionId]


class Sessions(Model):
    """Reply to ``sessions.list``: newest first."""

    type: Literal["sessions"] = "sessions"
    id: RequestId
    sessions: list[SessionSummary]


class Session(Model):
    """Reply to ``session.get``: the whole recorded history of one session."""

    type: Literal["session"] = "session"
    id: RequestId
    session: SessionSummary
    checklist: Checklist | None = None
    events: list[dict[str, Any]] = Field(
        default_factory=list,
        description=(
            "The session's events in order, each shaped as the event a subscriber received."
        ),
    )
    next: int | None = Field(
        default=None,
        description=(
            "Set when the events did not fit one frame: ask again with `after` = `next` for "
            "the rest (every page carries at least one event). Addition to v1."
        ),
    )


class RemoteEngineStats(Model):
    """The model server of ``serve --backend openai`` / ``openai-chat`` (addition to v1): one
    ``vllm serve``, or a router such as ``vllm-router`` in front of several."""

    base_url: str
    reachable: bool = Field(description="Whether GET {base_url}/models answered at last probe.")
    in_flight: int = Field(ge=0, description="Requests this daemon has open at the server.")
    retries: int = Field(
        default=0, ge=0, description="Requests sent again (connection, stream, 5xx, 429)."
    )
    failures: int = Field(
        default=0, ge=0, description="Requests that failed after every retry (model_error)."
    )
    last_error: str | None = Field(
        default=None, description="Why the latest failed request failed; null once one succeeds."
    )
    cached_prompt_tokens: int | None = Field(
        default=None,
        description="Prompt tokens the server took from its prefix cache, from the replies' "
        "usage (vllm serve --enable-prompt-tokens-details); null when it does not say.",
    )
    prompt_tokens: int = Field(default=0, ge=0, description="Prompt tokens of all replies.")
    server_running: int | None = Field(
        default=None, description="Requests running on the server (vLLM's /metrics)."
    )
    server_waiting: int | None = Field(
        default=None, description="Requests waiting on the server (vLLM's /metrics)."
    )
    prefix_cache_queries: int | None = Field(
        default=None, description="Tokens looked up in the server's prefix cache (vLLM's /metrics)."
    )
    prefix_cache_hits: int | None = Field(
        default=None, description="Of those, tokens found there (vLLM's /metrics)."
    )


class DeviceStats(Model):
    name: str
    memory_used_mb: float | None = None
    memory_total_mb: float | None = None
    utilization: float | None = Field(default=None, description="Percent, 0-100.")


class JudgeUsage(Model):
    """What the judge consumed since the daemon started (addition to v1): tokens in and out per
    scored step, as the backend counted them (a remote server's ``usage``), and their price."""

    backend: str
    model: str
    steps: int = Field(ge=0, description="Scored steps.")
    prompt_tokens: int = Field(ge=0, description="Prompt tokens of all scored steps.")
    completion_tokens: int = Field(ge=0, description="Generated tokens of all scored steps.")
    prompt_tokens_per_step: float | None = Field(
        default=None, description="Mean over the latest 200 steps."
    )
    completion_tokens_per_step: float | None = Field(
        default=None, description="Mean over the latest 200 steps."
    )
    cost_usd: float | None = Field(
        default=None,
        description="prompt and completion tokens at serve --price-in / --price-out (USD per "
        "million tokens); null when no price was given.",
    )


class OtlpStats(Model):
    """The OpenTelemetry export (``serve --otlp-endpoint``; addition to v1)."""

    queued: int = Field(ge=0, description="Events waiting for the export thread.")
    dropped_events: int = Field(
        ge=0, description="Events dropped because the export queue was full."
    )
    exported_spans: int = Field(ge=0, description="Spans the collector accepted.")
    failed_spans: int = Field(ge=0, description="Spans whose export failed (not retried).")


class Stats(Model):
    type: Literal["stats"] = "stats"
    time: float
    queue_depth: int = Field(ge=0)
    in_flight: int = Field(ge=0)
    tokens_per_s: float = Field(ge=0)
    sessions_active: int = Field(default=0, ge=0)
    connections: int = Field(default=0, ge=0)
    pending_approvals: int = Field(default=0, ge=0)
    step_latency_ms_p50: float | None = None
    step_latency_ms_p95: float | None = None
    device: DeviceStats | None = None
    otlp: OtlpStats | None = Field(
        default=None, description="The OpenTelemetry export, when the daemon runs one."
    )
    judge: JudgeUsage | None = Field(
        default=None, description="Tokens in and out per scored step, and their cost."
    )
    remote: RemoteEngineStats | None = Field(
        default=None, description="The remote model server, for the openai backends."
    )


class HookGranted(Model):
    """Reply to ``hook.grant``: the key, for the agent's page only (addition to v1)."""

    type: Literal["hook.granted"] = "hook.granted"
    id: RequestId
    key: str
    session_id: SessionId | None = None
    expires_in_s: float = Field(description="The key must be redeemed within this time.")
    reply_key: str | None = Field(
        default=None,
        description="The key of the MAC on the extension's page-hook replies (addition to v1): "
        "the agent keeps it out of the page and checks each reply with it.",
    )


class HookRedeemed(Model):
    """Reply to ``hook.redeem``: the session the key follows (null: it may start one)."""

    type: Literal["hook.redeemed"] = "hook.redeemed"
    id: RequestId
    session_id: SessionId | None = None
    reply_key: str | None = Field(
        default=None,
        description="The key the extension signs this key's page-hook replies with "
        "(addition to v1; the same as hook.granted.reply_key).",
    )


class LabelRecorded(Model):
    """Reply to ``label`` (addition to v1): the labels are in the recording."""

    type: Literal["label.recorded"] = "label.recorded"
    id: RequestId
    session_id: SessionId
    step: int = Field(ge=0)


class TreeNodeRecorded(Model):
    """Reply to ``tree.node`` (addition to v1): the node's update is in the recording."""

    type: Literal["tree.node.recorded"] = "tree.node.recorded"
    id: RequestId
    session_id: SessionId
    node: int = Field(ge=0)


class TreeNodeEvent(TreeNodeFields):
    """A node of a session's search tree, as its agent reported it (addition to v1): to the
    session's subscribers, and in its event log."""

    type: Literal["tree.node"] = "tree.node"
    session_id: SessionId


class Pong(Model):
    type: Literal["pong"] = "pong"
    id: RequestId


#: Every message the daemon sends, told apart by ``type``.
ServerMessage = Annotated[
    Welcome
    | Error
    | SessionStarted
    | Checklist
    | Observed
    | ScoreProgress
    | Scored
    | ApprovalRequest
    | ApprovalResolved
    | ActionRecorded
    | ActionEvent
    | SessionEnded
    | Signal
    | Subscribed
    | Sessions
    | Session
    | Stats
    | HookGranted
    | HookRedeemed
    | LabelRecorded
    | TreeNodeRecorded
    | TreeNodeEvent
    | Paired
    | CommitDecided
    | ModeSet
    | Pong,
    Field(discriminator="type"),
]
