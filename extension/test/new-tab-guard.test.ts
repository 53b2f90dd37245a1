import assert from "node:assert/strict";
import { test } from "node:test";
import { blockRule, hostOf, RULE_ID } from "../src/new-tab-guard.js";

test("the rule blocks pages' navigations from the held hosts in every tab but the settled ones", () => {
  const rule = blockRule([12, 3], ["shop.test", "127.0.0.1", "shop.test"]);
  assert.equal(rule.id, RULE_ID);
  assert.equal(rule.action.type, "block");
  assert.deepEqual(rule.condition.resourceTypes, ["main_frame"]);
  assert.deepEqual(rule.condition.excludedTabIds, [3, 12]);
  assert.deepEqual(rule.condition.initiatorDomains, ["127.0.0.1", "shop.test"]);
  assert.equal(rule.condition.requestMethods, undefined); // a GET too: it goes again once held
});

test("hosts as initiatorDomains names them; other schemes have none", () => {
  assert.equal(hostOf("https://Shop.Test:8443/cart"), "shop.test");
  assert.equal(hostOf("http://[::1]:8080/"), "::1");
  assert.equal(hostOf("chrome-extension://abc/panel.html"), null);
  assert.equal(hostOf("about:blank"), null);
  assert.equal(hostOf("not a url"), null);
});
