"""``rollgym serve-env`` in a process of its own, started and stopped from Python.

For a driver that wants its envs out of its own process (their CPU time off its interpreter)
without a shell script: :class:`ServeEnvProcess` runs the command with this interpreter and this
rollgym, waits for the server's ready line and gives its URL; ``close()``, or the end of a
``with`` block, stops it (SIGTERM, then SIGKILL after ``stop_timeout_s``).

Example:
    >>> import rollgym
    >>> with ServeEnvProcess("Countdown-v0") as server:  # doctest: +SKIP
    ...     env = rollgym.make(f"{server.url}/Countdown-v0")
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from rollgym.core.closing import Closeable
from rollgym.core.errors import RollgymError

_ROOT = Path(__file__).resolve().parents[2]  # the folder that holds this rollgym package


class ServeEnvProcess(Closeable):
    """``rollgym serve-env ARGS --port PORT`` in a child process; ``url`` is where it serves.

    Args:
        args: The command's arguments: env ids and options, e.g. ``("Countdown-v0", "--replicas", "2")``.
        port: The port (0: a free one, which ``url`` names).
        start_timeout_s: How long to wait for the ready line before giving up.
        stop_timeout_s: How long ``close()`` waits after SIGTERM before SIGKILL.

    Raises:
        RollgymError: when the server exits or says nothing for ``start_timeout_s``; the message
            ends with the end of its stderr.
    """

    def __init__(self, *args: str, port: int = 0, start_timeout_s: float = 120.0, stop_timeout_s: float = 30.0) -> None:
        self.stop_timeout_s = stop_timeout_s
        path = os.pathsep.join(p for p in (str(_ROOT), os.environ.get("PYTHONPATH", "")) if p)
        self.log = tempfile.TemporaryFile(mode="w+")  # an unread stderr pipe could fill up and stall the server
        self.process = subprocess.Popen(
            [sys.executable, "-m", "rollgym.cli", "serve-env", *args, "--port", str(port)],
            stdout=subprocess.PIPE, stderr=self.log, env={**os.environ, "PYTHONPATH": path})
        try:
            self.url: str = self._ready(start_timeout_s)
        except BaseException:
            self.close()
            if self.process.stdout is not None:
                self.process.stdout.close()
            raise
        # read what else it prints, so that a full pipe never stalls it; the reader ends with the process
        threading.Thread(target=self._drain, name="rollgym-serve-env-stdout", daemon=True).start()

    def _ready(self, timeout_s: float) -> str:
        """Read the server's stdout, unbuffered, up to its first JSON line (the ready line); its URL."""
        assert self.process.stdout is not None
        fd, seen = self.process.stdout.fileno(), b""
        deadline = time.monotonic() + timeout_s
        while (left := deadline - time.monotonic()) > 0:
            if select.select([fd], [], [], min(left, 1.0))[0]:
                chunk = os.read(fd, 65536)
                seen += chunk
                for line in seen.splitlines(keepends=True):
                    if line.startswith(b"{") and line.endswith(b"\n"):
                        return str(json.loads(line)["url"])
                if not chunk:  # stdout closed without a ready line: wait for the exit instead of spinning on EOF
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        self.process.wait(timeout=left)
            if self.process.poll() is not None:
                raise RollgymError(f"rollgym serve-env exited with status {self.process.returncode}: {self.stderr()}")
        raise RollgymError(f"rollgym serve-env was not ready after {timeout_s:g} s: {self.stderr()}")

    def _drain(self) -> None:
        assert self.process.stdout is not None
        with self.process.stdout as out:
            while out.read(65536):
                pass

    def stderr(self) -> str:
        """The last 2,000 characters the server wrote to stderr (empty once closed)."""
        if self.log.closed:
            return ""
        self.log.seek(0)
        return self.log.read()[-2000:]

    def kill(self) -> None:
        """SIGKILL the server, as a crash would, and reap it."""
        self.process.kill()
        self.process.wait(timeout=self.stop_timeout_s)

    def close(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after ``stop_timeout_s``); closing twice is harmless."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=self.stop_timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()
