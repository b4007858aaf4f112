// The Ratchet web page: sessions, a streaming chat, approvals, state and forks,
// all through the HTTP API of the server that serves this page.

import { saveToken, savedToken } from "./api.js";
import { ChatView } from "./chat.js";
import { EvalsPanel } from "./evals.js";
import { Inbox } from "./inbox.js";
import { Inspector } from "./inspect.js";
import { Notice } from "./notice.js";
import { SessionsPanel } from "./sessions.js";

const POLL_MS = 3000; // the lists come from visibility, which lags a little

const byId = (id) => document.getElementById(id);
const notice = new Notice(byId("notice"));
const showError = (error) => notice.show(error);

const sessions = new SessionsPanel(
  {
    list: byId("sessions"),
    form: byId("new-session"),
    select: byId("agent-select"),
    name: byId("agent-name"),
  },
  { onOpen: (id) => open(id).catch(showError), onError: showError },
);
const inbox = new Inbox(
  { list: byId("inbox"), empty: byId("inbox-empty") },
  { onDecided: () => refreshLists() },
);
const evals = new EvalsPanel(
  {
    panel: byId("evals-panel"),
    list: byId("evals"),
    dialog: byId("eval-dialog"),
    title: byId("eval-title"),
    body: byId("eval-body"),
    close: byId("eval-close"),
  },
  { onError: showError },
);
const chat = new ChatView(
  {
    title: byId("chat-title"),
    hint: byId("chat-hint"),
    thread: byId("thread"),
    pending: byId("chat-pending"),
    composer: byId("composer"),
    message: byId("message"),
    send: byId("send"),
    stop: byId("stop"),
  },
  {
    onError: showError,
    onChanged: () => afterChange(),
    onLive: (id, status) => sessions.live(id, status),
  },
);
const inspector = new Inspector(
  { state: byId("state"), turns: byId("turns") },
  { onFork: (id, agent) => sessions.opened(id, agent), onError: showError },
);

async function open(sessionId) {
  sessions.select(sessionId);
  history.replaceState(null, "", `#${encodeURIComponent(sessionId)}`);
  await Promise.all([chat.open(sessionId), inspector.load(sessionId)]);
}

// A reply ended or a decision was made: what the lists and panels show changed.
function afterChange() {
  refreshLists();
  if (chat.sessionId) inspector.load(chat.sessionId).catch(showError);
}

function refreshLists() {
  return Promise.all([sessions.refresh(), inbox.refresh()]).catch(showError);
}

const sessionInUrl = () => decodeURIComponent(location.hash.slice(1));

// Loads everything with the token just saved, then reopens the session that was open
// (or named in the URL) so it is read with that token too. A session opened while the
// lists loaded, or one streaming a reply, is left alone: opening it again would cut
// off the reply.
async function loadAll() {
  notice.clear();
  const before = chat.sessionId;
  await Promise.all([sessions.loadAgents(), refreshLists(), evals.refresh()]).catch(showError);
  if (chat.sessionId !== before || chat.streaming) return;
  const current = before ?? sessionInUrl();
  if (current) await open(current).catch(showError);
}

function wireControls() {
  const token = byId("token");
  token.value = savedToken();
  byId("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    saveToken(token.value.trim());
    loadAll();
  });
  byId("token-clear").addEventListener("click", () => {
    token.value = "";
    saveToken("");
    loadAll();
  });
  window.addEventListener("hashchange", () => {
    if (sessionInUrl() && sessionInUrl() !== chat.sessionId) open(sessionInUrl()).catch(showError);
  });
  byId("sessions-refresh").addEventListener("click", () => sessions.refresh().catch(showError));
  byId("inbox-refresh").addEventListener("click", () => inbox.refresh().catch(showError));
  byId("evals-refresh").addEventListener("click", () => evals.refresh().catch(showError));
  byId("state-refresh").addEventListener("click", () =>
    inspector.load(chat.sessionId).catch(showError),
  );
}

function poll() {
  setInterval(() => {
    if (document.visibilityState === "visible") refreshLists();
  }, POLL_MS);
}

wireControls();
loadAll();
poll();
