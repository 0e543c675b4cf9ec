// SPDX-License-Identifier: MIT
// The server's answers against sandboxd's OpenAPI document (tests/e2e/test_openapi.py; the
// document itself is linted by @redocly/cli with redocly.yaml):
//
//   node openapi-check.mjs SPEC.json RECORDS.jsonl
//       Each record {method, path, status, contentType, body} (body: the parsed JSON, or
//       null) is one answer of the server. Its operation must be documented, with its status
//       and content type, and a JSON body must validate against the schema (ajv, JSON Schema
//       2020-12 as OpenAPI 3.1 says). A 405 must be to a method the path does not document.
//       A 404 "no route" means the router has no route for a documented operation. Every
//       documented operation must have been answered at least once (else the test does not
//       cover it). Prints one line per problem and "N answers match"; exit status 1 on any.
import fs from "node:fs";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
const [specFile, recordsFile] = process.argv.slice(2);

// node with every local {$ref: "#/a/b"} replaced by what it points at (the document has no
// circular references; a dangling one is an error).
function dereference(root, node = root, depth = 0) {
  if (depth > 64) throw new Error("$ref nesting deeper than 64: a circular reference?");
  if (Array.isArray(node)) return node.map((x) => dereference(root, x, depth + 1));
  if (!node || typeof node !== "object") return node;
  if (typeof node.$ref === "string") {
    if (!node.$ref.startsWith("#/")) throw new Error(`not a local $ref: ${node.$ref}`);
    let target = root;
    for (const part of node.$ref.slice(2).split("/")) {
      const key = part.replace(/~1/g, "/").replace(/~0/g, "~");
      if (!target || !(key in target)) throw new Error(`dangling $ref: ${node.$ref}`);
      target = target[key];
    }
    return dereference(root, target, depth + 1);
  }
  return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, dereference(root, v, depth + 1)]));
}

// Does the last {parameter} of template tpl take the rest of a path (x-sandboxd-rest)?
function takesRest(item, tpl) {
  const m = tpl.match(/\{([^}]+)\}$/);
  if (!m) return false;
  const params = [...(item.parameters || [])];
  for (const op of Object.values(item)) if (op && op.parameters) params.push(...op.parameters);
  return params.some((p) => p.in === "path" && p.name === m[1] && p["x-sandboxd-rest"] === true);
}

// The template of spec that names path: literal segments equal, a {parameter} one non-empty
// segment, or with x-sandboxd-rest the non-empty rest ("/v1/sessions/{id}/files/{path}" names
// ".../files/a/b.txt"). A trailing "/" is tolerated where the server does (/ui/, /v1/sessions/).
function templateOf(paths, path) {
  const parts = path.replace(/(.)\/$/, "$1").split("/");
  for (const [tpl, item] of Object.entries(paths)) {
    const t = tpl.split("/");
    const rest = takesRest(item, tpl);
    if (parts.length < t.length || (parts.length > t.length && !rest)) continue;
    const ok = t.every((seg, i) => (/^\{[^}]+\}$/.test(seg) ? parts[i] !== "" : seg === parts[i]));
    if (ok && parts.slice(t.length - 1).every(Boolean)) return tpl;
  }
  return null;
}

function mediaOf(content, contentType) {
  if (!content) return null;
  const norm = (s) => s.toLowerCase().replace(/\s+/g, "");
  const ct = norm(contentType || "");
  for (const key of Object.keys(content)) if (norm(key) === ct) return key;
  for (const key of Object.keys(content)) if (!key.includes(";") && norm(key) === ct.split(";")[0]) return key;
  return null;
}

function answers() {
  const raw = JSON.parse(fs.readFileSync(specFile, "utf8"));
  const spec = dereference(raw);
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  const compiled = new Map();
  const check = (schema, body) => {
    if (!compiled.has(schema)) compiled.set(schema, ajv.compile(schema));
    const v = compiled.get(schema);
    return v(body) ? null : ajv.errorsText(v.errors, { separator: "; " });
  };
  const problems = [];
  const answered = new Set();
  const records = fs.readFileSync(recordsFile, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
  for (const r of records) {
    const what = `${r.method} ${r.path} -> ${r.status}`;
    const tpl = templateOf(spec.paths, r.path.split("?")[0]);
    if (!tpl) {
      if (r.status !== 404) problems.push(`${what}: the path is not documented`);
      continue;
    }
    const op = spec.paths[tpl][r.method.toLowerCase()];
    if (!op) {
      if (r.status !== 405) problems.push(`${what}: ${r.method} ${tpl} is not documented`);
      else if (!r.allow || r.allow.split(", ").some((m) => !spec.paths[tpl][m.toLowerCase()])) {
        problems.push(`${what}: Allow "${r.allow}" names a method ${tpl} does not document`);
      }
      continue;
    }
    const key = `${r.method.toUpperCase()} ${tpl}`;
    if (r.status === 404 && r.body && r.body.error && /^no route /.test(r.body.error.message)) {
      problems.push(`${what}: documented as ${key}, but the router has no such route`);
      continue;
    }
    if (r.status === 405) {
      problems.push(`${what}: documented as ${key}, but the server refuses the method`);
      continue;
    }
    answered.add(key);
    const resp = op.responses[String(r.status)] || op.responses.default;
    if (!resp) {
      problems.push(`${what}: status ${r.status} is not documented for ${key}`);
      continue;
    }
    if (!resp.content) {
      if (r.bodyLength) problems.push(`${what}: a body of ${r.bodyLength} bytes, none documented`);
      continue;
    }
    const media = mediaOf(resp.content, r.contentType);
    if (!media) {
      problems.push(`${what}: Content-Type ${r.contentType} is not documented (${Object.keys(resp.content).join(", ")})`);
      continue;
    }
    const schema = resp.content[media].schema;
    if (schema && media.startsWith("application/json")) {
      const why = check(schema, r.body);
      if (why) problems.push(`${what}: the body does not match the schema: ${why}`);
    }
  }
  for (const [tpl, item] of Object.entries(spec.paths)) {
    for (const m of METHODS) {
      if (item[m] && !answered.has(`${m.toUpperCase()} ${tpl}`)) {
        problems.push(`${m.toUpperCase()} ${tpl}: documented, but no answer of it was checked`);
      }
    }
  }
  for (const p of problems) console.log(p);
  console.log(`${records.length} answers checked, ${problems.length} problem(s)`);
  process.exit(problems.length ? 1 : 0);
}

if (!recordsFile) {
  console.log("usage: openapi-check.mjs SPEC.json RECORDS.jsonl");
  process.exit(2);
}
answers();
