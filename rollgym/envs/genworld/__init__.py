"""The generated-world core of ToolGen (:mod:`rollgym.envs.tools.generated`) and WebGen (:mod:`rollgym.envs.web.gen`).

Both families turn a seeded schema into a world (SQLite apps behind typed tools; websites behind
pages), draw tasks from templates over it, and grade an episode by the state diff of the whole
world. What they do the same way is written once here or in the pure verifiers:

* :mod:`.draw`: drawing one task: seeded attempts, a template's instance or ``None`` (redraw), and the
  split decided by a hash of the instance's content (``test_unseen`` worlds are held out whole);
* the grading: :func:`rollgym.verifiers.rubric.state_rubric` (required and tolerated changes, a question's
  answer, the whole-world gate) over :mod:`rollgym.verifiers.statediff`'s diff, with the answer readers of
  :mod:`rollgym.verifiers.tools` (ToolGen) and :mod:`rollgym.verifiers.web` (WebGen).

What differs by medium stays in each family: the schema (apps with entities, fields and actions; site kinds
with items, records and favourites), and each template kind's wording and reference solution (tool calls;
browser actions).
"""
