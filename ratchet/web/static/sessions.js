// The session list (newest first) and the form that starts a session. Statuses come
// from visibility, where a session at work stays PENDING (its index does not flip on
// every message); the session whose reply this page streams shows its run's status.

import { get, post } from "./api.js";
import { h } from "./dom.js";

export class SessionsPanel {
  constructor(elements, { onOpen, onError }) {
    this.ui = elements; // list, form, select, name
    this.onOpen = onOpen;
    this.onError = onError;
    this.selected = null;
    this.rows = [];
    this.shown = ""; // what the list shows, to redraw only when it changed
    this.unlisted = new Map(); // started here, not yet in the (eventually consistent) list
    this.running = new Map(); // session id -> the status of the run this page streams
    elements.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.create().catch(this.onError);
    });
  }

  async loadAgents() {
    const { agents } = await get("/v1/agents");
    const known = Array.isArray(agents);
    this.ui.select.hidden = !known;
    this.ui.name.hidden = known;
    if (known) {
      const options = agents.map((agent) => h("option", { value: agent }, agent));
      this.ui.select.replaceChildren(...options);
    }
  }

  async refresh() {
    this.rows = await get("/v1/sessions");
    for (const row of this.rows) this.unlisted.delete(row.id);
    this.render();
  }

  async create() {
    const agent = (this.ui.select.hidden ? this.ui.name.value : this.ui.select.value).trim();
    if (!agent) return;
    const { id } = await post("/v1/sessions", { agent });
    this.opened(id, agent);
  }

  // A session made elsewhere on the page (a fork): listed and opened at once.
  opened(id, agent) {
    this.unlisted.set(id, { id, agent, status: "new" });
    this.onOpen(id);
  }

  select(id) {
    this.selected = id;
    this.render();
  }

  // `status`: the run's status while this page streams its reply; null: it ended.
  live(id, status) {
    if (status) this.running.set(id, status);
    else this.running.delete(id);
    this.render();
  }

  render() {
    const rows = [...this.unlisted.values(), ...this.rows].map((row) =>
      this.running.has(row.id) ? { ...row, status: this.running.get(row.id) } : row,
    );
    const shown = JSON.stringify([this.selected, rows]);
    if (shown === this.shown) return;
    this.shown = shown;
    this.ui.list.replaceChildren(...rows.map((row) => this.item(row)));
  }

  item(row) {
    const current = row.id === this.selected;
    return h(
      "li",
      {},
      h(
        "button",
        {
          type: "button",
          class: "session",
          testid: "session-item",
          "data-session-id": row.id,
          "aria-current": current ? "true" : null,
          onclick: () => this.onOpen(row.id),
        },
        h("span", { class: "session-id" }, row.id),
        h("span", { class: "muted" }, row.agent ?? ""),
        h(
          "span",
          { class: "status", testid: "session-status", "data-status": row.status },
          row.status,
        ),
      ),
    );
  }
}
