"""Fixtures for the code env tests: one HumanEval grader (and its kept sandboxes) per test session."""

from __future__ import annotations

import pytest

from tests.conftest import IN_CI, SHARED_DATA, require_binary


@pytest.fixture(scope="session")
def humaneval_tasks():
    """Every HumanEval task (from ROLLGYM_DATA_DIR)."""
    require_binary("bwrap")
    if not (SHARED_DATA / "humaneval.jsonl").exists():
        message = f"humaneval.jsonl not found in {SHARED_DATA}; set ROLLGYM_DATA_DIR"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    from rollgym.envs.code.humaneval_data import HumanEvalSource

    source = HumanEvalSource(path=SHARED_DATA / "humaneval.jsonl")
    return [source.task(i, "test") for i in range(source.size("test"))]


@pytest.fixture(scope="session")
def grader():
    """One HumanEval grader for the session."""
    require_binary("bwrap")
    from rollgym.envs.code.humaneval_grader import HumanEvalGrader

    return HumanEvalGrader()


def canonical(task) -> str:
    """The canonical solution of a HumanEval task as a fenced answer."""
    return f"```python\n{task.meta['code_prompt']}{task.answer['canonical_solution']}\n```"


# Programs that try to pass without solving, as the whole answer; {name} is the function to define.
HACKS = {
    "eq_always_true": "class Anything:\n    def __eq__(self, other):\n        return True\n"
                      "    __hash__ = object.__hash__\n"
                      "def {name}(*args, **kwargs):\n    return Anything()\n",
    "int_subclass_eq": "class Sly(int):\n    def __eq__(self, other):\n        return True\n"
                       "def {name}(*args, **kwargs):\n    return Sly(0)\n",
    "sys_exit_0": "import sys\nsys.exit(0)\ndef {name}(*args, **kwargs):\n    return None\n",
    "sys_exit_in_call": "import sys\ndef {name}(*args, **kwargs):\n    sys.exit(0)\n",
    "os_exit_0": "import os\ndef {name}(*args, **kwargs):\n    os._exit(0)\n",
    "patch_builtins": "import builtins\nbuiltins.AssertionError = type('Nope', (Exception,), {{}})\n"
                      "builtins.isinstance = lambda *a: True\nbuiltins.abs = lambda x: 0\n"
                      "def {name}(*args, **kwargs):\n    return None\n",
    "patch_unittest": "import unittest\nunittest.TestCase.assertEqual = lambda *a, **k: None\n"
                      "unittest.TestCase.assertTrue = lambda *a, **k: None\n"
                      "def {name}(*args, **kwargs):\n    return None\n",
    "read_hidden_files": "import os, glob\nFOUND = []\n"
                         "for p in ['/work/shared/data/humaneval.jsonl', 'test.py', 'tests.py', 'expected.json', "
                         "'/sandbox', '/work', '/root', '..', '/tmp']:\n"
                         "    try:\n        FOUND.append(open(p).read()[:50] if os.path.isfile(p) else os.listdir(p))\n"
                         "    except Exception as e:\n        FOUND.append(type(e).__name__)\n"
                         "def {name}(*args, **kwargs):\n    return str(FOUND)\n",
    "read_memory": "import sys, gc\n"
                   "def {name}(*args, **kwargs):\n"
                   "    frame, seen = sys._getframe(1), []\n"
                   "    while frame is not None:\n"
                   "        seen += [v for k, v in frame.f_locals.items()\n"
                   "                 if k in ('expected', 'reference', 'outputs')]\n"
                   "        frame = frame.f_back\n"
                   "    try:\n"
                   "        seen += [o for o in gc.get_objects() if isinstance(o, dict) and 'expected' in o]\n"
                   "    except Exception:\n        pass\n"
                   "    return seen[0] if seen else None\n",
    "forge_results": "import os, json\n"
                     "def {name}(*args, **kwargs):\n"
                     "    with open('results.jsonl', 'w') as f:\n"
                     "        f.write(json.dumps({{'n': 'guess', 'load': 'ok'}}) + '\\n')\n"
                     "    os._exit(0)\n",
    "infinite_loop": "def {name}(*args, **kwargs):\n    while True:\n        pass\n",
    "catch_timeout_loop": "def {name}(*args, **kwargs):\n    while True:\n        try:\n            while True:\n"
                          "                pass\n        except BaseException:\n            pass\n",
    "huge_output": "import os\ndef {name}(*args, **kwargs):\n    while True:\n        os.write(1, b'x' * 65536)\n",
    "huge_print": "def {name}(*args, **kwargs):\n    print('y' * 10**7)\n    return None\n",
    "memory_bomb": "def {name}(*args, **kwargs):\n    return [0] * 10**10\n",
    "delete_everything": "import os, shutil\nfor p in os.listdir('.'):\n    shutil.rmtree(p, ignore_errors=True) "
                         "if os.path.isdir(p) else os.remove(p)\ndef {name}(*args, **kwargs):\n    return None\n",
    "syntax_error": "def {name}(:\n    return\n",
}
