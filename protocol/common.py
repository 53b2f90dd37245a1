"""Building blocks shared by several protocol messages."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

RequestId = Annotated[
    str,
    Field(min_length=1, max_length=128, description="Chosen by the sender, unique per connection."),
]
SessionId = Annotated[str, Field(min_length=1, max_length=128)]

# Length limits of what agents and pages write (characters; addition to v1, see
# docs/protocol-additions.md): far above real use, far below what stalls a judge.
MAX_INTENT_CHARS = 16_384
MAX_CHECKLIST_CHARS = 65_536
MAX_THOUGHT_CHARS = 32_768
MAX_ACTION_CHARS = 16_384
MAX_ANSWER_CHARS = 65_536
MAX_NOTE_CHARS = 65_536
MAX_PLAN_STEPS, MAX_PLAN_STEP_CHARS = 256, 4_096
Intent = Annotated[str, Field(min_length=1, max_length=MAX_INTENT_CHARS)]
Thought = Annotated[str, Field(max_length=MAX_THOUGHT_CHARS)]
ActionText = Annotated[str, Field(min_length=1, max_length=MAX_ACTION_CHARS)]
Role = Literal["agent", "extension", "monitor"]
Planning = Literal["step", "tree", "plan"]
Source = Literal["agent", "human"]
#: Who made a session: an agent live, a person's demonstration, or a finished run imported
#: and re-scored (``webshepherd rescore``; addition to v1).
SessionSource = Literal["agent", "human", "import"]
Outcome = Literal["success", "failure", "unknown"]
ApprovalMode = Literal["auto", "always", "never"]
Decision = Literal["approve", "reject", "edit"]
DecisionStatus = Literal["auto", "approved", "rejected", "edited", "timeout"]
#: Why a step waits for a person: the reward policy (below the threshold, a drop), the agent
#: asked (``always``), or a guard held an action that commits (``guarded``; addition to v1).
ApprovalReason = Literal["below_threshold", "reward_drop", "always", "guarded", "commit"]
#: How a session's commits (and reward holds) are treated (addition to v1; docs/approvals.md):
#: ``ask`` waits for a paired person (refused at once when none is connected), ``watch`` lets
#: them run and flags them, ``stop`` refuses them without asking. ``serve --mode`` sets the
#: default; only a paired person's tool changes a session's mode (``session.mode``).
CommitMode = Literal["ask", "watch", "stop"]
#: What a request paused in the browser would commit: a write (a method other than GET, HEAD
#: or OPTIONS), a top-level navigation to another origin, or a download.
CommitKind = Literal["write", "navigation", "download"]
#: Who decided a step or a paused request: a paired person, the daemon's guard rules, the
#: session's mode, a timeout nobody answered in, the operator's sandbox origins, or the daemon
#: itself (nobody connected who can decide). Never "person" unless a person decided.
Decider = Literal["person", "guard", "mode", "timeout", "sandbox", "daemon"]
#: The guards' rules (addition to v1; sessions/guards.py): a form submitted with a method other
#: than GET, an element whose name matches the configured words, a step that leaves the
#: session's origin, a download, a GET that commits (a link or GET form named for deleting or
#: confirming, or one the operator's ``serve --commits`` names).
GuardRule = Literal["form_submit", "name_match", "leaves_origin", "download", "commit_get"]
ChecklistSource = Literal["generated", "reference"]
SessionState = Literal["running", "waiting_approval", "ended"]


@dataclass(frozen=True)
class Turn:
    """One step of a trajectory: the agent's thought and action, and for an executed step
    the error it raised. The reward model's history and candidates, a policy's history."""

    thought: str
    action: str
    error: str | None = None


class Model(BaseModel):
    """Base of every protocol model: unknown fields are ignored (protocol.md: fields may be added)."""  # noqa: E501

    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class ClientInfo(Model):
    name: str = Field(min_length=1, max_length=200)
    version: str | None = Field(default=None, max_length=100)
    role: Role = "agent"


class DaemonInfo(Model):
    version: str
    model: str
    backend: str


class Screenshot(Model):
    mime: Literal["image/png", "image/jpeg", "image/webp"] = "image/png"
    data: str | None = Field(
        default=None, description="Base64 image bytes; null in events sent to subscribers."
    )


#: An element's box on the screenshot, in its pixels: left, top, width, height.
Box = Annotated[list[float], Field(min_length=4, max_length=4)]
MAX_BOXES = 20_000


MAX_ELEMENTS = 20_000


class ElementFacts(Model):
    """What the page says of one element that an action may target, read from the DOM by the
    capture, never from a model (addition to v1): the guards decide from these."""

    tag: str = Field(max_length=64, description="The element's tag name, lower case.")
    href: str | None = Field(
        default=None, max_length=8192, description="A link's resolved target (absolute URL)."
    )
    download: bool = Field(default=False, description="A link with the `download` attribute.")
    submits: bool = Field(
        default=False,
        description="Activating it submits a form (a submit button or input, or a control of a "
        "form that Enter submits).",
    )
    form_method: str | None = Field(
        default=None,
        max_length=16,
        description="The method of the form it submits (upper case; 'GET', 'POST', 'DIALOG').",
    )
    form_action: str | None = Field(
        default=None, max_length=8192, description="Where that form submits (absolute URL)."
    )


class Observation(Model):
    url: str = Field(max_length=8192)
    axtree: str
    screenshot: Screenshot | None = None
    boxes: dict[str, Box] | None = Field(
        default=None,
        max_length=MAX_BOXES,
        description="bid -> [left, top, width, height] on the screenshot, in its pixels "
        "(addition to v1; reports outline candidates' targets with them).",
    )
    elements: dict[str, ElementFacts] | None = Field(
        default=None,
        max_length=MAX_ELEMENTS,
        description="bid -> what the page says of the element: link targets, downloads, which "
        "form it submits with which method (addition to v1; the guards read them).",
    )


class EnvironmentInfo(Model):
    """What resets the session's environment to its start (``session.start``'s
    ``environment``, addition to v1): a BrowserGym task's id, the seed and the options its
    ``reset`` took. A replay (``webshepherd blame``) resets from it; without it a session's
    environment cannot be reset."""

    kind: Literal["browsergym"] = "browsergym"
    task: str = Field(min_length=1, max_length=200, description="The gym id: browsergym/...")
    seed: int | None = Field(default=None, description="The seed reset() took (None: none).")
    options: dict[str, Any] | None = Field(
        default=None, description="The options reset() took (JSON values)."
    )


#: Executed steps without a checklist item advancing before the ``stalled`` signal fires.
DEFAULT_STALLED_AFTER = 3


class AgentInfo(Model):
    name: str = Field(default="agent", max_length=200)
    planning: Planning = "step"
    plan: list[Annotated[str, Field(max_length=MAX_PLAN_STEP_CHARS)]] | None = Field(
        default=None, max_length=MAX_PLAN_STEPS
    )
    stalled_after: int = Field(
        default=DEFAULT_STALLED_AFTER,
        ge=1,
        le=1000,
        description="Executed steps without a checklist item advancing before the daemon "
        "sends a `stalled` signal (addition to v1).",
    )


class Candidate(Model):
    thought: Thought = ""
    action: ActionText


#: Tree search (``paradigm="tree"``; addition to v1): at most this many nodes per session
#: (node ids below it), and the length of a node's error text.
MAX_TREE_NODES = 10_000
MAX_NODE_ERROR_CHARS = 4_096
#: A node's state: on the frontier (scored, not tried), expanded (its children scored), a leaf
#: (as deep as the search goes), done (its action ended the episode), failed (its action
#: raised), stale (a replay to it or above it diverged).
TreeNodeStatus = Literal["frontier", "expanded", "leaf", "done", "failed", "stale"]
#: Why a node's update is sent: scored (created as a child, on the frontier), replayed (its
#: action ran again, to return below it), executed (its action ran first-hand), expanded (its
#: children are scored next, or it is a leaf), stale (a replay diverged), path (the search
#: ended and returns the path through it: sent root first for every node of that path).
TreeNodeEventKind = Literal["scored", "replayed", "executed", "expanded", "stale", "path"]


class TreeNodeFields(Model):
    """One node of a tree search as it is now: the state its ``action`` reached from
    ``parent``, valued by the judge's ``reward``. The one tree-node type: the ``tree.node``
    request and event are it plus their envelope; the recording, the Timeline and the TUI
    keep it as received."""

    node: int = Field(ge=0, lt=MAX_TREE_NODES, description="The node's id; the root is 0.")
    parent: int | None = Field(
        default=None, ge=0, lt=MAX_TREE_NODES, description="Null for the root (the start page)."
    )
    depth: int = Field(ge=0, lt=MAX_TREE_NODES, description="Actions from the start page.")
    action: ActionText | None = Field(
        default=None, description="The action from its parent (null only for the root)."
    )
    thought: Thought | None = None
    reward: float | None = Field(
        default=None, allow_inf_nan=False, description="Its value: the judge's reward for it."
    )
    count: int = Field(default=1, ge=1, le=1024, description="Policy proposals of this action.")
    status: TreeNodeStatus
    executed: bool = Field(default=False, description="Its action ran first-hand.")
    replays: int = Field(
        default=0, ge=0, description="Times its action ran again to return to a node below it."
    )
    step: int | None = Field(
        default=None,
        ge=0,
        description="The scored step its action was a candidate of (the parent's expansion).",
    )
    expanded_at: int | None = Field(
        default=None, ge=0, description="The step at which its children were scored."
    )
    url: str | None = Field(default=None, max_length=8192, description="The page it led to.")
    error: str | None = Field(
        default=None,
        max_length=MAX_NODE_ERROR_CHARS,
        description="Why its action failed or why it went stale.",
    )
    event: TreeNodeEventKind
    trying: int | None = Field(
        default=None,
        ge=0,
        lt=MAX_TREE_NODES,
        description="The node the search is trying now (its action runs once the environment "
        "is at its parent).",
    )

    @model_validator(mode="after")
    def _root_or_child(self) -> TreeNodeFields:
        if self.parent is None:
            if self.depth != 0 or self.action is not None:
                raise ValueError("parent: only the root (depth 0, no action) has no parent")
        else:
            if self.action is None:
                raise ValueError("action: a node below the root needs the action reaching it")
            if self.parent == self.node:
                raise ValueError("parent: a node cannot be its own parent")
            if self.depth == 0:
                raise ValueError("depth: a node below the root has depth 1 or more")
        return self


class ChecklistItem(Model):
    index: int = Field(ge=1)
    title: str
    goal: str | None = None


ItemLabel = Literal["yes", "in_progress", "no"]
"""A checklist item's state after an action: the judge's three labels, and ground truth's."""


class ItemProbs(Model):
    """Label probabilities of one checklist item, normalized over the three label groups."""

    index: int = Field(ge=1)
    yes: float = Field(ge=0, le=1)
    in_progress: float = Field(ge=0, le=1)
    no: float = Field(ge=0, le=1)

    @property
    def likeliest(self) -> ItemLabel:
        """The most probable label (ties: Yes, then In Progress, then No)."""
        probs: dict[ItemLabel, float] = {
            "yes": self.yes,
            "in_progress": self.in_progress,
            "no": self.no,
        }
        return max(probs, key=lambda k: probs[k])


UnparsedReason = Literal[
    "aborted", "cut_by_context", "cut_by_limit", "off_checklist", "no_label", "no_answer"
]


class SampleResult(Model):
    reward: float | None
    text: str
    items: list[ItemProbs] = Field(default_factory=list)
    unparsed: UnparsedReason | None = Field(
        default=None,
        description="Why this sample gave no reward (null when it did): scoring aborted, the "
        "judgement cut by the context or the output limit, labels only of items not on the "
        "checklist, an <answer> block without a label, no <answer> block.",
    )


class CandidateResult(Model):
    index: int = Field(ge=0)
    reward: float | None
    items: list[ItemProbs] = Field(default_factory=list)
    feedback: str = ""
    samples: list[SampleResult] = Field(default_factory=list)
    parsed_samples: int = Field(ge=0)
    probabilities: Literal["full", "top_k"] = Field(
        default="full", description="'top_k' when label probabilities come from a top-k truncation."
    )
    unparsed_samples: int = Field(
        default=0,
        ge=0,
        description="Samples that gave no reward. The daemon's rule (serve --unparsed) leaves "
        "them out of 'reward' (skip, the default) or averages them in as 0 (zero).",
    )
    judge_inputs: Literal["text", "text+image"] = Field(
        default="text",
        description="What the judge saw: 'text+image' when the latest observation's screenshot "
        "was in the prompt (serve --judge-inputs text+image); 'text' otherwise, also when the "
        "daemon judges with images but the observation had no screenshot.",
    )


@dataclass(frozen=True)
class ScoredCandidate:
    """One candidate and what the judge made of it, as the views keep it (the recording's
    Timeline, the TUI): the ``score`` request's :class:`Candidate` and the ``scored`` reply's
    :class:`CandidateResult` side by side, neither restated. Not itself a wire message."""

    candidate: Candidate
    result: CandidateResult


class GuardHit(Model):
    """One guard rule an action met (addition to v1): the rule and what on the page met it."""

    rule: GuardRule
    detail: str = Field(max_length=1024, description='E.g. "submits a POST form to /checkout".')


class CardTarget(Model):
    """The element an action targets, as the step's observation shows it."""

    bid: str = Field(max_length=64)
    role: str | None = Field(default=None, max_length=128)
    name: str | None = Field(default=None, max_length=1024)
    box: Box | None = Field(
        default=None,
        description="Its box on the card's screenshot (the step's, or the part of it around the "
        "target that a paused request's card carries).",
    )


class CardCandidate(Model):
    index: int = Field(ge=0)
    action: str
    reward: float | None


class RequestField(Model):
    """One field a paused request would send (a form's or a JSON body's top level)."""

    name: str = Field(max_length=256)
    value: str = Field(max_length=512, description="Truncated; shown escaped.")


class HeldRequest(Model):
    """A request the browser paused before it left (addition to v1; ``commit.check``): what
    would be sent, read from the browser's own request, never from a model."""

    method: str = Field(min_length=1, max_length=16, description="Upper case.")
    url: str = Field(min_length=1, max_length=8192, description="As the browser would send it.")
    kind: CommitKind
    top_level: bool = Field(default=False, description="A navigation of the page itself.")
    origin: str | None = Field(
        default=None, max_length=512, description="The target's origin, its host as punycode."
    )
    fields: list[RequestField] = Field(default_factory=list, max_length=64)
    body_bytes: int = Field(default=0, ge=0, description="The body's size in bytes.")
    page_url: str | None = Field(default=None, max_length=8192, description="Sent from here.")
    trigger: str | None = Field(
        default=None,
        max_length=MAX_ACTION_CHARS,
        description="The action that caused it, when the client knows (null: the page did).",
    )
    element: str | None = Field(default=None, max_length=64, description="That action's bid.")


class Prediction(Model):
    """What the page says a candidate will do (addition to v1): the guard rules' reading of it,
    shown before it runs. In a session whose browser holds commits it informs, never holds."""

    index: int = Field(ge=0)
    hits: list[GuardHit]
    notes: list[Annotated[str, Field(max_length=1024)]] = Field(
        default_factory=list,
        description="What the rules could not read of the candidate (addition to v1): e.g. a "
        "coordinate click that no element box holds, its target unknown (at most 16).",
    )


class FieldLabel(Model):
    """A paused request's field as the page labels it (addition to v1): the form control whose
    value the observation's AX tree shows as the field's value, and its visible name."""

    name: str = Field(max_length=256, description="The request field's name.")
    label: str = Field(max_length=1024, description="The control's name in the AX tree.")


class CardJudge(Model):
    """The judge's view of the step that caused a paused request (addition to v1)."""

    step: int = Field(ge=0)
    reward: float | None = Field(default=None, description="The triggering action's reward.")
    item: int | None = Field(
        default=None, ge=1, description="The checklist item it serves, numbered as the checklist."
    )
    item_title: str | None = Field(default=None, max_length=1024)


class ApprovalCard(Model):
    """What a person needs to judge a held step, read from the step's observation and results
    by the daemon (addition to v1): the TUI and the extension show the same card."""

    target: CardTarget | None = None
    destination: str | None = Field(
        default=None,
        max_length=8192,
        description="Where it leads: a goto's URL, a link's target or the submitted form's action.",
    )
    typed: str | None = Field(default=None, description="The text a fill or type action enters.")
    thought: str = ""
    feedback: str = Field(default="", description="The judge's parsed feedback, not its raw text.")
    others: list[CardCandidate] = Field(
        default_factory=list, description="The step's other candidates, best first."
    )
    screenshot: Screenshot | None = Field(
        default=None,
        description="The step's screenshot, where the target's box is known; a paused request's "
        "card carries the part of it around the target (at most 480x320 pixels).",
    )
    request: HeldRequest | None = Field(
        default=None,
        description="For a request the browser paused (reason 'commit'): exactly what would "
        "be sent (addition to v1).",
    )
    predicts: list[GuardHit] = Field(
        default_factory=list,
        description="What the page says the step will do (the guard rules' reading), shown "
        "before it runs (addition to v1).",
    )
    headline: str | None = Field(
        default=None,
        max_length=1024,
        description="The plain sentence a person reads first, e.g. 'Waiting for you: this "
        "sends a POST to shop.test/orders' (addition to v1).",
    )
    why: str | None = Field(
        default=None,
        max_length=1024,
        description="Which rule of the session's mode holds it, in one sentence (addition to v1).",
    )
    labels: list[FieldLabel] = Field(
        default_factory=list,
        max_length=64,
        description="A paused request's fields as the page labels them, where the step's "
        "observation shows them (addition to v1).",
    )
    amounts: list[Annotated[str, Field(max_length=256)]] = Field(
        default_factory=list,
        max_length=8,
        description="The page's own amounts near the target (a price, a total), as the step's AX "
        "tree shows them, nearest first (addition to v1; untrusted).",
    )
    judge: CardJudge | None = Field(
        default=None, description="The judge's view of the step that caused it (addition to v1)."
    )
    expires_at: float | None = Field(
        default=None,
        description="When it is refused unanswered: Unix seconds, the daemon's clock (addition "
        "to v1).",
    )
    on_approve: str | None = Field(
        default=None, max_length=512, description="What Approve does (addition to v1)."
    )
    on_reject: str | None = Field(
        default=None, max_length=512, description="What Reject does (addition to v1)."
    )


class DecisionInfo(Model):
    status: DecisionStatus
    index: int | None = None
    action: str | None = None
    by: str | None = None
    note: str | None = None
    decider: Decider | None = Field(
        default=None,
        description="Who decided, as a kind (addition to v1): 'person' only when a paired "
        "person did; `by` names them.",
    )
    way_out: str | None = Field(
        default=None,
        max_length=1024,
        description="For a refusal: the operator's serve flag or the person's mode that would "
        "let such a step run (addition to v1).",
    )
    mode: CommitMode | None = Field(
        default=None, description="The session's mode when it was decided (addition to v1)."
    )
    guard: list[GuardHit] = Field(
        default_factory=list,
        description="The guard rules the candidate met (addition to v1): a person decided it "
        "whatever its reward, or, with nobody paired to decide, the daemon refused it at once "
        "(status 'rejected', by 'daemon').",
    )


class Timing(Model):
    queue_ms: float = 0.0
    model_ms: float = 0.0


class SessionHeader(Model):
    """What one session is and how it stands, the columns of its ``sessions`` row: the one
    declaration of these fields. The summary is it plus the live facts; the machine's live
    state and the recorder's read-back hold one. Immutable: a change is a new header."""

    model_config = ConfigDict(frozen=True)

    session_id: SessionId
    intent: str
    start_url: str | None = None
    agent: AgentInfo = Field(default_factory=AgentInfo)
    source: SessionSource = "agent"
    outcome: Outcome | None = None
    latest_reward: float | None = None
    created_at: float = Field(description="Unix time, seconds.")
    ended_at: float | None = None

    def summary(
        self, state: SessionState, steps: int, mode: CommitMode | None = None
    ) -> SessionSummary:
        """The wire summary of this header with the session's state, step count and mode."""
        fields = {name: getattr(self, name) for name in SessionHeader.model_fields}
        return SessionSummary(**fields, state=state, steps=steps, mode=mode)


# A session in a list (``sessions``, ``session``): its header and where it is now. (No
# docstring: it would become the wire schema's description.)
class SessionSummary(SessionHeader):
    model_config = ConfigDict(frozen=False)

    state: SessionState = "running"
    steps: int = 0
    mode: CommitMode | None = Field(
        default=None, description="The session's mode now (addition to v1; null: not live)."
    )
