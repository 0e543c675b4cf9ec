// SPDX-License-Identifier: MIT
// Tool calls waiting for a person (the "ask" approvals of CONTRACT §16), in every session of
// the caller, in one request (GET /v1/approvals: a tenant's own sessions, every session for
// the operator). Approve sends the call, Deny makes it raise ApprovalDenied in the session's
// code.
import { call, seg } from "./api.js";
import { button, el } from "./dom.js";

export class Approvals {
  constructor(list, empty, onError) {
    this.list = list;
    this.empty = empty;
    this.onError = onError;
    this.items = new Map(); // approval id -> {session, approval, node}
    this.supported = false;
  }

  // Does this sandboxd have approvals? Its OpenAPI document (/openapi.json) says.
  setSupported(yes, why) {
    this.supported = yes;
    this.empty.textContent = yes ? "No tool call is waiting for a decision."
      : why || "This sandboxd has no approvals (its /openapi.json has no GET /v1/approvals).";
  }

  // Read every waiting call of the caller; show new ones, drop those decided or gone.
  async refresh() {
    if (!this.supported) return;
    let answer;
    try {
      answer = await call("GET", "/v1/approvals");
    } catch (e) {
      // 404: this sandboxd runs without sessions, so no call can wait
      if (e.status === 404) this.setSupported(false, "This sandboxd runs without sessions.");
      else this.onError(e.message);
      return;
    }
    const seen = new Set();
    for (const a of answer.approvals) {
      seen.add(a.id);
      this.add(a.sessionId, a);
    }
    for (const [id, item] of this.items) if (!seen.has(id)) this.remove(id, item);
    this.empty.hidden = this.items.size > 0;
  }

  // A waiting call {id, server, tool, arguments} of session sessionId (also from a stream).
  add(sessionId, a) {
    if (this.items.has(a.id)) return;
    const li = el("li", "approval");
    li.dataset.approval = a.id;
    const head = el("div", "approval-head");
    head.append(el("strong", null, `${a.server}.${a.tool}`), el("span", "muted", " in session "),
      el("code", "id", sessionId));
    const args = el("pre", "arguments", JSON.stringify(a.arguments, null, 2));
    const buttons = el("div", "buttons");
    for (const [text, approve] of [["Approve", true], ["Deny", false]]) {
      const testid = approve ? "approve" : "deny";
      buttons.append(button(text, testid, () => this.decide(sessionId, a.id, approve, li), testid));
    }
    li.append(head, args, buttons);
    this.items.set(a.id, { session: sessionId, node: li });
    this.list.append(li);
    this.empty.hidden = true;
  }

  remove(id, item) {
    item.node.remove();
    this.items.delete(id);
    this.empty.hidden = this.items.size > 0;
  }

  async decide(sessionId, id, approve, li) {
    for (const b of li.querySelectorAll("button")) b.disabled = true;
    try {
      await call("POST", `/v1/sessions/${seg(sessionId)}/approvals/${seg(id)}`, { approve });
    } catch (e) {
      this.onError(e.status === 404
        ? "That call is no longer waiting (decided elsewhere, timed out or its run ended)."
        : e.message);
    }
    const item = this.items.get(id);
    if (item) this.remove(id, item);
  }
}
