// The page's message line: API problems as "title: detail", a 401 as a request
// for a token.

import { ApiError, savedToken } from "./api.js";

export const TOKEN_NEEDED =
  "This server needs an API token: " +
  "paste yours into the “API token” field at the top and press Save.";

// {title, detail} for a problem document ({type, title, status, detail}).
export function explainProblem(problem) {
  if (problem.status === 401) {
    return { title: "API token needed", detail: `${TOKEN_NEEDED} (${problem.detail})` };
  }
  return { title: problem.title || "Error", detail: problem.detail || "" };
}

export function explain(error) {
  if (error instanceof ApiError) return explainProblem(error.problem);
  return { title: "Something went wrong", detail: String(error?.message ?? error) };
}

export class Notice {
  constructor(root) {
    this.root = root;
    this.title = root.querySelector("#notice-title");
    this.detail = root.querySelector("#notice-detail");
    root.querySelector("#notice-close").addEventListener("click", () => this.clear());
  }

  show(error) {
    if (isStale(error)) return;
    const { title, detail } = explain(error);
    this.title.textContent = title;
    this.detail.textContent = detail;
    this.root.dataset.status = error instanceof ApiError ? String(error.status) : "";
    this.root.hidden = false;
  }

  clear() {
    this.root.hidden = true;
  }
}

// A refusal of a token the user has replaced since: not about the page any more.
function isStale(error) {
  return error instanceof ApiError && error.status === 401 && error.token !== savedToken();
}
