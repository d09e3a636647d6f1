"""The leaderboard pages in a real Chromium: rankings, sorting, an entry's details, plots, the static export."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rollgym.benchmarks.suite import load_suite
from tests.conftest import require_binary, require_module
from tests.leaderboard.conftest import Server, start_server

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def populated(tmp_path_factory: pytest.TempPathFactory, bundle_archives: dict[str, Path]) -> Iterator[Server]:
    """A server whose database holds the verified oracle and random bundles."""
    from rollgym.leaderboard.ingest import add_local

    folder = tmp_path_factory.mktemp("pages")
    db = f"sqlite:///{folder / 'lb.db'}"
    for agent, bundle in bundle_archives.items():
        assert add_local(str(bundle), db, str(folder / "data"), submitter="tester", label=f"{agent}-agent")["status"] \
            == "accepted"
    server = start_server(folder, db=db)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    require_module("playwright")
    executable = require_binary("chromium", "/usr/lib/chromium/chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def _column_labels(page: object) -> list[str]:
    return page.locator("#ranking tbody tr td:nth-child(2)").all_inner_texts()  # type: ignore[attr-defined]


def _sort_by(page: object, header: str) -> None:
    page.locator("#ranking thead th", has_text=header).first.click()  # type: ignore[attr-defined]


def test_ranking_sorts_and_links_to_details(browser: object, populated: Server, tmp_path: Path) -> None:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})  # type: ignore[attr-defined]
    page.goto(populated.url + "/")
    page.get_by_role("link", name="quick@v4").click()
    page.wait_for_selector("#ranking")
    assert _column_labels(page) == ["oracle-agent", "random-agent"]  # ranked by score
    assert page.locator("svg.plot").count() >= 2  # score versus size and versus date
    assert page.locator("svg.plot circle").count() >= 4
    _sort_by(page, "score")  # the column is sorted descending already: a click flips it
    assert _column_labels(page) == ["random-agent", "oracle-agent"]
    assert page.locator("#ranking thead th", has_text="score").first.get_attribute("aria-sort") == "ascending"
    _sort_by(page, "model")
    assert page.locator("#ranking thead th", has_text="model").first.get_attribute("aria-sort") == "descending"
    assert _column_labels(page) == ["random-agent", "oracle-agent"]
    _sort_by(page, "size (B)")
    assert _column_labels(page) == ["oracle-agent", "random-agent"]  # 7 B above 0.5 B
    page.screenshot(path=str(tmp_path / "leaderboard_suite.png"), full_page=True)

    page.get_by_role("link", name="oracle-agent").first.click()
    page.wait_for_selector("#entries")
    assert "oracle-agent" in page.locator("h1").inner_text()
    entries = len(load_suite("quick").entries)  # one row and one bar per entry of the suite
    assert page.locator("svg.plot rect").count() >= entries
    assert page.locator("#entries tbody tr").count() == entries
    assert "connect-four" in page.content()
    page.screenshot(path=str(tmp_path / "leaderboard_entry.png"), full_page=True)

    page.get_by_role("link", name="countdown").first.click()
    page.wait_for_selector("#env-ranking")
    assert page.locator("#env-ranking tbody tr").count() == 2
    page.screenshot(path=str(tmp_path / "leaderboard_env.png"), full_page=True)
    page.close()
    for name in ("suite", "entry", "env"):
        assert (tmp_path / f"leaderboard_{name}.png").stat().st_size > 10_000


def test_static_export_works_without_a_server(browser: object, populated: Server, tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.leaderboard.conftest import REPO

    result = subprocess.run([sys.executable, "-m", "rollgym.cli", "leaderboard", "export", "--db", populated.db,
                             "--out", str(tmp_path / "site")], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert result.returncode == 0, result.stderr
    page = browser.new_page()  # type: ignore[attr-defined]
    page.goto((tmp_path / "site" / "index.html").as_uri())
    page.get_by_role("link", name="quick@v4").click()
    page.wait_for_selector("#ranking")
    assert _column_labels(page) == ["oracle-agent", "random-agent"]
    _sort_by(page, "score")
    assert _column_labels(page) == ["random-agent", "oracle-agent"]
    page.get_by_role("link", name="random-agent").first.click()
    page.wait_for_selector("#entries")
    assert page.url.endswith(".html") and page.locator("svg.plot").count() >= 1
    page.close()
