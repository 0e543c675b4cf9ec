import { Sandbox } from '@e2b/code-interpreter'
const now = () => Number(process.hrtime.bigint()) / 1e6
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
let s0 = await Sandbox.create(); await s0.runCode('1'); await s0.kill(); await sleep(1000)
for (let i = 0; i < 8; i++) {
  const t0 = now(); const sbx = await Sandbox.create(); const t1 = now()
  await sbx.runCode('1+1'); const t2 = now(); await sbx.runCode('1+1'); const t3 = now()
  console.log('create', (t1 - t0).toFixed(1), 'first run', (t2 - t1).toFixed(1), 'second', (t3 - t2).toFixed(1))
  await sbx.kill(); await sleep(300)
}
