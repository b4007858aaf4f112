// The open session: its history, the message box, the reply streaming in, and
// what its run waits for. A session opened while a reply is in progress (the page
// was reloaded, or it was opened in another tab) follows that reply as it goes on.

import { follow, get, sessionPath, stream } from "./api.js";
import { describeCall, h } from "./dom.js";
import { PendingList } from "./pending.js";
import { Reply } from "./reply.js";

// Messages shown when a session opens, and how many more each "Show earlier" loads:
// a long session's thread is read a page at a time, never whole.
const PAGE = 50;

export class ChatView {
  constructor(elements, { onError, onChanged, onLive = () => {} }) {
    this.ui = elements; // title, hint, thread, pending, composer, message, send
    this.onError = onError;
    this.onChanged = onChanged; // a reply ended or a decision was made
    this.onLive = onLive; // (session id, its run's status while a reply streams, else null)
    this.sessionId = null;
    this.start = 0; // the position of the first message shown
    this.earlier = h(
      "li",
      { class: "earlier", testid: "earlier" },
      h("button", { type: "button", onclick: () => this.showEarlier().catch(onError) }),
    );
    this.streaming = null; // the AbortController of the reply in progress
    this.pending = new PendingList(elements.pending, { onDecided: () => onChanged() });
    elements.composer.addEventListener("submit", (event) => {
      event.preventDefault();
      this.sendTyped();
    });
    elements.message.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) this.sendTyped();
    });
  }

  // Shows the session's history; the message box opens once it is shown, unless a
  // reply is in progress: then that reply shows as it goes on.
  async open(sessionId) {
    this.streaming?.abort();
    this.streaming = null;
    this.sessionId = sessionId;
    this.ui.title.textContent = sessionId;
    this.ui.hint.hidden = true;
    this.ui.thread.replaceChildren();
    this.pending.clear();
    this.setBusy(true);
    const [thread, status] = await Promise.all([
      get(threadPath(sessionId, { last: PAGE })),
      get(sessionPath(sessionId)),
      this.loadPending(),
    ]);
    if (this.sessionId !== sessionId) return;
    this.ui.thread.replaceChildren(this.earlier, ...thread.messages.map(messageElement));
    this.shownFrom(thread.start);
    this.setBusy(false);
    if (status.status === "RUNNING") this.follow(status);
  }

  // Loads the page of messages before the first one shown.
  async showEarlier() {
    const sessionId = this.sessionId;
    const after = Math.max(0, this.start - PAGE);
    const page = await get(threadPath(sessionId, { after, limit: this.start - after }));
    if (this.sessionId !== sessionId || page.start !== after) return;
    this.earlier.after(...page.messages.map(messageElement));
    this.shownFrom(after);
  }

  shownFrom(start) {
    this.start = start;
    this.earlier.hidden = start === 0;
    this.earlier.firstChild.textContent = `Show ${Math.min(start, PAGE)} earlier of ${start}`;
  }

  async loadPending() {
    const sessionId = this.sessionId;
    const views = await get(sessionPath(sessionId, "pending"));
    if (this.sessionId === sessionId) this.pending.update(views);
  }

  sendTyped() {
    const text = this.ui.message.value.trim();
    if (!text || this.ui.send.disabled) return;
    this.ui.message.value = "";
    this.send(text);
  }

  async send(text) {
    this.ui.thread.append(messageElement({ role: "user", content: text }));
    const path = sessionPath(this.sessionId, "messages");
    await this.show(new Reply(this.replyOptions()), (signal) => stream(path, { text }, signal));
    this.onChanged();
  }

  // The run in progress (or the queued one next to start), from the session's
  // events: those before its `run_started` are skipped. When it ends, the session
  // is opened again, to show the answer as the thread keeps it.
  async follow(status) {
    const sessionId = this.sessionId;
    const runId = status.current_run ?? `${sessionId}-run-${status.runs + 1}`;
    let ours = false;
    const frames = async function* (signal) {
      for await (const frame of follow(sessionPath(sessionId, "events"), signal)) {
        // A turn's events name the session; the run's own events name the run.
        ours ||= frame.data?.run_id === runId;
        if (!ours) continue;
        yield frame;
        if (frame.event === "run_finished" && frame.data.run_id === runId) return;
      }
    };
    const reply = new Reply({ ...this.replyOptions(), runId });
    const ended = await this.show(reply, frames, { untilFinished: true });
    if (ended && this.sessionId === sessionId) await this.open(sessionId).catch(this.onError);
    this.onChanged();
  }

  // Streams `frames(signal)` into `reply`, the message box busy meanwhile, until the
  // reply's result (or, `untilFinished`, its run's end); whether it got there.
  async show(reply, frames, { untilFinished = false } = {}) {
    const controller = new AbortController();
    const sessionId = this.sessionId;
    this.streaming = controller;
    this.setBusy(true);
    this.onLive(sessionId, "RUNNING");
    this.ui.thread.append(reply.element);
    reply.element.scrollIntoView({ block: "end" });
    let done = false;
    try {
      for await (const frame of frames(controller.signal)) reply.handle(frame);
      done = untilFinished ? reply.element.dataset.state !== "streaming" : reply.ended;
      if (!done) reply.interrupted();
    } catch (error) {
      if (error.name === "AbortError") return false;
      reply.failed(error.problem ?? { title: "Error", detail: String(error.message ?? error) });
    } finally {
      this.onLive(sessionId, null);
      if (this.streaming === controller) {
        this.streaming = null;
        this.setBusy(false);
      }
    }
    return done;
  }

  replyOptions() {
    const sessionId = this.sessionId;
    return {
      onStatus: (status, waiting) => {
        this.onLive(sessionId, status);
        this.statusChanged(waiting);
      },
    };
  }

  statusChanged(waiting) {
    if (!waiting) {
      this.pending.update([]);
      return;
    }
    this.loadPending().catch(this.onError);
    this.onChanged(); // the lists and turns show the wait too
  }

  setBusy(busy) {
    this.ui.send.disabled = busy || !this.sessionId;
    this.ui.send.textContent = busy && this.streaming ? "Replying…" : "Send";
  }
}

function threadPath(sessionId, params) {
  return `${sessionPath(sessionId, "thread")}?${new URLSearchParams(params)}`;
}

function messageElement(message) {
  const parts = [];
  if (message.role === "tool") {
    const result = `${message.name ?? "tool"} → ${message.content ?? ""}`;
    parts.push(h("p", { class: "step tool-result" }, result));
  } else if (message.content) {
    parts.push(h("p", { class: "text" }, message.content));
  }
  for (const call of message.tool_calls ?? []) {
    const described = `calling ${describeCall(call.name, call.arguments)}`;
    parts.push(h("p", { class: "step tool-call" }, described));
  }
  return h(
    "li",
    { class: `message ${message.role}`, testid: "message", "data-role": message.role },
    h("span", { class: "role" }, message.role === "user" ? "you" : message.role),
    parts,
  );
}
