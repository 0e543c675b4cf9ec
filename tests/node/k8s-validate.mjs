// SPDX-License-Identifier: MIT
// Validate Kubernetes manifests offline, the way kubeconform --strict would:
//
//   node k8s-validate.mjs FILE.yaml...
//
// Each YAML document is checked against the JSON schema of its apiVersion and kind, generated
// from Kubernetes' OpenAPI specification (npm package kubernetes-models: types, required
// fields, enums, formats), then, since those schemas accept unknown fields, by TypeScript's
// excess-property check against the same package's type definitions (a misspelt
// "readinesProbe" is an error, not a silently missing probe). Prints one line per problem
// ("FILE#N KIND/NAME: message") and "N documents valid"; exit status 1 on any problem.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import YAML from "yaml";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const problems = [];
const docs = [];

function where(d) {
  const name = d.obj?.metadata?.name ?? "?";
  return `${d.file}#${d.index} ${d.obj?.kind ?? "?"}/${name}`;
}

for (const file of process.argv.slice(2)) {
  const parsed = YAML.parseAllDocuments(fs.readFileSync(file, "utf8"));
  const list = Array.isArray(parsed) ? parsed : [parsed];
  for (const [index, doc] of list.entries()) {
    const d = { file, index, obj: null };
    if (doc.errors.length) {
      problems.push(`${file}#${index}: YAML: ${doc.errors[0].message}`);
      continue;
    }
    d.obj = doc.toJS({ maxAliasCount: 0 }); // no aliases in manifests
    if (d.obj === null) continue; // an empty document (a trailing "---")
    const { apiVersion, kind } = d.obj;
    if (typeof apiVersion !== "string" || typeof kind !== "string" || !/^[A-Za-z0-9]+$/.test(kind)) {
      problems.push(`${where(d)}: not a Kubernetes object (apiVersion and kind are required)`);
      continue;
    }
    d.module = `kubernetes-models/${apiVersion}/${kind}`; // "v1" (core) or "group/version"
    let model;
    try {
      model = (await import(d.module))[kind];
    } catch {
      model = undefined;
    }
    if (typeof model !== "function") {
      problems.push(`${where(d)}: no schema for apiVersion ${apiVersion}, kind ${kind}`);
      continue;
    }
    try {
      new model(d.obj).validate();
    } catch (e) {
      problems.push(`${where(d)}: ${e.message}`);
      continue;
    }
    docs.push(d);
  }
}

// Unknown fields: each document becomes a typed constant of a virtual TypeScript module.
if (docs.length) {
  const virtual = path.join(HERE, "__k8s_manifests__.mts");
  let source = "";
  const starts = [];
  for (const [i, d] of docs.entries()) {
    starts.push(source.split("\n").length - 1);
    source += `import type { I${d.obj.kind} as T${i} } from "${d.module}";\n`;
    source += `export const d${i}: T${i} = ${JSON.stringify(d.obj, null, 1)};\n`;
  }
  const options = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, lang, ...rest) =>
    name === virtual ? ts.createSourceFile(name, source, lang) : getSourceFile(name, lang, ...rest);
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => name === virtual || fileExists(name);
  const program = ts.createProgram([virtual], options, host);
  for (const diag of ts.getPreEmitDiagnostics(program)) {
    const text = ts.flattenDiagnosticMessageText(diag.messageText, "\n").split("\n").pop();
    if (!diag.file || diag.file.fileName !== virtual) {
      problems.push(`type check: ${text}`);
      continue;
    }
    const line = diag.file.getLineAndCharacterOfPosition(diag.start).line;
    let i = 0;
    while (i + 1 < starts.length && starts[i + 1] <= line) i++;
    problems.push(`${where(docs[i])}: ${text.trim()}`);
  }
}

for (const p of problems) console.log(p);
if (problems.length) {
  console.log(`${problems.length} problem(s)`);
  process.exit(1);
}
console.log(`${docs.length} documents valid`);
