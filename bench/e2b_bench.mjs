// SPDX-License-Identifier: MIT
// E2B's SDKs against a sandboxd (docs/E2B.md): what a client of E2B waits for, measured from
// the JS SDK (@e2b/code-interpreter, tests/node's pinned copy):
//   create:  Sandbox.create() and the first runCode('1+1') of the new sandbox, together
//   runCode: one runCode('1+1') round trip in a live sandbox
//   command: one commands.run('true') round trip
// E2B_API_URL and E2B_SANDBOX_URL name the sandboxd (bench/e2b_bench.py sets them). Prints
// one JSON object: {name: {p50, p99, n}} in milliseconds.
// Usage: node e2b_bench.mjs [N_CREATE [N_RUN [N_CMD [PAUSE_MS]]]]
import { createRequire } from 'node:module'

// The SDKs are tests/node's (npm ci there; make test does it).
const require = createRequire(new URL('../tests/node/package.json', import.meta.url))
const { Sandbox } = await import(require.resolve('@e2b/code-interpreter'))

const [nCreate, nRun, nCmd, pause] = process.argv.slice(2).map(Number)
const N_CREATE = nCreate || 30
const N_RUN = nRun || 500
const N_CMD = nCmd || 300
// Creates at the pace of an application (a pool refills in the background), not back to back.
const PAUSE_MS = pause ?? 250

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const now = () => Number(process.hrtime.bigint()) / 1e6

function stats(xs) {
  const s = [...xs].sort((a, b) => a - b)
  return { p50: s[Math.floor(s.length / 2)], p99: s[Math.min(s.length - 1, Math.floor(s.length * 0.99))], n: s.length }
}

const out = {}
// Warm up: the first create of a template starts its warm pool (a second or two, once).
const first = await Sandbox.create()
await first.runCode('1+1')
await first.kill()
await sleep(1000)

const create = []
for (let i = 0; i < N_CREATE; i++) {
  const t0 = now()
  const sbx = await Sandbox.create()
  const ex = await sbx.runCode('1+1')
  create.push(now() - t0)
  if (ex.text !== '2') throw new Error('runCode answered ' + JSON.stringify(ex.toJSON()))
  await sbx.kill()
  await sleep(PAUSE_MS)
}
out.create = stats(create)

const sbx = await Sandbox.create()
for (let i = 0; i < 20; i++) await sbx.runCode('1+1')
const run = []
for (let i = 0; i < N_RUN; i++) {
  const t0 = now()
  await sbx.runCode('1+1')
  run.push(now() - t0)
}
out.runCode = stats(run)

for (let i = 0; i < 10; i++) await sbx.commands.run('true')
const cmd = []
for (let i = 0; i < N_CMD; i++) {
  const t0 = now()
  await sbx.commands.run('true')
  cmd.push(now() - t0)
}
out.command = stats(cmd)
await sbx.kill()
// The SDK leaves request timers (requestTimeoutMs, a minute) behind that would keep Node alive.
process.stdout.write(JSON.stringify(out) + '\n', () => process.exit(0))
