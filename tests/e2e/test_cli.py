# SPDX-License-Identifier: MIT
"""`sandboxd run` and the binary's command line (CONTRACT §2)."""
import re
import subprocess

from harness import BIN, run_cli

CODE = """
class Greeter:
    def greet(self, name):
        print("greeting", name)
        return "hello " + name

def f(request, context):
    return {"got": request, "app": context["appId"]}

1 + 1
"""


def write(tmp_path, text, name="prog.py"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_version_and_help():
    v = subprocess.run([BIN, "--version"], capture_output=True, text=True)
    assert v.returncode == 0 and v.stdout.startswith("sandboxd ")
    for cmd in (["--help"], ["run", "--help"], ["serve", "--help"]):
        p = subprocess.run([BIN] + cmd, capture_output=True, text=True)
        assert p.returncode == 0, cmd
        assert "Usage" in p.stdout


def test_function_mode(tmp_path):
    code, out, err = run_cli(write(tmp_path, CODE), "--function", "f", "--input", '{"x": 1}')
    assert code == 0, err
    assert out == {"got": {"x": 1}, "app": "cli"}


def test_input_from_file(tmp_path):
    inp = write(tmp_path, '{"y": 2}', "in.json")
    code, out, _ = run_cli(write(tmp_path, CODE), "--function", "f", "--input", "@%s" % inp)
    assert code == 0 and out["got"] == {"y": 2}


def test_class_method_mode(tmp_path):
    code, out, _ = run_cli(write(tmp_path, CODE), "--class", "Greeter", "--method", "greet",
                           "--input", '{"name": "Ada"}')
    assert code == 0
    assert out == {"result": "hello Ada", "stdout": "greeting Ada\n", "stderr": ""}


def test_program_mode_returns_last_expression(tmp_path):
    code, out, _ = run_cli(write(tmp_path, CODE))
    assert code == 0 and out["result"] == 2


def test_application_error_exits_1(tmp_path):
    code, out, _ = run_cli(write(tmp_path, "raise ValueError('nope')\n"))
    assert code == 1
    assert out["code"] == "APPLICATION_ERROR" and out["details"]["type"] == "ValueError"


def test_timeout_and_full_output(tmp_path):
    code, out, _ = run_cli(write(tmp_path, "while True: pass\n"), "--timeout-ms", "300", "--full")
    assert code == 1
    assert out["data"]["code"] == "TIMEOUT"
    assert out["verdict"]["status"] == "TIMEOUT"
    assert {m["name"] for m in out["metrics"]} >= {"sandbox.duration", "sandbox.cpu_time",
                                                    "sandbox.memory_peak"}


def test_memory_limit_flag(tmp_path):
    code, out, _ = run_cli(write(tmp_path, "x = bytearray(400 << 20)\n"), "--memory-mb", "64")
    assert code == 1 and out["code"] == "MEMORY_LIMIT"


def test_bad_usage_exits_2(tmp_path):
    prog = write(tmp_path, CODE)
    for args in (["--timeout-ms", "abc"], ["--timeout-ms", "-5"], ["--class", "Greeter"],
                 ["--input", "{not json"], ["--bogus"]):
        p = subprocess.run([BIN, "run", str(prog)] + args, capture_output=True, text=True)
        assert p.returncode == 2, args
        assert p.stderr
    p = subprocess.run([BIN, "run"], capture_output=True, text=True)
    assert p.returncode == 2
    p = subprocess.run([BIN, "run", str(tmp_path / "missing.py")], capture_output=True, text=True)
    assert p.returncode == 2
    p = subprocess.run([BIN, "frobnicate"], capture_output=True, text=True)
    assert p.returncode == 2


def test_serve_rejects_bad_options():
    for args in (["--port", "70000"], ["--pool-size", "x"], ["--default-timeout-ms", "5000",
                                                             "--max-timeout-ms", "100"]):
        p = subprocess.run([BIN, "serve"] + args, capture_output=True, text=True, timeout=30)
        assert p.returncode == 2, (args, p.stderr)


SUBCOMMANDS = ("serve", "mcp", "run", "servers", "migrate")


def getopt_names(cmd):
    """The long options the subcommand's getopt table really holds, asked of glibc's getopt_long
    itself: for each first letter, '--L=x' is either ambiguous (glibc lists every candidate),
    one option without an argument (named in the refusal), or unknown; '--L' alone names the
    one option with an argument. Nothing runs: every probe ends in a usage error."""
    def probe(*args):
        p = subprocess.run([BIN, cmd] + list(args), capture_output=True, text=True, timeout=30)
        assert p.returncode != 0, (cmd, args, p.stdout)
        return p.stderr

    names = set()
    for letter in "abcdefghijklmnopqrstuvwxyz":
        err = probe("--%s=x" % letter, "--zz-no-such-option")
        if "is ambiguous; possibilities:" in err:
            names |= set(re.findall(r"'--([a-z0-9-]+)'", err.split("possibilities:", 1)[1]))
        elif "doesn't allow an argument" in err:
            names |= set(re.findall(r"option '--([a-z0-9-]+)' doesn't allow", err))
        elif "unrecognized option '--%s=x'" % letter not in err:
            err = probe("--%s" % letter)
            found = re.findall(r"option '--([a-z0-9-]+)' requires an argument", err)
            assert len(found) == 1, (cmd, letter, err)
            names.add(found[0])
    return names


# (subcommand, option, min, max): numeric options of the option tables (cmd/setup.h,
# cmd/serve.c, cmd/run.c, cmd/common.h), spot-checked at both ends of their ranges.
RANGES = [("serve", "port", 0, 65535), ("serve", "max-running", 1, 65536),
          ("serve", "drain-timeout-s", 0, 3600), ("serve", "reuse-max-idle", 0, 4096),
          ("serve", "pool-size", 0, 4096), ("serve", "zygotes", 1, 64),
          ("serve", "session-cpu-budget-ms", 0, 3600000), ("serve", "mcp-page-size", 1, 1000),
          ("mcp", "max-result-mb", 1, 1024), ("mcp", "egress-max-connections", 1, 4096),
          ("mcp", "session-max-tool-calls", 1, 65536), ("mcp", "tmp-size-mb", 1, 1 << 20),
          ("run", "timeout-ms", 1, 86400000), ("run", "memory-mb", 8, 1 << 20),
          ("run", "output-limit-kb", 1, 1 << 20)]


def test_numeric_options_are_range_checked():
    """Beyond either end: exit 2 naming the option and its range, before anything starts.
    At the ends: accepted, so the error is the next, bad option's."""
    def run(cmd, *args):
        return subprocess.run([BIN, cmd] + list(args), capture_output=True, text=True,
                              timeout=30)
    for cmd, name, lo, hi in RANGES:
        outside = [str(hi + 1)] + ([str(lo - 1)] if lo > 0 else [])
        for value in outside:
            p = run(cmd, "--" + name, value)
            assert p.returncode == 2, (cmd, name, value, p.stderr)
            assert "--%s: '%s' is not a number in [%d, %d]" % (name, value, lo, hi) in p.stderr
        for value in (lo, hi):
            p = run(cmd, "--" + name, str(value), "--sandbox-uid", "0")
            assert p.returncode == 2 and "--sandbox-uid: '0'" in p.stderr, (cmd, name, value,
                                                                            p.stderr)


def test_every_option_is_in_help_and_every_help_option_exists():
    for cmd in SUBCOMMANDS:
        p = subprocess.run([BIN, cmd, "--help"], capture_output=True, text=True, timeout=30)
        assert p.returncode == 0, cmd
        # an option on its own line or named in another's text (aliases, pairs); "curl
        # --resolve" and "sandboxd mcp --compat" are other commands'
        text = re.sub(r"(curl|sandboxd [a-z]+) --[a-z][a-z0-9-]*", "", p.stdout)
        in_help = set(re.findall(r"(?<![\w-])--([a-z][a-z0-9-]*)", text))
        real = getopt_names(cmd)
        assert {"help", "log-level"} <= real, (cmd, real)
        assert real - in_help == set(), "%s: options missing from --help" % cmd
        assert in_help - real == set(), "%s: --help names options getopt does not know" % cmd
