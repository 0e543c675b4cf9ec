// SPDX-License-Identifier: MIT
// The output pane: one block per run, with stdout and stderr as they stream in, the result,
// the error and its traceback, and the artifacts. Artifacts never run in the console's
// origin: images are <img> from a blob: URL (an SVG in an <img> runs no script), HTML goes
// into an <iframe sandbox> (no scripts, an opaque origin: it cannot reach the console, its
// storage or its token), anything else is text or a download.

import { el } from "./dom.js";

const IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp",
  "image/svg+xml"]);
const TEXT_TYPES = new Set(["text/plain", "text/markdown", "text/csv", "application/json"]);

function bytesOf(b64) {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

const urls = []; // blob: URLs of the shown artifacts, revoked with clear()

function blobUrl(bytes, type) {
  const url = URL.createObjectURL(new Blob([bytes], { type }));
  urls.push(url);
  return url;
}

export function downloadLink(name, url) {
  const a = el("a", "download", "download " + name);
  a.href = url;
  a.download = name.split("/").pop() || "file";
  return a;
}

// One artifact {name, mimeType, data (base64), size} as a figure.
export function renderArtifact(art) {
  const fig = el("figure", "artifact");
  fig.dataset.testid = "artifact";
  fig.dataset.mime = art.mimeType || "";
  const type = (art.mimeType || "application/octet-stream").split(";")[0].trim().toLowerCase();
  const bytes = bytesOf(art.data || "");
  const url = blobUrl(bytes, IMAGE_TYPES.has(type) ? type : "application/octet-stream");
  if (IMAGE_TYPES.has(type)) {
    const img = el("img");
    img.alt = art.name;
    img.src = url;
    fig.append(img);
  } else if (type === "text/html") {
    const frame = el("iframe", "html-artifact");
    // No token in any flag: scripts, same origin, forms, popups and navigation of the console
    // are all refused. The HTML is text here, never markup of the console's page.
    frame.setAttribute("sandbox", "");
    frame.setAttribute("referrerpolicy", "no-referrer");
    frame.title = art.name;
    frame.srcdoc = new TextDecoder().decode(bytes);
    fig.append(frame);
  } else if (TEXT_TYPES.has(type) || type.startsWith("text/")) {
    let txt = new TextDecoder().decode(bytes);
    if (type === "application/json") {
      try {
        txt = JSON.stringify(JSON.parse(txt), null, 2);
      } catch {
        // shown as sent
      }
    }
    fig.append(el("pre", "text-artifact", txt));
  }
  const cap = el("figcaption", null, `${art.name} (${art.mimeType}, ${art.size} bytes) `);
  cap.append(downloadLink(art.name, url));
  fig.append(cap);
  return fig;
}

export function clearOutput(pane) {
  for (const u of urls.splice(0)) URL.revokeObjectURL(u);
  pane.replaceChildren();
}

// A run's block in the pane; returns the handlers of its stream events.
export function startRun(pane, code, sessionId) {
  const block = el("section", "run");
  const head = el("div", "run-head");
  head.append(el("span", "prompt", "»"), el("code", null, code.split("\n")[0]));
  if (code.includes("\n")) head.append(el("span", "more", ` (+${code.split("\n").length - 1} lines)`));
  const streams = el("pre", "streams");
  const tail = el("div", "run-tail");
  block.append(head, streams, tail);
  block.dataset.session = sessionId;
  pane.append(block);
  block.scrollIntoView({ block: "end" });
  const shown = new Set();
  let last = null;
  const write = (cls, text) => {
    if (!last || last.className !== cls) {
      last = el("span", cls);
      streams.append(last);
    }
    last.textContent += text;
  };
  const artifact = (a) => {
    if (shown.has(a.name)) return;
    shown.add(a.name);
    tail.append(renderArtifact(a));
  };
  return {
    stdout: (d) => write("stdout", d.data),
    stderr: (d) => write("stderr", d.data),
    display: artifact,
    rpc: (d) => write("rpc", `[tool call ${d.server || ""}.${d.tool || ""}]\n`),
    approval_required: (d) => write("rpc", `[waiting for approval: ${d.server}.${d.tool}]\n`),
    execution_done: (r) => {
      for (const a of r.artifacts || []) artifact(a);
      if (r.result !== null && r.result !== undefined) tail.prepend(el("pre", "result", r.result));
      if (r.error) {
        const err = el("div", "error");
        err.append(el("strong", null, `${r.error.type}: ${r.error.message}`));
        if (r.error.traceback) err.append(el("pre", "traceback", r.error.traceback));
        tail.append(err);
      } else if (r.status && r.status !== "ok") {
        tail.append(el("div", "error", `status: ${r.status}`));
      }
      if (r.artifactsError) tail.append(el("div", "warn", r.artifactsError.message));
      const info = `${r.status} · ${Number(r.durationMs).toFixed(1)} ms` +
        (r.mcpCalls ? ` · ${r.mcpCalls} tool call(s)` : "") +
        (r.sessionAlive === false ? " · the session ended" : "");
      tail.append(el("div", "run-info", info));
      block.scrollIntoView({ block: "end" });
    },
    error: (e) => tail.append(el("div", "error", `${e.code}: ${e.message}`)),
    fail: (message) => tail.append(el("div", "error", message)),
  };
}
