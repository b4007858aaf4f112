// Calls to the Ratchet HTTP API, with the token the user saved in this browser.
// Every failure becomes an ApiError holding a problem ({type, title, status, detail}).

import { frames } from "./sse.js";

const TOKEN_KEY = "ratchet.token";

export function savedToken() {
  return localStorage.getItem(TOKEN_KEY) ?? "";
}

export function saveToken(token) {
  if (token) localStorage.setItem(TOKEN_KEY, token);
  else localStorage.removeItem(TOKEN_KEY);
}

export class ApiError extends Error {
  constructor(problem, token = savedToken()) {
    super(problem.detail || problem.title);
    this.problem = problem;
    this.token = token; // the token the request sent
  }

  get status() {
    return this.problem.status;
  }
}

export const get = (path) => call("GET", path);
export const post = (path, body) => call("POST", path, body);

export async function call(method, path, body) {
  const response = await request(method, path, body, "application/json");
  try {
    return await response.json();
  } catch {
    throw new ApiError(problem("BadResponse", "Unreadable answer", response.status, path));
  }
}

// POSTs `body` (with `headers` besides the usual ones) and yields the SSE frames of
// the answer as they arrive.
export async function* stream(path, body, signal, headers = {}) {
  const response = await request("POST", path, body, "text/event-stream", signal, headers);
  yield* frames(response.body);
}

// GETs an event stream (a session's events) and yields its frames as they arrive.
export async function* follow(path, signal) {
  const response = await request("GET", path, undefined, "text/event-stream", signal);
  yield* frames(response.body);
}

export function sessionPath(id, ...rest) {
  return ["/v1/sessions", encodeURIComponent(id), ...rest].join("/");
}

async function request(method, path, body, accept, signal, extra = {}) {
  const headers = { ...extra, Accept: accept };
  const token = savedToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  const init = { method, headers, signal };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ApiError(
      problem("NetworkError", "No answer", 0, `The server did not answer: ${error.message}.`),
    );
  }
  if (!response.ok) throw new ApiError(await problemOf(response), token);
  return response;
}

async function problemOf(response) {
  const text = await response.text();
  try {
    const body = JSON.parse(text);
    if (body && typeof body.title === "string") return { status: response.status, ...body };
  } catch {
    // not a problem document: described below
  }
  const title = `${response.status} ${response.statusText}`.trim();
  return problem("HttpError", title, response.status, text.slice(0, 300));
}

function problem(type, title, status, detail) {
  return { type, title, status, detail };
}
