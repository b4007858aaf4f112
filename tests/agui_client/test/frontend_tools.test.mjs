// Frontend tools (RunAgentInput.tools): offered to the model; a call to one ends the
// run with the call pending, and the client's next run brings its result.

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";
import { agent, problemOf, run, threadOf, user } from "./ratchet.mjs";

const TIMEOUT = { timeout: 120_000 };
const CONFIRM = {
  name: "confirm",
  description: "Ask the user to confirm an action.",
  parameters: {
    type: "object",
    properties: { action: { type: "string" } },
    required: ["action"],
  },
};
const result = (toolCallId, content) => ({
  id: `tool-${randomUUID()}`,
  role: "tool",
  toolCallId,
  content,
});

// A run whose model called `confirm`: the call it waits for.
async function asked(chat) {
  const { finished } = await run(chat, { tools: [CONFIRM] });
  assert.equal(finished.outcome?.type, "success");
  const [callId] = finished.outcome.pendingToolCallIds;
  return chat.messages.flatMap((m) => m.toolCalls ?? []).find((c) => c.id === callId);
}

test("a frontend tool call ends the run; the next run brings its result", TIMEOUT, async () => {
  const chat = agent("confirmer");
  chat.addMessage(user("v2"));
  const call = await asked(chat);
  assert.equal(call.function.name, "confirm");
  assert.deepEqual(JSON.parse(call.function.arguments), { action: "deploy v2" });

  // The frontend runs its tool and sends the result with its next run, here to
  // another replica of the server.
  const next = agent("confirmer", { threadId: chat.threadId, messages: chat.messages, replica: true });
  const answer = result(call.id, "yes");
  next.addMessage(answer);
  const answered = await run(next, { tools: [CONFIRM] });
  assert.equal(answered.result, "Confirmed: yes");
  assert.ok(!answered.events.some((e) => e.type === "TOOL_CALL_RESULT"), "the client has it");
  const thread = await threadOf(chat.threadId);
  assert.deepEqual(thread.map((m) => m.role), ["user", "assistant", "tool", "assistant"]);
  assert.deepEqual([thread[2].id, thread[2].content], [answer.id, "yes"]);
  assert.deepEqual(next.messages.map((m) => m.id), thread.map((m) => m.id));
});

test("a result for a call answered already, or for no call, is refused with 422", TIMEOUT, async () => {
  const chat = agent("confirmer");
  chat.addMessage(user("v3"));
  const call = await asked(chat);
  chat.addMessage(result(call.id, "yes"));
  await run(chat, { tools: [CONFIRM] });

  for (const [late, why] of [
    [result(call.id, "no, after all"), /has answered already/],
    [result("call-nobody-made", "yes"), /not a call of this thread/],
  ]) {
    const again = agent("confirmer", { threadId: chat.threadId, messages: chat.messages });
    again.addMessage(late);
    await assert.rejects(again.runAgent({ tools: [CONFIRM] }), (error) => {
      const problem = problemOf(error);
      assert.equal(problem.status, 422);
      assert.equal(problem.type, "InvalidInputError");
      assert.match(problem.detail, why);
      return true;
    });
  }
  assert.equal((await threadOf(chat.threadId)).length, 4, "nothing was sent");
});

test("a new message while a frontend tool call waits is refused until its result", TIMEOUT, async () => {
  const chat = agent("confirmer");
  chat.addMessage(user("v4"));
  const call = await asked(chat);
  chat.addMessage(user("never mind"));
  await assert.rejects(chat.runAgent({ tools: [CONFIRM] }), (error) => {
    const problem = problemOf(error);
    assert.equal(problem.type, "SessionBusyError");
    assert.match(problem.detail, /send each call's result as a tool message/);
    return true;
  });
  assert.ok(call);
});
