"""``TerminalSource``: shell tasks (files, text, scripts, permissions, archives) with a solution and a check.

Each task has starting files, an instruction, a reference solution (a bash script,
for the oracle) and an expectation the env checks on the final state of the
sandbox: file contents read back by the sandbox's supervisor, file modes listed by
a trusted run after every process of the agent is gone, archives opened here, and
scripts run on hidden inputs. The content key (kind and starting files) puts each
task in one split.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from rollgym.core.seeding import content_digest, draw_in_split
from rollgym.core.sources import GeneratedSource
from rollgym.core.task import Task
from rollgym.envs.code.config import TerminalConfig, as_meta

FAMILY = "code-terminal"
DEFAULT_ENV_ID = "Terminal-v0"
_WORDS = ("alpha", "beta", "gamma", "ERROR", "WARN", "ok", "disk", "net", "cpu", "ERRORS", "error", "done")


def _line(rng: np.random.Generator, n: int) -> str:
    return " ".join(str(rng.choice(_WORDS)) for _ in range(n))


def _draw(rng: np.random.Generator, config: TerminalConfig) -> dict[str, Any]:
    kind = config.kinds[int(rng.integers(len(config.kinds)))]
    n = config.n_files
    files: dict[str, str] = {}
    if kind == "files":
        for i in range(n):
            ext = str(rng.choice([".log", ".txt", ".log", ".cfg"]))
            files[f"logs/f{i}{ext}"] = _line(rng, 4) + "\n"
        year = int(rng.integers(2019, 2026))
        logs = sorted(p for p in files if p.endswith(".log"))
        return {"kind": kind, "files": files, "year": year,
                "instruction": f"Create the folder archive/{year} and move every .log file from logs/ into it "
                               "(keep their names and contents). Leave every other file where it is.",
                "solution": f"mkdir -p archive/{year} && mv logs/*.log archive/{year}/ 2>/dev/null; true",
                "expect": {"moved": logs, "folder": f"archive/{year}"}}
    if kind == "text":
        word = str(rng.choice(["ERROR", "WARN", "disk"]))
        for i in range(n):
            files[f"data/part{i}.txt"] = "".join(_line(rng, int(rng.integers(1, 6))) + "\n"
                                                 for _ in range(int(rng.integers(1, 8))))
        count = sum(1 for c in files.values() for line in c.splitlines() if word in line.split())
        return {"kind": kind, "files": files, "word": word,
                "instruction": f"Count the lines, over all files in data/, that contain the word {word} (as a whole "
                               f"word, case-sensitive: {word}S or {word.lower()} do not count) and write just that "
                               "number to answer.txt.",
                "solution": f"cat data/*.txt | grep -cw -- '{word}' > answer.txt; true",
                "expect": {"answer": str(count)}}
    if kind == "script":
        hidden = ["".join(_line(rng, int(rng.integers(0, 7))) + "\n" for _ in range(int(rng.integers(0, 5))))
                  for _ in range(3)]
        return {"kind": kind, "files": {"notes/example.txt": "one two three\nfour\n"},
                "instruction": "Write an executable bash script count.sh in the working folder that prints the "
                               "number of words in the file named by its first argument (just the number). "
                               "For notes/example.txt it prints 4.",
                "solution": "printf '#!/bin/bash\\nwc -w < \"$1\" | tr -d \" \"\\n' > count.sh && chmod +x count.sh",
                "expect": {"inputs": hidden, "outputs": [str(len(h.split())) for h in hidden]}}
    if kind == "permissions":
        scripts = [f"bin/tool{i}.sh" for i in range(max(1, n // 2))]
        for path in scripts:
            files[path] = "#!/bin/sh\necho hi\n"
        files["bin/readme.txt"] = "not a script\n"
        files["secret.txt"] = _line(rng, 3) + "\n"
        return {"kind": kind, "files": files,
                "instruction": "Make every .sh file in bin/ executable by its owner (leave bin/readme.txt "
                               "not executable), and set secret.txt to mode 600 (read and write for the owner "
                               "only).",
                "solution": "chmod u+x bin/*.sh && chmod 600 secret.txt",
                "expect": {"executable": scripts, "not_executable": ["bin/readme.txt"], "mode_600": ["secret.txt"]}}
    for i in range(n):
        files[f"docs/page{i}.md"] = f"# page {i}\n{_line(rng, 5)}\n"
    files["other/skip.txt"] = "not in the archive\n"
    return {"kind": "archive", "files": files,
            "instruction": "Create a gzip-compressed tar archive backup.tar.gz in the working folder that contains "
                           "the folder docs/ and its files (member names start with docs/) and nothing else.",
            "solution": "tar -czf backup.tar.gz docs",
            "expect": {"members": {p: c for p, c in files.items() if p.startswith("docs/")}}}


class TerminalSource(GeneratedSource[TerminalConfig]):
    """The task source of ``Terminal-v0``.

    Example:
        >>> TerminalSource(TerminalConfig(kinds="text")).task(0).meta["kind"]
        'text'
    """

    family = FAMILY
    config_type = TerminalConfig
    default_env_id = DEFAULT_ENV_ID

    def task(self, index: int, split: str = "train") -> Task:
        """Task ``index`` of ``split``."""
        spec, _ = draw_in_split(FAMILY, split, index, lambda rng: _draw(rng, self.config),
                                key=lambda s: json.dumps([s["kind"], s["files"]], sort_keys=True))
        listing = "\n".join(sorted(spec["files"]))
        prompt = (f"Task: {spec['instruction']}\n\nThe working folder (/sandbox/work) holds:\n{listing}\n\n"
                  "Run shell commands with the bash tool; reply without a tool call when you are done. The final "
                  "state of the folder is checked.")
        return Task(
            id=f"{self.env_id}:{split}:{index}:{content_digest(json.dumps(spec, sort_keys=True))}",
            env_id=self.env_id,
            prompt=prompt,
            answer={"files": spec["files"], "solution": spec["solution"], "expect": spec["expect"]},
            meta={"kind": spec["kind"], "difficulty": {"kind": spec["kind"], "n_files": len(spec["files"])},
                  "config": as_meta(self.config)},
        )
