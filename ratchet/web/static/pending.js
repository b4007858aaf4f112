// What a run waits for a person to decide: tool calls to approve or reject, and
// questions to answer. Used inline in the chat and in the approvals inbox.

import { post, sessionPath } from "./api.js";
import { describeCall, h, time } from "./dom.js";
import { explainProblem } from "./notice.js";

const DECIDABLE = new Set(["approval", "input"]);

// A list of pending cards kept in step with the server's list: a card stays while
// its action waits (so a half-typed reason survives a refresh) and, once decided
// here, stays to show the decision.
export class PendingList {
  constructor(list, { showSession = false, onDecided = () => {} } = {}) {
    this.list = list;
    this.options = { showSession, onDecided };
    this.cards = new Map();
  }

  get size() {
    return this.list.children.length;
  }

  update(views) {
    const waiting = views.filter((view) => DECIDABLE.has(view.action.kind));
    const keys = new Set(waiting.map(keyOf));
    for (const [key, card] of this.cards) {
      if (!keys.has(key) && !card.decided) {
        card.element.remove();
        this.cards.delete(key);
      }
    }
    for (const view of waiting) {
      if (this.cards.has(keyOf(view))) continue;
      const card = new PendingCard(view, this.options);
      this.cards.set(keyOf(view), card);
      this.list.append(card.element);
    }
  }

  clear() {
    this.cards.clear();
    this.list.replaceChildren();
  }
}

function keyOf(view) {
  return `${view.run_id}/${view.action.id}`;
}

class PendingCard {
  constructor(view, { showSession, onDecided }) {
    this.view = view;
    this.onDecided = onDecided;
    this.decided = false;
    this.outcome = h("p", { class: "outcome", role: "status", testid: "decision" });
    this.controls = view.action.kind === "input" ? this.answerForm() : this.verdictForm();
    this.element = h(
      "li",
      {
        class: "card",
        testid: "pending-card",
        "data-session-id": view.run_id,
        "data-action-id": view.action.id,
      },
      h("p", { class: "what", testid: "pending-what" }, this.describe()),
      h("p", { class: "muted" }, this.where(showSession)),
      this.controls,
      this.outcome,
    );
  }

  describe() {
    const { action } = this.view;
    if (action.kind === "input") return `Question: ${action.question ?? ""}`;
    return `Approve ${describeCall(action.call.name, action.call.arguments)}?`;
  }

  where(showSession) {
    const parts = [`turn ${this.view.turn}`, `waiting since ${time(this.view.waiting_since)}`];
    return (showSession ? [this.view.run_id, ...parts] : parts).join(" · ");
  }

  verdictForm() {
    const reason = h("input", { type: "text", "aria-label": "Reason for rejecting" });
    reason.placeholder = "reason (to reject)";
    return h(
      "div",
      { class: "row" },
      this.button("Approve", "approve", () => ({ decision: "approve" })),
      reason,
      this.button("Reject", "reject", () => ({
        decision: "reject",
        reason: reason.value.trim() || null,
      })),
    );
  }

  answerForm() {
    const answer = h("input", {
      type: "text",
      "aria-label": "Your answer",
      testid: "answer-input",
    });
    return h(
      "div",
      { class: "row" },
      answer,
      this.button("Answer", "answer", () => ({ decision: "answer", answer: answer.value })),
    );
  }

  button(label, name, body) {
    const action = this.view.action;
    return h(
      "button",
      {
        type: "button",
        testid: name,
        "aria-label": `${label} ${action.call ? action.call.name : "question"} (${action.id})`,
        onclick: () => this.decide(body()),
      },
      label,
    );
  }

  async decide(body) {
    this.setBusy(true);
    try {
      const path = sessionPath(this.view.run_id, "decisions");
      this.showDecision(await post(path, { id: this.view.action.id, ...body }));
      this.onDecided();
    } catch (error) {
      this.showFailure(error);
    }
  }

  showDecision(decision) {
    let verdict = decision.approved ? "approved" : "rejected";
    if (decision.answer != null) verdict = "answered";
    const by = decision.by ? ` by ${decision.by}` : "";
    const why = decision.reason ? `: ${decision.reason}` : "";
    this.finish("decided", `${verdict}${by}${why}`);
  }

  showFailure(error) {
    const problem = error.problem ?? { title: "Error", detail: String(error.message ?? error) };
    if (problem.status === 409) {
      const text = `Not recorded: decided already, or no longer waiting. ${problem.detail}`;
      this.finish("conflict", text);
      return;
    }
    const { title, detail } = explainProblem(problem);
    this.outcome.textContent = `${title}: ${detail}`;
    this.outcome.dataset.state = "error";
    this.setBusy(false);
  }

  finish(state, text) {
    this.decided = true;
    this.outcome.textContent = text;
    this.outcome.dataset.state = state;
    this.element.dataset.state = state;
    this.controls.remove();
  }

  setBusy(busy) {
    for (const control of this.controls.querySelectorAll("button, input")) {
      control.disabled = busy;
    }
  }
}
