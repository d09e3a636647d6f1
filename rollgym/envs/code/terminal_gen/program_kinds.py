"""Task kinds checked by running what the agent wrote: scripts, processes and small localhost services.

A ``run`` check (see :mod:`.spec`) writes hidden inputs and runs a command of the check's own in
the sandbox after the agent is done: a script on inputs it never saw, a signal sent to a process
it started, requests to a service on 127.0.0.1 (the sandbox's own network namespace: no other
machine, not even the host's loopback). A check's output is compared outside the sandbox.
"""

from __future__ import annotations

import shlex

import numpy as np

from rollgym.envs.code.terminal_gen.spec import Spec, runs, spec, text_is
from rollgym.envs.code.terminal_gen.state_kinds import SIZES, WORDS, line, lines, names, pick


def _script(name: str, body: str) -> str:
    """Shell commands that write an executable bash script ``name`` with ``body``."""
    return f"cat > {name} <<'RG_EOF'\n#!/bin/bash\n{body}\nRG_EOF\nchmod +x {name}"


def _hidden_texts(rng: np.random.Generator, level: int) -> list[str]:
    return [lines(rng, 0 if i == 0 else 1, 2 + 2 * level) for i in range(3)]


# -- scripts -------------------------------------------------------------------------------------------------------
def script_stats(rng: np.random.Generator, level: int) -> Spec:
    """A script that prints a file's line, word or byte count."""
    metric = pick(rng, ("lines", "words", "bytes"))
    name = pick(rng, ("count.sh", "stat.sh", "measure.sh", "size.sh"))
    flag = {"lines": "-l", "words": "-w", "bytes": "-c"}[metric]

    def count(text: str) -> int:
        return {"lines": text.count("\n"), "words": len(text.split()), "bytes": len(text.encode())}[metric]

    example = lines(rng, 2, 4)
    hidden = _hidden_texts(rng, level)
    while len({count(t) for t in hidden} - {count(example)}) < 2:  # no one constant passes the hidden runs
        hidden = _hidden_texts(rng, level)
    checks = [runs(f"./{name} hidden_{i}.txt", str(count(t)), {f"hidden_{i}.txt": t}) for i, t in enumerate(hidden)]
    return spec("script_stats", "scripts", level,
                f"Write an executable bash script {name} in the working folder that prints the number of {metric} in "
                f"the file named by its first argument (just the number). For notes/example.txt it prints "
                f"{count(example)}. It is run on other files too.",
                {"notes/example.txt": example}, _script(name, f'wc {flag} < "$1" | tr -d " "'),
                _script(name, f"echo {count(example)}"), checks)


def script_grep(rng: np.random.Generator, level: int) -> Spec:
    """A script that prints the numbered lines of a file holding a fixed string."""
    name = pick(rng, ("filter.sh", "find.sh", "lines.sh"))
    vocabulary = (*WORDS[:10], "v1.2", "v1x2", "a+b", "ab")

    def matches(pattern: str, text: str) -> str:
        return "\n".join(f"{i}:{ln}" for i, ln in enumerate(text.splitlines(), 1) if pattern in ln)

    checks = []
    for i in range(3):
        text = "".join(line(rng, int(rng.integers(1, 5)), vocabulary) + "\n" for _ in range(3 + 2 * level))
        pattern = pick(rng, ("v1.2", "a+b")) if level >= 2 and i == 2 else text.split()[int(rng.integers(3))]
        checks.append(runs(f"./{name} {shlex.quote(pattern)} hidden_{i}.txt", matches(pattern, text),
                           {f"hidden_{i}.txt": text}))
    return spec("script_grep", "scripts", level,
                f"Write an executable bash script {name}: `{name} PATTERN FILE` prints the lines of FILE that contain "
                "PATTERN (a fixed string, not a regular expression; case-sensitive), each prefixed by its line number "
                "and a colon (like `3:some text`), in order, and nothing else.",
                {"notes/sample.txt": "alpha beta\nv1.2 release\ngamma\n"},
                _script(name, 'grep -nF -- "$1" "$2" || true'), _script(name, 'grep -- "$1" "$2" || true'), checks)


def script_args(rng: np.random.Generator, level: int) -> Spec:
    """A script that prints its arguments in reverse order, joined by a separator (held out)."""
    name = pick(rng, ("join.sh", "rev.sh", "args.sh"))
    sep = pick(rng, (",", " | ", "-", ":", "/"))
    checks = []
    for _ in range(3):
        args = [a.replace(a[-1], " " + a[-1], 1) if level >= 2 and j == 0 else a
                for j, a in enumerate(names(rng, int(rng.integers(2, 4 + level))))]
        checks.append(runs(f"./{name} " + " ".join(shlex.quote(a) for a in args), sep.join(reversed(args))))
    body = (f'out=""; n=0\nfor a in "$@"; do if [ $n -eq 0 ]; then out="$a"; else out="$a{sep}$out"; fi; n=$((n+1)); '
            'done\nprintf "%s\\n" "$out"')
    return spec("script_args", "scripts", level,
                f"Write an executable bash script {name} that prints its arguments in reverse order, joined by "
                f"{sep!r} (e.g. `{name} a b c` prints c{sep}b{sep}a). An argument may contain spaces.",
                {}, _script(name, body), _script(name, f'IFS="{sep[0]}"; echo "$*"'), checks)


# -- processes -----------------------------------------------------------------------------------------------------
def exit_codes(rng: np.random.Generator, level: int) -> Spec:
    """Run every program in checks/ and list those that fail."""
    files, modes, failed = {}, {}, []
    for i, n in enumerate(names(rng, SIZES[level] + 1)):
        a, b = int(rng.integers(2, 50)), int(rng.integers(2, 50))
        code = 0 if i == 0 else (a * b) % 3 if i > 1 else 1
        path = f"checks/{n}.sh"
        files[path] = f"#!/bin/bash\nx=$(( {a} * {b} % 3 ))\n" + ("exit $x\n" if i > 1 else f"exit {code}\n")
        modes[path] = 0o755
        failed += [f"{n}.sh"] if code else []
    return spec("exit_codes", "processes", level,
                "Run every program in checks/ (each is executable). Write the names (e.g. name.sh) of those that exit "
                "with a non-zero status to failed.txt, one per line, sorted (byte order).",
                files, 'for f in checks/*.sh; do "$f" >/dev/null 2>&1 || basename "$f"; done | LC_ALL=C sort '
                       "> failed.txt",
                "ls checks | LC_ALL=C sort > failed.txt", [text_is("failed.txt", "\n".join(sorted(failed)))],
                modes)


def count_failures(rng: np.random.Generator, level: int) -> Spec:
    """A script that runs every program in a folder and counts the failures."""
    name = pick(rng, ("runner.sh", "runall.sh", "batch.sh"))
    checks = []
    for i, failing in enumerate(rng.permutation(3) + int(rng.integers(0, level + 1))):  # a different count each
        codes = [int(rng.integers(1, 4)) for _ in range(int(failing))] + [0] * int(rng.integers(1, 3 + level))
        codes = [int(c) for c in rng.permutation(codes)]
        files = {f"jobs_{i}/job{j}.sh": f"#!/bin/bash\necho running {j}\nexit {c}\n" for j, c in enumerate(codes)}
        checks.append(runs(f"./{name} jobs_{i}", str(sum(c != 0 for c in codes)), files,
                           {p: 0o755 for p in files}))
    body = 'n=0\nfor f in "$1"/*.sh; do [ -e "$f" ] || continue; "$f" >/dev/null 2>&1 || n=$((n+1)); done\necho "$n"'
    return spec("count_failures", "processes", level,
                f"Write an executable bash script {name}: `{name} DIR` runs every .sh file in DIR (each is executable; "
                "run each as its own process, their output does not matter) and prints how many of them exited with "
                "a non-zero status (just the number).",
                {"jobs/ok.sh": "#!/bin/bash\nexit 0\n", "jobs/bad.sh": "#!/bin/bash\nexit 2\n"},
                _script(name, body), _script(name, 'ls "$1"/*.sh | wc -l'), checks,
                {"jobs/ok.sh": 0o755, "jobs/bad.sh": 0o755})


# Two rounds in an order drawn when the check runs: SIGTERM early (0.1 to 0.5 s after the pid file), then it must
# be gone within 2 s; and no signal for 3 s, in which it must keep running and write no log. A script that ignores
# SIGTERM and exits on a timer cannot pass both (its exit would have to come before 2.5 s and after 3 s).
_TRAP_DRIVER = """round() {{
rm -f guard.pid guard.log
./guard.sh >/dev/null 2>&1 &
for i in $(seq 200); do [ -s guard.pid ] && break; kill -0 $! 2>/dev/null || break; sleep 0.05; done
kill -0 $! 2>/dev/null || echo "guard.sh is not running"
sleep "$1"
kill -0 $! 2>/dev/null || echo "guard.sh stopped before it was signalled"
[ -e guard.log ] && echo "guard.log was written before the signal"
{ignored}kill -TERM "$(cat guard.pid 2>/dev/null)" 2>/dev/null
for i in $(seq 40); do kill -0 $! 2>/dev/null || break; sleep 0.05; done
kill -KILL $! 2>/dev/null; wait $!; echo "status=$?"; cat guard.log 2>/dev/null
{pid_check}true
}}
early=0.$((1 + RANDOM % 5))
if [ $((RANDOM % 2)) = 0 ]; then round "$early"; round 3; else round 3; round "$early"; fi
"""
# A signal it must ignore goes first: had it stopped on it, its status would not be the one asked for.
_IGNORE_CHECK = """kill -{signal} "$(cat guard.pid 2>/dev/null)" 2>/dev/null
"""


def trap_term(rng: np.random.Generator, level: int) -> Spec:
    """A long-running script that ignores some signals and cleans up on SIGTERM (held out)."""
    message = f"{pick(rng, ('stopped', 'cleaned', 'bye', 'shutdown'))} {pick(rng, WORDS)}"
    code = int(rng.integers(3, 90))
    ignored = ["HUP", "USR1", "USR2"][:level]  # level 3 also removes its pid file
    traps = "".join(f"trap '' {s}\n" for s in ignored)
    cleanup = "rm -f guard.pid; " if level == 3 else ""
    body = (f"echo $$ > guard.pid\n{traps}trap 'echo \"{message}\" >> guard.log; {cleanup}exit {code}' TERM\n"
            "while true; do sleep 0.1; done")
    pid_check = '[ -e guard.pid ] && echo "guard.pid was left behind"\n' if level == 3 else ""
    driver = _TRAP_DRIVER.format(ignored="".join(_IGNORE_CHECK.format(signal=s) for s in ignored), pid_check=pid_check)
    also = (f" It ignores {', '.join('SIG' + s for s in ignored)} (it keeps running)." if ignored else "")
    also += " On SIGTERM it also deletes guard.pid." if level == 3 else ""
    return spec("trap_term", "processes", level,
                "Write an executable bash script guard.sh that, when started, writes its own process id to guard.pid "
                "and then keeps running until it is signalled. When it receives SIGTERM it appends the line "
                f"'{message}' to guard.log and exits with status {code}.{also}",
                {}, _script("guard.sh", body),
                _script("guard.sh", f"echo $$ > guard.pid\n{traps}while true; do sleep 0.1; done"),
                [runs(driver, f"status={code}\n{message}\nstatus={code}\n{message}")])


KV_NEXT = ".kv_next_table"  # a kv_service check's second table, read by the driver before the service starts


# -- services ------------------------------------------------------------------------------------------------------
def _service_driver(port: int, requests: list[str], reload_table: bool = False) -> str:
    """Start ./serve.sh, wait until the port answers, send each request on its own connection, print the replies.

    With ``reload_table``, the table the check wrote as ``KV_NEXT`` is read and deleted before the service starts (it
    never sees it); after the first replies it replaces ``data/table.txt`` and the requests are sent again."""
    ask = "".join(f"q {shlex.quote(r)}\n" for r in requests)
    load = f'next=$(cat {KV_NEXT}); rm -f {KV_NEXT}\n' if reload_table else ""
    again = f'printf \'%s\\n\' "$next" > data/table.txt\n{ask}' if reload_table else ""
    return (f"{load}./serve.sh >/dev/null 2>&1 &\n"
            f"for i in $(seq 200); do (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && break; "
            "kill -0 $! 2>/dev/null || break; sleep 0.05; done\n"
            f"q() {{ exec 3<>/dev/tcp/127.0.0.1/{port} || {{ echo 'no connection'; return; }}; "
            "printf '%s\\n' \"$1\" >&3; IFS= read -r -t 5 reply <&3; printf '%s\\n' \"${reply:-<no reply>}\"; "
            f"exec 3<&-; }}\n{ask}{again}kill $! 2>/dev/null; true")


def _python_server(port: int, reply: str) -> str:
    """Commands that write serve.sh, a Python line server on 127.0.0.1:``port``; ``reply`` is a function of ``text``."""
    body = ("exec python3 - <<'PY'\nimport socketserver\n\n"
            "class Handler(socketserver.StreamRequestHandler):\n"
            "    def handle(self):\n"
            "        text = self.rfile.readline().decode().strip()\n"
            f"        self.wfile.write(({reply} + '\\n').encode())\n\n"
            "socketserver.TCPServer.allow_reuse_address = True\n"
            f"socketserver.TCPServer(('127.0.0.1', {port}), Handler).serve_forever()\nPY")
    return _script("serve.sh", body)


def kv_service(rng: np.random.Generator, level: int) -> Spec:
    """A key-value service over TCP on localhost that reads its table on each request."""
    port = int(rng.integers(20000, 40000))
    keys = names(rng, SIZES[level] + 2)
    visible = {k: pick(rng, WORDS) for k in keys[:-1]}
    hidden = {k: f"{pick(rng, WORDS)}-{int(rng.integers(1000))}" for k in keys[1:]}
    table = "".join(f"{k}={v}\n" for k, v in hidden.items())
    requests = [*list(hidden)[: 2 + level], keys[0]]
    replies = [hidden.get(r, "NOTFOUND") for r in requests]
    # the table changes between two rounds of requests: a service that read it once answers the old values
    changed = {k: f"{pick(rng, WORDS)}-{int(rng.integers(1000, 2000))}" for k in hidden}
    replies += [changed.get(r, "NOTFOUND") for r in requests]
    later = "".join(f"{k}={v}\n" for k, v in changed.items())
    lookup = ("dict(l.split('=', 1) for l in open('data/table.txt').read().splitlines() if '=' in l)"
              ".get(text, 'NOTFOUND')")
    return spec("kv_service", "services", level,
                f"Write an executable script serve.sh that runs a TCP service on 127.0.0.1 port {port} until it is "
                "killed. For each connection it reads one line, a key, replies with that key's value from "
                "data/table.txt (lines key=value; read the file on every request, it may change) followed by a "
                "newline, and closes the connection. An unknown key gets the reply NOTFOUND. python3 and bash are "
                "installed; there is no network beyond this machine.",
                {"data/table.txt": "".join(f"{k}={v}\n" for k, v in visible.items())},
                _python_server(port, lookup), _python_server(port, "text"),
                [runs(_service_driver(port, requests, reload_table=True), "\n".join(replies),
                      {"data/table.txt": table, KV_NEXT: later})])


_TRANSFORMS = {"uppercase": ("text.upper()", str.upper), "reversed": ("text[::-1]", lambda t: t[::-1]),
               "word count": ("str(len(text.split()))", lambda t: str(len(t.split()))),
               "length": ("str(len(text))", lambda t: str(len(t)))}


def transform_service(rng: np.random.Generator, level: int) -> Spec:
    """A line service over TCP on localhost that transforms each request (held out)."""
    port = int(rng.integers(20000, 40000))
    name = pick(rng, tuple(_TRANSFORMS))
    expression, apply = _TRANSFORMS[name]
    requests = [line(rng, int(rng.integers(2, 5))) for _ in range(2 + level)]
    describe = {"uppercase": "the line in upper case", "reversed": "the line reversed, character by character",
                "word count": "the number of words in the line", "length": "the number of characters in the line"}
    return spec("transform_service", "services", level,
                f"Write an executable script serve.sh that runs a TCP service on 127.0.0.1 port {port} until it is "
                "killed. For each connection it reads one line (without its newline) and replies with "
                f"{describe[name]}, "
                "followed by a newline, then closes the connection. python3 and bash are installed.",
                {}, _python_server(port, expression), _python_server(port, "text"),
                [runs(_service_driver(port, requests), "\n".join(apply(r) for r in requests))])
