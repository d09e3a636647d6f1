"""The practice sites and the episode server, over real HTTP on 127.0.0.1 (no browser needed)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rollgym.core.errors import ConfigError
from rollgym.envs.web.server import EPISODE_COOKIE, WebServer
from tests.envs.web.clients import Client


@pytest.fixture(scope="module")
def server() -> Iterator[WebServer]:
    srv = WebServer().start()
    yield srv
    srv.stop()


def test_every_site_serves_styled_pages(server: WebServer) -> None:
    for site, paths in {
        "shop": ["/", "/search?q=kettle&sort=price_asc", "/product/1"],
        "forum": ["/", "/b/cooking?page=2", "/t/1?sort=votes", "/search?q=bike"],
        "travel": [
            "/",
            "/flights?from=LIS&to=OSL&date=2026-03-10",
            "/hotels?city=Rome&check_in=2026-03-03&check_out=2026-03-05",
        ],
    }.items():
        client = Client(server, server.create_episode(site))
        for path in paths:
            status, headers, body = client.request("GET", path)
            assert status == 200, (site, path)
            assert '<link rel="stylesheet" href="/static/style.css">' in body
    status, headers, css = client.request("GET", "/static/style.css")
    assert status == 200 and headers["Content-Type"].startswith("text/css") and ".topbar" in css


def test_errors_are_pages_with_a_sentence(server: WebServer) -> None:
    client = Client(server, server.create_episode("shop"))
    status, _, body = client.request("GET", "/no/such/page")
    assert status == 404 and "could not find that page" in body
    status, _, body = client.request("POST", "/login", {"username": "alice", "password": "wrong"})
    assert status == 400 and "Wrong username or password" in body
    travel = Client(server, server.create_episode("travel"))
    status, _, body = travel.request("GET", "/flights?from=LIS&to=LIS&date=2026-03-10")
    assert status == 400 and "must be different cities" in body
    status, _, body = travel.request("GET", "/flights?from=LIS&to=OSL&date=2027-01-01")
    assert status == 400 and "pick a date in that range" in body


def test_requests_without_an_episode_are_refused(server: WebServer) -> None:
    client = Client(server, "not-a-token")
    status, _, _ = client.request("GET", "/")
    assert status == 403


def test_episodes_are_isolated(server: WebServer) -> None:
    a = Client(server, server.create_episode("shop"))
    b = Client(server, server.create_episode("shop"))
    ep_a = server.episode(a.cookies[EPISODE_COOKIE])
    ep_b = server.episode(b.cookies[EPISODE_COOKIE])
    assert ep_a is not None and ep_b is not None
    a.sign_in("alice")
    pid = ep_a.query("SELECT id FROM products WHERE stock > 0 ORDER BY id LIMIT 1")[0][0]
    assert a.request("POST", "/cart/add", {"product_id": str(pid), "qty": "1"})[0] == 303
    assert ep_a.query("SELECT COUNT(*) FROM cart_items")[0][0] == 1
    assert ep_b.query("SELECT COUNT(*) FROM cart_items")[0][0] == 0
    # a's login session means nothing in b's episode
    b.cookies["session"] = a.cookies["session"]
    status, headers, _ = b.request("GET", "/cart")
    assert status == 303 and headers["Location"].startswith("/login")


def test_checkout_writes_the_order(server: WebServer) -> None:
    client = Client(server, server.create_episode("shop"))
    client.sign_in("bruno")
    ep = server.episode(client.cookies[EPISODE_COOKIE])
    assert ep is not None
    pid = ep.query("SELECT id FROM products WHERE stock >= 5 ORDER BY id LIMIT 1")[0][0]
    assert client.request("POST", "/cart/add", {"product_id": str(pid), "qty": "2"})[0] == 303
    status, _, body = client.request(
        "POST", "/checkout", {"ship_name": "Bruno", "ship_address": "", "shipping": "standard"}
    )
    assert status == 400 and "shipping address" in body
    status, headers, _ = client.request(
        "POST", "/checkout", {"ship_name": "Bruno", "ship_address": "1 Test Road", "shipping": "express"}
    )
    assert status == 303 and headers["Location"].startswith("/orders/")
    order = ep.query("SELECT * FROM orders ORDER BY id DESC LIMIT 1")[0]
    assert order["ship_address"] == "1 Test Road" and order["status"] == "pending" and order["shipping"] == "express"


def test_forum_escapes_posted_markup(server: WebServer) -> None:
    client = Client(server, server.create_episode("forum"))
    client.sign_in("ada")
    assert client.request("POST", "/t/1/reply", {"body": "<script>alert(1)</script> hi"})[0] == 303
    pages = [client.request("GET", f"/t/1?page={n}")[2] for n in (1, 2, 3)]
    assert any("&lt;script&gt;alert(1)&lt;/script&gt; hi" in page for page in pages)
    assert not any("<script>alert(1)" in page for page in pages)


def test_open_site_mode_gives_each_browser_an_episode() -> None:
    srv = WebServer(open_site="travel").start()
    try:
        client = Client(srv, "")
        client.cookies.pop(EPISODE_COOKIE)
        status, _, body = client.request("GET", "/")
        assert status == 200 and "Wayfarer Travel" in body
        assert EPISODE_COOKIE in client.cookies and srv.episode_count == 1
    finally:
        srv.stop()


def test_server_refuses_non_loopback_hosts_and_unknown_sites() -> None:
    with pytest.raises(ConfigError, match="loopback"):
        WebServer(host="0.0.0.0")
    with pytest.raises(ConfigError, match="Unknown site"):
        WebServer(open_site="bank")
