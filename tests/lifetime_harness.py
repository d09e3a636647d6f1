"""Run a command and report whether it exited by itself and left no process behind.

``python tests/lifetime_harness.py REPORT.json TIMEOUT [--interrupt-on REGEX] -- COMMAND...``

The harness makes itself a *child subreaper* (Linux ``PR_SET_CHILD_SUBREAPER``), so every
process the command starts and leaves behind is re-parented to the harness instead of to
init, even one that called ``setsid`` (a sandbox, a browser). After the command exits, the
harness waits a short grace period for stragglers to finish, lists what is still its child,
kills and reaps it, and writes a JSON report::

    {"returncode": 0, "timed_out": false, "leftovers": ["/usr/games/stockfish"], "output": "..."}

With ``--interrupt-on REGEX`` the harness sends SIGINT once a line of the command's output
matches (a server that is ready), then expects it to exit. Standard library only.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

PR_SET_CHILD_SUBREAPER = 36
GRACE_S = 5.0


def _children() -> dict[int, str]:
    """Processes whose parent is this one: pid -> command line."""
    me, found = os.getpid(), {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read().decode(errors="replace")
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid != me:
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, IndexError, ValueError):
            continue
        state = stat.rsplit(")", 1)[1].split()[0]
        if state != "Z":  # a zombie has exited; reaping it below is all it needs
            found[int(entry)] = cmdline or stat.split("(", 1)[1].split(")", 1)[0]
    return found


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main(argv: list[str]) -> int:
    report_path, timeout = argv[0], float(argv[1])
    rest = argv[2:]
    pattern = None
    if rest and rest[0] == "--interrupt-on":
        pattern, rest = re.compile(rest[1]), rest[2:]
    command = rest[1:] if rest and rest[0] == "--" else rest
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")
    # A command run from a terminal starts with SIGINT at its default; one started by a process that ignores
    # or blocks SIGINT inherits that across exec (and then Python turns no Ctrl-C into KeyboardInterrupt).
    # The harness stands for the terminal, so it hands the command the default, and reports what it inherited.
    inherited = signal.getsignal(signal.SIGINT)
    inherited_name = {signal.SIG_IGN: "ignored", signal.SIG_DFL: "default"}.get(inherited, "handler")
    blocked = signal.SIGINT in signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.default_int_handler)
    process = subprocess.Popen(command, stdin=sys.stdin, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    output: list[str] = []
    interrupted = threading.Event()

    def pump() -> None:
        assert process.stdout is not None
        for raw in process.stdout:
            line = raw.decode(errors="replace")
            output.append(line)
            if pattern is not None and not interrupted.is_set() and pattern.search(line):
                interrupted.set()
                process.send_signal(signal.SIGINT)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    timed_out = False
    try:
        returncode = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        process.kill()
        returncode = process.wait()
    reader.join(timeout=5)
    deadline = time.monotonic() + GRACE_S
    leftovers = _children()
    while leftovers and time.monotonic() < deadline:
        time.sleep(0.1)
        _reap()
        leftovers = _children()
    for pid in leftovers:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    time.sleep(0.2)
    _reap()
    report = {"returncode": returncode, "timed_out": timed_out, "leftovers": sorted(leftovers.values()),
              "interrupted": interrupted.is_set(), "output": "".join(output)[-6000:],
              "inherited_sigint": inherited_name + (", blocked" if blocked else "")}
    with open(report_path, "w", encoding="utf-8") as handle:
        json.dump(report, handle)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
