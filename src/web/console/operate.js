// SPDX-License-Identifier: MIT
// What an operator watches: health and pool state (GET /healthz with the operator's token),
// executions per second and their latency over the last minutes (samples of GET /metrics,
// kept in this tab while it is open), sessions per tenant (GET /v1/sessions) and the egress
// proxy's recent decisions (/healthz's egress.recent, refreshed with the health poll). Every
// text of a decision (a request id, a host a sandbox asked for) is set as text, never markup.
import { drawChart } from "./chart.js";
import { el } from "./dom.js";

export const WINDOW_MS = 5 * 60 * 1000;

// Prometheus text format -> [{name, labels: {k: v}, value}] (comments skipped).
export function parseMetrics(textBody) {
  const out = [];
  for (const line of textBody.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const m = line.match(/^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/);
    if (!m) continue;
    const labels = {};
    for (const l of (m[2] || "").matchAll(/(\w+)="((?:\\.|[^"\\])*)"/g)) labels[l[1]] = l[2];
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

// One sample of the counters the charts need, at time t.
function sampleOf(metrics, t) {
  const s = { t, count: 0, sum: 0, buckets: new Map() };
  for (const { name, labels, value } of metrics) {
    if (name === "sandboxd_request_duration_seconds_count") s.count += value;
    else if (name === "sandboxd_request_duration_seconds_sum") s.sum += value;
    else if (name === "sandboxd_request_duration_seconds_bucket") {
      const le = labels.le === "+Inf" ? Infinity : Number(labels.le);
      s.buckets.set(le, (s.buckets.get(le) || 0) + value);
    }
  }
  return s;
}

// The upper bound of the bucket holding quantile q of the executions between a and b (ms).
function quantileMs(a, b, q) {
  const n = b.count - a.count;
  if (n <= 0) return null;
  const les = [...b.buckets.keys()].sort((x, y) => x - y);
  for (const le of les) {
    if ((b.buckets.get(le) || 0) - (a.buckets.get(le) || 0) >= q * n) {
      return le === Infinity ? null : le * 1000;
    }
  }
  return null;
}

export class Operate {
  constructor(nodes) {
    this.nodes = nodes; // {chart, pool, tenants, egress, egressRecent}
    this.samples = [];
  }

  addMetrics(textBody, t = Date.now()) {
    const s = sampleOf(parseMetrics(textBody), t);
    const prev = this.samples[this.samples.length - 1];
    if (prev && s.count < prev.count) this.samples = []; // the server restarted: start over
    this.samples.push(s);
    while (this.samples.length && this.samples[0].t < t - WINDOW_MS - 10000) this.samples.shift();
    this.draw(t);
  }

  draw(now = Date.now()) {
    const rate = [];
    const mean = [];
    const p95 = [];
    for (let i = 1; i < this.samples.length; i++) {
      const a = this.samples[i - 1];
      const b = this.samples[i];
      const dt = (b.t - a.t) / 1000;
      const n = b.count - a.count;
      if (dt <= 0) continue;
      rate.push([b.t, n / dt]);
      if (n > 0) {
        mean.push([b.t, ((b.sum - a.sum) / n) * 1000]);
        const q = quantileMs(a, b, 0.95);
        if (q !== null) p95.push([b.t, q]);
      }
    }
    drawChart(this.nodes.chart, [
      { name: "executions/s", unit: "/s", cls: "s-rate", points: rate },
      { name: "mean latency", unit: "ms", cls: "s-mean", points: mean },
      { name: "p95 latency (bucket bound)", unit: "ms", cls: "s-p95", points: p95 },
    ], WINDOW_MS, now);
  }

  // /healthz of the operator: pool, executions and egress.
  showHealth(h) {
    const pool = h.pool || {};
    const sp = h.sessionPool || {};
    const ex = h.executions || {};
    const rows = [
      ["pool", `${pool.ready ?? "—"} ready of ${pool.target ?? "—"} (hits ${pool.hits ?? 0}, ` +
        `misses ${pool.misses ?? 0})`],
      ["session pool", `${sp.ready ?? "—"} ready of ${sp.target ?? "—"}`],
      ["executions", `${ex.running ?? 0} running, ${ex.queued ?? 0} queued, ` +
        `${ex.rejected ?? 0} rejected`],
      ["sessions", `${h.sessions ? h.sessions.live : 0} live`],
      ["http", h.http ? `${h.http.connections} connections, ${h.http.requests} requests ` +
        `in flight` : "—"],
    ];
    const started = (ps) => ps.started === false ? "not started" : `${ps.ready ?? 0} ready`;
    const np = h.networkPool || {};
    if (np.enabled)
      rows.push(["network pool", `${np.ready ?? "—"} ready of ${np.target ?? "—"}`]);
    for (const [name, p] of Object.entries(h.profiles || {})) {
      const ps = p.pool || {};
      const pn = p.networkPool || {};
      const modules = Array.isArray(p.modules) ? p.modules.join(", ") : String(p.modules || "");
      rows.push([`profile ${name}`, `${modules}; ${started(ps)}` +
        (pn.enabled ? `; with a network: ${started(pn)}` : "")]);
    }
    this.nodes.pool.replaceChildren(...rows.map(([k, v]) => {
      const tr = el("tr");
      tr.append(el("th", null, k), el("td", null, v));
      return tr;
    }));
    const eg = h.egress || {};
    const allow = (eg.allow || []).join(", ");
    this.nodes.egress.textContent = allow
      ? `Allowed at most (--egress-allow): ${allow}`
      : "No egress is allowed (no --egress-allow).";
    this.showEgress(Array.isArray(eg.recent) ? eg.recent : []);
  }

  // The proxy's last decisions, newest first: time, who, decision, host:port, reason.
  showEgress(recent) {
    const body = this.nodes.egressRecent;
    body.replaceChildren(...recent.map((d) => {
      const tr = el("tr", `egress-${d.decision}`);
      const decision = el("td", "decision", d.decision);
      decision.title = `${d.method ?? "?"}; ${d.bytesUp} bytes up, ${d.bytesDown} down, ` +
        `${Math.round(d.durationMs)} ms`;
      // who: the request id or "session ID", and whose tenant it was (none: the operator's)
      const who = el("td");
      who.append(el("code", "id", d.execution ?? "?"));
      if (d.tenant) who.append(el("span", "muted", ` (tenant ${d.tenant})`));
      tr.append(el("td", "time", new Date(d.time).toLocaleTimeString()), who, decision,
        el("td", "host", hostPort(d)), el("td", "reason", d.reason ?? ""));
      return tr;
    }));
    if (!recent.length) body.append(emptyRow("no egress decision yet", 5));
  }

  // Sessions per tenant (the operator's list holds every tenant's).
  showTenants(sessions) {
    const counts = new Map();
    for (const s of sessions) {
      const k = s.tenant || "(operator)";
      const c = counts.get(k) || { live: 0, running: 0 };
      c.live++;
      if (s.busy) c.running++;
      counts.set(k, c);
    }
    const body = this.nodes.tenants;
    body.replaceChildren();
    for (const [k, c] of [...counts].sort()) {
      const tr = el("tr");
      tr.append(el("td", null, k), el("td", "num", String(c.live)), el("td", "num", String(c.running)));
      body.append(tr);
    }
    if (!counts.size) body.append(emptyRow("no sessions", 3));
  }
}

// The one row of an empty table: text across its cols columns.
function emptyRow(text, cols) {
  const tr = el("tr");
  const td = el("td", "muted", text);
  td.colSpan = cols;
  tr.append(td);
  return tr;
}

// "host:port" of a decision ("[::1]:443" for an IPv6 address; "—" when the request named none).
function hostPort(d) {
  if (!d.host) return "—";
  const host = d.host.includes(":") ? `[${d.host}]` : d.host;
  return d.port ? `${host}:${d.port}` : host;
}

// One line for the health part: everyone's status, the operator's details.
export function healthLine(h) {
  if (!h.version) return `sandboxd: ${h.status} (the details are shown to the operator's token)`;
  const iso = h.isolation || {};
  const up = h.uptimeS < 3600 ? `${Math.round(h.uptimeS / 60)} min` : `${(h.uptimeS / 3600).toFixed(1)} h`;
  const layers = [(iso.namespaces || []).length ? `${iso.namespaces.length} namespaces` : null,
    iso.seccomp ? `seccomp ${iso.seccompMode || ""}`.trim() : "no seccomp",
    `cgroups ${iso.cgroups || "none"}`].filter(Boolean).join(", ");
  return `sandboxd ${h.version}: ${h.status}, up ${up}; isolation: ${layers}`;
}
