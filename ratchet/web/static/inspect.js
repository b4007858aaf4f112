// The open session's state (as JSON) and its turns, each a point to fork at: the
// latest ones, and earlier ones on demand.

import { get, post, sessionPath } from "./api.js";
import { h } from "./dom.js";

const TURNS_PAGE = 20; // turns shown at first, and how many more each "Show" adds

export class Inspector {
  constructor(elements, { onFork, onError }) {
    this.ui = elements; // state, turns
    this.onFork = onFork;
    this.onError = onError;
    this.sessionId = null;
    this.agent = null; // the open session's
    this.loads = 0; // loads started: only the latest one's answers are shown
    this.items = []; // the open session's turns, oldest first
    this.shown = TURNS_PAGE;
    this.earlier = h(
      "li",
      { class: "earlier", testid: "earlier-turns" },
      h("button", { type: "button", onclick: () => this.showEarlier() }),
    );
  }

  async load(sessionId) {
    if (sessionId !== this.sessionId) this.shown = TURNS_PAGE;
    this.sessionId = sessionId;
    const load = ++this.loads;
    await Promise.all([this.loadState(load), this.loadTurns(load)]);
  }

  async loadState(load) {
    if (!this.sessionId) return;
    const state = await get(sessionPath(this.sessionId, "state"));
    if (load === this.loads) this.ui.state.textContent = JSON.stringify(values(state), null, 2);
  }

  async loadTurns(load) {
    const sessionId = this.sessionId;
    if (!sessionId) return;
    const [records, status] = await Promise.all([
      get(sessionPath(sessionId, "turns")),
      get(sessionPath(sessionId)),
    ]);
    if (load !== this.loads) return; // a later load (or another session's) is under way
    this.agent = status.agent;
    // Fork points count turns across the session's runs, from 1; the records are
    // those of its current workflow run, whose completed turns are the session's
    // last ones (the run in progress's included).
    const completed = records.filter((record) => record.status === "completed");
    const done = (status.turns ?? 0) + (status.run_turns ?? 0);
    const first = Math.max(1, done - completed.length + 1);
    let next = first;
    this.items = records.map((record) =>
      this.item(record, record.status === "completed" ? next++ : null),
    );
    this.render();
  }

  showEarlier() {
    this.shown += TURNS_PAGE;
    this.render();
  }

  render() {
    const hidden = Math.max(0, this.items.length - this.shown);
    this.earlier.hidden = hidden === 0;
    this.earlier.firstChild.textContent = `Show ${Math.min(hidden, TURNS_PAGE)} earlier of ${hidden}`;
    this.ui.turns.replaceChildren(this.earlier, ...this.items.slice(hidden));
  }

  item(record, sessionTurn) {
    const attempts = record.attempts.length;
    const facts = [record.agent, record.status, `${attempts} attempt${attempts === 1 ? "" : "s"}`];
    const label = sessionTurn === null ? "turn (in progress)" : `turn ${sessionTurn}`;
    return h(
      "li",
      { class: "turn", testid: "turn" },
      h("span", {}, label),
      h("span", { class: "muted" }, facts.join(" · ")),
      sessionTurn === null
        ? null
        : h(
            "button",
            {
              type: "button",
              testid: "fork",
              "aria-label": `Fork at turn ${sessionTurn}`,
              onclick: () => this.fork(sessionTurn).catch(this.onError),
            },
            "Fork here",
          ),
    );
  }

  async fork(turn) {
    const { id } = await post(sessionPath(this.sessionId, "fork"), { at_turn: turn });
    this.onFork(id, this.agent);
  }
}

// The agents' state as their code sees it, each key's value by agent, out of the
// export's envelope (format, versions, serializers: GET .../state has them all). A
// value another serializer than JSON stored is named, not shown.
function values(state) {
  const value = (entry) =>
    entry.serializer === undefined || entry.serializer === "json"
      ? entry.data
      : `(stored by the ${entry.serializer} serializer)`;
  return Object.fromEntries(
    (state.agents ?? []).map((agent) => [
      agent.agent,
      Object.fromEntries(Object.entries(agent.entries ?? {}).map(([key, e]) => [key, value(e)])),
    ]),
  );
}
