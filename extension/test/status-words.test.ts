import assert from "node:assert/strict";
import { test } from "node:test";
import type { LinkState, PairingState } from "../src/messages.js";
import { connectionWords, personWords } from "../src/status-words.js";

const URL = "ws://127.0.0.1:8765/v1";
const link = (conn: LinkState["conn"], token = true, detail: string | null = null): LinkState => ({ conn, detail, url: URL, token });
const person = (paired: boolean, l: LinkState, name: string | null = null): PairingState => ({ paired, name, note: null, link: l });

test("the token's side: no token, refused, unreachable, connected; never 'paired'", () => {
  const words = [
    connectionWords(link("unauthorized", false, "no token")),
    connectionWords(link("unauthorized", true, "bad token")),
    connectionWords(link("disconnected", true, "closed (1006)")),
    connectionWords(link("connected")),
  ];
  assert.match(words[0]!, /^No token: run `webshepherd token` and paste it under “Connect to the daemon”/);
  assert.equal(words[1], `Token refused by the daemon at ${URL} (bad token): paste what \`webshepherd token\` prints now under “Connect to the daemon” in the options.`);
  assert.match(words[2]!, /not reachable \(closed \(1006\)\): start it with `webshepherd serve`/);
  assert.equal(words[3], `Connected to the daemon at ${URL}.`);
  for (const w of words) assert.doesNotMatch(w, /pair/i);
});

test("the person's side: paired as a name, not paired, nothing to say while not connected", () => {
  assert.equal(personWords(person(true, link("connected"), "alice")), "Paired as extension:alice: this browser decides approvals.");
  assert.match(personWords(person(false, link("connected"))), /^Not paired: .*“Pair as a person”.*`webshepherd pair extension`/);
  assert.equal(personWords(person(false, link("unauthorized", false))), "");
});
