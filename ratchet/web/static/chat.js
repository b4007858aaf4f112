// The open session: its history, the message box, the replies streaming in, and
// what its run waits for. While it is open the page follows the session's events,
// so what is sent from another tab or app shows here too, with its reply.

import { get, post, sessionPath, stream } from "./api.js";
import { SessionFeed } from "./feed.js";
import { PendingList } from "./pending.js";
import { Reply } from "./reply.js";
import { PAGE, ThreadList, messageElement } from "./thread.js";

export class ChatView {
  constructor(elements, { onError, onChanged, onLive = () => {} }) {
    this.ui = elements; // title, hint, thread, pending, composer, message, send, stop
    this.onError = onError;
    this.onChanged = onChanged; // a reply ended or a decision was made
    this.onLive = onLive; // (session id, its run's status while a reply streams, else null)
    this.sessionId = null;
    this.visit = null; // changes at every open: answers for an earlier one are dropped
    this.thread = new ThreadList(elements.thread, { onError });
    this.feed = null; // the open session's events
    this.streaming = null; // the AbortController of the reply to a message sent here
    this.sent = new Map(); // request id -> a message sent here: {text, element, reply}
    this.run = null; // the run the feed shows: {label, prefix, own, reply}
    this.kept = []; // id prefixes of runs whose messages show as they streamed
    this.pending = new PendingList(elements.pending, { onDecided: () => onChanged() });
    elements.composer.addEventListener("submit", (event) => {
      event.preventDefault();
      this.sendTyped();
    });
    elements.message.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) this.sendTyped();
    });
    elements.stop.addEventListener("click", () => this.stop().catch(onError));
  }

  // Shows the session's latest messages, scrolled to the newest, and follows its
  // events from the run in progress (or the next one) on.
  async open(sessionId) {
    this.leave();
    const visit = (this.visit = {});
    this.sessionId = sessionId;
    this.ui.title.textContent = sessionId;
    this.ui.hint.hidden = true;
    this.thread.clear();
    this.pending.clear();
    this.setBusy();
    const [page, status] = await Promise.all([
      get(`${sessionPath(sessionId, "thread")}?last=${PAGE}`),
      get(sessionPath(sessionId)),
      this.loadPending(),
    ]);
    if (this.visit !== visit) return;
    this.thread.reset(sessionId, page);
    const number = (label) => runNumber(sessionId, label);
    const next = number(status.current_run) ?? status.runs + 1;
    let following = false; // events of the runs before `next` are shown already
    this.feed = new SessionFeed(sessionId, {
      onFrame: (frame) => {
        following ||= number(frame.data?.run_id) >= next;
        return following && this.visit === visit ? this.handle(frame) : undefined;
      },
      onGone: () => this.open(sessionId).catch(this.onError),
      onError: this.onError,
    });
    this.setBusy();
  }

  // Stops following the open session and streaming its reply.
  leave() {
    this.feed?.close();
    this.feed = null;
    this.streaming?.abort();
    this.streaming = null;
    this.sent.clear();
    this.run = null;
    this.kept = [];
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

  // The message shows at once and its reply streams from the POST's answer; the
  // feed knows the run by its request id and leaves it to that stream.
  async send(text) {
    const key = requestId();
    const visit = this.visit;
    const element = messageElement({ role: "user", content: text });
    const reply = new Reply({ ...this.replyOptions(), requestId: key });
    this.sent.set(key, { text, element, reply });
    this.thread.live(element);
    const path = sessionPath(this.sessionId, "messages");
    const frames = (signal) => stream(path, { text }, signal, { "Idempotency-Key": key });
    await this.show(reply, frames);
    if (this.visit !== visit) return;
    if (!reply.runId) {
      this.sent.delete(key); // it started no run: the feed has nothing of it
      this.thread.keep(element, reply.element);
    }
    this.onChanged();
  }

  // Stops the run in progress at its next safe point: its reply ends with what it
  // had, and the message box takes the next message.
  async stop() {
    this.ui.stop.disabled = true;
    this.ui.stop.textContent = "Stopping…";
    try {
      await post(sessionPath(this.sessionId, "stop"));
    } finally {
      this.ui.stop.textContent = "Stop";
      this.setBusy();
    }
  }

  // Streams `frames(signal)` into `reply`, the message box busy meanwhile, until the
  // reply's result.
  async show(reply, frames) {
    const controller = new AbortController();
    const sessionId = this.sessionId;
    this.streaming = controller;
    this.setBusy();
    this.onLive(sessionId, "RUNNING");
    this.thread.live(reply.element);
    try {
      for await (const frame of frames(controller.signal)) reply.handle(frame);
      if (!reply.ended) reply.interrupted();
    } catch (error) {
      if (error.name === "AbortError") return;
      reply.failed(error.problem ?? { title: "Error", detail: String(error.message ?? error) });
    } finally {
      this.onLive(sessionId, null);
      if (this.streaming === controller) {
        this.streaming = null;
        this.setBusy();
      }
    }
  }

  // An event of the open session, from the feed.
  async handle(frame) {
    const { event, data } = frame;
    if (event === "run_started") await this.runStarted(data);
    else if (event === "run_finished" && data.run_id === this.run?.label) {
      await this.runFinished(frame);
    } else if (this.run?.reply && !this.run.own) this.run.reply.handle(frame);
  }

  // A run started: one sent from here streams on its own; another one's message
  // shows, then its reply as it streams.
  async runStarted(data) {
    const own = this.sent.get(data.data?.request_id ?? "");
    const execution = data.data?.execution_id;
    const run = { label: data.run_id, prefix: execution ? `msg_${execution}_` : null, own };
    this.run = run;
    if (own && run.prefix) this.kept.push(run.prefix);
    await this.catchUp(run, false);
    if (own || this.run !== run) return;
    run.reply = new Reply({ ...this.replyOptions(), runId: run.label });
    this.thread.live(run.reply.element);
    this.onLive(this.sessionId, "RUNNING");
    this.setBusy();
  }

  // The run ended: the messages it added take their places. A reply that ended
  // otherwise than with its answer (stopped, failed) stays as it streamed.
  async runFinished(frame) {
    const run = this.run;
    const { reply, own } = run;
    if (reply) {
      reply.handle(frame);
      if (frame.data.data?.status === "COMPLETED") reply.element.remove();
      else if (run.prefix) this.kept.push(run.prefix);
    }
    this.run = null;
    const visit = this.visit;
    this.thread.keep(...[own?.element, own?.reply.element, reply?.element].filter(Boolean));
    await this.catchUp(run, true);
    if (this.visit !== visit) return;
    if (own) {
      this.sent.forEach((value, key) => value === own && this.sent.delete(key));
    } else if (reply) {
      this.onLive(this.sessionId, null);
      this.setBusy();
      this.onChanged();
    }
  }

  // Shows the messages the thread gained: when `run` starts, those before its own
  // (its message: they show as it streams); when it `ended`, its own, up to its
  // last (those after are the next run's). A read that fails is told; the next
  // run's start reads them again.
  async catchUp(run, ended) {
    const mine = (message) => run.prefix !== null && (message.id ?? "").startsWith(run.prefix);
    const count = (messages) => {
      if (!ended) return indexOr(messages.findIndex(mine), messages.length);
      if (run.prefix !== null) return messages.findLastIndex(mine) + 1;
      return indexOr(messages.findIndex((message) => message.role === "user"), messages.length);
    };
    try {
      await this.thread.catchUp(count, (message) => this.shows(message));
    } catch (error) {
      this.onError(error);
    }
  }

  // Whether a message read from the thread is still to show: not one sent from
  // here, nor one of a reply kept as it streamed.
  shows(message) {
    const id = message.id ?? "";
    if (this.kept.some((prefix) => id.startsWith(prefix))) return false;
    if (message.role !== "user") return true;
    const own = [...this.sent.values()].find((s) => !s.matched && s.text === message.content);
    if (own) own.matched = true;
    return !own;
  }

  replyOptions() {
    const sessionId = this.sessionId;
    return {
      sessionId,
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

  // The message box waits while a reply streams; Stop shows then.
  setBusy() {
    const replying = Boolean(this.streaming || this.run?.reply);
    this.ui.send.disabled = replying || !this.sessionId || !this.feed;
    this.ui.send.textContent = replying ? "Replying…" : "Send";
    this.ui.stop.hidden = !replying;
    if (!replying) this.ui.stop.disabled = false;
  }
}

function indexOr(index, otherwise) {
  return index < 0 ? otherwise : index;
}

// The number of the session's run `<session>-run-<n>` (null for anything else).
function runNumber(sessionId, label) {
  const prefix = `${sessionId}-run-`;
  const number = label?.startsWith(prefix) ? Number(label.slice(prefix.length)) : NaN;
  return Number.isInteger(number) ? number : null;
}

// A request id for a send (its `Idempotency-Key`): the feed tells its run by it.
function requestId() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `page-${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}
