"""Content hashes of env ids, from the static import closure of their entry points.

An id's hash covers its fixed ``kwargs`` and the code of every module its entry
point imports, directly or through other modules, found by reading the source
(never by importing it): ``import a.b``, ``from a import b`` and relative
imports, at module level and inside functions alike (lazy imports count).
Imports under ``if TYPE_CHECKING:`` do not run and are not followed. Modules
outside rollgym (and outside the entry point's own top-level package) are not
followed; third-party code is pinned by the install, not by this hash.

What is followed is what runs: an ``import a.b.c`` names ``a.b.c``; the parent
packages' ``__init__`` files (registration and re-exports) are followed only
when a module imports them by name.

The MDP of an id is defined by its env entry point's closure. The registered
oracle and random policies are reference agents: they change no task and no
score, so they are not hashed. Opponents are part of the MDP and are covered
because the env imports them.

:data:`HASH_EXCLUDE` lists the few modules that are imported by envs but cannot
change a task, a reward or an observation the agent acts on; they are neither
hashed nor followed. Each module's code is hashed without docstrings, comments
and formatting (its AST), so only a change of code changes a hash.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.machinery
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from rollgym.core.errors import UnknownEnvError

#: Modules imported by envs that define no task, reward or observation, with the reason.
HASH_EXCLUDE: dict[str, str] = {
    "rollgym.core.registration": "the id registry and this hash; envs import it only to report their spec hash",
    "rollgym.core.spec_hash": "this module, the hash itself",
    "rollgym.core.deprecation": "import aliases for moved names; they forward to code that is hashed where used",
    "rollgym.envs.games.records": "rendering: PGN, SVG and JSON game records of a finished game",
    "rollgym.envs.worldmodel.pictures": "rendering: PNG strips for render() and reports",
}


@dataclass(frozen=True)
class _Source:
    name: str
    path: Path
    is_package: bool


_SOURCES: dict[str, _Source | None] = {}
_IMPORTS: dict[str, frozenset[str]] = {}
_HASHES: dict[str, str] = {}
_TREES: dict[str, ast.Module] = {}


def _search_path(name: str) -> list[str] | None:
    """Where to look for ``name``: ``sys.path`` for a top-level module, else its parent's package folders."""
    parent, _, _ = name.rpartition(".")
    if not parent:
        return None
    loaded = sys.modules.get(parent)
    locations = getattr(getattr(loaded, "__spec__", None), "submodule_search_locations", None)
    if locations is not None:
        return list(locations)
    source = _find(parent)
    return [str(source.path.parent)] if source is not None and source.is_package else []


def _find(name: str) -> _Source | None:
    """The source file of module ``name`` without importing it (or its parents), or ``None``."""
    if name not in _SOURCES:
        found = None
        loaded = getattr(sys.modules.get(name), "__spec__", None)
        if loaded is not None and loaded.origin and loaded.origin.endswith(".py") and "." not in name:
            # a top-level package already imported (an editable install may hide it from PathFinder)
            _SOURCES[name] = _Source(name, Path(loaded.origin), loaded.submodule_search_locations is not None)
            return _SOURCES[name]
        path = _search_path(name)
        if path is None or path:
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            origin = spec.origin if spec is not None else None
            if origin is not None and origin.endswith(".py"):
                found = _Source(name, Path(origin), spec.submodule_search_locations is not None)  # type: ignore[union-attr]
        _SOURCES[name] = found
    return _SOURCES[name]


def _parse(module: str) -> ast.Module:
    """The AST of ``module``'s source, parsed once (the hash and the import scan share it)."""
    if module not in _TREES:
        source = _find(module)
        if source is None:
            raise UnknownEnvError(f"{module!r} is not a Python module on sys.path; cannot hash it.")
        _TREES[module] = ast.parse(source.path.read_text(encoding="utf-8"), filename=str(source.path))
    return _TREES[module]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _statements(body: list[ast.stmt]) -> Iterable[ast.stmt]:
    """Every statement in ``body``, nested ones included, except under ``if TYPE_CHECKING:`` (never run)."""
    for node in body:
        yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _statements(node.orelse)
            continue
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            inner = getattr(node, name, None)
            if isinstance(inner, list):
                yield from _statements(inner)  # type: ignore[arg-type]


def _longest_module(name: str) -> str | None:
    """``name`` if it is a module, else its longest prefix that is one."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if _find(candidate) is not None:
            return candidate
    return None


def direct_imports(module: str) -> frozenset[str]:
    """The modules that ``module``'s code imports (resolved to module names, any package), read from its source."""
    if module not in _IMPORTS:
        source = _find(module)
        if source is None:
            raise UnknownEnvError(f"{module!r} is not a Python module on sys.path; cannot hash it.")
        package = module if source.is_package else module.rpartition(".")[0]
        found: set[str] = set()
        for node in _statements(_parse(module).body):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [f"{base}.{alias.name}" if _find(f"{base}.{alias.name}") else base for alias in node.names]
            for target in targets:
                resolved = _longest_module(target) if target else None
                if resolved is not None and resolved != module:
                    found.add(resolved)
        _IMPORTS[module] = frozenset(found)
    return _IMPORTS[module]


def import_closure(roots: Iterable[str], exclude: Iterable[str] = HASH_EXCLUDE) -> tuple[str, ...]:
    """Every module reachable from ``roots`` through imports, within rollgym and the roots' own packages.

    Modules in ``exclude`` are neither included nor followed.

    Example:
        >>> "rollgym.core.seeding" in import_closure(["rollgym.envs.countdown.env"])
        True
    """
    roots = list(roots)
    followed = {"rollgym"} | {root.partition(".")[0] for root in roots}
    skip = set(exclude)
    seen: set[str] = set()
    todo = [root for root in roots if root not in skip]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        for imported in direct_imports(module):
            if imported.partition(".")[0] in followed and imported not in skip and imported not in seen:
                todo.append(imported)
    return tuple(sorted(seen))


def module_source_hash(module: str) -> str:
    """SHA-256 of a module's code without docstrings and comments (its AST), read without importing it."""
    if module not in _HASHES:
        direct_imports(module)  # scan imports before the tree loses its docstrings
        tree = _parse(module)
        _strip_docstrings(tree)
        _HASHES[module] = hashlib.sha256(ast.dump(tree).encode("utf-8")).hexdigest()
        del _TREES[module]  # done with it
    return _HASHES[module]


def _strip_docstrings(tree: ast.Module) -> None:
    for node in [tree, *_statements(tree.body)]:
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            first = body[0] if body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(
                first.value.value, str
            ):
                node.body = body[1:] or [ast.Pass()]


def closure_hash(modules: Iterable[str]) -> str:
    """One SHA-256 hex digest over the names and code hashes of ``modules`` (order does not matter)."""
    h = hashlib.sha256()
    for module in sorted(set(modules)):
        h.update(module.encode())
        h.update(module_source_hash(module).encode())
    return h.hexdigest()
