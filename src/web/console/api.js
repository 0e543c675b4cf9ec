// SPDX-License-Identifier: MIT
// The console's client of sandboxd's API. The token lives in this tab's sessionStorage only
// (never a URL, a cookie or localStorage) and travels in the Authorization header of each
// request. Every failure becomes an ApiError with a message meant for a person.

const TOKEN_KEY = "sandboxd.token";

export const token = {
  get() {
    return sessionStorage.getItem(TOKEN_KEY);
  },
  set(value) {
    sessionStorage.setItem(TOKEN_KEY, value);
  },
  clear() {
    sessionStorage.removeItem(TOKEN_KEY);
  },
};

export class ApiError extends Error {
  // status: the HTTP status, or 0 when sandboxd could not be reached; code: error.code.
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
  get unreachable() {
    return this.status === 0;
  }
  get unauthorized() {
    return this.status === 401;
  }
}

function headers(extra) {
  const h = new Headers(extra || {});
  const t = token.get();
  if (t) h.set("Authorization", "Bearer " + t);
  return h;
}

async function send(method, path, { json, body, accept } = {}) {
  const init = { method, headers: headers(), cache: "no-store", credentials: "omit" };
  if (json !== undefined) {
    init.headers.set("Content-Type", "application/json");
    init.body = JSON.stringify(json);
  } else if (body !== undefined) {
    init.headers.set("Content-Type", "application/octet-stream");
    init.body = body;
  }
  if (accept) init.headers.set("Accept", accept);
  let resp;
  try {
    resp = await fetch(path, init);
  } catch {
    throw new ApiError(0, "UNREACHABLE",
      "Cannot reach sandboxd: it may be restarting or stopped. The console retries on its own.");
  }
  if (!resp.ok) throw await errorOf(resp);
  return resp;
}

async function errorOf(resp) {
  let code = "HTTP_" + resp.status;
  let message = resp.statusText || "request failed";
  try {
    const body = await resp.json();
    if (body && body.error) {
      code = body.error.code || code;
      message = body.error.message || message;
    }
  } catch {
    // not JSON: keep the status line
  }
  if (resp.status === 401) {
    message = token.get() ? "The token was refused (401): check it and log in again."
      : "This sandboxd needs a token (401): log in with one.";
  }
  return new ApiError(resp.status, code, `${message} (${resp.status} ${code})`);
}

// The parsed JSON answer (null for 204).
export async function call(method, path, json) {
  const resp = await send(method, path, { json });
  return resp.status === 204 ? null : resp.json();
}

export async function text(path) {
  return (await send("GET", path)).text();
}

export async function blob(path) {
  return (await send("GET", path)).blob();
}

export async function put(path, body) {
  return (await send("PUT", path, { body })).json();
}

// POST json and read the answer as Server-Sent Events: onEvent(name, data) for each, as it
// arrives. Resolves when the stream ends.
export async function stream(path, json, onEvent) {
  const resp = await send("POST", path, { json, accept: "text/event-stream" });
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    let chunk;
    try {
      chunk = await reader.read();
    } catch {
      throw new ApiError(0, "UNREACHABLE", "The connection to sandboxd was lost during the run.");
    }
    if (chunk.done) break;
    buffer += chunk.value.replace(/\r\n/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let name = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) name = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length) onEvent(name, JSON.parse(data.join("\n")));
    }
  }
}

// "vm.3f9c…" -> a path segment.
export function seg(s) {
  return encodeURIComponent(s);
}
