"""The generated sites on the real site server (no browser): counts, determinism, held-out content, every page.

The held-out check is by content hash: every user, category, item, record and
favourite of every held-out site (with references spelled out by name) is hashed, and
none of those hashes occurs on any training site; nor does a held-out site's theme.
"""

from __future__ import annotations

import http.client
import re
from collections.abc import Iterator
from html.parser import HTMLParser

import pytest

from rollgym.envs.web.gen.domain import (
    HELDOUT_SEEDS,
    TRAIN_SEEDS,
    build_database,
    heldout_categories,
    site_content_hash,
    site_keys,
    site_spec,
    unit_hashes,
)
from rollgym.envs.web.gen.kinds import KINDS
from rollgym.envs.web.gen.tasks import TEMPLATES, count_templates
from rollgym.envs.web.gen.themes import HELDOUT_THEMES, THEMES, TRAIN_THEMES
from rollgym.envs.web.gen.words import proper_words, vocabulary_of
from rollgym.envs.web.server import EPISODE_COOKIE, WebServer, site
from tests.envs.web.clients import Client

TRAIN = [key for kind in KINDS for key in site_keys(kind, False)]
HELDOUT = [key for kind in KINDS for key in site_keys(kind, True)]


@pytest.fixture(scope="module")
def server() -> Iterator[WebServer]:
    srv = WebServer().start()
    yield srv
    srv.stop()


def test_there_are_over_a_hundred_sites_and_templates_of_the_asked_kinds() -> None:
    assert len(TRAIN) == len(KINDS) * TRAIN_SEEDS and len(HELDOUT) == len(KINDS) * HELDOUT_SEEDS
    assert len(TRAIN) + len(HELDOUT) >= 100
    assert {"shop", "forum", "booking", "wiki", "admin"} <= set(KINDS) and len(KINDS) >= 10
    counts = count_templates()
    assert counts["templates"] == len(TEMPLATES) >= 100 and counts["info"] >= 50 and counts["transaction"] >= 50
    for kind in KINDS:  # every kind asks questions and asks for changes
        assert {t.task_kind for t in TEMPLATES.values() if t.kind.key == kind} == {"info", "transaction"}


def test_sites_are_deterministic_and_distinct() -> None:
    hashes = {}
    for key in [*TRAIN, *HELDOUT]:
        spec = site_spec(key)
        first, again = build_database(spec), build_database(spec)
        hashes[key] = site_content_hash(spec, first)
        assert hashes[key] == site_content_hash(spec, again), key
    assert len(set(hashes.values())) == len(hashes)


def test_no_held_out_content_appears_on_a_training_site() -> None:
    train_units: set[str] = set()
    for key in TRAIN:
        train_units |= unit_hashes(build_database(site_spec(key)), site_spec(key).kind.key)
    for key in HELDOUT:
        units = unit_hashes(build_database(site_spec(key)), site_spec(key).kind.key)
        assert len(units) > 100 and not units & train_units, key
    assert {site_spec(k).theme.key for k in HELDOUT} == set(HELDOUT_THEMES)
    assert {site_spec(k).theme.key for k in TRAIN} == set(TRAIN_THEMES)
    assert not set(HELDOUT_THEMES) & set(TRAIN_THEMES)


def test_held_out_sites_use_only_held_out_names_and_categories() -> None:
    train_words = set(proper_words("train"))
    for key in HELDOUT[:6] + TRAIN[:6]:
        spec = site_spec(key)
        conn = build_database(spec)
        for (username,) in conn.execute("SELECT username FROM users"):
            assert vocabulary_of(username.split(".", 1)[1]) == spec.vocabulary, (key, username)
        fixed = [c for (c,) in conn.execute("SELECT name FROM categories") if c in spec.kind.categories]
        assert all((c in heldout_categories(spec.kind)) == spec.heldout for c in fixed), (key, fixed)
        if spec.heldout:
            for (name,) in conn.execute("SELECT name FROM items"):
                assert not any(w.strip("(),:'s") in train_words for w in name.split()), (key, name)
    assert len(proper_words("heldout")) > 1000


def test_unknown_site_keys_get_one_clear_sentence() -> None:
    from rollgym.core.errors import ConfigError

    for key in ("gen-shop-99", "gen-mall-01", "gen-shop-h7", "shop-01"):
        with pytest.raises(ConfigError, match="not a generated site"):
            site_spec(key)


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        href = dict(attrs).get("href")
        if tag == "a" and href and href.startswith("/"):
            self.links.append(href)


def crawl(server: WebServer, key: str, limit: int) -> dict[str, int]:
    """Every page reachable by links from the home page (up to ``limit``), signed in as an editor."""
    token = server.create_episode(key)
    episode = server.episode(token)
    assert episode is not None
    editor = episode.query("SELECT username FROM users WHERE role = ? LIMIT 1", (site_spec(key).kind.roles[1],))[0][0]
    client = Client(server, token, login_path=site(key).path("login"))
    client.sign_in(editor)
    seen: dict[str, int] = {}
    todo = ["/"]
    while todo and len(seen) < limit:
        path = todo.pop(0)
        if path in seen:
            continue
        status, text = client.send("GET", path)
        seen[path] = status
        assert "Traceback" not in text
        parser = _Links()
        parser.feed(text)
        todo += [p for p in parser.links if p not in seen]
    server.close_episode(token)
    return seen


@pytest.mark.parametrize("key", [*TRAIN, *HELDOUT])
def test_every_page_of_every_site_answers(server: WebServer, key: str) -> None:
    seen = crawl(server, key, limit=16)
    assert len(seen) >= 12, key
    bad = {p: s for p, s in seen.items() if s != 200}
    assert not bad, (key, bad)


def _skeleton(html: str) -> str:
    """The tag sequence of a page's structure, without its data."""
    parser = _Links()
    parser.feed(html)
    return " ".join(t for t in parser.tags if t not in {"a", "option", "li", "tr", "td", "span", "strong"})


def test_themes_differ_in_structure_and_urls(server: WebServer) -> None:
    """Two sites of one kind in different themes: different page skeletons and different URLs."""
    by_theme: dict[str, str] = {}
    for key in site_keys("shop", False) + site_keys("shop", True):
        by_theme.setdefault(site_spec(key).theme.key, key)
    assert set(by_theme) == set(THEMES)
    skeletons, urls = set(), set()
    for key in by_theme.values():
        token = server.create_episode(key)
        conn = http.client.HTTPConnection("127.0.0.1", int(server.base_url.rsplit(":", 1)[1]), timeout=10)
        obj = site(key)
        conn.request("GET", obj.path("list") + "?sort=name", headers={"Cookie": f"{EPISODE_COOKIE}={token}"})
        body = conn.getresponse().read().decode()
        skeletons.add(_skeleton(body))
        urls.add((obj.path("list"), obj.path("item", 1), obj.path("login")))
        assert re.search(r"<style>.+</style>", body, re.S)
        server.close_episode(token)
    assert len(skeletons) == len(THEMES) and len(urls) == len(THEMES)
