// A POST sent again re-attaches to the run its runId names, and reports how that
// run ended, whatever the thread did since.

import assert from "node:assert/strict";
import { test } from "node:test";
import { agent, api, newRunId, problemOf, run, threadOf, user } from "./ratchet.mjs";

const TIMEOUT = { timeout: 120_000 };

test("a runId used again with a new message is refused, naming the runId", TIMEOUT, async () => {
  const chat = agent("echo");
  const runId = newRunId();
  chat.addMessage(user("one"));
  await run(chat, { runId });
  chat.addMessage(user("two"));
  await assert.rejects(chat.runAgent({ runId }), (error) => {
    const problem = problemOf(error);
    assert.equal(problem.status, 409);
    assert.equal(problem.type, "ConversationConflictError");
    assert.ok(problem.detail.includes(runId), problem.detail);
    return true;
  });
  assert.equal((await threadOf(chat.threadId)).length, 2, "nothing was sent");
});

test("run 1 sent again while run 2 streams gets run 1's answer", TIMEOUT, async () => {
  const chat = agent("writer");
  const first = newRunId();
  chat.addMessage(user("first"));
  const answered = await run(chat, { runId: first });
  const input = chat.messages.slice(0, 1); // what run 1 was sent

  chat.addMessage(user("second"));
  let retried;
  await run(chat, {}, {
    onTextMessageContentEvent: () => {
      // The tab that sent run 1 lost its answer and sends run 1 again.
      retried ??= run(agent("writer", { threadId: chat.threadId, messages: input }), { runId: first });
    },
  });
  const again = await retried;
  assert.equal(again.events[0].runId, first);
  assert.equal(again.result, answered.result);
  assert.ok(!again.events.some((e) => e.type === "TEXT_MESSAGE_CONTENT"), "run 2's words");
  const thread = await threadOf(chat.threadId);
  assert.deepEqual(
    again.messages.map((m) => m.id),
    thread.slice(0, 2).map((m) => m.id),
    "run 1's thread, not run 2's",
  );
});

test("re-attaching to a run whose interrupt was answered since reports that interrupt", TIMEOUT, async () => {
  const chat = agent("billing");
  const first = newRunId();
  chat.addMessage(user("pay acme"));
  const asked = await run(chat, { runId: first });
  assert.equal(asked.finished.outcome.type, "interrupt");
  const [interrupt] = asked.finished.outcome.interrupts;
  const input = chat.messages.slice(0, 1);

  const resume = [{ interruptId: interrupt.id, status: "resolved", payload: { approved: true } }];
  const paid = await run(chat, { resume });
  assert.equal(paid.result, "Paid 500 euros to acme.");

  const again = await run(agent("billing", { threadId: chat.threadId, messages: input }), {
    runId: first,
  });
  assert.equal(again.finished.outcome?.type, "interrupt");
  assert.deepEqual(
    again.finished.outcome.interrupts.map((i) => [i.id, i.reason, i.toolCallId]),
    [[interrupt.id, "approval", interrupt.toolCallId]],
  );
  const calls = again.messages.flatMap((m) => m.toolCalls ?? []);
  assert.deepEqual(calls.map((c) => c.id), [interrupt.toolCallId]);
  assert.ok(!again.messages.some((m) => m.role === "tool"), "the result came after that run");
});

test("a resume sent with a new message is refused, saying so; nothing is decided", TIMEOUT, async () => {
  const chat = agent("billing");
  chat.addMessage(user("pay acme"));
  const asked = await run(chat);
  const [interrupt] = asked.finished.outcome.interrupts;
  const typed = user("and tell me when it is done");
  chat.addMessage(typed);
  const resume = [{ interruptId: interrupt.id, status: "resolved", payload: { approved: true } }];
  await assert.rejects(chat.runAgent({ resume }), (error) => {
    const problem = problemOf(error);
    assert.equal(problem.status, 422);
    assert.equal(problem.type, "InvalidInputError");
    assert.ok(problem.detail.includes(`resumes interrupt '${interrupt.id}'`), problem.detail);
    assert.ok(problem.detail.includes(`new messages ('${typed.id}')`), problem.detail);
    assert.match(problem.detail, /Send the answer alone/);
    assert.doesNotMatch(problem.detail, /frontend tool/);
    return true;
  });
  const pending = await api(`/v1/sessions/${encodeURIComponent(chat.threadId)}/pending`);
  assert.deepEqual(pending.body.map((p) => p.action.id), [interrupt.id], "still waits");
});
