"""The generated-world core of ToolGen (:mod:`rollgym.envs.tools.generated`) and WebGen (:mod:`rollgym.envs.web.gen`).

Both families turn a seeded schema into a world (SQLite apps behind typed tools; websites behind
pages), draw tasks from templates over it, and grade an episode by the state diff of the whole
world. What they do the same way is written once here:

* :mod:`.schema`: the world's vocabulary: entity roles (party, item, record, child), value kinds, the
  :class:`~.schema.WorldField` both families' fields are, and how names and money are worded;
* :mod:`.templates`: the template kinds (:class:`~.templates.TemplateKind`: an ``operation`` that ``asks`` a
  question or changes the world), the kinds both families have (``Lookup``, ``CreateRecord``, ``CreateItem``,
  ``UpdateField``) and the base of each family's ``GenTemplate`` (:class:`~.templates.WorldTemplate`);
* :mod:`.draw`: drawing one task: seeded attempts, a template's instance or ``None`` (redraw), and the
  split decided by a hash of the instance's content (``test_unseen`` worlds are held out whole);
* :mod:`.diff`: the state-diff grading: a task's :class:`~.diff.ExpectedState` (required and tolerated
  changes, a question's answer), its rubric with the whole-world gate, and one episode's grade, over
  :func:`rollgym.verifiers.rubric.state_rubric` and :mod:`rollgym.verifiers.statediff`, with the answer
  readers of :mod:`rollgym.verifiers.tools` (ToolGen) and :mod:`rollgym.verifiers.web` (WebGen).

What differs by medium stays in each family: how a schema is drawn (apps with entities, fields and
actions; site kinds with items, records and favourites), and each template kind's wording and reference
solution (tool calls; browser actions). A new generated family builds on these four modules.
"""
