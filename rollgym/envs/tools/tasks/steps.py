"""The building blocks of reference solutions: tool calls a template's ``solve`` yields (``yield from call(...)``)."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

Call = tuple[str, dict[str, Any]]
Step = Generator[Call, Any, Any]


def call(tool: str, **arguments: Any) -> Step:
    """Make one call and return its result (``yield from call(...)``)."""
    result = yield tool, arguments
    return result


def every(tool: str, **arguments: Any) -> Generator[Call, Any, list[dict[str, Any]]]:
    """Fetch every page of a paginated search and return all results."""
    found: list[dict[str, Any]] = []
    page = 1
    while True:
        result = yield tool, {**arguments, "page": page, "page_size": 50}
        found += result.get("results", [])
        if not result.get("has_more"):
            return found
        page += 1


def named(tool: str, name: str) -> Step:
    """Search with ``tool`` for ``name`` and return the first result called exactly that (a contact, a product)."""
    found = yield from call(tool, query=name)
    return next(r for r in found["results"] if r["name"] == name)


def contact_email(name: str) -> Generator[Call, Any, str]:
    """Look a person up in the address book and return their email address."""
    result = yield "contacts_search", {"query": name}
    exact = [c for c in result.get("results", []) if c["name"] == name]
    return str(exact[0]["email"]) if exact else ""
