"""Terminal-v0's archive check reads backup.tar.gz with counted bytes (issue 28, item 3).

The attacks run through the public API (``env.step``) in a fresh interpreter whose peak
RSS is read before and after the final step: a pax header or a GNU long-name header that
declares 270 MiB (``tarfile`` read either whole: +271 MiB), and a member of 3 GiB of zeros, cost
bounded memory and work and fail the check with the ``archive_over_cap`` label. Honest archives
in every tar format still pass, and archives read as ``tarfile`` read them.
"""

from __future__ import annotations

import base64
import gzip
import io
import json
import subprocess
import sys
import tarfile

import pytest

from rollgym.envs.code.terminal.env import ARCHIVE_OVER_CAP, MAX_INFLATED_BYTES, archive_matches
from tests.conftest import REPO, require_binary

MIB = 1024 * 1024
MEMBERS = {"docs/page0.md": "# page 0\nhello\n", "docs/página1.md": "# page 1\n" + "x" * 3000 + "\n"}


def _header(name: str, kind: bytes, size: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.size = size
    return info.tobuf(tarfile.USTAR_FORMAT)


# A bash command that builds the bomb inside the sandbox from a header sent in the command and
# 1 MiB gzip members of zeros, concatenated: ~1 KB per MiB declared, as the 260 KB file.
def _bomb_command(header: bytes, mib: int) -> str:
    head = base64.b64encode(gzip.compress(header)).decode()
    return (f"echo {head} | base64 -d > backup.tar.gz && head -c {MIB} /dev/zero | gzip -9 > z.gz && "
            f"for i in $(seq {mib}); do cat z.gz; done >> backup.tar.gz && rm z.gz && ls -l backup.tar.gz")


_PROBE = r"""
import json, resource, sys
import gymnasium as gym
import rollgym  # noqa: F401

command = sys.argv[1]
env = gym.make("Terminal-v0", kinds="archive")
env.reset(options={"task_index": 0})
call = json.dumps({"name": "bash", "arguments": {"command": command}})
obs = env.step(f"<tool_call>{call}</tool_call>")[0]
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
info = env.step("Done.")[4]
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
env.close()
print(json.dumps({"grew_kib": after - before, "reward": info["reward"], "error": info["error"],
                  "details": info["details"], "obs": obs[-300:]}))
"""


def _step_in_fresh_process(command: str) -> dict:
    run = subprocess.run([sys.executable, "-c", _PROBE, command], capture_output=True, text=True, cwd=REPO,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(("what", "header", "mib"), [
    # the attack: tarfile reads a pax header of any declared size into memory (+269 MiB)
    ("pax header bomb", _header("././@PaxHeader", b"x", 270 * MIB), 270),
    # the same through a GNU long-name header
    ("long-name bomb", _header("././@LongLink", b"L", 270 * MIB), 270),
    # the classic gzip bomb: one member of 3 GiB of zeros (refused on its declared size)
    ("gzip bomb", _header("docs/page0.md", b"0", 3 << 30), 300),
])
def test_archive_bombs_cost_bounded_memory_and_fail_with_a_label(what: str, header: bytes, mib: int) -> None:
    require_binary("bwrap")
    result = _step_in_fresh_process(_bomb_command(header, mib))
    assert "backup.tar.gz" in result["obs"], result  # the bomb was built (about 1 KB per MiB declared)
    assert result["reward"] == 0.0 and result["error"] == "check_failed", result
    assert result["details"]["label"] == ARCHIVE_OVER_CAP, result
    # the check may inflate 8 MiB at most; each bomb declares 270 MiB or more
    assert result["grew_kib"] < 48 * 1024, (what, result)


def _archive(fmt: int, members: dict[str, str], **pax: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=fmt, pax_headers=pax or None) as tar:
        folder = tarfile.TarInfo("docs")
        folder.type = tarfile.DIRTYPE
        tar.addfile(folder)
        for name, text in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(text.encode())
            tar.addfile(info, io.BytesIO(text.encode()))
    return buffer.getvalue()


def test_honest_archives_in_every_format_pass() -> None:
    long = {**MEMBERS, "docs/" + "long" * 40 + ".md": "a long name\n"}
    for fmt in (tarfile.USTAR_FORMAT, tarfile.GNU_FORMAT, tarfile.PAX_FORMAT):
        members = {k: v for k, v in long.items() if fmt != tarfile.USTAR_FORMAT or (k.isascii() and len(k) < 100)}
        ok, details = archive_matches(_archive(fmt, members), members)
        assert ok, (fmt, details)
    # a pax global header and pax records on every member (GNU tar --format=posix writes these)
    ok, details = archive_matches(_archive(tarfile.PAX_FORMAT, long, comment="made by tar"), long)
    assert ok, details
    ok, details = archive_matches(_archive(tarfile.PAX_FORMAT, long), {**long, "docs/page0.md": "changed"})
    assert not ok and details == {"members": 3, "expected": 3}


def test_hostile_archives_fail_with_one_sentence() -> None:
    members = {"docs/a.md": "a\n"}
    good = gzip.decompress(_archive(tarfile.USTAR_FORMAT, members))
    cases = {
        "truncated in a member": gzip.compress(good[:1025]),
        "not gzip": b"PK\x03\x04 not a tar.gz",
        "bad checksum": gzip.compress(good[:148] + b"0000000\0" + good[156:]),
        "a symlink": gzip.compress(_header("docs/a.md", b"2", 0) + b"\0" * 1024),
        "a long-name header over its cap": gzip.compress(_header("././@LongLink", b"L", 1 * MIB) + b"a" * MIB),
        "a corrupt pax header": gzip.compress(_header("p", b"x", 5) + b"junk\n".ljust(512, b"\0") + good),
        "data past the budget": gzip.compress(_header("docs/a.md", b"0", 2 * MAX_INFLATED_BYTES)),
    }
    for what, data in cases.items():
        ok, details = archive_matches(data, members)
        assert not ok and isinstance(details["reason"], str) and details["reason"], (what, details)
    assert archive_matches(cases["a long-name header over its cap"], members)[1]["label"] == ARCHIVE_OVER_CAP
    assert archive_matches(cases["data past the budget"], members)[1]["label"] == ARCHIVE_OVER_CAP
    many_headers = gzip.compress(b"".join(_header(f"d{i}/", b"5", 0) for i in range(20_000)))  # 10 MiB of headers
    assert archive_matches(many_headers, members)[1]["label"] == ARCHIVE_OVER_CAP


def test_archives_read_as_tarfile_reads_them() -> None:
    """The check's verdicts stay tarfile's where tarfile was safe: the fix changes no honest score."""
    members = {"docs/a.md": "a\n"}
    tar = gzip.decompress(_archive(tarfile.USTAR_FORMAT, members))
    end = tar.rstrip(b"\0")
    end += b"\0" * (-len(end) % 512)
    tails = {"junk after the last member": b"x" * 512, "a header cut off": b"\0" * 100 + b"x" * 100,
             "zero blocks then junk": b"\0" * 1024 + b"junk"}
    for what, tail in tails.items():
        data = gzip.compress(end + tail)
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
            by_tarfile = {m.name: archive.extractfile(m).read().decode() for m in archive if m.isfile()}
        assert by_tarfile == members, what
        assert archive_matches(data, members)[0], what
    # a folder entry with a declared size: tarfile reads the next header right after it
    folder_with_size = gzip.compress(_header("docs/", b"5", 5000) + end[512:])
    assert archive_matches(folder_with_size, members)[0]
