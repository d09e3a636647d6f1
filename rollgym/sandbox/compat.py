"""The old MATH-tool sandbox interface (``LocalSandbox(SandboxLimits).run(code) -> SandboxResult``) on
the new kernel sandbox, for code that still imports ``rollgym.envs.math.sandbox``.

Only the interface is old: every run goes through :class:`rollgym.sandbox.Sandbox`
(bubblewrap, or its fallback as the strict setting allows). The old constructor's
switches that turned layers off (``network_namespace``, ``seccomp``, ``landlock``,
``drop_privileges``) are accepted and ignored: the kernel's walls cannot be switched
off from here. ``audit_hook=False`` still removes the in-process hook.
"""

from __future__ import annotations

from rollgym.sandbox.legacy import SandboxLimits, SandboxResult
from rollgym.sandbox.limits import Limits
from rollgym.sandbox.sandbox import Sandbox


class LocalSandbox:
    """``run(code)`` in a fresh kernel sandbox, with the old limits and result types.

    Example:
        >>> LocalSandbox().run("print(6 * 7)").stdout
        '42\\n'
    """

    backend = "local"

    def __init__(
        self,
        limits: SandboxLimits | None = None,
        *,
        network_namespace: bool = True,
        audit_hook: bool = True,
        drop_privileges: bool = True,
        seccomp: bool = True,
        landlock: bool = True,
    ) -> None:
        self.limits = limits or SandboxLimits()
        self.audit_hook = audit_hook
        self.sandbox = Sandbox(
            Limits(
                wall_s=self.limits.timeout_s,
                cpu_s=self.limits.cpu_s,
                mem_mb=self.limits.memory_mb,
                nproc=self.limits.max_processes,
                max_output_bytes=4 * self.limits.max_output_chars,
                disk_mb=self.limits.max_file_mb,
            ),
            audit_hook=audit_hook,
        )

    @property
    def isolation(self) -> dict[str, bool]:
        """The old report's keys (network namespace, seccomp, Landlock, uid drop, audit hook) and every
        wall of :attr:`rollgym.sandbox.Sandbox.isolation`."""
        walls = dict(self.sandbox.isolation.walls)
        return {
            "network_namespace": walls.get("network_namespace", False),
            "seccomp": walls.get("seccomp", False),
            "landlock": self.sandbox.backend == "process" and getattr(self.sandbox.launcher, "landlock", False),
            "unprivileged_user": walls.get("unprivileged_uid", False),
            "audit_hook": self.audit_hook,
            **walls,
        }

    def run(self, code: str) -> SandboxResult:
        """Run ``code`` and return its output; never raises on the code's behaviour."""
        result = self.sandbox.run_python(code)
        limit = self.limits.max_output_chars
        stdout, stderr = result.stdout, result.stderr
        if result.error is not None:
            stderr = f"{stderr}\nsandbox error: {result.error}".lstrip("\n")
        truncated = result.truncated or len(stdout) > limit or len(stderr) > limit
        exit_code = -result.signal if result.signal is not None else result.exit_code
        return SandboxResult(stdout[:limit], stderr[:limit], exit_code, result.timed_out, truncated,
                             result.elapsed_s, "local")

    def close(self) -> None:
        """End the waiting sandboxes, if any."""
        self.sandbox.close()
