// Stop, then send again: a client that holds a part of a reply the thread does not
// keep, or that is behind the thread, can still send.

import assert from "node:assert/strict";
import { test } from "node:test";
import { agent, run, threadOf, user } from "./ratchet.mjs";

const TIMEOUT = { timeout: 120_000 };

test("stop mid-reply, then send again: the next run answers", TIMEOUT, async () => {
  const chat = agent("writer");
  chat.addMessage(user("write"));
  let stoppedAt;
  await chat.runAgent({}, {
    onTextMessageContentEvent: ({ event }) => {
      if (stoppedAt === undefined) {
        stoppedAt = event.messageId;
        chat.abortRun(); // the user pressed Stop
      }
    },
  });
  const partial = chat.messages.find((m) => m.id === stoppedAt);
  assert.ok(partial.content && !partial.content.includes("(attempt"), "a part of the reply");

  // Nobody follows the stopped reply: it stops (see stop_unwatched.test.mjs), and
  // the client's part of it, which the thread does not keep, is no conflict.
  chat.addMessage(user("again"));
  const second = await run(chat);
  assert.match(second.result, /^word0 .* word59 \(attempt 1\)$/);
  const thread = await threadOf(chat.threadId);
  assert.deepEqual(thread.map((m) => m.role), ["user", "user", "assistant"]);
  assert.ok(!thread.some((m) => m.id === stoppedAt), "the stopped turn is not kept");
  assert.deepEqual(chat.messages.map((m) => m.id), thread.map((m) => m.id));
});

test("a client without the agent's replies can still send", TIMEOUT, async () => {
  const first = agent("echo");
  first.addMessage(user("one"));
  await run(first);
  // Another tab that kept only what the user typed.
  const typed = first.messages.filter((m) => m.role === "user");
  const behind = agent("echo", { threadId: first.threadId, messages: typed });
  behind.addMessage(user("two"));
  const { result } = await run(behind);
  assert.equal(result, "echo 2: two");
  assert.equal((await threadOf(first.threadId)).length, 4);
});

test("a history that drops one of the thread's user messages is refused", TIMEOUT, async () => {
  const first = agent("echo");
  first.addMessage(user("one"));
  await run(first);
  const rewritten = agent("echo", { threadId: first.threadId, messages: [user("not one")] });
  rewritten.addMessage(user("two"));
  await assert.rejects(rewritten.runAgent(), (error) => {
    assert.equal(error.status, 409);
    assert.match(error.message, /ConversationConflictError/);
    return true;
  });
});
