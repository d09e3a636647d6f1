"""Code that runs *inside* a sandbox: the supervisor, its seccomp filter, Landlock rules and audit hook.

Standard library only, and no imports of rollgym: the host bind-mounts this folder
read-only into the sandbox (or, without bubblewrap, loads it by path) and runs
:func:`supervisor.main` under the sandbox's own Python. Modules import each other
relatively, so the package works under any name.
"""
