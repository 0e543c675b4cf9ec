// SPDX-License-Identifier: MIT
// Drive sandboxd's console (/ui) in headless Chromium (Debian's chromium, through
// puppeteer-core) the way a person would, for tests/e2e/test_console.py and
// tests/attacks/test_console_attacks.py:
//
//   node console.mjs SCENARIO CONFIG_JSON
//
// CONFIG_JSON: {"base": "http://127.0.0.1:PORT", "token": "...", "shots": "DIR", ...} (the
// scenario's own keys are read where it runs). The script reports what it saw and leaves the
// judging to the Python test: it prints one JSON object per line on stdout,
//   {"step": NAME, ...}  wait: the test does NAME (starts a run, stops the server...) and
//                        answers with one line on stdin (JSON, given back to the scenario)
//   {"result": {...}}    the last line: observations (texts, URLs, console messages)
// Every request the page makes is recorded (method, URL, whether it carried a token), and so
// are console messages, page errors and dialogs; a screenshot is kept for each step.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import puppeteer from "puppeteer-core";

const [scenario, configText] = process.argv.slice(2);
const config = JSON.parse(configText || "{}");
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const TIMEOUT = 60000;

const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();

// Ask the test to do something; resolves with its answer.
async function step(name, extra = {}) {
  process.stdout.write(JSON.stringify({ step: name, ...extra }) + "\n");
  const { value, done } = await lines.next();
  if (done) throw new Error(`the test closed stdin at step ${name}`);
  return JSON.parse(value || "null");
}

const seen = { requests: [], console: [], pageErrors: [], dialogs: [], shots: [] };

async function launch() {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "sandboxd-chromium-"));
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    userDataDir,
    // Running as root needs --no-sandbox; the rest keep Chromium from calling Google's hosts.
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
      "--disable-default-apps", "--disable-features=Translate,MediaRouter,OptimizationHints",
      "--window-size=1200,900"],
  });
  const close = async () => {
    await browser.close();
    fs.rmSync(userDataDir, { recursive: true, force: true });
  };
  return { browser, close };
}

function watch(page) {
  page.on("request", (req) => {
    const h = req.headers();
    seen.requests.push({ method: req.method(), url: req.url(),
      frame: req.frame() === page.mainFrame() ? "main" : "child",
      authorization: "authorization" in h });
  });
  page.on("console", (msg) => seen.console.push({ type: msg.type(), text: msg.text(),
    url: msg.location() ? msg.location().url || "" : "" }));
  page.on("pageerror", (err) => seen.pageErrors.push(String(err)));
  page.on("dialog", async (d) => {
    seen.dialogs.push(d.message());
    await d.dismiss();
  });
}

async function shot(page, name) {
  if (!config.shots) return;
  fs.mkdirSync(config.shots, { recursive: true });
  const file = path.join(config.shots, `${scenario}-${String(seen.shots.length + 1).padStart(2, "0")}-${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  seen.shots.push(file);
}

const byTestId = (id) => `[data-testid="${id}"]`;
const textOf = (page, sel) => page.$eval(sel, (e) => e.innerText);
const visible = (page, sel) => page.$eval(sel, (e) => !!(e.offsetWidth || e.offsetHeight) &&
  !e.closest("[hidden]")).catch(() => false);

async function openConsole(page) {
  await page.goto(config.base + "/ui", { waitUntil: "networkidle0", timeout: TIMEOUT });
}

async function login(page, token = config.token) {
  await page.waitForSelector(byTestId("token-input"), { visible: true, timeout: TIMEOUT });
  await page.type(byTestId("token-input"), token);
  await page.click(byTestId("token-save"));
}

async function waitLoggedIn(page) {
  await page.waitForSelector(byTestId("sessions"), { visible: true, timeout: TIMEOUT });
  await page.waitForFunction((sel) => document.querySelector(sel).innerText.trim() !== "…",
    { timeout: TIMEOUT }, byTestId("health"));
}

// Open the console and log in with the test's token.
async function loggedIn(page) {
  await openConsole(page);
  await login(page);
  await waitLoggedIn(page);
}

async function newSession(page) {
  if (config.profile) await page.select("#profile", config.profile);
  for (const server of config.servers || []) await page.click(`#servers input[value="${server}"]`);
  await page.click(byTestId("new-session"));
  await page.waitForFunction(() => document.getElementById("current").textContent !== "none",
    { timeout: TIMEOUT });
  return page.$eval("#current", (e) => e.textContent);
}

// Put code into the editor as typed text (typed: true) or at once, then run it.
async function runCode(page, code, { typed = false, keys = true } = {}) {
  const runs = await page.$$eval("#output .run", (r) => r.length);
  await page.click(byTestId("code-input"));
  if (typed) {
    await page.$eval(byTestId("code-input"), (e) => { e.value = ""; });
    await page.type(byTestId("code-input"), code);
  } else {
    await page.$eval(byTestId("code-input"), (e, c) => {
      e.value = c;
      e.dispatchEvent(new Event("input"));
    }, code);
  }
  if (keys) {
    await page.keyboard.down("Control");
    await page.keyboard.press("Enter");
    await page.keyboard.up("Control");
  } else {
    await page.click(byTestId("run"));
  }
  await page.waitForFunction((n) => {
    const r = document.querySelectorAll("#output .run");
    return r.length > n && r[r.length - 1].querySelector(".run-info, .error");
  }, { timeout: TIMEOUT }, runs);
  return page.$eval("#output .run:last-child", (e) => e.innerText);
}

// What the page keeps: cookies, localStorage and sessionStorage, and the URL.
async function storage(page) {
  return page.evaluate(() => ({
    url: location.href,
    cookie: document.cookie,
    local: Object.fromEntries(Object.entries(localStorage)),
    session: Object.fromEntries(Object.entries(sessionStorage)),
  }));
}

const scenarios = {
  // The walk through: load, log in, a session, print and a value, a chart.
  async flow(page) {
    const r = {};
    await openConsole(page);
    await page.waitForSelector(byTestId("token-input"), { visible: true, timeout: TIMEOUT });
    r.loginShown = await visible(page, byTestId("token-input"));
    r.mainShownBeforeLogin = await visible(page, byTestId("sessions"));
    r.requestsBeforeLogin = seen.requests.map((q) => q.url);
    r.consoleAtLoad = [...seen.console];
    await shot(page, "login");
    await login(page);
    await waitLoggedIn(page);
    r.health = await textOf(page, byTestId("health"));
    r.approvalsShown = await visible(page, byTestId("approvals"));
    r.approvalsText = await textOf(page, byTestId("approvals"));
    await shot(page, "logged-in");
    r.sessionId = await newSession(page);
    await page.waitForFunction((id) => document.querySelector('[data-testid="sessions"]')
      .innerText.includes(id), { timeout: TIMEOUT }, r.sessionId);
    r.sessionsText = await textOf(page, byTestId("sessions"));
    await shot(page, "session");
    r.printRun = await runCode(page, 'print("hi")\n6*7', { typed: true });
    r.output = await textOf(page, byTestId("output"));
    r.highlighted = await page.$$eval("#code-view span", (s) => s.map((x) => [x.className, x.textContent]));
    await shot(page, "print");
    r.errorRun = await runCode(page, "def f():\n    return 1/0\nf()", { keys: false });
    await shot(page, "traceback");
    r.plotRun = await runCode(page, config.plotCode);
    await page.waitForFunction(() => {
      const img = document.querySelector('[data-testid="artifact"] img');
      return img && img.complete && img.naturalWidth > 0;
    }, { timeout: TIMEOUT });
    r.artifacts = await page.$$eval(byTestId("artifact"), (a) => a.map((x) => ({
      mime: x.dataset.mime,
      img: x.querySelector("img") ? [x.querySelector("img").naturalWidth, x.querySelector("img").naturalHeight] : null,
    })));
    await shot(page, "chart");
    if (config.operator) {
      await page.waitForSelector("#chart svg", { timeout: TIMEOUT });
      await page.waitForFunction(() => document.querySelectorAll("#chart polyline").length > 0,
        { timeout: TIMEOUT });
      r.operate = await textOf(page, "#operate");
      await shot(page, "operate");
    }
    r.storage = await storage(page);
    return r;
  },

  // Tool calls that wait for a person: the test starts them through the API; the page shows
  // them without a reload, and its buttons decide them.
  async approvals(page) {
    const r = {};
    await loggedIn(page);
    await step("start", {});
    await page.waitForFunction((n) => document.querySelectorAll("#approvals-list li").length >= n,
      { timeout: TIMEOUT }, config.waiting);
    r.approvalsText = await textOf(page, byTestId("approvals"));
    await shot(page, "waiting");
    for (const [sid, approve] of config.decide) {
      const clicked = await page.evaluate((s, a) => {
        for (const li of document.querySelectorAll("#approvals-list li")) {
          if (li.querySelector(".id").textContent === s) {
            li.querySelector(a ? '[data-testid="approve"]' : '[data-testid="deny"]').click();
            return true;
          }
        }
        return false;
      }, sid, approve);
      r[`clicked-${sid}`] = clicked;
      await shot(page, approve ? "approved" : "denied");
    }
    r.finished = await step("finished", {});
    await page.waitForFunction(() => document.querySelectorAll("#approvals-list li").length === 0,
      { timeout: TIMEOUT });
    r.approvalsAfter = await textOf(page, byTestId("approvals"));
    await shot(page, "decided");
    return r;
  },

  // The Operate part's table of the egress proxy's last decisions. The test makes requests
  // through the proxy once the page is open (step "requests"); the health poll brings them in
  // without a reload. config.expect: texts the table must come to hold.
  async egress(page) {
    const r = {};
    await loggedIn(page);
    await page.waitForSelector("#egress-recent-body tr", { visible: true, timeout: TIMEOUT });
    r.before = await textOf(page, "#egress-recent");
    await step("requests", {});
    await page.waitForFunction((want) => {
      const text = document.getElementById("egress-recent").innerText;
      return want.every((w) => text.includes(w));
    }, { timeout: TIMEOUT }, config.expect);
    await new Promise((res) => setTimeout(res, 1000)); // time for anything that would run
    r.headers = await page.$$eval("#egress-recent th", (th) => th.map((x) => x.textContent));
    r.rows = await page.$$eval("#egress-recent-body tr", (trs) => trs.map((tr) => ({
      cls: tr.className, cells: [...tr.cells].map((c) => c.textContent) })));
    r.elements = await page.$$eval("#egress-recent-body *", (all) => [...new Set(all.map(
      (e) => e.tagName.toLowerCase()))]);
    r.top = await page.evaluate(() => ({ pwned: window.pwned || null, title: document.title,
      marker: document.body.dataset.pwned || null }));
    r.pool = await page.$$eval("#pool tr", (trs) => trs.map((tr) => [...tr.cells].map(
      (c) => c.textContent)));
    await shot(page, "egress");
    return r;
  },

  // Failures a person must understand: a refused token, a session that ended, a server that
  // went away and came back.
  async failures(page) {
    const r = {};
    await openConsole(page);
    await login(page, "not-the-token");
    await page.waitForSelector(byTestId("message"), { visible: true, timeout: TIMEOUT });
    r.badToken = await textOf(page, byTestId("message"));
    r.loginShownAgain = await visible(page, byTestId("token-input"));
    await shot(page, "bad-token");
    await login(page);
    await waitLoggedIn(page);
    r.sessionId = await newSession(page);
    await step("end-session", { session: r.sessionId });
    r.deadRun = await runCode(page, "print(1)");
    r.deadBanner = await page.$eval(byTestId("message"), (e) => (e.hidden ? "" : e.innerText));
    await shot(page, "dead-session");
    await step("stop-server", {});
    await page.waitForFunction(() => /Cannot reach sandboxd/.test(document.body.innerText),
      { timeout: TIMEOUT });
    r.unreachable = await textOf(page, byTestId("message"));
    r.bodyWhileDown = (await page.$eval("body", (b) => b.innerText)).length;
    await shot(page, "server-down");
    await step("start-server", {});
    await page.waitForFunction(() => document.querySelector('[data-testid="message"]').hidden ||
      !/Cannot reach/.test(document.querySelector('[data-testid="message"]').innerText),
    { timeout: TIMEOUT });
    // The health poll (every 5 s) tells the restart apart from a blip.
    await page.waitForFunction(() => /restarted/.test(document.querySelector('[data-testid="message"]')
      .innerText), { timeout: 60000 }).catch(() => {});
    r.afterRestart = await page.$eval(byTestId("message"), (e) => (e.hidden ? "" : e.innerText));
    await shot(page, "server-back");
    return r;
  },

  // What a tenant sees: its sessions (config.expect: ids made through the API), no Operate.
  async overview(page) {
    const r = {};
    await loggedIn(page);
    await page.waitForFunction((ids) => ids.every((id) => document.querySelector(
      '[data-testid="sessions"]').innerText.includes(id)), { timeout: TIMEOUT }, config.expect);
    r.sessionsText = await textOf(page, byTestId("sessions"));
    r.health = await textOf(page, byTestId("health"));
    r.operateShown = await visible(page, "#operate");
    r.who = await textOf(page, "#who");
    await shot(page, config.token ? "with-token" : "without-token");
    return r;
  },

  // Another origin's page frames the console: frame-ancestors must keep it out.
  async frame(page) {
    const r = {};
    await page.goto(config.attacker, { waitUntil: "networkidle0", timeout: TIMEOUT });
    await new Promise((res) => setTimeout(res, 1000));
    r.frames = [];
    for (const f of page.frames()) {
      if (f === page.mainFrame()) continue;
      let hasConsole = false;
      try {
        hasConsole = await f.evaluate(() => !!document.querySelector('[data-testid="token-input"]'));
      } catch {
        hasConsole = false; // an error page of another origin cannot even be read
      }
      r.frames.push({ url: f.url(), hasConsole });
    }
    await shot(page, "framed");
    // The same page, not framed, is the console: the refusal above is the framing's.
    await openConsole(page);
    r.direct = await visible(page, byTestId("token-input"));
    return r;
  },

  // An artifact's HTML tries to script the console's origin.
  async artifact(page) {
    const r = {};
    await loggedIn(page);
    r.sessionId = await newSession(page);
    r.run = await runCode(page, config.code);
    await page.waitForSelector('[data-testid="artifact"] iframe', { timeout: TIMEOUT });
    await new Promise((res) => setTimeout(res, 2000)); // time for anything that would run
    r.sandbox = await page.$eval('[data-testid="artifact"] iframe', (f) => f.getAttribute("sandbox"));
    r.top = await page.evaluate(() => ({ pwned: window.pwned || null, title: document.title,
      marker: document.body.dataset.pwned || null }));
    r.frameText = await page.frames().filter((f) => f !== page.mainFrame())
      .map((f) => f.url()).join(" ");
    r.storage = await storage(page);
    await shot(page, "html-artifact");
    return r;
  },
};

const { close, browser } = await launch();
let result;
try {
  const page = await browser.newPage();
  page.setDefaultTimeout(TIMEOUT);
  watch(page);
  result = await scenarios[scenario](page);
} catch (e) {
  result = { failed: String(e && e.stack ? e.stack : e) };
} finally {
  await close();
}
process.stdout.write(JSON.stringify({ result: { ...result, seen } }) + "\n");
process.exit(0);
