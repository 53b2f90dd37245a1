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

test("badge: never over the page's text after its target (a result's price)", () => {
  // "ProCharge USB-C cable, 1.5 m — $8.49": the price follows the link on its line
  const link = { left: 100, top: 100, width: 200, height: 20 };
  const price = { left: 304, top: 101, width: 60, height: 18 };
  const at = placeBadge(link, BADGE, VIEW, [link], [price]);
  assert.ok(!intersects(at, price), JSON.stringify(at));
  assert.equal(at.left, 100 - BADGE_GAP - 40); // before the link, where nothing is written
});

test("badge: past the line's text when every spot beside the target has text", () => {
  // a link inside a sentence, lines of text above and below it
  const link = { left: 200, top: 100, width: 80, height: 20 };
  const text = [
    { left: 20, top: 100, width: 178, height: 20 }, // "Shipping is free; see "
    { left: 282, top: 100, width: 200, height: 20 }, // " for returns within 30 days."
    { left: 20, top: 78, width: 600, height: 20 },
    { left: 20, top: 122, width: 600, height: 20 },
  ];
  const at = placeBadge(link, BADGE, VIEW, [link], text);
  for (const t of text) assert.ok(!intersects(at, t), JSON.stringify(at));
  assert.equal(at.left, 482 + BADGE_GAP);
});

test("badge: the least text covered when no spot is clear", () => {
  const link = { left: 200, top: 100, width: 80, height: 20 };
  // text all around; after the link only a narrow word, then a blank up to the viewport's edge
  const text = [
    { left: 0, top: 0, width: 800, height: 98 },
    { left: 0, top: 122, width: 800, height: 478 },
    { left: 0, top: 98, width: 200, height: 24 },
    { left: 282, top: 98, width: 10, height: 24 },
    { left: 330, top: 98, width: 470, height: 24 },
  ];
  const at = placeBadge(link, BADGE, VIEW, [link], text);
  assert.ok(!intersects(at, link));
  assert.equal(at.left, 280 + BADGE_GAP);
});

test("badge: tucked onto the outline's border when the gaps around it are narrow", () => {
  // the first of a row of links near the viewport's top, a heading's text just under the row
  const target = { left: 20, top: 20, width: 80, height: 17 };
  const outline = { left: 15, top: 15, width: 90, height: 27 };
  const next = { left: 104, top: 17, width: 46, height: 23 };
  const heading = { left: 20, top: 59.5, width: 275, height: 36 };
  const at = placeBadge(outline, BADGE, VIEW, [outline, next], [heading], target);
  // below, on the border, centred on the target, just above the heading's text
  assert.deepEqual(at, { left: 40, top: 59.5 - 16, width: 40, height: 16 });
  assert.ok(!intersects(at, target) && !intersects(at, heading) && !intersects(at, next));
});
