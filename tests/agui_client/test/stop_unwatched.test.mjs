// Stop is abortRun(): the client drops the run's stream. The server cannot tell that
// from a lost connection, so the run goes on until a new message comes; if nobody
// follows the run then, it stops and the new message runs at once. A client that
// re-attaches instead gets the rest of the reply.

import assert from "node:assert/strict";
import { test } from "node:test";
import { agent, newRunId, run, threadOf, user } from "./ratchet.mjs";

const TIMEOUT = { timeout: 120_000 };
const WHOLE = /^word0 .* word59 \(attempt 1\)$/;

// Starts a slow reply on `chat` and presses Stop at its first word; the reply's message id.
async function stopped(chat, parameters = {}) {
  let messageId;
  await chat.runAgent(parameters, {
    onTextMessageContentEvent: ({ event }) => {
      messageId ??= event.messageId;
      chat.abortRun();
    },
  });
  return messageId;
}

// Runs `chat` and measures how long after the POST its first text came (ms).
async function timed(chat, parameters = {}) {
  const sent = Date.now();
  let firstText;
  const outcome = await run(chat, parameters, {
    onTextMessageContentEvent: () => {
      firstText ??= Date.now() - sent;
    },
  });
  return { ...outcome, firstText };
}

test("Stop mid-reply, then send: the stopped reply stops, the new one starts at once", TIMEOUT, async () => {
  const chat = agent("slow_writer");
  chat.addMessage(user("write"));
  const partial = await stopped(chat);
  assert.ok(partial);

  chat.addMessage(user("again"));
  const second = await timed(chat);
  assert.ok(second.firstText < 2_000, `the first new text came after ${second.firstText} ms`);
  assert.match(second.result, WHOLE);
  const thread = await threadOf(chat.threadId);
  assert.deepEqual(thread.map((m) => m.role), ["user", "user", "assistant"], "the stopped turn is not kept");
  assert.deepEqual(chat.messages.map((m) => m.id).filter((id) => id !== partial), thread.map((m) => m.id));
});

test("Stop, then re-attach with the same run: the rest of the reply comes", TIMEOUT, async () => {
  const chat = agent("slow_writer");
  const runId = newRunId();
  chat.addMessage(user("write"));
  const input = structuredClone(chat.messages);
  await stopped(chat, { runId });

  const again = await run(agent("slow_writer", { threadId: chat.threadId, messages: input }), { runId });
  assert.match(again.result, WHOLE);
  const thread = await threadOf(chat.threadId);
  assert.deepEqual(thread.map((m) => m.role), ["user", "assistant"]);
  assert.match(thread[1].content, WHOLE);
});

test("a reply another tab still follows is not stopped: the new message waits", TIMEOUT, async () => {
  const first = agent("writer");
  first.addMessage(user("write"));
  let second;
  const answered = await run(first, {}, {
    onTextMessageContentEvent: () => {
      if (second) return;
      const other = agent("writer", { threadId: first.threadId, messages: first.messages.slice(0, 1) });
      other.addMessage(user("more"));
      second = run(other);
    },
  });
  assert.match(answered.result, WHOLE);
  assert.match((await second).result, WHOLE);
  const thread = await threadOf(first.threadId);
  assert.deepEqual(thread.map((m) => m.role), ["user", "assistant", "user", "assistant"]);
});

test("forwardedProps.steering 'interrupt': a new message stops a reply someone follows", TIMEOUT, async () => {
  const first = agent("slow_writer");
  first.addMessage(user("write"));
  const forwardedProps = { steering: "interrupt" };
  let second;
  const interrupted = await run(first, { forwardedProps }, {
    onTextMessageContentEvent: () => {
      if (second) return;
      const other = agent("slow_writer", { threadId: first.threadId, messages: first.messages.slice(0, 1) });
      other.addMessage(user("more"));
      second = timed(other, { forwardedProps });
    },
  });
  assert.equal(interrupted.finished?.outcome?.type ?? "cancelled", "cancelled", JSON.stringify(interrupted.finished));
  const next = await second;
  assert.ok(next.firstText < 2_000, `the first new text came after ${next.firstText} ms`);
  assert.match(next.result, WHOLE);
});

test("a tab that never followed the reply does not stop it, through another replica", TIMEOUT, async () => {
  // Nobody watches the run on the replica the message reaches, but its sender holds
  // nothing of the reply: someone may follow it elsewhere (here, on the other replica).
  const first = agent("writer");
  first.addMessage(user("write"));
  let second;
  const answered = await run(first, {}, {
    onTextMessageContentEvent: () => {
      if (second) return;
      const typed = first.messages.slice(0, 1);
      const other = agent("writer", { threadId: first.threadId, messages: typed, replica: true });
      other.addMessage(user("more"));
      second = run(other);
    },
  });
  assert.match(answered.result, WHOLE);
  assert.match((await second).result, WHOLE);
  const thread = await threadOf(first.threadId);
  assert.deepEqual(thread.map((m) => m.role), ["user", "assistant", "user", "assistant"]);
});
