// One open session's events, for as long as the page shows it: a single
// GET .../events stream, resumed after the last event it got when it drops
// (the server shares one subscription per session among all its tabs).

import { follow, get, sessionPath } from "./api.js";

const RETRY_FIRST_MS = 500;
const RETRY_MAX_MS = 10_000;

export class SessionFeed {
  // `onFrame(frame)` is awaited for each event, in order; `onGone()`: the events
  // missed while away are no longer kept (reopen the session).
  constructor(sessionId, { onFrame, onGone, onError }) {
    this.sessionId = sessionId;
    this.handlers = { onFrame, onGone, onError };
    this.controller = new AbortController();
    this.after = null; // the id of the last event handled
    this.done = this.run().catch((error) => {
      if (error.name !== "AbortError") onError(error);
    });
  }

  close() {
    this.controller.abort();
  }

  async run() {
    const { signal } = this.controller;
    let pause = RETRY_FIRST_MS;
    while (!signal.aborted) {
      try {
        for await (const frame of follow(this.path(), signal)) {
          if (frame.event === "error") break; // the server lost the stream: resume
          pause = RETRY_FIRST_MS;
          await this.handlers.onFrame(frame);
          if (frame.id !== null) this.after = Number(frame.id);
        }
        if ((await get(sessionPath(this.sessionId))).status === "CLOSED") return;
      } catch (error) {
        if (error.name === "AbortError") return;
        if (error.status === 410) return this.handlers.onGone();
        if ([401, 403, 404].includes(error.status)) throw error; // no use retrying
      }
      await wait(pause, signal);
      pause = Math.min(RETRY_MAX_MS, pause * 2);
    }
  }

  path() {
    const path = sessionPath(this.sessionId, "events");
    return this.after === null ? path : `${path}?after=${this.after}`;
  }
}

function wait(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
