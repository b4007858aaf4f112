// The protocol's own rules, as the official client reads them: the version the
// producer speaks, the ids a thread may have, the size of a body.

import assert from "node:assert/strict";
import { test } from "node:test";
import { agent, api, frames, newRunId, newThread, problemOf, run, user } from "./ratchet.mjs";

const TIMEOUT = { timeout: 120_000 };

test("RUN_STARTED declares the protocol version", TIMEOUT, async () => {
  const chat = agent("echo");
  chat.addMessage(user("hi"));
  const { events } = await run(chat);
  assert.equal(events[0].type, "RUN_STARTED");
  assert.equal(events[0].protocolVersion, "1.0");
});

for (const [what, threadId] of [["empty", ""], ["1,001 characters", "t".repeat(1001)]]) {
  test(`a threadId ${what} is refused with 422 and starts nothing`, TIMEOUT, async () => {
    const chat = agent("echo", { threadId });
    chat.addMessage(user("hi"));
    await assert.rejects(chat.runAgent(), (error) => {
      const problem = problemOf(error);
      assert.equal(problem.status, 422);
      assert.equal(problem.type, "InvalidInputError");
      assert.match(problem.detail, /threadId must be 1 to 200 characters/);
      return true;
    });
  });
}

test("a threadId refused for its messages leaves no session behind", TIMEOUT, async () => {
  const threadId = newThread();
  const chat = agent("echo", { threadId });
  chat.addMessage({ id: "a-1", role: "assistant", content: "I was never said" });
  chat.addMessage({ id: "s-1", role: "system", content: "be brief" });
  await assert.rejects(chat.runAgent(), (error) => problemOf(error).status === 422);
  assert.equal((await api(`/v1/sessions/${threadId}`)).status, 404);
});

// A client (or a proxy) that streams the request body in chunks, without a length.
const chunked = (url, init) =>
  fetch(url, {
    ...init,
    duplex: "half",
    body: new Blob([init.body]).stream(),
  });

test("a chunked body over 8 MiB is refused with 413", TIMEOUT, async () => {
  const chat = agent("echo", { fetch: chunked });
  chat.addMessage(user("x".repeat(8_500_000)));
  await assert.rejects(chat.runAgent(), (error) => {
    const problem = problemOf(error);
    assert.equal(problem.status, 413);
    assert.equal(problem.type, "PayloadTooLargeError");
    assert.match(problem.detail, /over 8,388,608 bytes.*--max-body/);
    return true;
  });
});

test("a chunked body under the limit is run", TIMEOUT, async () => {
  const chat = agent("echo", { fetch: chunked });
  chat.addMessage(user("streamed in chunks"));
  const { result } = await run(chat);
  assert.equal(result, "echo 1: streamed in chunks");
});

test("the first frame has an SSE id: a client cut off after it misses nothing", TIMEOUT, async () => {
  const [threadId, runId, message] = [newThread(), newRunId(), user("write")];
  const input = { threadId, runId, messages: [message], tools: [], context: [], state: {} };
  const cut = new AbortController();
  let first;
  for await (const frame of frames("writer", input, cut.signal)) {
    first = frame;
    break; // the connection is lost after the first frame
  }
  cut.abort();
  assert.equal(first.data.type, "RUN_STARTED");
  assert.notEqual(first.id, null, "RUN_STARTED carries an id to resume after");

  const again = agent("writer", {
    threadId,
    messages: [message],
    headers: { "Last-Event-ID": first.id },
  });
  const { events, result } = await run(again, { runId });
  const text = events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => e.delta);
  assert.equal(`${text.join("")}(attempt 1)`, result, "every word, once");
});

test("a send whose new text is over --max-message is refused with 413, naming it", TIMEOUT, async () => {
  const chat = agent("echo");
  chat.addMessage(user("y".repeat(300_000)));
  await assert.rejects(chat.runAgent(), (error) => {
    const problem = problemOf(error);
    assert.equal(problem.status, 413);
    assert.equal(problem.type, "PayloadTooLargeError");
    assert.match(problem.detail, /300,0\d\d bytes of new message text.*--max-message/);
    return true;
  });
});
