"""Imports inside rollgym run one way: no module reaches itself through its imports.

import-linter's ``acyclic`` contract checks the siblings of every package; this also covers what it does
not see, a package's ``__init__`` and one of its own modules importing each other. Imports under
``if TYPE_CHECKING:`` and inside functions count.
"""

from __future__ import annotations

from tests.conftest import require_module


def test_no_module_of_rollgym_reaches_itself_through_its_imports() -> None:
    require_module("grimp")
    import grimp

    graph = grimp.build_graph("rollgym", cache_dir=None, exclude_type_checking_imports=False)
    circles = []
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back:
                circles.append(" -> ".join((importer, *back)))
    assert not circles, "import circles:\n" + "\n".join(circles)
