// SPDX-License-Identifier: MIT
/*
 * make bench-codemode: how many tokens enter a model's context for a task done by direct
 * tool calling, against the same task done in code mode (sandboxd mcp's run_python), with
 * real MCP servers from npm (@modelcontextprotocol/server-filesystem, server-memory,
 * server-everything) on generated, seeded data. Offline and deterministic: no model is
 * asked; each arm is the scripted sequence of calls a model would make, run for real, and
 * its transcript recorded (bench/last-codemode/<task>.<arm>.json). Tokens are counted with
 * gpt-tokenizer's o200k_base, whose vocabulary ships in its npm package.
 *
 * What enters the context, summed over the calls:
 *   direct: the tool definitions of the servers used (their tools/list), then for every call
 *           its name and arguments (what the model writes) and its result's text content
 *           (what the model reads);
 *   code:   sandboxd mcp's instructions and tools/list (the lean surface), then for every
 *           run_python call its arguments (the code) and its result's text: a discovery call
 *           (help() of the tools the task uses) and the task's code.
 * The direct arm is the shortest honest sequence: the best single call where the server can do
 * the filtering, as few reads as the answer needs. Both arms must reach the same answer.
 *
 * Prints one line per task, exactly: TASK direct=N code=M saving=P%  (P = 100 * (1 - M/N)).
 * Method and results: docs/PERFORMANCE.md.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "..", "..");
const MODULES = path.join(ROOT, "tests", "node", "node_modules");
const { Client } = await import(path.join(MODULES, "@modelcontextprotocol/sdk/dist/esm/client/index.js"));
const { StdioClientTransport } = await import(
    path.join(MODULES, "@modelcontextprotocol/sdk/dist/esm/client/stdio.js"));
const { encode } = await import(path.join(MODULES, "gpt-tokenizer/esm/encoding/o200k_base.js"));

const SANDBOXD = process.env.BENCH_SANDBOXD || path.join(ROOT, "build", "sandboxd");
const NODE = process.execPath;
const SERVERS = {
    filesystem: path.join(MODULES, "@modelcontextprotocol/server-filesystem/dist/index.js"),
    memory: path.join(MODULES, "@modelcontextprotocol/server-memory/dist/index.js"),
    everything: path.join(MODULES, "@modelcontextprotocol/server-everything/dist/index.js"),
};
const OUT = path.join(ROOT, "bench", "last-codemode");

const tokens = (text) => encode(text).length;

// ---- data: seeded, so every run sees the same ------------------------------------------------

function rng(seed) { // mulberry32
    return () => {
        seed = (seed + 0x6d2b79f5) | 0;
        let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
        t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
}

const WORDS = ["alpha", "beta", "gamma", "delta", "omega", "kappa", "sigma", "theta", "zeta",
    "lambda", "orbit", "vector", "signal", "matrix", "cursor", "buffer", "thread", "socket"];
const TYPES = ["person", "company", "project", "city", "product", "event"];

function makeData(dir) {
    const r = rng(27);
    const pick = (a) => a[Math.floor(r() * a.length)];
    // A large tree: 10 services x 8 parts x 50 files; logs, some of them errors.
    const tree = path.join(dir, "tree");
    for (let s = 0; s < 10; s++) {
        for (let p = 0; p < 8; p++) {
            const d = path.join(tree, `svc-${s}`, `part-${p}`);
            fs.mkdirSync(d, { recursive: true });
            for (let f = 0; f < 50; f++) {
                const ext = pick(["log", "log", "txt", "json", "md", "csv"]);
                const kind = ext === "log" && r() < 0.4 ? "error" : pick(WORDS);
                fs.writeFileSync(path.join(d, `${kind}-${pick(WORDS)}-${f}.${ext}`), `${pick(WORDS)}\n`);
            }
        }
    }
    // Files of very different lengths, for the five largest.
    const files = path.join(dir, "files");
    fs.mkdirSync(files);
    for (let i = 0; i < 120; i++) {
        const lines = Math.floor(r() < 0.05 ? 600 + r() * 900 : 1 + r() * 120);
        const body = Array.from({ length: lines }, () => `${pick(WORDS)} ${pick(WORDS)} ${Math.floor(r() * 1e6)}`);
        fs.writeFileSync(path.join(files, `report-${String(i).padStart(3, "0")}.txt`), body.join("\n") + "\n");
    }
    // A document a reader must see whole (the negative control).
    const doc = Array.from({ length: 700 }, (_, i) => `${i + 1}. ${Array.from({ length: 9 }, () => pick(WORDS)).join(" ")}.`);
    fs.writeFileSync(path.join(dir, "handbook.md"), "# Handbook\n\n" + doc.join("\n") + "\n");
    // A knowledge graph of 400 entities, and a CSV of 500 people to import.
    const graph = [];
    for (let i = 0; i < 400; i++) {
        graph.push(JSON.stringify({ type: "entity", name: `entity-${i}`, entityType: pick(TYPES),
            observations: [`${pick(WORDS)} ${pick(WORDS)}`, `since ${1990 + Math.floor(r() * 35)}`,
                `rank ${Math.floor(r() * 100)}`] }));
    }
    for (let i = 0; i < 150; i++) {
        graph.push(JSON.stringify({ type: "relation", from: `entity-${Math.floor(r() * 400)}`,
            to: `entity-${Math.floor(r() * 400)}`, relationType: pick(["knows", "owns", "funds"]) }));
    }
    fs.writeFileSync(path.join(dir, "graph.jsonl"), graph.join("\n") + "\n");
    const rows = ["name,role,city,email"];
    for (let i = 0; i < 500; i++) {
        rows.push(`Person ${i},${pick(["engineer", "designer", "manager", "analyst"])},` +
            `${pick(["Lyon", "Oslo", "Quito", "Perth", "Dakar"])},p${i}@example.org`);
    }
    fs.writeFileSync(path.join(dir, "people.csv"), rows.join("\n") + "\n");
}

// ---- the two arms ----------------------------------------------------------------------------

function textOf(result) {
    return (result.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

async function connect(command, args, env) {
    const client = new Client({ name: "bench-codemode", version: "1" });
    const transport = new StdioClientTransport({ command, args, env: { ...process.env, ...env }, stderr: "ignore" });
    await client.connect(transport);
    return client;
}

/* A direct-tool-calling agent: definitions of its servers, then calls and results. */
class Direct {
    constructor(dir, memoryFile) {
        this.dir = dir;
        this.memoryFile = memoryFile;
        this.clients = {};
        this.transcript = [];
        this.context = 0;
    }

    async use(names) {
        for (const name of names) {
            const args = name === "filesystem" ? [SERVERS.filesystem, this.dir]
                : name === "everything" ? [SERVERS.everything, "stdio"] : [SERVERS.memory];
            this.clients[name] = await connect(NODE, args, { MEMORY_FILE_PATH: this.memoryFile });
            const list = await this.clients[name].listTools();
            const text = JSON.stringify(list);
            this.context += tokens(text);
            this.transcript.push({ definitions: name, tokens: tokens(text) });
        }
    }

    async call(server, name, args) {
        const request = JSON.stringify({ name, arguments: args });
        const result = await this.clients[server].callTool({ name, arguments: args });
        const text = textOf(result);
        this.context += tokens(request) + tokens(text);
        this.transcript.push({ server, call: JSON.parse(request), result: text,
            tokens: tokens(request) + tokens(text) });
        if (result.isError) throw new Error(`${server}.${name}: ${text}`);
        return text;
    }

    async close() {
        for (const c of Object.values(this.clients)) await c.close();
    }
}

/* A code-mode agent: sandboxd mcp's lean surface, then run_python calls. */
class Code {
    constructor(dir, memoryFile) {
        this.dir = dir;
        this.memoryFile = memoryFile;
        this.transcript = [];
        this.context = 0;
    }

    async start() {
        const cfg = path.join(this.dir, "..", `mcp-${path.basename(this.memoryFile)}.json`);
        fs.writeFileSync(cfg, JSON.stringify({ mcpServers: {
            filesystem: { command: NODE, args: [SERVERS.filesystem, this.dir] },
            memory: { command: NODE, args: [SERVERS.memory], env: { MEMORY_FILE_PATH: this.memoryFile } },
            everything: { command: NODE, args: [SERVERS.everything, "stdio"] },
        } }));
        this.state = fs.mkdtempSync(path.join(os.tmpdir(), "sandboxd-bench-state-"));
        this.client = await connect(SANDBOXD, ["mcp", "--mcp-config", cfg, "--no-mcp-discovery",
            "--state-dir", this.state, "--log-level", "warn", "--session-timeout-ms", "60000"], {});
        const instructions = this.client.getInstructions() || "";
        const list = JSON.stringify(await this.client.listTools());
        this.context += tokens(instructions) + tokens(list);
        this.transcript.push({ definitions: "sandboxd", tokens: tokens(instructions) + tokens(list) });
    }

    async run(code, servers) {
        const args = { code, servers };
        const request = JSON.stringify({ name: "run_python", arguments: args });
        const result = await this.client.callTool({ name: "run_python", arguments: args }, undefined,
            { timeout: 120000 });
        const text = textOf(result);
        this.context += tokens(request) + tokens(text);
        this.transcript.push({ call: args, result: text, tokens: tokens(request) + tokens(text) });
        if (result.isError) throw new Error(`run_python: ${text}`);
        return text;
    }

    async close() {
        await this.client.close();
        fs.rmSync(this.state, { recursive: true, force: true });
    }
}

// ---- the tasks ---------------------------------------------------------------------------------
// Each has a direct(agent, dir) and a code(agent, dir) that return the answer as a string; the two
// must agree.

const help = (...tools) => tools.map((t) => `help(${t})`).join("\n");

const TASKS = [
    {
        name: "tree_error_logs",
        what: "count the error logs (*error*.log) under tree/, per service",
        servers: ["filesystem"],
        async direct(a, dir) {
            const text = await a.call("filesystem", "search_files",
                { path: path.join(dir, "tree"), pattern: "**/*error*.log" });
            const counts = {};
            for (const line of text.split("\n")) {
                const m = line.match(/\/(svc-\d+)\//);
                if (m) counts[m[1]] = (counts[m[1]] || 0) + 1;
            }
            return JSON.stringify(Object.fromEntries(Object.entries(counts).sort()));
        },
        async code(a, dir) {
            await a.run(help("mcp_filesystem.search_files"), ["filesystem"]);
            const out = await a.run(
                "import collections, json, re\n" +
                `r = await mcp_filesystem.search_files(path=${JSON.stringify(path.join(dir, "tree"))}, pattern='**/*error*.log')\n` +
                "c = collections.Counter(re.search(r'/(svc-\\d+)/', p).group(1) for p in r['content'].splitlines() if '/svc-' in p)\n" +
                "print(json.dumps(dict(sorted(c.items())), separators=(',', ':')))", ["filesystem"]);
            return JSON.stringify(JSON.parse(out.split("\n")[0]));
        },
    },
    {
        name: "graph_types",
        what: "count the 400 entities of the memory graph by type",
        servers: ["memory"],
        async direct(a) {
            const graph = JSON.parse(await a.call("memory", "read_graph", {}));
            const counts = {};
            for (const e of graph.entities) counts[e.entityType] = (counts[e.entityType] || 0) + 1;
            return JSON.stringify(Object.fromEntries(Object.entries(counts).sort()));
        },
        async code(a) {
            await a.run(help("mcp_memory.read_graph"), ["memory"]);
            const out = await a.run(
                "import collections, json\ng = await mcp_memory.read_graph()\n" +
                "c = collections.Counter(e['entityType'] for e in g['entities'])\n" +
                "print(json.dumps(dict(sorted(c.items())), separators=(',', ':')))", ["memory"]);
            return JSON.stringify(JSON.parse(out.split("\n")[0]));
        },
    },
    {
        name: "csv_import",
        what: "import people.csv (500 rows) into the graph as person entities",
        servers: ["filesystem", "memory"],
        async direct(a, dir) {
            const csv = await a.call("filesystem", "read_text_file", { path: path.join(dir, "people.csv") });
            const rows = csv.trim().split("\n").slice(1).map((l) => l.split(","));
            const entities = rows.map(([name, role, city, email]) => ({ name, entityType: "person",
                observations: [`role: ${role}`, `city: ${city}`, `email: ${email}`] }));
            const created = JSON.parse(await a.call("memory", "create_entities", { entities }));
            return String(created.length);
        },
        async code(a, dir) {
            await a.run(help("mcp_filesystem.read_text_file", "mcp_memory.create_entities"),
                ["filesystem", "memory"]);
            const out = await a.run(
                "import csv, io\n" +
                `text = (await mcp_filesystem.read_text_file(path=${JSON.stringify(path.join(dir, "people.csv"))}))['content']\n` +
                "rows = list(csv.DictReader(io.StringIO(text)))\n" +
                "made = await mcp_memory.create_entities(entities=[{'name': r['name'], 'entityType': 'person', " +
                "'observations': ['role: ' + r['role'], 'city: ' + r['city'], 'email: ' + r['email']]} for r in rows])\n" +
                "print(len(made['entities']))", ["filesystem", "memory"]);
            return out.split("\n")[0].trim();
        },
    },
    {
        name: "largest_files",
        what: "the five largest files of files/ with their line counts",
        servers: ["filesystem"],
        async direct(a, dir) {
            const listing = await a.call("filesystem", "list_directory_with_sizes",
                { path: path.join(dir, "files"), sortBy: "size" });
            const top = listing.split("\n").filter((l) => l.startsWith("[FILE]")).slice(0, 5)
                .map((l) => l.replace("[FILE]", "").trim().split(/\s+/)[0]);
            const out = [];
            for (const name of top) {
                const text = await a.call("filesystem", "read_text_file", { path: path.join(dir, "files", name) });
                out.push(`${name} ${text.replace(/\n$/, "").split("\n").length}`);
            }
            return out.join(";");
        },
        async code(a, dir) {
            await a.run(help("mcp_filesystem.list_directory_with_sizes", "mcp_filesystem.read_text_file"),
                ["filesystem"]);
            const out = await a.run(
                `d = ${JSON.stringify(path.join(dir, "files"))}\n` +
                "ls = (await mcp_filesystem.list_directory_with_sizes(path=d, sortBy='size'))['content']\n" +
                "top = [l.replace('[FILE]', '').split()[0] for l in ls.splitlines() if l.startswith('[FILE]')][:5]\n" +
                "for n in top:\n" +
                "    t = (await mcp_filesystem.read_text_file(path=d + '/' + n))['content']\n" +
                "    print(n, len(t.rstrip('\\n').split('\\n')))", ["filesystem"]);
            return out.trim().split("\n").filter((l) => /^report-/.test(l)).join(";");
        },
    },
    {
        name: "weather_three_cities",
        what: "the warmest of three cities (server-everything's structured weather)",
        servers: ["everything"],
        async direct(a) {
            let best = null;
            for (const city of ["New York", "Chicago", "Los Angeles"]) {
                const w = JSON.parse(await a.call("everything", "get-structured-content", { location: city }));
                if (!best || w.temperature > best[1]) best = [city, w.temperature];
            }
            return best[0];
        },
        async code(a) {
            await a.run(help("mcp_everything.get_structured_content"), ["everything"]);
            const out = await a.run(
                "w = {c: (await mcp_everything.get_structured_content(location=c))['temperature'] " +
                "for c in ('New York', 'Chicago', 'Los Angeles')}\nprint(max(w, key=w.get))", ["everything"]);
            return out.split("\n")[0].trim();
        },
    },
    {
        name: "read_handbook",
        what: "negative control: show the whole handbook (the model must read it all either way)",
        servers: ["filesystem"],
        async direct(a, dir) {
            const text = await a.call("filesystem", "read_text_file", { path: path.join(dir, "handbook.md") });
            return String(text.trimEnd().length);
        },
        async code(a, dir) {
            await a.run(help("mcp_filesystem.read_text_file"), ["filesystem"]);
            const out = await a.run(
                `print((await mcp_filesystem.read_text_file(path=${JSON.stringify(path.join(dir, "handbook.md"))}))['content'], end='')`,
                ["filesystem"]);
            return String(out.replace(/\n\[note\][^\n]*$/, "").trimEnd().length);
        },
    },
];

// ---- run ---------------------------------------------------------------------------------------

async function main() {
    const only = process.argv.slice(2);
    // A fixed place: the paths are in the servers' answers, so a random one would change the
    // counts from run to run.
    const work = path.join(os.tmpdir(), "sandboxd-bench-codemode");
    fs.rmSync(work, { recursive: true, force: true });
    fs.mkdirSync(work);
    const data = path.join(work, "data");
    fs.mkdirSync(data);
    makeData(data);
    fs.mkdirSync(OUT, { recursive: true });
    let failed = false;
    for (const task of TASKS) {
        if (only.length && !only.includes(task.name)) continue;
        const answers = {};
        const counts = {};
        for (const arm of ["direct", "code"]) {
            // Each arm on its own copy of the graph: csv_import writes to it.
            const memory = path.join(work, `${task.name}-${arm}.jsonl`);
            fs.copyFileSync(path.join(data, "graph.jsonl"), memory);
            const agent = arm === "direct" ? new Direct(data, memory) : new Code(data, memory);
            try {
                if (arm === "direct") await agent.use(task.servers);
                else await agent.start();
                answers[arm] = await task[arm](agent, data);
            } finally {
                await agent.close();
            }
            counts[arm] = agent.context;
            fs.writeFileSync(path.join(OUT, `${task.name}.${arm}.json`),
                JSON.stringify({ task: task.name, what: task.what, arm, answer: answers[arm],
                    tokens: agent.context, transcript: agent.transcript }, null, 1));
        }
        if (answers.direct !== answers.code) {
            console.error(`${task.name}: the arms disagree: direct ${answers.direct} code ${answers.code}`);
            failed = true;
        }
        const saving = 100 * (1 - counts.code / counts.direct);
        console.log(`${task.name} direct=${counts.direct} code=${counts.code} saving=${saving.toFixed(1)}%`);
    }
    fs.rmSync(work, { recursive: true, force: true });
    if (failed) process.exit(1);
}

await main();
