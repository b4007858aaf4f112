// Evaluation reports (`ratchet web --reports DIR`): the list, and one report's cases
// side by side in a dialog. The panel shows only to identities allowed to read them.

import { get } from "./api.js";
import { h } from "./dom.js";

const score = (value) => (value ?? 0).toFixed(3);
const usd = (value) => `$${(value ?? 0).toFixed(6)}`;

export class EvalsPanel {
  constructor({ panel, list, dialog, title, body, close }, { onError }) {
    this.ui = { panel, list, dialog, title, body };
    this.onError = onError;
    close.addEventListener("click", () => dialog.close());
  }

  async refresh() {
    // Asked first, so a server without --reports (404) or a caller who may not read
    // them (403) costs no failed request in the browser's console.
    const { reports: served } = await get("/v1/server");
    let reports;
    try {
      reports = served ? await get("/v1/evals") : null;
    } catch (error) {
      if (error.status !== 403 && error.status !== 404) throw error; // the token changed
    }
    if (!reports) {
      this.ui.panel.hidden = true; // none served, or not for this identity
      return;
    }
    this.ui.panel.hidden = false;
    this.ui.list.replaceChildren(...reports.map((report) => this.item(report)));
  }

  item(report) {
    return h(
      "li",
      {},
      h(
        "button",
        {
          type: "button",
          class: "session",
          testid: "eval-item",
          onclick: () => this.open(report.name).catch(this.onError),
        },
        h("span", { class: "session-id" }, report.name),
        h("span", { class: "muted" }, `${report.agent} · ${report.cases} cases`),
        h("span", { class: "status" }, `${score(report.old_score)} → ${score(report.new_score)}`),
      ),
    );
  }

  async open(name) {
    const report = await get(`/v1/evals/${encodeURIComponent(name)}`);
    this.ui.title.textContent =
      `${name}: ${report.agent}, score ${score(report.old_score)} → ` +
      `${score(report.new_score)}, cost ${usd(report.old_cost_usd)} → ${usd(report.new_cost_usd)}`;
    const head = h(
      "tr",
      {},
      ...["case", "prompt", "old answer", "new answer", "old", "new"].map((t) => h("th", {}, t)),
    );
    const rows = report.cases.map((c) =>
      h(
        "tr",
        { testid: "eval-case" },
        h("td", {}, c.case.id),
        h("td", {}, c.case.prompt),
        h("td", {}, c.old.error ?? c.old.answer ?? ""),
        h("td", {}, c.new.error ?? c.new.answer ?? ""),
        h("td", { class: "num" }, score(c.old_score.value)),
        h("td", { class: "num" }, score(c.new_score.value)),
      ),
    );
    this.ui.body.replaceChildren(h("table", { class: "eval" }, h("thead", {}, head), h("tbody", {}, ...rows)));
    this.ui.dialog.showModal();
  }
}
