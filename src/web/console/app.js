// SPDX-License-Identifier: MIT
// The sandboxd console: log in with a token, try code in sessions, decide the tool calls that
// wait for a person, and (with the operator's token) watch the server. Every figure comes
// from the API, with the same token and checks as any client; the page itself holds no data.
// Failures (a refused token, a session that ended, a server that restarts) become a message
// in the banner, and the console keeps polling until sandboxd answers again.
import { ApiError, call, seg, stream, text, token } from "./api.js";
import { Approvals } from "./approvals.js";
import { setupEditor } from "./editor.js";
import { Operate, healthLine } from "./operate.js";
import { clearOutput, startRun } from "./output.js";
import { renderFiles, renderSessions, upload } from "./sessions.js";

const $ = (id) => document.getElementById(id);
const POLL_MS = 1500;
const HEALTH_MS = 5000;

const state = { current: null, sessions: [], operator: false, startedAt: null, running: false };
const banners = new Map(); // source -> message

function say(source, message) {
  if (message) banners.set(source, message);
  else banners.delete(source);
  const b = $("banner");
  b.textContent = [...banners.values()].join(" ");
  b.hidden = banners.size === 0;
}

function failed(source, e) {
  if (e instanceof ApiError && e.unauthorized) return loggedOut(e.message);
  say(source, e.message || String(e));
}

function loggedOut(message) {
  token.clear();
  state.operator = false;
  $("main").hidden = true;
  $("logout").hidden = true;
  $("login").hidden = false;
  $("who").textContent = "";
  say("login", message);
  $("token").focus();
}

async function login() {
  token.set($("token").value.trim());
  $("token").value = "";
  try {
    await call("GET", "/v1/sessions");
  } catch (e) {
    if (e.unauthorized) return loggedOut(e.message);
    token.clear();
    return say("login", e.message);
  }
  say("login", null);
  enter();
}

function setCurrent(id) {
  state.current = id;
  $("current").textContent = id || "none";
  renderSessions($("sessions-body"), $("sessions-empty"), state.sessions, sessionsUi);
  refreshFiles();
}

async function refreshFiles() {
  const list = $("files");
  if (!state.current) {
    list.replaceChildren();
    return;
  }
  try {
    await renderFiles(list, state.current, (m) => say("files", m));
  } catch (e) {
    if (e.status !== 404) failed("files", e);
  }
}

const sessionsUi = {
  current: () => state.current,
  use: (id) => setCurrent(id),
  end: async (id) => {
    try {
      await call("DELETE", `/v1/sessions/${seg(id)}`);
    } catch (e) {
      if (e.status !== 404) return failed("sessions", e);
    }
    if (state.current === id) setCurrent(null);
    await refreshSessions();
  },
};

async function newSession() {
  const servers = [...document.querySelectorAll("#servers input:checked")].map((i) => i.value);
  const body = { servers };
  if ($("profile").value) body.profile = $("profile").value;
  $("new-session").disabled = true;
  try {
    const s = await call("POST", "/v1/sessions", body);
    say("session", null);
    setCurrent(s.sessionId);
    await refreshSessions();
    return s.sessionId;
  } catch (e) {
    failed("session", e);
    return null;
  } finally {
    $("new-session").disabled = false;
  }
}

async function run() {
  const code = editor.value;
  if (!code.trim()) return say("run", "There is no code to run.");
  if (state.running) return;
  state.running = true;
  $("run").disabled = true;
  say("run", null);
  try {
    const id = state.current || (await newSession());
    if (!id) return;
    const block = startRun($("output"), code, id);
    try {
      await stream(`/v1/sessions/${seg(id)}/execute`, { code }, (name, data) => {
        if (name === "approval_required") approvals.add(id, data);
        const h = block[name];
        if (h) h(data);
      });
    } catch (e) {
      if (e.status === 404) {
        block.fail(`Session ${id} no longer exists: it ended (idle, deleted, or sandboxd ` +
          "restarted). Create a new session to go on.");
        if (state.current === id) setCurrent(null);
      } else if (e.unauthorized) {
        loggedOut(e.message);
      } else {
        block.fail(e.message);
      }
    }
  } finally {
    state.running = false;
    $("run").disabled = false;
    refreshSessions();
    refreshFiles();
  }
}

async function refreshSessions() {
  let list;
  try {
    list = (await call("GET", "/v1/sessions")).sessions;
  } catch (e) {
    return failed("poll", e);
  }
  say("poll", null);
  state.sessions = list;
  if (state.current && !list.some((s) => s.sessionId === state.current)) {
    say("session", `Session ${state.current} no longer exists: it ended (idle, deleted, or ` +
      "sandboxd restarted). Create a new session to go on.");
    setCurrent(null);
  }
  renderSessions($("sessions-body"), $("sessions-empty"), list, sessionsUi);
  if (state.operator) operate.showTenants(list);
  await approvals.refresh();
}

async function refreshHealth() {
  let h;
  try {
    h = await call("GET", "/healthz");
  } catch (e) {
    // 503 while draining still carries the status
    if (e.status === 503) h = { status: "draining (sandboxd is shutting down)" };
    else return failed("poll", e);
  }
  $("health").textContent = healthLine(h);
  if (h.version) {
    // When this sandboxd started, by our clock: a later start is a restart, however long the
    // page went without an answer (comparing uptimes misses a restart seen late).
    const startedAt = Date.now() / 1000 - h.uptimeS;
    if (state.startedAt !== null && startedAt > state.startedAt + 1) {
      say("restart", "sandboxd restarted: the sessions it held are gone.");
    }
    state.startedAt = startedAt;
    state.operator = true;
    $("operate").hidden = false;
    operate.showHealth(h);
  }
}

async function refreshMetrics() {
  if (!state.operator) return;
  try {
    operate.addMetrics(await text("/metrics"));
  } catch (e) {
    failed("poll", e);
  }
}

async function loadOptions() {
  let o;
  try {
    o = await call("GET", "/v1/session-options");
  } catch (e) {
    return failed("options", e);
  }
  const servers = $("servers");
  servers.replaceChildren();
  for (const name of o.servers) {
    const label = document.createElement("label");
    const box = document.createElement("input");
    box.type = "checkbox";
    box.value = name;
    label.append(box, " " + name);
    servers.append(label);
  }
  if (!o.servers.length) servers.textContent = "none configured";
  const profile = $("profile");
  for (const name of o.profiles) {
    const opt = document.createElement("option");
    opt.value = opt.textContent = name;
    profile.append(opt);
  }
}

// Run fn every ms while the console is shown; a failure of one round never stops the next.
function every(ms, fn) {
  const loop = async () => {
    try {
      if (!$("main").hidden && !document.hidden) await fn();
    } catch (e) {
      say("bug", `The console failed: ${e.message}. It goes on trying.`);
      throw e; // and the page's error log has it
    } finally {
      setTimeout(loop, ms);
    }
  };
  loop();
}

// What this sandboxd serves beyond the sessions: its OpenAPI document says.
async function loadContract() {
  try {
    const doc = await call("GET", "/openapi.json");
    approvals.setSupported("/v1/approvals" in (doc.paths || {}));
  } catch (e) {
    failed("options", e);
  }
}

let started = false;
async function enter() {
  $("login").hidden = true;
  $("main").hidden = false;
  $("logout").hidden = false;
  $("who").textContent = token.get() ? "logged in with a token" : "no token (this sandboxd has none)";
  await refreshHealth();
  await loadContract();
  await loadOptions();
  await refreshSessions();
  if (started) return;
  started = true;
  every(POLL_MS, refreshSessions);
  every(HEALTH_MS, refreshHealth);
  every(2000, refreshMetrics);
}

const approvals = new Approvals($("approvals-list"), $("approvals-empty"), (m) => say("approvals", m));
const operate = new Operate({ chart: $("chart"), pool: $("pool"), tenants: $("tenants"),
  egress: $("egress"), egressRecent: $("egress-recent-body") });
const editor = setupEditor($("code"), $("code-view"), run);

$("token-save").addEventListener("click", login);
$("token").addEventListener("keydown", (ev) => {
  if (ev.key === "Enter") login();
});
$("logout").addEventListener("click", () => {
  token.clear();
  location.reload();
});
$("new-session").addEventListener("click", newSession);
$("run").addEventListener("click", run);
$("clear").addEventListener("click", () => clearOutput($("output")));
$("upload").addEventListener("change", async (ev) => {
  const file = ev.target.files[0];
  if (!file || !state.current) return say("files", "Create or choose a session first.");
  try {
    await upload(state.current, file);
    say("files", null);
  } catch (e) {
    failed("files", e);
  }
  ev.target.value = "";
  refreshFiles();
});

if (token.get() === null) loggedOut(null);
else enter();
