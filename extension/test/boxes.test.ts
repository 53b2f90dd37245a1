import { strict as assert } from "node:assert";
import { test } from "node:test";
import { screenshotBoxes } from "../src/capture/boxes.js";

test("boxes: visible elements with a box, scaled to screenshot pixels", () => {
  const boxes = screenshotBoxes(
    {
      "12": { visibility: 1, bbox: [10, 20, 100, 30], clickable: true, set_of_marks: true },
      "13": { visibility: 0, bbox: [0, 0, 5, 5], clickable: false, set_of_marks: false },
      "14": { visibility: 1, bbox: null, clickable: false, set_of_marks: false },
      "15": { visibility: 0.5, bbox: [1.25, 2, 3, 0], clickable: false, set_of_marks: false },
    },
    2,
  );
  assert.deepEqual(boxes, { "12": [20, 40, 200, 60] });
});
