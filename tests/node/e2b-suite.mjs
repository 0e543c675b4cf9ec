// SPDX-License-Identifier: MIT
// E2B's own SDKs (e2b and @e2b/code-interpreter, pinned in package.json), unchanged, against a
// sandboxd: what E2B's docs show, case by case. tests/e2e/test_e2b.py starts `sandboxd serve`,
// sets E2B_API_URL = E2B_SANDBOX_URL = http://127.0.0.1:PORT/e2b and E2B_API_KEY, runs this
// script once and checks each case's outcome. Usage: node e2b-suite.mjs [CASE...] (all cases
// when none are named); prints one JSON object {"CASE": {"ok": true} | {"ok": false, "error"}}.
import {
  AuthenticationError,
  CommandExitError,
  FileNotFoundError,
  NotFoundError,
  Sandbox,
  SandboxNotFoundError,
  TimeoutError,
} from '@e2b/code-interpreter'

const T = { timeoutMs: 120_000 } // every sandbox here: two minutes at most

class Check extends Error {}
function check(cond, what, got) {
  if (!cond) throw new Check(`${what}${got === undefined ? '' : ': got ' + JSON.stringify(got)}`)
}
async function rejects(promise, klass, what) {
  try {
    await promise
  } catch (e) {
    check(e instanceof klass, `${what}: expected ${klass.name}`, `${e?.name}: ${e?.message}`)
    return e
  }
  throw new Check(`${what}: expected ${klass.name}, but it succeeded`)
}

const cases = {
  async create_info_timeout() {
    const sbx = await Sandbox.create({ ...T, metadata: { suite: 'e2b', n: '1' } })
    try {
      const info = await sbx.getInfo()
      check(info.sandboxId === sbx.sandboxId, 'getInfo names the sandbox', info)
      check(info.templateId === 'code-interpreter-v1', 'the code interpreter template', info)
      check(info.metadata.suite === 'e2b' && info.metadata.n === '1', 'metadata kept', info)
      check(info.state === 'running', 'running', info.state)
      const left = info.endAt - Date.now()
      check(left > 100_000 && left <= 121_000, 'endAt is the timeout ahead', left)
      await sbx.setTimeout(30_000)
      const later = (await sbx.getInfo()).endAt - Date.now()
      check(later > 25_000 && later <= 31_000, 'setTimeout moves endAt', later)
      check(await sbx.isRunning(), 'isRunning')
      const listed = await Sandbox.list({ query: { metadata: { suite: 'e2b' } } }).nextItems()
      check(listed.some((s) => s.sandboxId === sbx.sandboxId), 'Sandbox.list finds it by metadata')
      const none = await Sandbox.list({ query: { metadata: { suite: 'other' } } }).nextItems()
      check(!none.some((s) => s.sandboxId === sbx.sandboxId), 'the metadata filter filters')
    } finally {
      await sbx.kill()
    }
  },

  async files() {
    const sbx = await Sandbox.create(T)
    try {
      const info = await sbx.files.write('/home/user/hello.txt', 'Hello, E2B!\n')
      check(info.path === '/home/user/hello.txt' && info.name === 'hello.txt', 'write info', info)
      check((await sbx.files.read('/home/user/hello.txt')) === 'Hello, E2B!\n', 'read text')
      // Relative paths are under the home directory, as in envd.
      check((await sbx.files.read('hello.txt')) === 'Hello, E2B!\n', 'relative read')
      const bytes = new Uint8Array(256 * 4).map((_, i) => i % 256)
      await sbx.files.write('/home/user/data/blob.bin', bytes.buffer)
      const back = await sbx.files.read('/home/user/data/blob.bin', { format: 'bytes' })
      check(back.length === bytes.length && back.every((b, i) => b === bytes[i]), 'binary round trip')
      // The octet-stream upload of envd >= 0.5.7 too.
      await sbx.files.write('/home/user/octet.bin', new Uint8Array([0, 255, 10, 13]), {
        useOctetStream: true,
      })
      const octet = await sbx.files.read('/home/user/octet.bin', { format: 'bytes' })
      check(octet.join() === '0,255,10,13', 'octet-stream upload', [...octet])
      await sbx.files.write('/home/user/empty.txt', '')
      check((await sbx.files.read('/home/user/empty.txt')) === '', 'an empty file')
      const many = await sbx.files.write([
        { path: '/home/user/m/a.txt', data: 'A' },
        { path: '/home/user/m/b.txt', data: 'B' },
      ])
      check(many.length === 2, 'writeFiles', many)
      const names = (await sbx.files.list('/home/user')).map((e) => e.name).sort()
      for (const n of ['hello.txt', 'data', 'octet.bin', 'empty.txt', 'm'])
        check(names.includes(n), `list shows ${n}`, names)
      const deep = (await sbx.files.list('/home/user', { depth: 2 })).map((e) => e.path)
      check(deep.includes('/home/user/m/a.txt'), 'list with depth 2', deep)
      const shallow = (await sbx.files.list('/home/user')).map((e) => e.path)
      check(!shallow.includes('/home/user/m/a.txt'), 'depth 1 stays shallow', shallow)
      const entry = (await sbx.files.list('/home/user/data'))[0]
      check(entry.type === 'file' && entry.size === 1024 && entry.modifiedTime instanceof Date,
        'an entry', entry)
      await rejects(sbx.files.read('/home/user/missing.txt'), FileNotFoundError, 'missing file')
      await rejects(sbx.files.list('/home/user/nothing'), NotFoundError, 'missing directory')
      check(!(await sbx.files.exists('/home/user/missing.txt')), 'exists: no')
      check(await sbx.files.exists('/home/user/hello.txt'), 'exists: yes')
      check(await sbx.files.makeDir('/home/user/new/dir'), 'makeDir')
      check(!(await sbx.files.makeDir('/home/user/new/dir')), 'makeDir again: false')
      const moved = await sbx.files.rename('/home/user/hello.txt', '/home/user/new/dir/hi.txt')
      check(moved.path === '/home/user/new/dir/hi.txt', 'rename', moved)
      const stat = await sbx.files.getInfo('/home/user/new/dir')
      check(stat.type === 'dir', 'getInfo of a directory', stat)
      await sbx.files.remove('/home/user/new')
      check(!(await sbx.files.exists('/home/user/new/dir/hi.txt')), 'remove (recursive)')
      // What a command writes, the files API reads: one sandbox.
      await sbx.commands.run('echo from-shell > /home/user/shell.txt')
      check((await sbx.files.read('/home/user/shell.txt')) === 'from-shell\n', 'shell file')
    } finally {
      await sbx.kill()
    }
  },

  async commands() {
    const sbx = await Sandbox.create(T)
    try {
      const r = await sbx.commands.run('echo out; echo err >&2; pwd; echo "$FOO"', {
        envs: { FOO: 'bar' },
      })
      check(r.exitCode === 0, 'exit code 0', r)
      check(r.stdout === 'out\n/home/user\nbar\n', 'stdout', r.stdout)
      check(r.stderr === 'err\n', 'stderr', r.stderr)
      const e = await rejects(sbx.commands.run('echo partial; exit 3'), CommandExitError, 'exit 3')
      check(e.exitCode === 3 && e.stdout === 'partial\n', 'CommandExitError carries the result', {
        exitCode: e.exitCode,
        stdout: e.stdout,
      })
      const cwd = await sbx.commands.run('pwd', { cwd: '/tmp' })
      check(cwd.stdout === '/tmp\n', 'cwd', cwd.stdout)
      // Output arrives while the command runs.
      const seen = []
      const t0 = Date.now()
      await sbx.commands.run('echo one; sleep 1; echo two', {
        onStdout: (d) => seen.push([d, Date.now() - t0]),
      })
      check(seen.length >= 2 && seen[0][1] < 800, 'onStdout streams', seen)
      // A command timeout: TimeoutError, and the sandbox goes on working.
      await rejects(sbx.commands.run('sleep 30', { timeoutMs: 1500 }), TimeoutError, 'timeout')
      check((await sbx.commands.run('echo alive')).stdout === 'alive\n', 'alive after a timeout')
      // Background: the handle waits, lists, and can be killed.
      const bg = await sbx.commands.run('sleep 0.5; echo done-bg', { background: true })
      check(typeof bg.pid === 'number' && bg.pid > 0, 'a background pid', bg.pid)
      const listed = await sbx.commands.list()
      check(listed.some((p) => p.pid === bg.pid && p.cmd === '/bin/bash'), 'commands.list', listed)
      const done = await bg.wait()
      check(done.stdout === 'done-bg\n', 'background wait', done)
      const long = await sbx.commands.run('sleep 60', { background: true, timeoutMs: 0 })
      check(await long.kill(), 'kill a background command')
      await rejects(long.wait(), CommandExitError, 'a killed command ends with an error')
      check(!(await sbx.commands.kill(long.pid)), 'killing it again: false')
      // stdin
      const cat = await sbx.commands.run('cat', { background: true, stdin: true })
      await cat.sendStdin('piped\n')
      await cat.closeStdin()
      check((await cat.wait()).stdout === 'piped\n', 'stdin', cat.stdout)
    } finally {
      await sbx.kill()
    }
  },

  async run_code() {
    const sbx = await Sandbox.create(T)
    try {
      let ex = await sbx.runCode('x = 21\nx * 2')
      check(ex.text === '42' && ex.error === undefined, 'the last value', ex.toJSON())
      ex = await sbx.runCode('x + 1')
      check(ex.text === '22', 'state kept between calls', ex.text)
      ex = await sbx.runCode("'a string'")
      check(ex.text === 'a string', "a string's text as E2B gives it", ex.text)
      ex = await sbx.runCode('print("printed")\nNone')
      check(ex.results.length === 0 && ex.logs.stdout.join('') === 'printed\n', 'prints', ex.toJSON())
      ex = await sbx.runCode('def f():\n    return 1 / 0\nf()')
      check(ex.error?.name === 'ZeroDivisionError', 'error name', ex.error)
      check(ex.error.value === 'division by zero', 'error value', ex.error.value)
      check(ex.error.traceback.includes('return 1 / 0'), 'traceback has the line', ex.error.traceback)
      ex = await sbx.runCode('import os\nos.environ.get("MY_VAR")', { envs: { MY_VAR: 'per-call' } })
      check(ex.text === 'per-call', 'envs of the call', ex.text)
      ex = await sbx.runCode('import os\nos.environ.get("MY_VAR", "gone")')
      check(ex.text === 'gone', 'envs do not outlive their call', ex.text)
      // Output streamed while the code runs.
      const seen = []
      const t0 = Date.now()
      ex = await sbx.runCode('import time\nprint("first")\ntime.sleep(1.5)\nprint("second")', {
        onStdout: (m) => seen.push([m.line, Date.now() - t0]),
      })
      check(seen.length === 2 && seen[0][1] < 1200 && seen[1][1] >= 1400, 'streamed', seen)
      ex = await sbx.runCode('[1, 2, {"a": 3}]')
      check(JSON.stringify(ex.results[0].json) === '[1,2,{"a":3}]', 'json of a list', ex.results[0])
      ex = await sbx.runCode(
        'import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [4, 1, 9])\nplt.title("t")\nplt.show()'
      )
      const png = ex.results.find((r) => r.png)
      check(png && Buffer.from(png.png, 'base64').subarray(1, 4).toString() === 'PNG', 'a PNG', ex.toJSON())
      ex = await sbx.runCode(
        'import pandas as pd\ndf = pd.DataFrame({"city": ["Oslo", "Lima"], "sales": [3, 5]})\ndf'
      )
      const main = ex.results.find((r) => r.isMainResult)
      check(main?.html?.includes('<table') && main.html.includes('Oslo'), 'pandas HTML', main)
      check(main.text.includes('city') && main.text.includes('Lima'), 'pandas text', main.text)
      ex = await sbx.runCode('from IPython.display import display, HTML\ndisplay(HTML("<b>hi</b>"))\n7')
      check(ex.results.some((r) => !r.isMainResult && r.html === '<b>hi</b>'), 'display()', ex.toJSON())
      check(ex.text === '7', 'display() and the value', ex.text)
      ex = await sbx.runCode('1 +')
      check(ex.error?.name === 'SyntaxError', 'a syntax error', ex.error)
      ex = await sbx.runCode('print(1)', { language: 'javascript' })
      check(ex.error && ex.error.value.includes('Python only'), 'another language', ex.error)
      // A client that gives up (timeoutMs) interrupts its execution; the context goes on.
      await rejects(sbx.runCode('import time\nfor i in range(60):\n    time.sleep(0.5)',
        { timeoutMs: 1000 }), TimeoutError, 'an execution past its timeoutMs')
      ex = await sbx.runCode('x')
      check(ex.text === '21', 'the context after an interrupted execution', ex.toJSON())
      // Code runs while a command does, and files meet the code.
      const bg = await sbx.commands.run('sleep 3', { background: true })
      await sbx.files.write('/home/user/in.csv', 'a,b\n1,2\n3,4\n')
      ex = await sbx.runCode('import pandas as pd\nint(pd.read_csv("/home/user/in.csv")["b"].sum())')
      check(ex.text === '6', 'code beside a running command reads an uploaded file', ex.text)
      await bg.kill()
    } finally {
      await sbx.kill()
    }
  },

  async contexts() {
    const sbx = await Sandbox.create(T)
    try {
      await sbx.runCode('where = "default"')
      const ctx = await sbx.createCodeContext({ cwd: '/tmp' })
      check(ctx.language === 'python' && ctx.cwd === '/tmp' && ctx.id, 'a context', ctx)
      let ex = await sbx.runCode('where = "ctx"\nimport os\nos.getcwd()', { context: ctx })
      check(ex.text === '/tmp', 'the context cwd', ex.text)
      ex = await sbx.runCode('where')
      check(ex.text === 'default', 'separate namespaces', ex.text)
      ex = await sbx.runCode('where', { context: ctx })
      check(ex.text === 'ctx', 'the context keeps its own', ex.text)
      const list = await sbx.listCodeContexts()
      check(list.some((c) => c.id === ctx.id), 'listCodeContexts', list)
      // Two contexts run at once.
      const t0 = Date.now()
      await Promise.all([
        sbx.runCode('import time\ntime.sleep(1)'),
        sbx.runCode('import time\ntime.sleep(1)', { context: ctx }),
      ])
      check(Date.now() - t0 < 1900, 'contexts run side by side', Date.now() - t0)
      await sbx.restartCodeContext(ctx)
      ex = await sbx.runCode('"where" in globals()', { context: ctx })
      check(ex.text === 'False', 'restart empties the namespace', ex.text)
      await sbx.removeCodeContext(ctx.id)
      check(!(await sbx.listCodeContexts()).some((c) => c.id === ctx.id), 'removed')
      await rejects(sbx.runCode('1', { context: ctx }), NotFoundError, 'a removed context')
      await rejects(sbx.createCodeContext({ language: 'r' }), Error, 'another language')
    } finally {
      await sbx.kill()
    }
  },

  async connect_kill() {
    const sbx = await Sandbox.create(T)
    await sbx.files.write('/home/user/keep.txt', 'kept')
    await sbx.runCode('kept = 5')
    const same = await Sandbox.connect(sbx.sandboxId)
    check((await same.files.read('/home/user/keep.txt')) === 'kept', 'connect: same files')
    check((await same.runCode('kept')).text === '5', 'connect: same variables')
    check(await Sandbox.kill(sbx.sandboxId), 'kill: true')
    check(!(await Sandbox.kill(sbx.sandboxId)), 'kill again: false')
    check(!(await same.isRunning()), 'isRunning after kill: false')
    await rejects(Sandbox.getInfo(sbx.sandboxId), SandboxNotFoundError, 'getInfo after kill')
    await rejects(Sandbox.connect(sbx.sandboxId), NotFoundError, 'connect after kill')
    await rejects(same.files.read('/home/user/keep.txt'), NotFoundError, 'files after kill')
    await rejects(same.files.list('/home/user'), NotFoundError, 'list after kill')
    await rejects(same.commands.run('true'), NotFoundError, 'commands after kill')
    await rejects(same.runCode('1'), NotFoundError, 'runCode after kill')
    await rejects(Sandbox.getInfo('vm.00000000000000000000000000000000'), SandboxNotFoundError,
      'an unknown id')
  },

  async wrong_key() {
    await rejects(Sandbox.create({ ...T, apiKey: 'e2b_0123456789abcdef' }), AuthenticationError,
      'a wrong key')
    const sbx = await Sandbox.create(T)
    try {
      await rejects(Sandbox.connect(sbx.sandboxId, { apiKey: 'e2b_0123456789abcdef' }),
        AuthenticationError, 'connect with a wrong key')
      await rejects(Sandbox.list({ apiKey: 'e2b_0123456789abcdef' }).nextItems(), AuthenticationError,
        'list with a wrong key')
    } finally {
      await sbx.kill()
    }
  },

  async isolation() {
    const [a, b] = await Promise.all([Sandbox.create(T), Sandbox.create(T)])
    try {
      await a.files.write('/home/user/secret.txt', 'a only')
      await a.runCode('secret = "a only"')
      await rejects(b.files.read('/home/user/secret.txt'), FileNotFoundError, "b reads a's file")
      const ex = await b.runCode('"secret" in globals()')
      check(ex.text === 'False', "b sees a's variable", ex.text)
      const ls = await b.commands.run('ls /home/user /tmp')
      check(!ls.stdout.includes('secret'), "b's shell sees a's file", ls.stdout)
      // Two sandboxes' processes do not see each other.
      const ps = await b.commands.run('ls /proc | grep -c "^[0-9]"')
      check(Number(ps.stdout) < 20, "b's process list is its own", ps.stdout)
    } finally {
      await Promise.all([a.kill(), b.kill()])
    }
  },

  async no_network() {
    const sbx = await Sandbox.create(T)
    try {
      const ex = await sbx.runCode(
        'import socket\ntry:\n    s = socket.create_connection(("1.1.1.1", 80), timeout=3)\n' +
          '    r = "connected"\nexcept OSError as e:\n    r = type(e).__name__\nr'
      )
      check(ex.text !== 'connected' && ex.error === undefined, 'no network from code', ex.toJSON())
      const sh = await sbx.commands.run(
        'python3 -c "import urllib.request; urllib.request.urlopen(\'http://example.com\', timeout=3)"'
      ).catch((e) => e)
      check(sh instanceof CommandExitError, 'no network from a command', sh)
      const info = await sbx.getInfo()
      check(info.allowInternetAccess === false, 'allowInternetAccess false', info)
    } finally {
      await sbx.kill()
    }
  },
}

const names = process.argv.slice(2).length ? process.argv.slice(2) : Object.keys(cases)
const results = {}
for (const name of names) {
  const t0 = Date.now()
  try {
    await cases[name]()
    results[name] = { ok: true, ms: Date.now() - t0 }
  } catch (e) {
    results[name] = { ok: false, ms: Date.now() - t0, error: `${e?.name}: ${e?.message}`, stack: e?.stack }
  }
}
// The SDKs leave request timers (requestTimeoutMs, a minute) behind that would keep Node alive.
process.stdout.write(JSON.stringify(results) + '\n', () => process.exit(0))
