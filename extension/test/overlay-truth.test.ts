/** Issue 51.5: the overlay tells the truth. What it draws comes from these pure parts
 * (session-views.ts, modes.ts, overlay/styles.ts); overlay.ts only turns them into elements. */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { ApprovalRequest, CommitDecided, Scored, Signal } from "../src/protocol.gen.js";
import { OVERLAY_CSS } from "../src/overlay/styles.js";
import { BAR_SEGMENTS, barLabel, checklistRows, drawable, rewardChart, SessionViews } from "../src/session-views.js";

const HERE = "http://shop.test/cart";
const items = (yes: number) => [{ index: 3, yes, in_progress: 1 - yes, no: 0 }];

const scored = (step: number, reward: number, yes = 0.9): Scored =>
  ({
    type: "scored",
    session_id: "s1",
    step,
    results: [
      { index: 0, reward, items: items(yes), feedback: "", samples: [], parsed_samples: 1 },
      { index: 1, reward: 0.1, items: items(0), feedback: "", samples: [], parsed_samples: 1 },
    ],
    best: 0,
    decision: { status: "auto", index: 0, action: "click('18')" },
    timing: { queue_ms: 0, model_ms: 0 },
  }) as unknown as Scored;

const CANDS = [
  { thought: "", action: "click('18')" },
  { thought: "", action: "scroll(0, 200)" },
];

const request = (reason: string, step: number): ApprovalRequest =>
  ({
    type: "approval.request",
    request_id: `r-${reason}-${step}`,
    session_id: "s1",
    step,
    reason,
    candidate: { thought: "", action: "click('18')" },
    reward: 0.18,
    expires_in_s: 60,
  }) as unknown as ApprovalRequest;

const decided = (status: string, flagged = false): CommitDecided =>
  ({
    type: "commit.decided",
    session_id: "s1",
    request_id: "c1",
    request: { method: "POST", url: "http://shop.test/order", kind: "request", fields: [], body_bytes: 0 },
    decision: { status, decider: flagged ? "mode" : "person" },
    flagged,
  }) as unknown as CommitDecided;

const stalled = (step: number, steps: number): Signal => ({
  type: "signal",
  session_id: "s1",
  step,
  kind: "stalled",
  action: "noop()",
  ok: false,
  stalled_steps: steps,
  detail: `no checklist item advanced for ${steps} executed steps`,
});

function view(views: SessionViews) {
  views.checklist("s1", [
    { index: 2, title: "Search" },
    { index: 3, title: "Add to cart" },
    { index: 4, title: "Place the order" },
  ]);
  views.observed("s1", 4, HERE, null);
  return views.scored(scored(4, 0.62), CANDS);
}

test("the checklist is numbered 1..n as the report numbers it, whatever the judge's own numbers", () => {
  const v = view(new SessionViews());
  const rows = checklistRows(v, drawable(v, HERE).last);
  assert.deepEqual(
    rows.map((r) => [r.number, r.index, r.title]),
    [
      [1, 2, "Search"],
      [2, 3, "Add to cart"],
      [3, 4, "Place the order"],
    ],
  );
  assert.equal(rows[1]!.probs?.yes, 0.9); // matched by the judge's number
});

test("an item predicted by a step that waits for a person is drawn as a prediction, not as done", () => {
  const views = new SessionViews();
  let v = view(views);
  let row = checklistRows(v, drawable(v, HERE).last)[1]!;
  assert.equal(row.predicted, false);
  assert.equal(barLabel(row), "done 90%, in progress 10%, not done 0%");
  v = views.approval(request("commit", 4)); // Add to cart's POST paused
  row = checklistRows(v, drawable(v, HERE).last)[1]!;
  assert.equal(row.predicted, true);
  assert.equal(barLabel(row), "predicted, not happened yet: done 90%, in progress 10%, not done 0%");
  v = views.resolved("r-commit-4")!; // decided: what happened is drawn as it is again
  assert.equal(checklistRows(v, drawable(v, HERE).last)[1]!.predicted, false);
  const refused = { ...scored(4, 0.62), decision: { status: "rejected", decider: "person" } } as unknown as Scored;
  v = views.scored(refused, CANDS); // a refused step's labels never happened either
  assert.equal(checklistRows(v, drawable(v, HERE).last)[1]!.predicted, true);
});

test("'Stalled' is not shown after a request that ran committed, and a stall from before it is cleared", () => {
  const views = new SessionViews();
  view(views);
  assert.equal(views.signal(stalled(4, 3))?.stalled?.steps, 3);
  assert.equal(views.commitDecided(decided("approved"))?.stalled, null); // the order went through
  assert.equal(views.signal(stalled(5, 4))?.stalled, null); // its steps include the commit
  const other = new SessionViews();
  view(other);
  other.commitDecided(decided("rejected")); // refused: nothing moved
  assert.equal(other.signal(stalled(5, 4))?.stalled?.steps, 4);
  const flagged = new SessionViews();
  view(flagged);
  flagged.commitDecided(decided("auto", true)); // ran in watch, flagged
  assert.equal(flagged.signal(stalled(5, 4))?.stalled, null);
});

test("while a second score of the step is held, no value of the earlier scoring is drawn", () => {
  const views = new SessionViews();
  let v = view(views);
  assert.notEqual(drawable(v, HERE).last, null);
  v = views.approval(request("always", 4)); // the same step scored again and held (0.18)
  const { last } = drawable(v, HERE);
  assert.equal(last, null); // no 0.62 or 0.1 beside the card's 0.18
  assert.ok(checklistRows(v, last).every((r) => r.probs === null));
  v = views.resolved("r-always-4")!;
  assert.notEqual(drawable(v, HERE).last, null);
});

test("the bars have a legend for each segment, and one step gives a value, not an empty chart", () => {
  assert.deepEqual(
    BAR_SEGMENTS.map((s) => s.cls),
    ["yes", "prog", "no"],
  );
  for (const s of BAR_SEGMENTS) {
    assert.match(OVERLAY_CSS, new RegExp(`\\.bar \\.${s.cls} \\{ background: (#[0-9a-f]{6})`));
    const bar = new RegExp(`\\.bar \\.${s.cls} \\{ background: (#[0-9a-f]{6})`).exec(OVERLAY_CSS)![1];
    const swatch = new RegExp(`\\.swatch\\.${s.cls} \\{ background: (#[0-9a-f]{6})`).exec(OVERLAY_CSS)?.[1];
    assert.equal(swatch, bar, `the legend's ${s.legend} is the bar's colour`);
  }
  assert.deepEqual(rewardChart([]), { kind: "none" });
  assert.deepEqual(rewardChart([0.62]), { kind: "value", value: 0.62 });
  assert.deepEqual(rewardChart([null]), { kind: "value", value: null });
  assert.deepEqual(rewardChart([0.62, null]), { kind: "value", value: 0.62 });
  assert.deepEqual(rewardChart([0.62, 0.7]), { kind: "curve" });
});

test("no text in the overlay is case-changed: a URL like /cart/add reads as it is", () => {
  assert.doesNotMatch(OVERLAY_CSS, /text-transform\s*:\s*(uppercase|lowercase|capitalize)/);
  assert.doesNotMatch(OVERLAY_CSS, /font-variant(-caps)?\s*:\s*(small|all|petite|unicase|titling)/);
});
