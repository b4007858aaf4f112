// Talking to the `ratchet web` that tests/web/test_agui_client.py started: the official
// AG-UI client (@ag-ui/client's HttpAgent) pointed at it, and its plain HTTP API.

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { HttpAgent } from "@ag-ui/client";

const BASE = process.env.RATCHET_URL;
const REPLICA = process.env.RATCHET_REPLICA_URL; // another ratchet web, same agents
const TOKEN = process.env.RATCHET_TOKEN;
if (!BASE || !TOKEN) {
  throw new Error("Run these through tests/web/test_agui_client.py: it sets RATCHET_URL and RATCHET_TOKEN.");
}

export const newThread = () => `agui-js-${randomUUID().slice(0, 8)}`;
export const newRunId = () => `run-${randomUUID()}`;

// An HttpAgent for `name` on a thread (a new one unless given), holding `messages`;
// `replica`: it talks to the other ratchet web.
export function agent(
  name,
  { threadId = newThread(), messages = [], fetch, headers = {}, replica = false } = {},
) {
  return new HttpAgent({
    url: `${replica ? REPLICA : BASE}/v1/agui/${name}`,
    headers: { Authorization: `Bearer ${TOKEN}`, ...headers },
    threadId,
    initialMessages: structuredClone(messages),
    ...(fetch ? { fetch } : {}),
  });
}

export const user = (text) => ({ id: `user-${randomUUID()}`, role: "user", content: text });

// Runs `agent` once; every event it got, and what runAgent returned.
export async function run(agent, parameters = {}, subscriber = {}) {
  const events = [];
  const outcome = await agent.runAgent(parameters, {
    ...subscriber,
    onEvent: (params) => {
      events.push(params.event);
      return subscriber.onEvent?.(params);
    },
  });
  const finished = events.findLast((e) => e.type === "RUN_FINISHED");
  return { events, finished, messages: agent.messages, ...outcome };
}

// The problem document (RFC 9457) of a run the server refused.
export function problemOf(error) {
  const body = typeof error.payload === "string" ? JSON.parse(error.payload) : error.payload;
  return { status: error.status, ...body };
}

// GET (or another method, with a JSON body) on the HTTP API.
export async function api(path, { method = "GET", body } = {}) {
  const response = await fetch(`${BASE}${path}`, {
    method,
    headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

export const threadOf = async (threadId) =>
  (await api(`/v1/sessions/${encodeURIComponent(threadId)}/thread`)).body.messages;

// POSTs a RunAgentInput without the client (to read what it hides: SSE ids);
// yields each frame as {id, data}.
export async function* frames(name, input, signal) {
  const response = await fetch(`${BASE}/v1/agui/${name}`, {
    method: "POST",
    headers: {
      Authorization: `Bearer ${TOKEN}`,
      "Content-Type": "application/json",
      Accept: "text/event-stream",
    },
    body: JSON.stringify(input),
    signal,
  });
  assert.equal(response.status, 200, await response.clone().text());
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of response.body) {
    buffer += decoder.decode(chunk, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const fields = Object.fromEntries(
        block.split("\n").filter((l) => !l.startsWith(":")).map((l) => l.split(/: (.*)/s, 2)),
      );
      if (fields.data) yield { id: fields.id ?? null, data: JSON.parse(fields.data) };
    }
  }
}
