import assert from "node:assert/strict";
import { test } from "node:test";
import { NavHistory } from "../src/demonstration-nav.js";

test("typed navigation is goto, links are not actions, back and forward by history", () => {
  const h = new NavHistory();
  h.start("http://a/1");
  assert.equal(h.commit("http://a/2", "link", []), null);
  assert.equal(h.commit("http://a/3", "typed", ["from_address_bar"]), "goto('http://a/3')");
  assert.equal(h.commit("http://a/2", "link", ["forward_back"]), "go_back()");
  assert.equal(h.commit("http://a/1", "link", ["forward_back"]), "go_back()");
  assert.equal(h.commit("http://a/2", "link", ["forward_back"]), "go_forward()");
  assert.equal(h.commit("http://a/2", "reload", []), null);
  assert.equal(h.commit("http://a/4", "form_submit", []), null);
  assert.equal(h.commit("http://a/2", "link", ["forward_back"]), "go_back()");
});
