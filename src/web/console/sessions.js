// SPDX-License-Identifier: MIT
// The caller's sessions (GET /v1/sessions: a tenant's own, every session for the operator),
// with their full ids and state, the one the editor runs in, and that session's files.
import { blob, call, put, seg } from "./api.js";
import { button, el } from "./dom.js";
import { downloadLink } from "./output.js";

export function stateOf(s) {
  if (!s.alive) return "ended";
  if (s.busy) return "running";
  if (s.stopped) return "stopped";
  return "idle";
}

function ago(seconds) {
  if (seconds < 60) return `${Math.round(seconds)} s`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}

// The sessions table; ui: {current(), use(id), end(id)}.
export function renderSessions(tbody, empty, list, ui) {
  tbody.replaceChildren();
  empty.hidden = list.length > 0;
  for (const s of list) {
    const tr = el("tr");
    tr.dataset.session = s.sessionId;
    if (s.sessionId === ui.current()) tr.className = "current";
    const state = stateOf(s);
    const stateCell = el("td", "state " + state, state);
    if (s.stoppedReason) stateCell.title = s.stoppedReason;
    tr.append(
      el("td", "id", s.sessionId),
      stateCell,
      el("td", null, s.tenant || "—"),
      el("td", null, s.workspace),
      el("td", null, s.profile),
      el("td", null, (s.servers || []).join(", ") || "—"),
      el("td", "num", String(s.executions)),
      el("td", "num", ago(s.idleS)),
    );
    const actions = el("td", "actions");
    actions.append(button("use", null, () => ui.use(s.sessionId)),
      button("end", null, () => ui.end(s.sessionId)));
    tr.append(actions);
    tbody.append(tr);
  }
}

// The files of session id into list; onError(message).
export async function renderFiles(list, id, onError) {
  const answer = await call("GET", `/v1/sessions/${seg(id)}/files`);
  list.replaceChildren();
  if (!answer.files.length) list.append(el("li", "muted", "no files"));
  for (const f of answer.files) {
    const li = el("li");
    // A percent-encoded name (pathEncoding) goes into the URL as it is (docs/API.md).
    const path = f.pathEncoding === "percent" ? f.path : f.path.split("/").map(seg).join("/");
    const url = `/v1/sessions/${seg(id)}/files/${path}`;
    li.append(el("code", null, f.path), el("span", "muted", ` ${f.size} bytes `));
    li.append(button("download", null, async () => {
      try {
        const href = URL.createObjectURL(await blob(url));
        const a = downloadLink(f.path, href);
        a.hidden = true;
        document.body.append(a);
        a.click();
        a.remove();
        setTimeout(() => URL.revokeObjectURL(href), 10000);
      } catch (e) {
        onError(e.message);
      }
    }), button("delete", null, async () => {
      try {
        await call("DELETE", url);
        await renderFiles(list, id, onError);
      } catch (e) {
        onError(e.message);
      }
    }));
    list.append(li);
  }
  if (answer.truncated) list.append(el("li", "muted", "(the listing was cut at its limit)"));
}

export async function upload(id, file) {
  const path = file.name.split("/").map(seg).join("/");
  return put(`/v1/sessions/${seg(id)}/files/${path}`, await file.arrayBuffer());
}
