// The open session: its history, the message box, the reply streaming in, and
// what its run waits for.

import { get, sessionPath, stream } from "./api.js";
import { describeCall, h } from "./dom.js";
import { PendingList } from "./pending.js";
import { Reply } from "./reply.js";

export class ChatView {
  constructor(elements, { onError, onChanged }) {
    this.ui = elements; // title, hint, thread, pending, composer, message, send
    this.onError = onError;
    this.onChanged = onChanged; // a reply ended or a decision was made
    this.sessionId = null;
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

  // Shows the session's history; the message box opens once it is shown.
  async open(sessionId) {
    this.streaming?.abort();
    this.streaming = null;
    this.sessionId = sessionId;
    this.ui.title.textContent = sessionId;
    this.ui.hint.hidden = true;
    this.ui.thread.replaceChildren();
    this.pending.clear();
    this.setBusy(true);
    const [thread] = await Promise.all([get(sessionPath(sessionId, "thread")), this.loadPending()]);
    if (this.sessionId !== sessionId) return;
    this.ui.thread.replaceChildren(...thread.messages.map(messageElement));
    this.setBusy(false);
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
    const controller = new AbortController();
    this.streaming = controller;
    this.setBusy(true);
    const reply = new Reply({ onStatus: (_, waiting) => this.statusChanged(waiting) });
    this.ui.thread.append(messageElement({ role: "user", content: text }), reply.element);
    reply.element.scrollIntoView({ block: "end" });
    try {
      const path = sessionPath(this.sessionId, "messages");
      for await (const frame of stream(path, { text }, controller.signal)) {
        reply.handle(frame);
      }
      reply.interrupted();
    } catch (error) {
      if (error.name === "AbortError") return;
      reply.failed(error.problem ?? { title: "Error", detail: String(error.message ?? error) });
    } finally {
      if (this.streaming === controller) {
        this.streaming = null;
        this.setBusy(false);
      }
    }
    this.onChanged();
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
