import assert from "node:assert/strict";
import { test } from "node:test";
import { BADGE_GAP, intersects, placeBadge } from "../src/overlay/badge-placement.js";

const VIEW = { width: 800, height: 600 };
const BADGE = { width: 40, height: 16 };

test("badge: after the outline, vertically centred on it", () => {
  const outline = { left: 100, top: 100, width: 200, height: 30 };
  assert.deepEqual(placeBadge(outline, BADGE, VIEW, [outline]), {
    left: 300 + BADGE_GAP,
    top: 107,
    width: 40,
    height: 16,
  });
});

test("badge: before the outline when there is no room after it", () => {
  const outline = { left: 700, top: 100, width: 90, height: 16 };
  const at = placeBadge(outline, BADGE, VIEW, [outline]);
  assert.equal(at.left, 700 - BADGE_GAP - 40);
  assert.ok(!intersects(at, outline));
});

test("badge: above, then below, when neither side has room", () => {
  const wide = { left: 10, top: 100, width: 780, height: 20 };
  assert.equal(placeBadge(wide, BADGE, VIEW, [wide]).top, 100 - BADGE_GAP - 16);
  const atTop = { left: 10, top: 0, width: 780, height: 20 };
  assert.equal(placeBadge(atTop, BADGE, VIEW, [atTop]).top, 20 + BADGE_GAP);
});

test("badge: stacked targets and badges already placed are left free", () => {
  // a list of links one under the other, the second's right side taken by another badge
  const first = { left: 50, top: 100, width: 200, height: 20 };
  const second = { left: 50, top: 120, width: 200, height: 20 };
  const other = { left: 250, top: 118, width: 60, height: 24 };
  const at = placeBadge(second, BADGE, VIEW, [first, second, other]);
  for (const t of [first, second, other]) assert.ok(!intersects(at, t), JSON.stringify(at));
  assert.equal(at.left, 50 - BADGE_GAP - 40);
});

test("badge: when every spot is taken, one that leaves its own target free", () => {
  const outline = { left: 100, top: 100, width: 200, height: 30 };
  const everywhere = { left: 0, top: 0, width: 800, height: 600 };
  const at = placeBadge(outline, BADGE, VIEW, [outline, everywhere]);
  assert.ok(!intersects(at, outline));
});
