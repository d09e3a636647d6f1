"""Test helpers for the generated sites: a browser-less visitor, each mechanism's correct requests, and side writes.

``gold(task)`` is what a correct agent sends to the real site server (after signing in
as the task's user): the form posts that make exactly the required change, or, for a
question, the answer written the way the site's theme shows it. ``SIDE_WRITES`` are one
unrelated write of every kind a generated site allows (another record, cancelling or
changing another record, favourites, the account, writes as another user and as an
editor); each must zero the reward of any task it is added to.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rollgym.core.task import Task
from rollgym.envs.web.gen.mechanisms import typed
from rollgym.envs.web.gen.site import GeneratedSite
from rollgym.envs.web.gen.tasks import context, template_of
from rollgym.envs.web.server import WebServer, query_base
from tests.envs.web.clients import Client


class Visitor(Client):
    """A client of one episode on a generated site, which knows the site's paths."""

    def __init__(self, server: WebServer, token: str, site: GeneratedSite) -> None:
        super().__init__(server, token, login_path=site.path("login"))
        self.site = site


def rows(site_key: str, sql: str, *params: Any) -> list[Any]:
    return list(query_base(site_key, sql, params))


def gold_answer(task: Task) -> str:
    """A question's answer as the site shows it (a theme's money and date formats), or ``"done"``."""
    template = template_of(task)
    if template.task_kind != "info":
        return "done"
    site = context(task.meta["site"]).site
    kind, unit = template.mechanism.answer_type(context(task.meta["site"]), template.spec.options, task.meta["params"])
    if kind == "money":
        return site.theme.money(int(task.answer))
    if kind == "date":
        return site.theme.day(str(task.answer))
    if kind == "int":
        return f"{int(task.answer):,}" + (f" {unit}" if unit else "")
    return str(task.answer)


def _uid(site_key: str, username: str) -> int:
    return int(rows(site_key, "SELECT id FROM users WHERE username = ?", username)[0]["id"])


def gold(task: Task, visitor: Visitor) -> None:
    """Make exactly the change a transaction task asks for, over HTTP, as its user."""
    template = template_of(task)
    if template.task_kind == "info":
        return
    site, key = visitor.site, task.meta["site"]
    p, ans, mech = task.meta["params"], task.answer, template.spec.mechanism
    visitor.sign_in(p["username"])
    if mech in {"create_record", "create_record_extreme"}:
        visitor.post(site.action_path("create", ans["item_id"]), {k: str(v) for k, v in p["values"].items()})
    elif mech == "cancel_record":
        visitor.post(site.action_path("cancel", ans["record_id"]))
    elif mech == "bulk_cancel":
        for rid in ans["record_ids"]:
            visitor.post(site.action_path("cancel", rid))
    elif mech == "update_record":
        visitor.post(site.action_path("update", ans["record_id"]), {site.kind.record.update: str(p["value"])})
    elif mech == "favorite_add":
        visitor.post(site.action_path("save", ans["item_id"]))
    elif mech == "favorite_remove":
        visitor.post(site.action_path("unsave", ans["item_id"]))
    elif mech == "profile_update":
        user = rows(key, "SELECT * FROM users WHERE id = ?", ans["user_id"])[0]
        form = {"full_name": user["full_name"], "email": user["email"], template.spec.options["field"]: p["value"]}
        visitor.post(site.path("account"), form)
    elif mech == "edit_item":
        f = site.kind.field(template.spec.options["field"])
        visitor.post(site.action_path("edit", ans["item_id"]), {f.key: typed(f, p["value"])})
    elif mech == "archive_item":
        visitor.post(site.action_path("archive", ans["item_id"]))
    elif mech == "create_item":
        slug = rows(key, "SELECT slug FROM categories WHERE id = ?", ans["category_id"])[0]["slug"]
        fields = {f.key: f for f in site.kind.fields}
        form = {"name": p["name"], "category": slug, **{k: typed(fields[k], v) for k, v in p["values"].items()}}
        visitor.post(site.path("new"), form)
    else:  # pragma: no cover - a new mechanism needs its gold requests here
        raise AssertionError(f"no gold requests for mechanism {mech}")


# -- one unrelated write of every kind ---------------------------------------------------------------------------


def _targets(task: Task) -> set[int]:
    ans = task.answer if isinstance(task.answer, dict) else {}
    out: set[int] = set()
    for k, v in ans.items():
        if k.endswith("_ids"):
            out |= set(v)
        elif k.endswith("_id") and k != "user_id":
            out.add(v)
    return out


def task_user(task: Task) -> str:
    """The task's user, or for questions that name none the first user of the site."""
    key = task.meta["site"]
    return str(task.meta["params"].get("username") or rows(key, "SELECT username FROM users ORDER BY id")[0][0])


def other_user(task: Task, editor: bool = False) -> str:
    key, me = task.meta["site"], task_user(task)
    role = context(key).site.kind.roles[1 if editor else 0]
    found = [r[0] for r in rows(key, "SELECT username FROM users WHERE role = ? ORDER BY id", role) if r[0] != me]
    return str(found[0])


def other_item(task: Task, avoid: set[int] | None = None) -> Any:
    """An item the task does not touch (nor names), with stock to spare, not in ``avoid``."""
    key, skip = task.meta["site"], _targets(task) | (avoid or set())
    names = set(str(v) for v in task.meta["params"].values() if isinstance(v, str))
    consumes = context(key).site.kind.record.consumes
    for item in rows(key, "SELECT * FROM items WHERE archived = 0 ORDER BY id DESC"):
        if item["id"] not in skip and item["name"] not in names and (consumes is None or item[consumes[0]] >= 5):
            return item
    raise AssertionError("no unrelated item")


def _new_record(v: Visitor, task: Task) -> None:
    kind = v.site.kind
    form = {}
    for f in kind.record.fields:
        form[f.key] = {"int": str(f.lo), "date": "2026-04-20", "text": "An unrelated note."}.get(f.type, "x")
    v.post(v.site.action_path("create", other_item(task)["id"]), form)


def _own_other_record(v: Visitor, task: Task, username: str) -> Any:
    key = task.meta["site"]
    skip = set(task.answer.get("record_ids", [])) | {task.answer.get("record_id")} if isinstance(task.answer, dict) \
        else set()
    found = [r for r in rows(key, "SELECT * FROM records WHERE user_id = ? AND status = ? ORDER BY id",
                             _uid(key, username), v.site.kind.record.initial) if r["id"] not in skip]
    assert found, f"{username} has no other open record on {key}"
    return found[0]


def create_record(v: Visitor, task: Task) -> None:
    v.sign_in(task_user(task))
    _new_record(v, task)


def cancel_other_record(v: Visitor, task: Task) -> None:
    me = task_user(task)
    v.sign_in(me)
    v.post(v.site.action_path("cancel", _own_other_record(v, task, me)["id"]))


def update_other_record(v: Visitor, task: Task) -> None:
    kind = v.site.kind
    if kind.record.update is None:
        return cancel_other_record(v, task)
    me = task_user(task)
    v.sign_in(me)
    rec = _own_other_record(v, task, me)
    f = kind.record_field(kind.record.update)
    value = {"int": str(f.lo if rec[f.key] != f.lo else f.hi), "date": "2026-05-02",
             "text": "Changed on the side."}[f.type]
    v.post(v.site.action_path("update", rec["id"]), {f.key: value})


def favorite_other(v: Visitor, task: Task) -> None:
    me, key = task_user(task), task.meta["site"]
    saved = {r["item_id"] for r in rows(key, "SELECT item_id FROM favorites WHERE user_id = ?", _uid(key, me))}
    v.sign_in(me)
    v.post(v.site.action_path("save", other_item(task, avoid=saved)["id"]))


def unfavorite_other(v: Visitor, task: Task) -> None:
    me = task_user(task)
    key = task.meta["site"]
    v.sign_in(me)
    skip = _targets(task)
    found = [r["item_id"] for r in rows(key, "SELECT item_id FROM favorites WHERE user_id = ? ORDER BY item_id",
                                        _uid(key, me)) if r["item_id"] not in skip]
    if not found:  # nothing else saved: save something instead, also a change the task did not ask for
        return favorite_other(v, task)
    v.post(v.site.action_path("unsave", found[0]))


def edit_account(v: Visitor, task: Task) -> None:
    v.sign_in(task_user(task))
    v.post(v.site.path("account"), {"full_name": "Side Edit", "email": "side@edit.example"})


def sign_in_as_other(v: Visitor, task: Task) -> None:
    v.sign_in(other_user(task))


def record_as_other(v: Visitor, task: Task) -> None:
    v.sign_in(other_user(task))
    _new_record(v, task)


def editor_edits_item(v: Visitor, task: Task) -> None:
    kind = v.site.kind
    field = next((f for f in kind.fields if f.editable and f.type in {"int", "money"}), None)
    v.sign_in(other_user(task, editor=True))
    item = other_item(task)
    if field is None or "edit" not in kind.editor_can:
        v.post(v.site.action_path("archive", item["id"]))
        return
    value = item[field.key] + 100 if field.type == "money" else item[field.key] + 1
    v.post(v.site.action_path("edit", item["id"]), {field.key: typed(field, value)})


def editor_archives_item(v: Visitor, task: Task) -> None:
    v.sign_in(other_user(task, editor=True))
    v.post(v.site.action_path("archive", other_item(task)["id"]))


SIDE_WRITES: dict[str, Callable[[Visitor, Task], None]] = {
    "another_record": create_record,
    "cancel_another_record": cancel_other_record,
    "change_another_record": update_other_record,
    "save_another_item": favorite_other,
    "unsave_another_item": unfavorite_other,
    "edit_own_account": edit_account,
    "sign_in_as_someone_else": sign_in_as_other,
    "record_as_someone_else": record_as_other,
    "editor_changes_an_item": editor_edits_item,
    "editor_archives_an_item": editor_archives_item,
}
"""One unrelated write of every kind a generated site allows."""
