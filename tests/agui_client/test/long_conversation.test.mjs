// A long conversation: @ag-ui/client sends the whole history with every message. A
// thread of 2,000 messages with 2 KB replies (about 4 MB of JSON) is answered, and
// about as fast as a short one. (The server's own time, within 1.5x of a short
// one's, is timed without a client's costs in tests/web/test_agui.py; here the
// official client's handling of 2,000 messages is counted too.)

import assert from "node:assert/strict";
import { test } from "node:test";
import { agent, run, threadOf, user } from "./ratchet.mjs";

const TIMEOUT = { timeout: 300_000 };
const SEEDS = 4; // sends of "seed 250": 4 x (1 + 500 + 1) messages
const ROUNDS = 7;

// A client holding the thread as the session keeps it, on its thread; `fetch`: its own.
const holding = async (threadId, fetch) =>
  agent("seeder", {
    threadId,
    messages: (await threadOf(threadId)).map(({ id, role, content }) => ({ id, role, content })),
    ...(fetch ? { fetch } : {}),
  });

// A run of a client holding the thread, with one new message: milliseconds from its
// request leaving the client to the run's end (RUN_FINISHED), and the bytes it sent.
// (Before the request, @ag-ui/client prepares the input: with 2,000 messages that
// takes it some 50 ms of its own, which this does not count against the server.)
async function answered(threadId) {
  let sent;
  const timed = (url, init) => {
    sent = performance.now();
    return fetch(url, init);
  };
  const chat = await holding(threadId, timed);
  chat.addMessage(user("hello"));
  const bytes = JSON.stringify(chat.messages).length;
  let ended, first;
  const { result } = await run(chat, {}, {
    onRunStartedEvent: () => { first = performance.now(); },
    onRunFinishedEvent: () => { ended = performance.now(); },
  });
  assert.equal(result, "echo: hello");
  return { ms: ended - sent, first: first - sent, bytes };
}

const median = (values) => values.toSorted((a, b) => a - b)[Math.floor(values.length / 2)];

test("a 2,000-message history is answered within 2.5x the time of a short one", TIMEOUT, async () => {
  // The seeder makes user messages of its own (not what a run's snapshot expects):
  // each send is made by a client holding the thread as the session keeps it.
  const long = agent("seeder");
  for (let n = 0; n < SEEDS; n++) {
    const seeding = n ? await holding(long.threadId) : long;
    seeding.addMessage(user("seed 250"));
    await run(seeding);
  }
  const short = agent("seeder");
  short.addMessage(user("hi"));
  await run(short);
  assert.ok((await threadOf(long.threadId)).length >= 2_000);

  const times = { short: [], long: [] };
  const firsts = { short: [], long: [] };
  let bytes = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 ? ["long", "short"] : ["short", "long"]; // ABBA
    for (const which of order) {
      const took = await answered(which === "long" ? long.threadId : short.threadId);
      times[which].push(took.ms);
      firsts[which].push(took.first);
      if (which === "long") bytes = took.bytes;
    }
  }
  assert.ok(bytes > 4_000_000, `the history sent is ${bytes} bytes`);
  const [s, l] = [median(times.short), median(times.long)];
  console.log(`long ${l.toFixed(0)} ms, short ${s.toFixed(0)} ms; first events ${JSON.stringify(firsts)}`);
  assert.ok(l <= 2.5 * s, `long ${l.toFixed(0)} ms vs short ${s.toFixed(0)} ms: ${JSON.stringify(times)}`);
});
