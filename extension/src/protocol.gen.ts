/* Generated from protocol/schema/webshepherd-v1.schema.json by scripts/gen-protocol.mjs; do not edit. */

/**
 * Generated from the pydantic models in webshepherd.protocol; do not edit. A frame from a client is a ClientMessage, a frame from the daemon a ServerMessage.
 */
export type WireMessage = ClientMessage | ServerMessage;
export type ClientMessage =
  | Hello
  | SessionStart
  | Observe
  | Score
  | ApprovalDecide
  | Action2
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
  | Ping;
/**
 * A person's approver credential from pairing (addition to v1): the only way a connection may decide approvals, label as a person or change the policy.
 */
export type Approver = string | null;
export type Name = string;
export type Role = "agent" | "extension" | "monitor";
export type Version = string | null;
/**
 * Chosen by the sender, unique per connection.
 */
export type Id = string;
export type Protocol = number;
export type Token = string;
export type Type = "hello";
export type Name1 = string;
export type Plan = string[] | null;
export type Planning = "step" | "tree" | "plan";
/**
 * Executed steps without a checklist item advancing before the daemon sends a `stalled` signal (addition to v1).
 */
export type StalledAfter = number;
/**
 * Reference checklist text; generated when absent.
 */
export type Checklist = string | null;
export type Kind = "browsergym";
/**
 * The options reset() took (JSON values).
 */
export type Options = {
  [k: string]: unknown | undefined;
} | null;
/**
 * The seed reset() took (None: none).
 */
export type Seed = number | null;
/**
 * The gym id: browsergym/...
 */
export type Task = string;
/**
 * 'browser': this client pauses committing requests in the browser it drives and asks with commit.check, so the guard rules predict and never hold (addition to v1). Absent: the rules hold (the text-only fallback).
 */
export type Holds = "browser" | null;
/**
 * Chosen by the sender, unique per connection.
 */
export type Id1 = string;
export type Intent = string;
export type Axtree = string;
/**
 * bid -> [left, top, width, height] on the screenshot, in its pixels (addition to v1; reports outline candidates' targets with them).
 */
export type Boxes = {
  /**
   * @minItems 4
   * @maxItems 4
   */
  [k: string]: [number, number, number, number] | undefined;
} | null;
/**
 * bid -> what the page says of the element: link targets, downloads, which form it submits with which method (addition to v1; the guards read them).
 */
export type Elements = {
  [k: string]: ElementFacts | undefined;
} | null;
/**
 * A link with the `download` attribute.
 */
export type Download = boolean;
/**
 * Where that form submits (absolute URL).
 */
export type FormAction = string | null;
/**
 * The method of the form it submits (upper case; 'GET', 'POST', 'DIALOG').
 */
export type FormMethod = string | null;
/**
 * A link's resolved target (absolute URL).
 */
export type Href = string | null;
/**
 * Activating it submits a form (a submit button or input, or a control of a form that Enter submits).
 */
export type Submits = boolean;
/**
 * The element's tag name, lower case.
 */
export type Tag = string;
/**
 * Base64 image bytes; null in events sent to subscribers.
 */
export type Data = string | null;
export type Mime = "image/png" | "image/jpeg" | "image/webp";
export type Url = string;
export type Source = "agent" | "human" | "import";
export type StartUrl = string | null;
export type Type1 = "session.start";
export type Axtree1 = string;
/**
 * As in Observation (addition to v1).
 */
export type Boxes1 = {
  /**
   * @minItems 4
   * @maxItems 4
   */
  [k: string]: [number, number, number, number] | undefined;
} | null;
/**
 * bid -> what the page says of the element: link targets, downloads, which form it submits with which method (addition to v1; the guards read them).
 */
export type Elements1 = {
  [k: string]: ElementFacts | undefined;
} | null;
/**
 * Chosen by the sender, unique per connection.
 */
export type Id2 = string;
export type SessionId = string;
export type Type2 = "observe";
export type Url1 = string;
export type Approval = "auto" | "always" | "never";
/**
 * @minItems 1
 * @maxItems 64
 */
export type Candidates = [Candidate, ...Candidate[]];
export type Action = string;
export type Thought = string;
/**
 * Chosen by the sender, unique per connection.
 */
export type Id3 = string;
export type Samples = number | null;
export type SessionId1 = string;
export type Type3 = "score";
/**
 * The edited action, required with decision 'edit'.
 */
export type Action1 = string | null;
/**
 * With 'approve' on a request the browser paused: also allow the request's target origin for the rest of the session, so later writes to it run flagged without asking (addition to v1).
 */
export type AllowOrigin = boolean;
export type Decision = "approve" | "reject" | "edit";
/**
 * Chosen by the sender, unique per connection.
 */
export type Id4 = string;
export type Note = string | null;
export type RequestId = string;
export type Type4 = "approval.decide";
/**
 * Where the person decided (e.g. 'panel', 'popup'); recorded after the connection's role and name in `by` (addition to v1).
 */
export type Via = string | null;
export type Action3 = string;
/**
 * Chosen by the sender, unique per connection.
 */
export type Id5 = string;
export type SessionId2 = string;
export type Source1 = "agent" | "human";
export type Step = number | null;
export type Thought1 = string | null;
export type Type5 = "action";
export type Answer = string | null;
/**
 * Chosen by the sender, unique per connection.
 */
export type Id6 = string;
export type Outcome = "success" | "failure" | "unknown";
export type SessionId3 = string;
export type Type6 = "session.end";
/**
 * Chosen by the sender, unique per connection.
 */
export type Id7 = string;
export type Sessions = "*" | string[];
export type Type7 = "subscribe";
/**
 * Chosen by the sender, unique per connection.
 */
export type Id8 = string;
export type Limit = number;
export type Type8 = "sessions.list";
/**
 * Events to skip: a reply that did not fit one frame says where to go on (`next`). Addition to v1.
 */
export type After = number;
/**
 * Chosen by the sender, unique per connection.
 */
export type Id9 = string;
export type SessionId4 = string;
export type Type9 = "session.get";
/**
 * Chosen by the sender, unique per connection.
 */
export type Id10 = string;
/**
 * The agent's session a page may follow with the key; null: the key lets one page-hook `session.start` through.
 */
export type SessionId5 = string | null;
export type Type10 = "hook.grant";
/**
 * Chosen by the sender, unique per connection.
 */
export type Id11 = string;
export type Key = string;
export type Type11 = "hook.redeem";
/**
 * The candidate's action, as it was scored.
 */
export type Action4 = string;
/**
 * Chosen by the sender, unique per connection.
 */
export type Id12 = string;
/**
 * One label per checklist item, in the checklist's order.
 *
 * @minItems 1
 * @maxItems 64
 */
export type Items = ["yes" | "in_progress" | "no", ...("yes" | "in_progress" | "no")[]];
export type Note1 = string | null;
export type SessionId6 = string;
/**
 * 'environment': the environment the agent runs in knows each item's state (an agent's connection); 'person': a person said so (the extension's or a monitor's); 'replay': replays proved it (webshepherd blame); 'rollout': the share of rollouts from the step that won (webshepherd label rollouts). 'replay' and 'rollout' come from an agent's connection, as 'environment' does.
 */
export type Source2 = "environment" | "person" | "replay" | "rollout";
/**
 * The scored step the candidate belongs to.
 */
export type Step1 = number;
export type Type12 = "label";
/**
 * The action from its parent (null only for the root).
 */
export type Action5 = string | null;
/**
 * Policy proposals of this action.
 */
export type Count = number;
/**
 * Actions from the start page.
 */
export type Depth = number;
/**
 * Why its action failed or why it went stale.
 */
export type Error = string | null;
export type Event = "scored" | "replayed" | "executed" | "expanded" | "stale" | "path";
/**
 * Its action ran first-hand.
 */
export type Executed = boolean;
/**
 * The step at which its children were scored.
 */
export type ExpandedAt = number | null;
/**
 * Chosen by the sender, unique per connection.
 */
export type Id13 = string;
/**
 * The node's id; the root is 0.
 */
export type Node = number;
/**
 * Null for the root (the start page).
 */
export type Parent = number | null;
/**
 * Times its action ran again to return to a node below it.
 */
export type Replays = number;
/**
 * Its value: the judge's reward for it.
 */
export type Reward = number | null;
export type SessionId7 = string;
export type Status = "frontier" | "expanded" | "leaf" | "done" | "failed" | "stale";
/**
 * The scored step its action was a candidate of (the parent's expansion).
 */
export type Step2 = number | null;
export type Thought2 = string | null;
/**
 * The node the search is trying now (its action runs once the environment is at its parent).
 */
export type Trying = number | null;
export type Type13 = "tree.node";
/**
 * The page it led to.
 */
export type Url2 = string | null;
export type Code = string;
/**
 * Chosen by the sender, unique per connection.
 */
export type Id14 = string;
export type Name2 = string;
export type Type14 = "pair";
/**
 * Chosen by the sender, unique per connection.
 */
export type Id15 = string;
/**
 * The body's size in bytes.
 */
export type BodyBytes = number;
/**
 * That action's bid.
 */
export type Element = string | null;
export type Name3 = string;
/**
 * Truncated; shown escaped.
 */
export type Value = string;
/**
 * @maxItems 64
 */
export type Fields = RequestField[];
export type Kind1 = "write" | "navigation" | "download";
/**
 * Upper case.
 */
export type Method = string;
/**
 * The target's origin, its host as punycode.
 */
export type Origin = string | null;
/**
 * Sent from here.
 */
export type PageUrl = string | null;
/**
 * A navigation of the page itself.
 */
export type TopLevel = boolean;
/**
 * The action that caused it, when the client knows (null: the page did).
 */
export type Trigger = string | null;
/**
 * As the browser would send it.
 */
export type Url3 = string;
export type SessionId8 = string;
export type Type15 = "commit.check";
/**
 * Chosen by the sender, unique per connection.
 */
export type Id16 = string;
export type Mode = "ask" | "watch" | "stop";
export type SessionId9 = string;
export type Type16 = "session.mode";
/**
 * Chosen by the sender, unique per connection.
 */
export type Id17 = string;
export type Type17 = "ping";
export type ServerMessage =
  | Welcome
  | Error1
  | SessionStarted
  | Checklist1
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
  | Sessions2
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
  | Pong;
/**
 * This connection may decide approvals and label as a person (addition to v1).
 */
export type Approver1 = boolean;
export type Backend = string;
export type Model = string;
export type Version1 = string;
/**
 * Chosen by the sender, unique per connection.
 */
export type Id18 = string;
export type Protocol1 = number;
/**
 * The role the daemon gave this connection: 'agent' unless `hello` carried a valid approver credential, whose pairing set the role (addition to v1).
 */
export type Role1 = "agent" | "extension" | "monitor";
export type Type18 = "welcome";
/**
 * Error codes of protocol v1 (protocol.md, "Envelope").
 */
export type ErrorCode =
  | "invalid_message"
  | "unauthorized"
  | "unknown_session"
  | "session_closed"
  | "model_unavailable"
  | "model_error"
  | "overloaded"
  | "timeout"
  | "internal";
export type Id19 = string | null;
export type Message = string;
export type Retryable = boolean;
export type Type19 = "error";
/**
 * The operator's patterns of GET (HEAD, OPTIONS) requests that commit, 'METHOD URL' with * for any run (serve --commits): every gate holds a matching request like a write; null: none (addition to v1).
 */
export type Commits = string[] | null;
/**
 * Echo of session.start's holds (addition to v1).
 */
export type Holds1 = "browser" | null;
export type Id20 = string | null;
export type Intent1 = string | null;
/**
 * The session's mode at start (addition to v1).
 */
export type Mode1 = ("ask" | "watch" | "stop") | null;
export type SessionId10 = string;
export type Source3 = ("agent" | "human" | "import") | null;
export type StartUrl1 = string | null;
export type Type20 = "session.started";
export type Goal = string | null;
export type Index = number;
export type Title = string;
export type Items1 = ChecklistItem[];
export type SessionId11 = string;
export type Source4 = "generated" | "reference";
export type Text = string;
export type Type21 = "checklist";
export type Axtree2 = string | null;
export type Id21 = string | null;
export type SessionId12 = string | null;
export type Step3 = number;
export type Type22 = "observed";
export type Url4 = string | null;
export type Candidate1 = number;
export type Delta = string;
export type Request = string;
export type Sample = number;
export type SessionId13 = string;
export type Type23 = "score.progress";
export type Best = number | null;
/**
 * Echo of the scored candidates (events).
 */
export type Candidates1 = Candidate[] | null;
export type Action6 = string | null;
export type By = string | null;
/**
 * Who decided, as a kind (addition to v1): 'person' only when a paired person did; `by` names them.
 */
export type Decider = ("person" | "guard" | "mode" | "timeout" | "sandbox" | "daemon") | null;
/**
 * E.g. "submits a POST form to /checkout".
 */
export type Detail = string;
export type Rule = "form_submit" | "name_match" | "leaves_origin" | "download" | "commit_get";
/**
 * The guard rules the candidate met (addition to v1): a person decided it whatever its reward, or, with nobody paired to decide, the daemon refused it at once (status 'rejected', by 'daemon').
 */
export type Guard = GuardHit[];
export type Index1 = number | null;
/**
 * The session's mode when it was decided (addition to v1).
 */
export type Mode2 = ("ask" | "watch" | "stop") | null;
export type Note2 = string | null;
export type Status1 = "auto" | "approved" | "rejected" | "edited" | "timeout";
/**
 * For a refusal: the operator's serve flag or the person's mode that would let such a step run (addition to v1).
 */
export type WayOut = string | null;
/**
 * Indices of the candidates that meet a guard rule, null when none (addition to v1): the decision covers the held best; an agent that would run another of them scores it alone first, so the guards hold it for a person.
 */
export type Guarded = number[] | null;
export type Id22 = string | null;
/**
 * What the page says each candidate will do, by the guard rules, null when nothing (addition to v1). In a session whose browser holds commits these inform only.
 */
export type Predicted = Prediction[] | null;
export type Hits = GuardHit[];
export type Index2 = number;
/**
 * What the rules could not read of the candidate (addition to v1): e.g. a coordinate click that no element box holds, its target unknown (at most 16).
 */
export type Notes = string[];
export type Feedback = string;
export type Index3 = number;
export type InProgress = number;
export type Index4 = number;
export type No = number;
export type Yes = number;
export type Items2 = ItemProbs[];
/**
 * What the judge saw: 'text+image' when the latest observation's screenshot was in the prompt (serve --judge-inputs text+image); 'text' otherwise, also when the daemon judges with images but the observation had no screenshot.
 */
export type JudgeInputs = "text" | "text+image";
export type ParsedSamples = number;
/**
 * 'top_k' when label probabilities come from a top-k truncation.
 */
export type Probabilities = "full" | "top_k";
export type Reward1 = number | null;
export type Items3 = ItemProbs[];
export type Reward2 = number | null;
export type Text1 = string;
/**
 * Why this sample gave no reward (null when it did): scoring aborted, the judgement cut by the context or the output limit, labels only of items not on the checklist, an <answer> block without a label, no <answer> block.
 */
export type Unparsed =
  | ("aborted" | "cut_by_context" | "cut_by_limit" | "off_checklist" | "no_label" | "no_answer")
  | null;
export type Samples1 = SampleResult[];
/**
 * Samples that gave no reward. The daemon's rule (serve --unparsed) leaves them out of 'reward' (skip, the default) or averages them in as 0 (zero).
 */
export type UnparsedSamples = number;
export type Results = CandidateResult[];
export type SessionId14 = string;
export type Step4 = number;
export type ModelMs = number;
export type QueueMs = number;
export type Type24 = "scored";
export type CandidateIndex = number | null;
/**
 * The page's own amounts near the target (a price, a total), as the step's AX tree shows them, nearest first (addition to v1; untrusted).
 *
 * @maxItems 8
 */
export type Amounts =
  | []
  | [string]
  | [string, string]
  | [string, string, string]
  | [string, string, string, string]
  | [string, string, string, string, string]
  | [string, string, string, string, string, string]
  | [string, string, string, string, string, string, string]
  | [string, string, string, string, string, string, string, string];
/**
 * Where it leads: a goto's URL, a link's target or the submitted form's action.
 */
export type Destination = string | null;
/**
 * When it is refused unanswered: Unix seconds, the daemon's clock (addition to v1).
 */
export type ExpiresAt = number | null;
/**
 * The judge's parsed feedback, not its raw text.
 */
export type Feedback1 = string;
/**
 * The plain sentence a person reads first, e.g. 'Waiting for you: this sends a POST to shop.test/orders' (addition to v1).
 */
export type Headline = string | null;
/**
 * The checklist item it serves, numbered as the checklist.
 */
export type Item = number | null;
export type ItemTitle = string | null;
/**
 * The triggering action's reward.
 */
export type Reward3 = number | null;
export type Step5 = number;
/**
 * The control's name in the AX tree.
 */
export type Label1 = string;
/**
 * The request field's name.
 */
export type Name4 = string;
/**
 * A paused request's fields as the page labels them, where the step's observation shows them (addition to v1).
 *
 * @maxItems 64
 */
export type Labels = FieldLabel[];
/**
 * What Approve does (addition to v1).
 */
export type OnApprove = string | null;
/**
 * What Reject does (addition to v1).
 */
export type OnReject = string | null;
export type Action7 = string;
export type Index5 = number;
export type Reward4 = number | null;
/**
 * The step's other candidates, best first.
 */
export type Others = CardCandidate[];
/**
 * What the page says the step will do (the guard rules' reading), shown before it runs (addition to v1).
 */
export type Predicts = GuardHit[];
export type Bid = string;
/**
 * Its box on the card's screenshot (the step's, or the part of it around the target that a paused request's card carries).
 */
export type Box = [number, number, number, number] | null;
export type Name5 = string | null;
export type Role2 = string | null;
export type Thought3 = string;
/**
 * The text a fill or type action enters.
 */
export type Typed = string | null;
/**
 * Which rule of the session's mode holds it, in one sentence (addition to v1).
 */
export type Why = string | null;
export type ExpiresInS = number;
export type Feedback2 = string;
/**
 * The guard rules the action met (addition to v1); held whatever the reward.
 */
export type Guard1 = GuardHit[];
export type Reason = "below_threshold" | "reward_drop" | "always" | "guarded" | "commit";
export type RequestId1 = string;
export type Reward5 = number | null;
export type SessionId15 = string;
export type Step6 = number;
/**
 * The approval threshold in force when the step was held (addition to v1): a reward at or above it is high, below it low (judge-person agreement).
 */
export type Threshold = number | null;
export type Type25 = "approval.request";
export type Action8 = string | null;
export type By1 = string | null;
export type Decision1 = "approve" | "reject" | "edit" | "timeout";
export type Id23 = string | null;
export type Note3 = string | null;
export type RequestId2 = string;
export type SessionId16 = string | null;
export type Type26 = "approval.resolved";
/**
 * Chosen by the sender, unique per connection.
 */
export type Id24 = string;
export type SessionId17 = string;
export type Step7 = number;
export type Type27 = "action.recorded";
export type Action9 = string;
export type SessionId18 = string;
export type Source5 = "agent" | "human";
export type Step8 = number;
export type Thought4 = string | null;
export type Type28 = "action";
export type Answer1 = string | null;
export type Id25 = string | null;
export type Outcome1 = "success" | "failure" | "unknown";
export type SessionId19 = string;
export type Type29 = "session.ended";
export type Action10 = string;
export type Detail1 = string;
export type Kind2 =
  "repeated_action" | "element_mismatch" | "plan_adherence" | "stalled" | "proven_bad_step";
/**
 * False when the signal is a warning.
 */
export type Ok = boolean;
export type PlanStep = number | null;
export type Planned = string | null;
/**
 * Running element accuracy or plan adherence.
 */
export type Rate = number | null;
export type Repeats = number | null;
export type SessionId20 = string;
/**
 * stalled: executed steps in a row with no checklist item advanced.
 */
export type StalledSteps = number | null;
export type Step9 = number;
export type Type30 = "signal";
/**
 * Chosen by the sender, unique per connection.
 */
export type Id26 = string;
export type Sessions1 = "*" | string[];
export type Type31 = "subscribed";
/**
 * Chosen by the sender, unique per connection.
 */
export type Id27 = string;
/**
 * Unix time, seconds.
 */
export type CreatedAt = number;
export type EndedAt = number | null;
export type Intent2 = string;
export type LatestReward = number | null;
/**
 * The session's mode now (addition to v1; null: not live).
 */
export type Mode3 = ("ask" | "watch" | "stop") | null;
export type Outcome2 = ("success" | "failure" | "unknown") | null;
export type SessionId21 = string;
export type Source6 = "agent" | "human" | "import";
export type StartUrl2 = string | null;
export type State = "running" | "waiting_approval" | "ended";
export type Steps = number;
export type Sessions3 = SessionSummary[];
export type Type32 = "sessions";
/**
 * The session's events in order, each shaped as the event a subscriber received.
 */
export type Events = {
  [k: string]: unknown | undefined;
}[];
/**
 * Chosen by the sender, unique per connection.
 */
export type Id28 = string;
/**
 * Set when the events did not fit one frame: ask again with `after` = `next` for the rest (every page carries at least one event). Addition to v1.
 */
export type Next = number | null;
export type Type33 = "session";
export type Connections = number;
export type MemoryTotalMb = number | null;
export type MemoryUsedMb = number | null;
export type Name6 = string;
/**
 * Percent, 0-100.
 */
export type Utilization = number | null;
export type InFlight = number;
export type Backend1 = string;
/**
 * Generated tokens of all scored steps.
 */
export type CompletionTokens = number;
/**
 * Mean over the latest 200 steps.
 */
export type CompletionTokensPerStep = number | null;
/**
 * prompt and completion tokens at serve --price-in / --price-out (USD per million tokens); null when no price was given.
 */
export type CostUsd = number | null;
export type Model1 = string;
/**
 * Prompt tokens of all scored steps.
 */
export type PromptTokens = number;
/**
 * Mean over the latest 200 steps.
 */
export type PromptTokensPerStep = number | null;
/**
 * Scored steps.
 */
export type Steps1 = number;
/**
 * Events dropped because the export queue was full.
 */
export type DroppedEvents = number;
/**
 * Spans the collector accepted.
 */
export type ExportedSpans = number;
/**
 * Spans whose export failed (not retried).
 */
export type FailedSpans = number;
/**
 * Events waiting for the export thread.
 */
export type Queued = number;
export type PendingApprovals = number;
export type QueueDepth = number;
export type BaseUrl = string;
/**
 * Prompt tokens the server took from its prefix cache, from the replies' usage (vllm serve --enable-prompt-tokens-details); null when it does not say.
 */
export type CachedPromptTokens = number | null;
/**
 * Requests that failed after every retry (model_error).
 */
export type Failures = number;
/**
 * Requests this daemon has open at the server.
 */
export type InFlight1 = number;
/**
 * Why the latest failed request failed; null once one succeeds.
 */
export type LastError = string | null;
/**
 * Of those, tokens found there (vLLM's /metrics).
 */
export type PrefixCacheHits = number | null;
/**
 * Tokens looked up in the server's prefix cache (vLLM's /metrics).
 */
export type PrefixCacheQueries = number | null;
/**
 * Prompt tokens of all replies.
 */
export type PromptTokens1 = number;
/**
 * Whether GET {base_url}/models answered at last probe.
 */
export type Reachable = boolean;
/**
 * Requests sent again (connection, stream, 5xx, 429).
 */
export type Retries = number;
/**
 * Requests running on the server (vLLM's /metrics).
 */
export type ServerRunning = number | null;
/**
 * Requests waiting on the server (vLLM's /metrics).
 */
export type ServerWaiting = number | null;
export type SessionsActive = number;
export type StepLatencyMsP50 = number | null;
export type StepLatencyMsP95 = number | null;
export type Time = number;
export type TokensPerS = number;
export type Type34 = "stats";
/**
 * The key must be redeemed within this time.
 */
export type ExpiresInS1 = number;
/**
 * Chosen by the sender, unique per connection.
 */
export type Id29 = string;
export type Key1 = string;
/**
 * The key of the MAC on the extension's page-hook replies (addition to v1): the agent keeps it out of the page and checks each reply with it.
 */
export type ReplyKey = string | null;
export type SessionId22 = string | null;
export type Type35 = "hook.granted";
/**
 * Chosen by the sender, unique per connection.
 */
export type Id30 = string;
/**
 * The key the extension signs this key's page-hook replies with (addition to v1; the same as hook.granted.reply_key).
 */
export type ReplyKey1 = string | null;
export type SessionId23 = string | null;
export type Type36 = "hook.redeemed";
/**
 * Chosen by the sender, unique per connection.
 */
export type Id31 = string;
export type SessionId24 = string;
export type Step10 = number;
export type Type37 = "label.recorded";
/**
 * Chosen by the sender, unique per connection.
 */
export type Id32 = string;
export type Node1 = number;
export type SessionId25 = string;
export type Type38 = "tree.node.recorded";
/**
 * The action from its parent (null only for the root).
 */
export type Action11 = string | null;
/**
 * Policy proposals of this action.
 */
export type Count1 = number;
/**
 * Actions from the start page.
 */
export type Depth1 = number;
/**
 * Why its action failed or why it went stale.
 */
export type Error2 = string | null;
export type Event1 = "scored" | "replayed" | "executed" | "expanded" | "stale" | "path";
/**
 * Its action ran first-hand.
 */
export type Executed1 = boolean;
/**
 * The step at which its children were scored.
 */
export type ExpandedAt1 = number | null;
/**
 * The node's id; the root is 0.
 */
export type Node2 = number;
/**
 * Null for the root (the start page).
 */
export type Parent1 = number | null;
/**
 * Times its action ran again to return to a node below it.
 */
export type Replays1 = number;
/**
 * Its value: the judge's reward for it.
 */
export type Reward6 = number | null;
export type SessionId26 = string;
export type Status2 = "frontier" | "expanded" | "leaf" | "done" | "failed" | "stale";
/**
 * The scored step its action was a candidate of (the parent's expansion).
 */
export type Step11 = number | null;
export type Thought5 = string | null;
/**
 * The node the search is trying now (its action runs once the environment is at its parent).
 */
export type Trying1 = number | null;
export type Type39 = "tree.node";
/**
 * The page it led to.
 */
export type Url5 = string | null;
export type Credential = string;
/**
 * Chosen by the sender, unique per connection.
 */
export type Id33 = string;
export type Name7 = string;
export type Role3 = "agent" | "extension" | "monitor";
export type Type40 = "paired";
/**
 * It ran unheld (watch mode, a sandbox origin) and is flagged.
 */
export type Flagged = boolean;
export type Id34 = string | null;
export type RequestDigest = string;
export type SessionId27 = string;
export type Type41 = "commit.decided";
export type By2 = string | null;
export type Id35 = string | null;
export type Mode4 = "ask" | "watch" | "stop";
export type SessionId28 = string;
export type Type42 = "mode.set";
/**
 * Chosen by the sender, unique per connection.
 */
export type Id36 = string;
export type Type43 = "pong";

export interface Hello {
  approver?: Approver;
  client: ClientInfo;
  id: Id;
  protocol: Protocol;
  token: Token;
  type: Type;
}
export interface ClientInfo {
  name: Name;
  role?: Role;
  version?: Version;
}
export interface SessionStart {
  agent?: AgentInfo;
  checklist?: Checklist;
  /**
   * What resets the environment to this session's start (a BrowserGym task and seed), recorded for replays (addition to v1). Absent: it cannot be reset.
   */
  environment?: EnvironmentInfo | null;
  holds?: Holds;
  id: Id1;
  intent: Intent;
  observation?: Observation | null;
  source?: Source;
  start_url?: StartUrl;
  type: Type1;
}
export interface AgentInfo {
  name?: Name1;
  plan?: Plan;
  planning?: Planning;
  stalled_after?: StalledAfter;
}
/**
 * What resets the session's environment to its start (``session.start``'s
 * ``environment``, addition to v1): a BrowserGym task's id, the seed and the options its
 * ``reset`` took. A replay (``webshepherd blame``) resets from it; without it a session's
 * environment cannot be reset.
 */
export interface EnvironmentInfo {
  kind?: Kind;
  options?: Options;
  seed?: Seed;
  task: Task;
}
export interface Observation {
  axtree: Axtree;
  boxes?: Boxes;
  elements?: Elements;
  screenshot?: Screenshot | null;
  url: Url;
}
/**
 * What the page says of one element that an action may target, read from the DOM by the
 * capture, never from a model (addition to v1): the guards decide from these.
 */
export interface ElementFacts {
  download?: Download;
  form_action?: FormAction;
  form_method?: FormMethod;
  href?: Href;
  submits?: Submits;
  tag: Tag;
}
export interface Screenshot {
  data?: Data;
  mime?: Mime;
}
export interface Observe {
  axtree: Axtree1;
  boxes?: Boxes1;
  elements?: Elements1;
  id: Id2;
  screenshot?: Screenshot | null;
  session_id: SessionId;
  type: Type2;
  url: Url1;
}
export interface Score {
  approval?: Approval;
  candidates: Candidates;
  id: Id3;
  observation?: Observation | null;
  samples?: Samples;
  session_id: SessionId1;
  type: Type3;
}
export interface Candidate {
  action: Action;
  thought?: Thought;
}
export interface ApprovalDecide {
  action?: Action1;
  allow_origin?: AllowOrigin;
  decision: Decision;
  id: Id4;
  note?: Note;
  request_id: RequestId;
  type: Type4;
  via?: Via;
}
export interface Action2 {
  action: Action3;
  id: Id5;
  session_id: SessionId2;
  source?: Source1;
  step?: Step;
  thought?: Thought1;
  type: Type5;
}
export interface SessionEnd {
  answer?: Answer;
  id: Id6;
  outcome?: Outcome;
  session_id: SessionId3;
  type: Type6;
}
export interface Subscribe {
  id: Id7;
  sessions?: Sessions;
  type: Type7;
}
export interface SessionsList {
  id: Id8;
  limit?: Limit;
  type: Type8;
}
export interface SessionGet {
  after?: After;
  id: Id9;
  session_id: SessionId4;
  type: Type9;
}
/**
 * An agent asks for a page-hook key (addition to v1; docs/protocol-additions.md).
 */
export interface HookGrant {
  id: Id10;
  session_id?: SessionId5;
  type: Type10;
}
/**
 * The extension checks a key a page presented (addition to v1).
 */
export interface HookRedeem {
  id: Id11;
  key: Key;
  type: Type11;
}
/**
 * Ground truth for one candidate of a scored step: each checklist item's state after
 * the action, from whoever knows it (addition to v1; docs/protocol-additions.md).
 */
export interface Label {
  action: Action4;
  id: Id12;
  items: Items;
  note?: Note1;
  session_id: SessionId6;
  source: Source2;
  step: Step1;
  type: Type12;
}
/**
 * A tree-search agent reports one node of its search tree, when it is scored and again
 * whenever it changes (addition to v1; docs/protocol-additions.md, "Tree search").
 */
export interface TreeNode {
  action?: Action5;
  count?: Count;
  depth: Depth;
  error?: Error;
  event: Event;
  executed?: Executed;
  expanded_at?: ExpandedAt;
  id: Id13;
  node: Node;
  parent?: Parent;
  replays?: Replays;
  reward?: Reward;
  session_id: SessionId7;
  status: Status;
  step?: Step2;
  thought?: Thought2;
  trying?: Trying;
  type: Type13;
  url?: Url2;
}
/**
 * A person's tool pairs with a one-time code that `webshepherd pair` showed the person
 * (addition to v1; docs/protocol-additions.md, "Pairing").
 */
export interface Pair {
  code: Code;
  id: Id14;
  name: Name2;
  type: Type14;
}
/**
 * A request the client's browser paused before it left (addition to v1): the daemon
 * answers ``commit.decided`` by the session's mode (a paired person decides in 'ask').
 */
export interface CommitCheck {
  id: Id15;
  request: HeldRequest;
  session_id: SessionId8;
  type: Type15;
}
/**
 * A request the browser paused before it left (addition to v1; ``commit.check``): what
 * would be sent, read from the browser's own request, never from a model.
 */
export interface HeldRequest {
  body_bytes?: BodyBytes;
  element?: Element;
  fields?: Fields;
  kind: Kind1;
  method: Method;
  origin?: Origin;
  page_url?: PageUrl;
  top_level?: TopLevel;
  trigger?: Trigger;
  url: Url3;
}
/**
 * One field a paused request would send (a form's or a JSON body's top level).
 */
export interface RequestField {
  name: Name3;
  value: Value;
}
/**
 * A paired person sets a session's mode (addition to v1; an agent cannot).
 */
export interface SessionMode {
  id: Id16;
  mode: Mode;
  session_id: SessionId9;
  type: Type16;
}
/**
 * Application-level keepalive (an MV3 service worker needs one about every 20 s). Addition to v1.
 */
export interface Ping {
  id: Id17;
  type: Type17;
}
export interface Welcome {
  approver?: Approver1;
  daemon: DaemonInfo;
  id: Id18;
  protocol: Protocol1;
  role?: Role1;
  type: Type18;
}
export interface DaemonInfo {
  backend: Backend;
  model: Model;
  version: Version1;
}
export interface Error1 {
  code: ErrorCode;
  id?: Id19;
  message: Message;
  retryable?: Retryable;
  type: Type19;
}
export interface SessionStarted {
  agent?: AgentInfo | null;
  commits?: Commits;
  holds?: Holds1;
  id?: Id20;
  intent?: Intent1;
  mode?: Mode1;
  session_id: SessionId10;
  source?: Source3;
  start_url?: StartUrl1;
  type: Type20;
}
export interface Checklist1 {
  items: Items1;
  session_id: SessionId11;
  source: Source4;
  text: Text;
  type: Type21;
}
export interface ChecklistItem {
  goal?: Goal;
  index: Index;
  title: Title;
}
export interface Observed {
  axtree?: Axtree2;
  id?: Id21;
  /**
   * Events carry the mime only (data null).
   */
  screenshot?: Screenshot | null;
  session_id?: SessionId12;
  step: Step3;
  type: Type22;
  url?: Url4;
}
export interface ScoreProgress {
  candidate: Candidate1;
  delta: Delta;
  request: Request;
  sample: Sample;
  session_id: SessionId13;
  type: Type23;
}
export interface Scored {
  best: Best;
  candidates?: Candidates1;
  decision: DecisionInfo;
  guarded?: Guarded;
  id?: Id22;
  predicted?: Predicted;
  results: Results;
  session_id: SessionId14;
  step: Step4;
  timing?: Timing;
  type: Type24;
}
export interface DecisionInfo {
  action?: Action6;
  by?: By;
  decider?: Decider;
  guard?: Guard;
  index?: Index1;
  mode?: Mode2;
  note?: Note2;
  status: Status1;
  way_out?: WayOut;
}
/**
 * One guard rule an action met (addition to v1): the rule and what on the page met it.
 */
export interface GuardHit {
  detail: Detail;
  rule: Rule;
}
/**
 * What the page says a candidate will do (addition to v1): the guard rules' reading of it,
 * shown before it runs. In a session whose browser holds commits it informs, never holds.
 */
export interface Prediction {
  hits: Hits;
  index: Index2;
  notes?: Notes;
}
export interface CandidateResult {
  feedback?: Feedback;
  index: Index3;
  items?: Items2;
  judge_inputs?: JudgeInputs;
  parsed_samples: ParsedSamples;
  probabilities?: Probabilities;
  reward: Reward1;
  samples?: Samples1;
  unparsed_samples?: UnparsedSamples;
}
/**
 * Label probabilities of one checklist item, normalized over the three label groups.
 */
export interface ItemProbs {
  in_progress: InProgress;
  index: Index4;
  no: No;
  yes: Yes;
}
export interface SampleResult {
  items?: Items3;
  reward: Reward2;
  text: Text1;
  unparsed?: Unparsed;
}
export interface Timing {
  model_ms?: ModelMs;
  queue_ms?: QueueMs;
}
export interface ApprovalRequest {
  candidate: Candidate;
  candidate_index?: CandidateIndex;
  /**
   * What a person needs to judge it (addition to v1).
   */
  card?: ApprovalCard | null;
  expires_in_s: ExpiresInS;
  feedback?: Feedback2;
  guard?: Guard1;
  reason: Reason;
  request_id: RequestId1;
  reward: Reward5;
  session_id: SessionId15;
  step: Step6;
  threshold?: Threshold;
  type: Type25;
}
/**
 * What a person needs to judge a held step, read from the step's observation and results
 * by the daemon (addition to v1): the TUI and the extension show the same card.
 */
export interface ApprovalCard {
  amounts?: Amounts;
  destination?: Destination;
  expires_at?: ExpiresAt;
  feedback?: Feedback1;
  headline?: Headline;
  /**
   * The judge's view of the step that caused it (addition to v1).
   */
  judge?: CardJudge | null;
  labels?: Labels;
  on_approve?: OnApprove;
  on_reject?: OnReject;
  others?: Others;
  predicts?: Predicts;
  /**
   * For a request the browser paused (reason 'commit'): exactly what would be sent (addition to v1).
   */
  request?: HeldRequest | null;
  /**
   * The step's screenshot, where the target's box is known; a paused request's card carries the part of it around the target (at most 480x320 pixels).
   */
  screenshot?: Screenshot | null;
  target?: CardTarget | null;
  thought?: Thought3;
  typed?: Typed;
  why?: Why;
}
/**
 * The judge's view of the step that caused a paused request (addition to v1).
 */
export interface CardJudge {
  item?: Item;
  item_title?: ItemTitle;
  reward?: Reward3;
  step: Step5;
}
/**
 * A paused request's field as the page labels it (addition to v1): the form control whose
 * value the observation's AX tree shows as the field's value, and its visible name.
 */
export interface FieldLabel {
  label: Label1;
  name: Name4;
}
export interface CardCandidate {
  action: Action7;
  index: Index5;
  reward: Reward4;
}
/**
 * The element an action targets, as the step's observation shows it.
 */
export interface CardTarget {
  bid: Bid;
  box?: Box;
  name?: Name5;
  role?: Role2;
}
export interface ApprovalResolved {
  action?: Action8;
  by?: By1;
  decision: Decision1;
  id?: Id23;
  note?: Note3;
  request_id: RequestId2;
  session_id?: SessionId16;
  type: Type26;
}
/**
 * Reply to ``action``; subscribers receive the ``action`` event instead.
 */
export interface ActionRecorded {
  id: Id24;
  session_id: SessionId17;
  step: Step7;
  type: Type27;
}
export interface ActionEvent {
  action: Action9;
  session_id: SessionId18;
  source?: Source5;
  step: Step8;
  thought?: Thought4;
  type: Type28;
}
export interface SessionEnded {
  answer?: Answer1;
  id?: Id25;
  outcome: Outcome1;
  session_id: SessionId19;
  type: Type29;
}
/**
 * A live process signal about one executed action (addition to v1; see protocol-additions.md).
 *
 * ``repeated_action``: the same action again on an unchanged observation (``repeats``
 * counts the consecutive executions). ``element_mismatch``: the action the agent announced
 * in its thought (``planned``) differs from the executed one. ``plan_adherence``: for
 * ``plan`` agents, whether the action follows the declared plan (``plan_step``, 1-based).
 * ``stalled``: no checklist item has advanced for ``stalled_steps`` executed steps (at
 * least the session's ``agent.stalled_after``). ``proven_bad_step``: replays proved the
 * action at ``step`` lost (a ``label`` with source ``replay``, every item ``no``:
 * ``webshepherd blame``'s proven first bad step); ``detail`` is the proof.
 */
export interface Signal {
  action: Action10;
  detail?: Detail1;
  kind: Kind2;
  ok: Ok;
  plan_step?: PlanStep;
  planned?: Planned;
  rate?: Rate;
  repeats?: Repeats;
  session_id: SessionId20;
  stalled_steps?: StalledSteps;
  step: Step9;
  type: Type30;
}
export interface Subscribed {
  id: Id26;
  sessions: Sessions1;
  type: Type31;
}
/**
 * Reply to ``sessions.list``: newest first.
 */
export interface Sessions2 {
  id: Id27;
  sessions: Sessions3;
  type: Type32;
}
export interface SessionSummary {
  agent?: AgentInfo;
  created_at: CreatedAt;
  ended_at?: EndedAt;
  intent: Intent2;
  latest_reward?: LatestReward;
  mode?: Mode3;
  outcome?: Outcome2;
  session_id: SessionId21;
  source?: Source6;
  start_url?: StartUrl2;
  state?: State;
  steps?: Steps;
}
/**
 * Reply to ``session.get``: the whole recorded history of one session.
 */
export interface Session {
  checklist?: Checklist1 | null;
  events?: Events;
  id: Id28;
  next?: Next;
  session: SessionSummary;
  type: Type33;
}
export interface Stats {
  connections?: Connections;
  device?: DeviceStats | null;
  in_flight: InFlight;
  /**
   * Tokens in and out per scored step, and their cost.
   */
  judge?: JudgeUsage | null;
  /**
   * The OpenTelemetry export, when the daemon runs one.
   */
  otlp?: OtlpStats | null;
  pending_approvals?: PendingApprovals;
  queue_depth: QueueDepth;
  /**
   * The remote model server, for the openai backends.
   */
  remote?: RemoteEngineStats | null;
  sessions_active?: SessionsActive;
  step_latency_ms_p50?: StepLatencyMsP50;
  step_latency_ms_p95?: StepLatencyMsP95;
  time: Time;
  tokens_per_s: TokensPerS;
  type: Type34;
}
export interface DeviceStats {
  memory_total_mb?: MemoryTotalMb;
  memory_used_mb?: MemoryUsedMb;
  name: Name6;
  utilization?: Utilization;
}
/**
 * What the judge consumed since the daemon started (addition to v1): tokens in and out per
 * scored step, as the backend counted them (a remote server's ``usage``), and their price.
 */
export interface JudgeUsage {
  backend: Backend1;
  completion_tokens: CompletionTokens;
  completion_tokens_per_step?: CompletionTokensPerStep;
  cost_usd?: CostUsd;
  model: Model1;
  prompt_tokens: PromptTokens;
  prompt_tokens_per_step?: PromptTokensPerStep;
  steps: Steps1;
}
/**
 * The OpenTelemetry export (``serve --otlp-endpoint``; addition to v1).
 */
export interface OtlpStats {
  dropped_events: DroppedEvents;
  exported_spans: ExportedSpans;
  failed_spans: FailedSpans;
  queued: Queued;
}
/**
 * The model server of ``serve --backend openai`` / ``openai-chat`` (addition to v1): one
 * ``vllm serve``, or a router such as ``vllm-router`` in front of several.
 */
export interface RemoteEngineStats {
  base_url: BaseUrl;
  cached_prompt_tokens?: CachedPromptTokens;
  failures?: Failures;
  in_flight: InFlight1;
  last_error?: LastError;
  prefix_cache_hits?: PrefixCacheHits;
  prefix_cache_queries?: PrefixCacheQueries;
  prompt_tokens?: PromptTokens1;
  reachable: Reachable;
  retries?: Retries;
  server_running?: ServerRunning;
  server_waiting?: ServerWaiting;
}
/**
 * Reply to ``hook.grant``: the key, for the agent's page only (addition to v1).
 */
export interface HookGranted {
  expires_in_s: ExpiresInS1;
  id: Id29;
  key: Key1;
  reply_key?: ReplyKey;
  session_id?: SessionId22;
  type: Type35;
}
/**
 * Reply to ``hook.redeem``: the session the key follows (null: it may start one).
 */
export interface HookRedeemed {
  id: Id30;
  reply_key?: ReplyKey1;
  session_id?: SessionId23;
  type: Type36;
}
/**
 * Reply to ``label`` (addition to v1): the labels are in the recording.
 */
export interface LabelRecorded {
  id: Id31;
  session_id: SessionId24;
  step: Step10;
  type: Type37;
}
/**
 * Reply to ``tree.node`` (addition to v1): the node's update is in the recording.
 */
export interface TreeNodeRecorded {
  id: Id32;
  node: Node1;
  session_id: SessionId25;
  type: Type38;
}
/**
 * A node of a session's search tree, as its agent reported it (addition to v1): to the
 * session's subscribers, and in its event log.
 */
export interface TreeNodeEvent {
  action?: Action11;
  count?: Count1;
  depth: Depth1;
  error?: Error2;
  event: Event1;
  executed?: Executed1;
  expanded_at?: ExpandedAt1;
  node: Node2;
  parent?: Parent1;
  replays?: Replays1;
  reward?: Reward6;
  session_id: SessionId26;
  status: Status2;
  step?: Step11;
  thought?: Thought5;
  trying?: Trying1;
  type: Type39;
  url?: Url5;
}
/**
 * Reply to ``pair``: the approver credential, shown once (addition to v1).
 */
export interface Paired {
  credential: Credential;
  id: Id33;
  name: Name7;
  role: Role3;
  type: Type40;
}
/**
 * The answer to ``commit.check`` (reply with ``id``; an event to approvers and
 * subscribers without it). ``request_digest`` names the one request it answers
 * (``protocol.commits.request_digest``): a client lets only that request go.
 */
export interface CommitDecided {
  decision: DecisionInfo;
  flagged?: Flagged;
  id?: Id34;
  request: HeldRequest;
  request_digest: RequestDigest;
  session_id: SessionId27;
  type: Type41;
}
/**
 * A session's mode changed (reply to ``session.mode``; an event to approvers and
 * subscribers).
 */
export interface ModeSet {
  by?: By2;
  id?: Id35;
  mode: Mode4;
  session_id: SessionId28;
  type: Type42;
}
export interface Pong {
  id: Id36;
  type: Type43;
}
