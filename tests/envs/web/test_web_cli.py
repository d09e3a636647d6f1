"""`rollgym web` and the missing-dependency errors."""

from __future__ import annotations

import argparse
import subprocess
import sys
import urllib.request

import pytest

from rollgym.commands import COMMAND_MODULES
from rollgym.commands import web as web_command
from rollgym.core.errors import MissingDependencyError
from rollgym.envs.web import browser


def test_web_command_is_registered_and_prints_tasks(capsys: pytest.CaptureFixture[str]) -> None:
    assert "rollgym.commands.web" in COMMAND_MODULES
    parser = argparse.ArgumentParser()
    web_command.register(parser.add_subparsers())
    args = parser.parse_args(["web", "tasks", "forum", "-n", "4"])
    assert args.func(args) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 4 and all(line.startswith("[forum_") for line in lines)


def test_serve_opens_a_site_for_a_person() -> None:
    proc = subprocess.Popen([sys.executable, "-u", "-m", "rollgym.cli", "web", "serve", "shop", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("Serving the shop site at http://127.0.0.1:"), (line, proc.stderr and proc.stderr.read())
        url = line.split(" at ", 1)[1].split()[0]
        with urllib.request.urlopen(url + "search?q=kettle", timeout=10) as resp:
            body = resp.read().decode()
        assert resp.status == 200 and "Northwind Market" in body and "/static/style.css" in body
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_missing_chromium_is_one_clear_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROLLGYM_CHROMIUM", "/nonexistent/chromium")
    with pytest.raises(MissingDependencyError, match="ROLLGYM_CHROMIUM"):
        browser.find_chromium()
    monkeypatch.delenv("ROLLGYM_CHROMIUM")
    monkeypatch.setattr(browser, "CANDIDATES", [])
    monkeypatch.setattr(browser.shutil, "which", lambda name: None)
    with pytest.raises(MissingDependencyError, match=r"apt-get install chromium"):
        browser.find_chromium()
