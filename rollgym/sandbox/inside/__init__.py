"""Code that runs *inside* a sandbox: :mod:`.supervisor` (the protocol and the jobs), :mod:`.confine`
(tmpfs, read-only root, the drop of privileges), :mod:`.files` (inputs and outputs without following
links), :mod:`.seccomp`, :mod:`.landlock` (the fallback's file rules) and :mod:`.pyrun` (audit hook,
running Python source).

Standard library only, and no imports of rollgym: the host bind-mounts this folder
read-only into the sandbox (or, without bubblewrap, loads it by path) and runs
:func:`supervisor.main` under the sandbox's own Python. Modules import each other
relatively, so the package works under any name.
"""
