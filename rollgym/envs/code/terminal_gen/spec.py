"""A generated terminal task as plain data, and the checks its final state must pass.

A task spec is a JSON-ready dict::

    {"kind": "move_ext", "category": "files", "level": 2, "instruction": "...",
     "files": {path: text}, "modes": {path: mode}, "solution": "bash ...", "wrong": "bash ...",
     "checks": [check, ...]}

``solution`` is the oracle's shell commands; ``wrong`` a plausible mistake that must fail.
Each check is one of (built by the functions below):

* ``file``: a regular file with exactly this content; ``text``: a file whose content,
  stripped of surrounding white space, is this value; ``absent``: no such path;
* ``tree``: the regular files below a folder are exactly these (relative) paths;
* ``mode``: a path whose permission bits include ``all`` and none of ``none``;
* ``archive``: a gzip-compressed tar with exactly these regular members; ``gzip``: a
  gzip file that inflates to this content;
* ``run``: a bash command (the check's own, it may start what the agent wrote) run in the
  working folder after writing hidden files; its output, stripped, must equal ``stdout``.

:mod:`.checks` checks them on a sandbox session (files read back by the sandbox's
supervisor); :mod:`.harbor_check` checks the same data inside a Harbor container.
"""

from __future__ import annotations

from typing import Any

Check = dict[str, Any]
Spec = dict[str, Any]

CHECK_TYPES = ("file", "text", "absent", "tree", "mode", "archive", "gzip", "run")


def file_is(path: str, content: str) -> Check:
    """``path`` is a regular file holding exactly ``content``."""
    return {"type": "file", "path": path, "content": content}


def text_is(path: str, value: str) -> Check:
    """``path`` holds ``value``, give or take surrounding white space."""
    return {"type": "text", "path": path, "value": value}


def absent(path: str) -> Check:
    """Nothing is at ``path``."""
    return {"type": "absent", "path": path}


def tree_is(folder: str, names: list[str]) -> Check:
    """The regular files below ``folder`` are exactly ``names`` (paths relative to ``folder``)."""
    return {"type": "tree", "path": folder, "names": sorted(names)}


def mode_is(path: str, mode: int) -> Check:
    """``path``'s permission bits are exactly ``mode``."""
    return {"type": "mode", "path": path, "all": mode, "none": 0o777 & ~mode}


def mode_has(path: str, all_bits: int = 0, no_bits: int = 0) -> Check:
    """``path``'s permission bits include ``all_bits`` and none of ``no_bits``."""
    return {"type": "mode", "path": path, "all": all_bits, "none": no_bits}


def archive_is(path: str, members: dict[str, str]) -> Check:
    """``path`` is a gzip-compressed tar whose regular members are exactly ``members`` (name -> content)."""
    return {"type": "archive", "path": path, "members": dict(sorted(members.items()))}


def gzip_is(path: str, content: str) -> Check:
    """``path`` is a gzip file that inflates to ``content``."""
    return {"type": "gzip", "path": path, "content": content}


def runs(command: str, stdout: str, files: dict[str, str] | None = None, modes: dict[str, int] | None = None) -> Check:
    """Write ``files`` (hidden inputs, with ``modes``), run ``command`` with bash; its stripped output is ``stdout``."""
    return {"type": "run", "command": command, "stdout": stdout, "files": dict(files or {}), "modes": dict(modes or {})}


def spec(kind: str, category: str, level: int, instruction: str, files: dict[str, str], solution: str, wrong: str,
         checks: list[Check], modes: dict[str, int] | None = None) -> Spec:
    """A task spec (see the module's docstring)."""
    return {"kind": kind, "category": category, "level": level, "instruction": instruction, "files": files,
            "modes": dict(modes or {}), "solution": solution, "wrong": wrong, "checks": checks}
