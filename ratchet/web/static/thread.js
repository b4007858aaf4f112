// The open session's messages as its thread keeps them, by position, with what is
// still going on (replies streaming, messages sent from here) after them. It opens
// at the newest message and reads older ones a page at a time as it is scrolled up.

import { get, sessionPath } from "./api.js";
import { describeCall, h } from "./dom.js";

// Messages shown when a session opens, and how many more each page up loads: a long
// session's thread is read a page at a time, never whole.
export const PAGE = 50;
const NEAR_TOP_PX = 150; // scrolled this close to the top: the page before loads
const NEAR_BOTTOM_PX = 60; // this close to the bottom: it stays there as messages come

export class ThreadList {
  constructor(list, { onError }) {
    this.list = list;
    this.onError = onError;
    this.sessionId = null;
    this.start = 0; // the position of the first message shown
    this.end = 0; // the position after the last one shown
    this.shown = new Set(); // the ids of the messages shown
    this.loading = null; // the read of an earlier page under way
    this.pinned = true; // at the bottom: kept there as the thread grows
    this.earlier = h(
      "li",
      { class: "earlier", testid: "earlier" },
      h("button", { type: "button", onclick: () => this.showEarlier() }),
    );
    list.addEventListener("scroll", () => this.scrolled());
    new MutationObserver(() => this.pinned && this.toBottom()).observe(list, {
      childList: true,
      subtree: true,
      characterData: true,
    });
  }

  // Shows `page` (the latest messages of `sessionId`), scrolled to its newest one.
  reset(sessionId, page) {
    this.sessionId = sessionId;
    this.loading = null;
    this.shown = new Set();
    this.list.replaceChildren(this.earlier, ...this.elements(page.messages));
    this.end = page.start + page.messages.length;
    this.shownFrom(page.start);
    this.pinned = true;
    this.toBottom();
  }

  clear() {
    this.sessionId = null;
    this.list.replaceChildren();
  }

  // Loads the page of messages before the first one shown, keeping in view what was.
  showEarlier() {
    this.loading ??= this.readEarlier()
      .catch(this.onError)
      .finally(() => (this.loading = null));
    return this.loading;
  }

  async readEarlier() {
    const sessionId = this.sessionId;
    const after = Math.max(0, this.start - PAGE);
    const page = await get(threadPath(sessionId, { after, limit: this.start - after }));
    if (this.sessionId !== sessionId || page.start !== after) return;
    const height = this.list.scrollHeight;
    this.earlier.after(...this.elements(page.messages));
    this.list.scrollTop += this.list.scrollHeight - height;
    this.shownFrom(after);
  }

  shownFrom(start) {
    this.start = start;
    this.earlier.hidden = start === 0;
    this.earlier.firstChild.textContent = `Show ${Math.min(start, PAGE)} earlier of ${start}`;
  }

  // Reads the messages after the last one shown and shows the first `count(messages)`
  // of them before what is still going on, in order, each once; `shows(message)`:
  // false for one shown already as it streamed.
  async catchUp(count, shows) {
    const sessionId = this.sessionId;
    const page = await get(threadPath(sessionId, { after: this.end }));
    if (this.sessionId !== sessionId || page.start !== this.end) return;
    for (const message of page.messages.slice(0, count(page.messages))) {
      this.end += 1;
      if (message.id && this.shown.has(message.id)) continue;
      if (shows(message)) this.settled(...this.elements([message]));
      else if (message.id) this.shown.add(message.id);
    }
  }

  // Elements of what goes on (a reply streaming, a message sent from here), after
  // the messages; `settled` ones stay where they are from then on.
  live(element) {
    element.dataset.live = "";
    this.list.append(element);
    this.pinned = true;
    this.toBottom();
  }

  settled(...elements) {
    const going = this.list.querySelector(":scope > [data-live]");
    if (going) going.before(...elements);
    else this.list.append(...elements);
  }

  // Live elements that now stay where they are, as settled messages do.
  keep(...elements) {
    for (const element of elements) delete element.dataset.live;
  }

  elements(messages) {
    for (const message of messages) if (message.id) this.shown.add(message.id);
    return messages.map(messageElement);
  }

  scrolled() {
    const { scrollTop, scrollHeight, clientHeight } = this.list;
    this.pinned = scrollHeight - scrollTop - clientHeight < NEAR_BOTTOM_PX;
    if (scrollTop < NEAR_TOP_PX && this.start > 0 && this.sessionId) this.showEarlier();
  }

  toBottom() {
    this.list.scrollTop = this.list.scrollHeight;
  }
}

function threadPath(sessionId, params) {
  return `${sessionPath(sessionId, "thread")}?${new URLSearchParams(params)}`;
}

export function messageElement(message) {
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
