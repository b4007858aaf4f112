// The assistant's reply as it streams: one element per step (text, tool call,
// tool result, custom event, retry notice), updated from SSE frames.

import { h } from "./dom.js";
import { explainProblem } from "./notice.js";

const WAITING = new Set(["AWAITING_APPROVAL", "AWAITING_INPUT"]);
// A run stopped at a safe point (Stop, or a newer message took its place).
const STOPPED = new Set(["CANCELLED", "INTERRUPTED"]);
const TEST_IDS = { text: "reply-text", retry: "retry-notice", error: "reply-error" };

// The frames of the POST that sent the message, not the session's events.
const ANSWER = new Set(["result", "error"]);

export class Reply {
  // The reply of run `runId`, or of the run that starts for request `requestId`.
  constructor({ onStatus = () => {}, runId = null, requestId = null, sessionId = null } = {}) {
    this.onStatus = onStatus;
    this.steps = []; // {kind, runId, turn, attempt, element}
    this.runId = runId; // the run answering the message
    this.requestId = requestId;
    this.sessionId = sessionId;
    this.body = h("div", { class: "steps" });
    this.status = h("p", { class: "run-status muted", testid: "run-status", role: "status" });
    this.element = h(
      "li",
      { class: "message assistant reply", testid: "reply", "data-state": "streaming" },
      h("span", { class: "role" }, "assistant"),
      this.body,
      this.status,
    );
  }

  get ended() {
    return !["streaming", "finished"].includes(this.element.dataset.state);
  }

  handle({ event, data }) {
    const handler = this.handlers[event];
    if ((ANSWER.has(event) || this.ours(event, data)) && handler) handler.call(this, data);
  }

  // Whether a session's event is of this reply's run: the session's stream holds
  // those of the runs before it (one queued ahead; a stopped one's last words).
  ours(event, data) {
    if (this.runId === null && event === "run_started") {
      const request = data.data?.request_id;
      if (this.requestId === null || request === this.requestId) this.runId = data.run_id;
    }
    return data.run_id === this.runId || (data.run_id === this.sessionId && this.runId !== null);
  }

  handlers = {
    text_delta: this.textDelta,
    tool_call: (event) => this.add("tool-call", event, `calling ${event.text ?? ""}`),
    tool_result: this.toolResult,
    custom: (event) => this.add("custom", event, `event ${JSON.stringify(event.data)}`),
    retry: this.retry,
    status: this.statusChanged,
    turn_started: (event) => this.showStatus(`RUNNING · turn ${event.turn}`),
    run_finished: this.runFinished,
    result: this.result,
    error: this.failed,
  };

  textDelta(event) {
    const last = this.steps.at(-1);
    const same =
      last?.kind === "text" &&
      last.runId === event.run_id &&
      last.turn === event.turn &&
      last.attempt === event.attempt;
    const step = same ? last : this.add("text", event, "");
    step.element.textContent += event.text ?? "";
  }

  toolResult(event) {
    const step = this.add("tool-result", event, `result: ${event.text ?? ""}`);
    if (event.data?.is_error) step.element.dataset.error = "true";
  }

  // An earlier attempt of this turn failed: its text and custom events are dropped;
  // its tool calls and results stand (sent once the server held them).
  retry(event) {
    const stale = (step) =>
      step.runId === event.run_id &&
      step.turn === event.turn &&
      step.attempt > 0 &&
      step.attempt < event.attempt &&
      !["tool-call", "tool-result"].includes(step.kind);
    for (const step of this.steps.filter(stale)) step.element.remove();
    this.steps = this.steps.filter((step) => !stale(step));
    const notice = `worker lost or attempt failed — retrying (attempt ${event.attempt})`;
    this.add("retry", { ...event, attempt: 0 }, notice);
  }

  statusChanged(event) {
    this.showStatus(event.text ?? "");
    this.onStatus(event.text ?? "", WAITING.has(event.text));
  }

  // The run ended: its answer (cut at 4,000 characters) shows until the result
  // brings the whole of it.
  runFinished(event) {
    if (event.run_id !== this.runId) return;
    const status = event.data?.status ?? "";
    if (status === "COMPLETED" && event.text) this.showAnswer(event.text, "preview");
    this.end(STOPPED.has(status) ? "stopped" : "finished", status);
  }

  result(result) {
    // A typed answer's output is its JSON value (an object, a number...): shown as JSON.
    const output = result.output ?? "";
    if (STOPPED.has(result.status) && output === "") {
      this.end("stopped", result.status); // what streamed before the stop stays
      return;
    }
    this.showAnswer(typeof output === "string" ? output : JSON.stringify(output, null, 2), "final");
    this.end("done", result.status ?? "COMPLETED");
  }

  showAnswer(text, kind) {
    for (const step of this.steps.filter((step) => step.kind === "text")) step.element.remove();
    this.steps = this.steps.filter((step) => step.kind !== "text");
    this.add("text", {}, text).element.dataset.answer = kind;
  }

  failed(problem) {
    const { title, detail } = explainProblem(problem);
    this.add("error", {}, `${title}: ${detail}`).element.setAttribute("role", "alert");
    this.end("failed", "FAILED");
  }

  // The stream ended without a result or error (the connection dropped).
  interrupted() {
    if (this.ended) return;
    this.add("error", {}, "The stream ended before the answer: reopen the session to see it.");
    this.end("interrupted", "disconnected");
  }

  add(kind, event, text) {
    const testid = TEST_IDS[kind] ?? kind;
    const element = h("p", { class: `step ${kind}`, testid }, text);
    const step = {
      kind,
      runId: event.run_id,
      turn: event.turn ?? 0,
      attempt: event.attempt ?? 0,
      element,
    };
    this.steps.push(step);
    this.body.append(element);
    return step;
  }

  showStatus(text) {
    this.status.textContent = text;
  }

  end(state, status) {
    this.element.dataset.state = state;
    this.showStatus(status);
  }
}
