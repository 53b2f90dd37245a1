"""Messages a client sends to the daemon. Each carries an ``id``; the reply repeats it."""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import Field, model_validator
from typing_extensions import TypeIs
from webshepherd.protocol.common import (
    MAX_ACTION_CHARS,
    MAX_ANSWER_CHARS,
    MAX_BOXES,
    MAX_CHECKLIST_CHARS,
    MAX_ELEMENTS,
    MAX_NOTE_CHARS,
    ActionText,
    AgentInfo,
    ApprovalMode,
    Box,
    Candidate,
    ClientInfo,
    CommitMode,
    Decision,
    ElementFacts,
    EnvironmentInfo,
    HeldRequest,
    Intent,
    ItemLabel,
    Model,
    Observation,
    Outcome,
    RequestId,
    Screenshot,
    SessionId,
    SessionSource,
    Source,
    Thought,
    TreeNodeFields,
)


class Request(Model):
    """Base of every client message."""

    def person_verb(self) -> str | None:
        """What only a paired person's tool may do with this message (the refusal names it:
        "decide approvals"), else None: any connection may send it."""
        return None


class Hello(Request):
    type: Literal["hello"] = "hello"
    id: RequestId
    protocol: int
    token: str = Field(max_length=512)
    client: ClientInfo
    approver: str | None = Field(
        default=None,
        max_length=512,
        description="A person's approver credential from pairing (addition to v1): the only "
        "way a connection may decide approvals, label as a person or change the policy.",
    )


class Pair(Request):
    """A person's tool pairs with a one-time code that `webshepherd pair` showed the person
    (addition to v1; docs/protocol-additions.md, "Pairing")."""

    type: Literal["pair"] = "pair"
    id: RequestId
    code: str = Field(min_length=1, max_length=64)
    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9 ._-]*$")


class SessionStart(Request):
    type: Literal["session.start"] = "session.start"
    id: RequestId
    intent: Intent
    start_url: str | None = Field(default=None, max_length=8192)
    checklist: str | None = Field(
        default=None,
        max_length=MAX_CHECKLIST_CHARS,
        description="Reference checklist text; generated when absent.",
    )
    observation: Observation | None = None
    agent: AgentInfo = Field(default_factory=AgentInfo)
    source: SessionSource = "agent"
    holds: Literal["browser"] | None = Field(
        default=None,
        description="'browser': this client pauses committing requests in the browser it "
        "drives and asks with commit.check, so the guard rules predict and never hold "
        "(addition to v1). Absent: the rules hold (the text-only fallback).",
    )
    environment: EnvironmentInfo | None = Field(
        default=None,
        description="What resets the environment to this session's start (a BrowserGym task "
        "and seed), recorded for replays (addition to v1). Absent: it cannot be reset.",
    )


class Observe(Request):
    type: Literal["observe"] = "observe"
    id: RequestId
    session_id: SessionId
    url: str = Field(max_length=8192)
    axtree: str
    screenshot: Screenshot | None = None
    boxes: dict[str, Box] | None = Field(
        default=None, max_length=MAX_BOXES, description="As in Observation (addition to v1)."
    )
    elements: dict[str, ElementFacts] | None = Field(
        default=None,
        max_length=MAX_ELEMENTS,
        description="bid -> what the page says of the element: link targets, downloads, which "
        "form it submits with which method (addition to v1; the guards read them).",
    )

    def observation(self) -> Observation:
        return Observation(
            url=self.url,
            axtree=self.axtree,
            screenshot=self.screenshot,
            boxes=self.boxes,
            elements=self.elements,
        )


class Score(Request):
    type: Literal["score"] = "score"
    id: RequestId
    session_id: SessionId
    candidates: list[Candidate] = Field(min_length=1, max_length=64)
    observation: Observation | None = None
    samples: int | None = Field(default=None, ge=1, le=32)
    approval: ApprovalMode = "auto"


class CommitCheck(Request):
    """A request the client's browser paused before it left (addition to v1): the daemon
    answers ``commit.decided`` by the session's mode (a paired person decides in 'ask')."""

    type: Literal["commit.check"] = "commit.check"
    id: RequestId
    session_id: SessionId
    request: HeldRequest


class SessionMode(Request):
    """A paired person sets a session's mode (addition to v1; an agent cannot)."""

    type: Literal["session.mode"] = "session.mode"
    id: RequestId
    session_id: SessionId
    mode: CommitMode

    def person_verb(self) -> str | None:
        return "set a session's mode"


class ApprovalDecide(Request):
    type: Literal["approval.decide"] = "approval.decide"
    id: RequestId
    request_id: str = Field(min_length=1)
    decision: Decision
    action: str | None = Field(
        default=None,
        max_length=MAX_ACTION_CHARS,
        description="The edited action, required with decision 'edit'.",
    )
    note: str | None = Field(default=None, max_length=MAX_NOTE_CHARS)
    via: str | None = Field(
        default=None,
        max_length=32,
        pattern=r"^[a-z][a-z0-9_-]*$",
        description="Where the person decided (e.g. 'panel', 'popup'); recorded after the "
        "connection's role and name in `by` (addition to v1).",
    )
    allow_origin: bool = Field(
        default=False,
        description="With 'approve' on a request the browser paused: also allow the request's "
        "target origin for the rest of the session, so later writes to it run flagged without "
        "asking (addition to v1).",
    )

    def person_verb(self) -> str | None:
        return "decide approvals"

    @model_validator(mode="after")
    def _edit_needs_action(self) -> ApprovalDecide:
        if self.decision == "edit" and not (self.action and self.action.strip()):
            raise ValueError("action: an 'edit' decision needs the edited action string")
        if self.allow_origin and self.decision != "approve":
            raise ValueError("allow_origin: only an 'approve' decision allows an origin")
        return self


class Action(Request):
    type: Literal["action"] = "action"
    id: RequestId
    session_id: SessionId
    step: int | None = Field(default=None, ge=0)
    action: ActionText
    thought: Thought | None = None
    source: Source = "agent"


class SessionEnd(Request):
    type: Literal["session.end"] = "session.end"
    id: RequestId
    session_id: SessionId
    outcome: Outcome = "unknown"
    answer: str | None = Field(default=None, max_length=MAX_ANSWER_CHARS)


class HookGrant(Request):
    """An agent asks for a page-hook key (addition to v1; docs/protocol-additions.md)."""

    type: Literal["hook.grant"] = "hook.grant"
    id: RequestId
    session_id: SessionId | None = Field(
        default=None,
        description="The agent's session a page may follow with the key; null: the key lets "
        "one page-hook `session.start` through.",
    )


class HookRedeem(Request):
    """The extension checks a key a page presented (addition to v1)."""

    type: Literal["hook.redeem"] = "hook.redeem"
    id: RequestId
    key: str = Field(min_length=1, max_length=128)


MAX_LABEL_ITEMS = 64
#: who knew a label's truth: the agent's environment, a person, or replays of the recorded run
#: (``replay``: a proven first bad step, ``rollout``: the share of rollouts that won)
TruthSource = Literal["environment", "person", "replay", "rollout"]


class Label(Request):
    """Ground truth for one candidate of a scored step: each checklist item's state after
    the action, from whoever knows it (addition to v1; docs/protocol-additions.md)."""

    type: Literal["label"] = "label"
    id: RequestId
    session_id: SessionId
    step: int = Field(ge=0, description="The scored step the candidate belongs to.")
    action: ActionText = Field(description="The candidate's action, as it was scored.")
    items: list[ItemLabel] = Field(
        min_length=1,
        max_length=MAX_LABEL_ITEMS,
        description="One label per checklist item, in the checklist's order.",
    )
    source: TruthSource = Field(
        description="'environment': the environment the agent runs in knows each item's state "
        "(an agent's connection); 'person': a person said so (the extension's or a monitor's); "
        "'replay': replays proved it (webshepherd blame); 'rollout': the share of rollouts from "
        "the step that won (webshepherd label rollouts). 'replay' and 'rollout' come from an "
        "agent's connection, as 'environment' does."
    )
    note: str | None = Field(default=None, max_length=MAX_NOTE_CHARS)

    def person_verb(self) -> str | None:
        return "label as a person" if self.source == "person" else None


class TreeNode(TreeNodeFields, Request):
    """A tree-search agent reports one node of its search tree, when it is scored and again
    whenever it changes (addition to v1; docs/protocol-additions.md, "Tree search")."""

    type: Literal["tree.node"] = "tree.node"
    id: RequestId
    session_id: SessionId


class Subscribe(Request):
    type: Literal["subscribe"] = "subscribe"
    id: RequestId
    sessions: Literal["*"] | list[SessionId] = "*"


class SessionsList(Request):
    type: Literal["sessions.list"] = "sessions.list"
    id: RequestId
    limit: int = Field(default=100, ge=1, le=10000)


class SessionGet(Request):
    type: Literal["session.get"] = "session.get"
    id: RequestId
    session_id: SessionId
    after: int = Field(
        default=0,
        ge=0,
        description=(
            "Events to skip: a reply that did not fit one frame says where to go on (`next`). "
            "Addition to v1."
        ),
    )


class Ping(Request):
    """Application-level keepalive (an MV3 service worker needs one about every 20 s). Addition to v1."""  # noqa: E501

    type: Literal["ping"] = "ping"
    id: RequestId


#: Every message a client sends, told apart by ``type``.
ClientMessage = Annotated[
    Hello
    | SessionStart
    | Observe
    | Score
    | ApprovalDecide
    | Action
    | SessionEnd
    | Subscribe
    | SessionsList
    | SessionGet
    | HookGrant
    | HookRedeem
    | Label
    | TreeNode
    | Pair
    | CommitCheck
    | SessionMode
    | Ping,
    Field(discriminator="type"),
]

#: The requests that are one step of the session they name: the session machine handles
#: them whole (``SessionCore.handle``); the socket layer only loads the session, counts the
#: request and checks a person's credential (``person_verb``).
SessionRequest = Observe | Score | Action | SessionEnd | Label | TreeNode | SessionMode
SESSION_REQUESTS: tuple[type[Request], ...] = get_args(SessionRequest)


def is_session_request(msg: Request) -> TypeIs[SessionRequest]:
    """Whether ``msg`` is one step of the session it names (a :data:`SessionRequest`)."""
    return isinstance(msg, SESSION_REQUESTS)
