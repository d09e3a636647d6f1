"""Model output never crashes rollgym: the tool-call parser and every registered env's ``step``.

Property tests (hypothesis) feed arbitrary text, text built from the tags envs
look for, and tool-call-shaped text whose JSON holds what breaks naive code:
integers of 4,301+ digits (Python refuses to convert them), ``NaN`` and
``Infinity``, numbers that overflow a float, nesting thousands deep, strings of
100,000 characters, lone UTF-16 surrogates, NUL and other odd code points. The
parser must turn each into calls or labelled errors; each env's ``step`` must
answer with a normal step or an error observation, never an exception.

One env per id is made once and reused across examples (web ids share one
real Chromium); the number of examples per id is sized to the id's cost.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rollgym
from rollgym.core.toolcalls import MAX_DEPTH, ParsedToolCalls, ToolCall, ToolCallError, parse_tool_calls
from tests.conftest import require_binary, require_module

# -- generators ------------------------------------------------------------------------------
# every code point, lone surrogates included (hypothesis leaves them out by default)
ANY_CHAR = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=())
ODD_CHARS = st.sampled_from(["\ud800", "\udfff", "\x00", "\u202e", "\ufeff", "\U0001f600", "\u0301", "\r", "\t", "\\"])
ANY_TEXT = st.text(alphabet=st.one_of(ANY_CHAR, ODD_CHARS), max_size=200)

FRAGMENTS = [
    "<answer>", "</answer>", "\\boxed{", "\\boxed", "}", "{", "<tool_call>", "</tool_call>", "<move>", "</move>",
    "<think>", "</think>", '{"name": ', '"arguments": ', "[", "]", "e2e4", "O-O", "d4", "7", "a1", "1 2 3",
    "click(1)", 'fill(3, "x")', 'answer("x")', 'goto("/")', "(", ")", "+", "*", "/", "=", "\\frac{1}{2}",
    "9" * 5000, "\ud800", "\x00", " ", "\n", "NaN", "Infinity", "1e999",
]
TAGGED_TEXT = st.lists(st.one_of(st.sampled_from(FRAGMENTS), ANY_TEXT), max_size=8).map("".join)
BOXED_TEXT = st.tuples(ANY_TEXT, TAGGED_TEXT).map(lambda parts: f"{parts[0]}\\boxed{{{parts[1]}}}")

BIG_INT = st.integers(min_value=4290, max_value=6000).map(lambda n: "9" * n)
NUMBER_LITERALS = st.sampled_from(
    ["NaN", "-NaN", "Infinity", "-Infinity", "1e999", "-1e999", "1e-999", "-0.0", "0", "-0", "1.5e308",
     "9223372036854775808", "-9223372036854775809", "18446744073709551616", "1" + "0" * 400 + ".5", "1" * 101]
)
JSON_STRINGS = st.one_of(
    ANY_TEXT.map(json.dumps),  # escaped: lone surrogates arrive as \\udXXX escapes
    ANY_TEXT.map(lambda s: json.dumps(s, ensure_ascii=False)),  # raw code points in the JSON text
    st.integers(min_value=0, max_value=120_000).map(lambda n: json.dumps("x" * n)),
)
SCALARS = st.one_of(
    st.integers().map(str), BIG_INT, NUMBER_LITERALS, st.floats().map(json.dumps), JSON_STRINGS,
    st.sampled_from(["true", "false", "null"]),
)
DEEP = st.sampled_from([63, 64, 65, 500, 990, 5000, 100_000]).map(lambda n: "[" * n + "]" * n)


def _objects(children: st.SearchStrategy[str], keys: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    pairs = st.lists(st.tuples(keys, children), max_size=4)
    return pairs.map(lambda kv: "{" + ", ".join(f"{json.dumps(k)}: {v}" for k, v in kv) + "}")


def hostile_json(keys: st.SearchStrategy[str] = ANY_TEXT) -> st.SearchStrategy[str]:
    """JSON text (or nearly JSON) built to break naive consumers."""
    return st.recursive(
        st.one_of(SCALARS, DEEP),
        lambda children: st.one_of(
            st.lists(children, max_size=4).map(lambda xs: "[" + ", ".join(xs) + "]"),
            _objects(children, keys),
        ),
        max_leaves=8,
    )


# valid JSON that still surprises a tool: 64-bit overflow, odd floats, NUL and RTL marks, 10k strings
VALID_TEXT = st.text(
    alphabet=st.one_of(st.characters(codec="utf-8"), st.sampled_from(["\x00", "\u202e", "'", '"', "%"])), max_size=100
)
ODD_VALUES = st.recursive(
    st.one_of(
        st.integers(min_value=-(10**40), max_value=10**40), st.floats(allow_nan=False, allow_infinity=False),
        VALID_TEXT, st.integers(0, 12_000).map(lambda n: "y" * n), st.booleans(), st.none(),
    ),
    lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(VALID_TEXT, children, max_size=3)),
    max_leaves=6,
)


def tool_call_text(names: list[str], params: list[str]) -> st.SearchStrategy[str]:
    """Hermes blocks or an OpenAI-style list, naming the env's tools and parameters with hostile values."""
    name = st.one_of(st.sampled_from(names or ["tool"]), st.sampled_from(names or ["tool"]), ANY_TEXT).map(json.dumps)
    keys = st.one_of(st.sampled_from(params or ["x"]), ANY_TEXT)
    odd_object = st.dictionaries(st.sampled_from(params or ["x"]), ODD_VALUES, max_size=4).map(json.dumps)
    arguments = st.one_of(
        odd_object,
        odd_object,
        _objects(hostile_json(keys), keys),
        hostile_json(keys),
        hostile_json(keys).map(json.dumps),
    )
    call = st.tuples(name, arguments).map(lambda na: f'{{"name": {na[0]}, "arguments": {na[1]}}}')
    hermes = st.lists(st.tuples(ANY_TEXT, call), min_size=1, max_size=3).map(
        lambda parts: "".join(f"{text}<tool_call>{body}</tool_call>" for text, body in parts)
    )
    listed = st.lists(call, min_size=1, max_size=3).map(lambda calls: "[" + ", ".join(calls) + "]")
    return st.one_of(hermes, listed, st.tuples(call, ANY_TEXT).map(lambda ct: f"<tool_call>{ct[0]}{ct[1]}"))


# -- (a) the parser ----------------------------------------------------------------------------
def _check_parsed(parsed: ParsedToolCalls) -> None:
    assert isinstance(parsed, ParsedToolCalls)
    for call in parsed.calls:
        assert isinstance(call, ToolCall) and isinstance(call.name, str) and isinstance(call.arguments, dict)
        json.dumps(call.arguments, allow_nan=False).encode("utf-8")  # usable downstream: finite, encodable
        str(call.arguments)  # no int too long to print
    for error in parsed.errors:
        assert isinstance(error, ToolCallError) and error.message
        (error.message + error.raw).encode("utf-8")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(tool_call_text(["search", "python"], ["query", "code", "id"]))
def test_parse_tool_calls_turns_hostile_json_into_calls_or_labelled_errors(text: str) -> None:
    _check_parsed(parse_tool_calls(text))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(TAGGED_TEXT, hostile_json()))
def test_parse_tool_calls_never_raises_on_any_text(text: str) -> None:
    _check_parsed(parse_tool_calls(text))
    _check_parsed(parse_tool_calls(f"<tool_call>{text}</tool_call>"))
    _check_parsed(parse_tool_calls(f'<tool_call>{{"name": "f", "arguments": {text}}}</tool_call>'))


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("9" * 4301, "more than"),
        ("-" + "9" * 5000, "more than"),
        ("NaN", "NaN is not valid JSON"),
        ("-Infinity", "-Infinity is not valid JSON"),
        ("1e999", "too large for a float"),
        ('"\\ud800"', "lone UTF-16 surrogate"),
        ('"a\ud800"', "lone UTF-16 surrogate"),
        ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "nested more than"),
        ("[" * 40_000 + "]" * 40_000, "nested more than"),
    ],
)
def test_each_hostile_value_gets_its_own_labelled_error(value: str, words: str) -> None:
    for text in (
        f'<tool_call>{{"name": "f", "arguments": {{"x": {value}}}}}</tool_call>',
        f'<tool_call>{{"name": "f", "arguments": {json.dumps(json.dumps({"x": 0})[:-2] + value + "}")}}}</tool_call>',
    ):
        parsed = parse_tool_calls(text)
        assert not parsed.calls and len(parsed.errors) == 1
        assert words in parsed.errors[0].message, parsed.errors[0].message


def test_values_at_the_limits_still_parse() -> None:
    text = '<tool_call>{"name": "f", "arguments": {"n": %s, "x": 1e308, "s": "\\u00e9\\ud83d\\ude00", "d": %s}}'
    text += "</tool_call>"
    nested = "[" * (MAX_DEPTH - 2) + "]" * (MAX_DEPTH - 2)
    parsed = parse_tool_calls(text % ("9" * 100, nested))
    assert parsed.calls and not parsed.errors
    assert parsed.calls[0].arguments["n"] == int("9" * 100) and parsed.calls[0].arguments["s"] == "\u00e9\U0001f600"


# -- (b) every registered env --------------------------------------------------------------------
ENV_IDS = [info.id for info in rollgym.list_envs() if info.family != "test"]
ARRAY_FAMILIES = {"worldmodel"}
TEXT_IDS = [i for i in ENV_IDS if rollgym.env_info(i).family not in ARRAY_FAMILIES]
ARRAY_IDS = [i for i in ENV_IDS if rollgym.env_info(i).family in ARRAY_FAMILIES]
EXAMPLES = {"web": 4, "math": 15, "games": 15}  # per family; everything else 40
#: Ids whose every graded step runs a real project's own test suite (seconds); the parsing in front of the
#: grader is RepoRepair-v0's, which gets the family's full count.
EXAMPLES_BY_ID = {"RepoRepairReal-v0": 10, "RepoRepairReal-v1": 10}
_ENVS: dict[str, Any] = {}


@pytest.fixture(scope="module", autouse=True)
def _close_envs() -> Iterator[None]:
    yield
    for env in _ENVS.values():
        env.close()
    _ENVS.clear()
    if "playwright" in __import__("sys").modules:
        from rollgym.envs.web.browser import shutdown_runtime

        shutdown_runtime()


def _env(env_id: str) -> Any:
    family = rollgym.env_info(env_id).family
    if family == "web":
        require_binary("chromium", "/usr/lib/chromium/chromium")
        require_module("playwright")
    if family == "math":
        require_module("math_verify")
    if env_id not in _ENVS:
        _ENVS[env_id] = gym.make(env_id).unwrapped
    return _ENVS[env_id]


def _tool_schema(env: Any) -> tuple[list[str], list[str]]:
    names, params = [], []
    for tool in env.tools:
        function = tool.get("function", tool)
        names.append(function["name"])
        params += list(function.get("parameters", {}).get("properties", {}))
    return names, sorted(set(params))


def _check_step(result: tuple[Any, ...]) -> bool:
    observation, reward, terminated, truncated, info = result
    assert isinstance(observation, str)
    assert isinstance(reward, float) and math.isfinite(reward)
    assert isinstance(terminated, bool) and isinstance(truncated, bool) and isinstance(info, dict)
    return terminated or truncated


def _settings(env_id: str) -> settings:
    examples = EXAMPLES_BY_ID.get(env_id) or EXAMPLES.get(rollgym.env_info(env_id).family, 40)
    return settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


@pytest.mark.timeout(900)
@pytest.mark.parametrize("env_id", TEXT_IDS)
def test_step_never_raises_on_any_text(env_id: str) -> None:
    env = _env(env_id)
    names, params = _tool_schema(env)
    text = st.one_of(ANY_TEXT, TAGGED_TEXT, BOXED_TEXT)
    action = st.one_of(text, tool_call_text(names, params)) if names else text

    @_settings(env_id)
    @given(seed=st.integers(0, 2**31 - 1), actions=st.lists(action, min_size=1, max_size=3))
    def run(seed: int, actions: list[str]) -> None:
        env.reset(seed=seed)
        for text in actions:
            if _check_step(env.step(text)):
                break

    run()


def _bad_arrays(shape: tuple[int, ...]) -> st.SearchStrategy[Any]:
    fill = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-(2**40), 2**40))
    dtype = st.sampled_from([np.float32, np.float64, np.float16, np.uint8, np.int64, bool, np.complex64, object, "U3"])

    def full(value: Any, kind: Any) -> Any:
        try:
            return np.full(shape, value).astype(kind)
        except (ValueError, OverflowError, TypeError):
            return np.full(shape, value)

    wrong_shape = st.lists(st.integers(0, 4), min_size=0, max_size=6).map(lambda s: np.zeros(tuple(s), np.float32))
    return st.one_of(
        st.tuples(fill, dtype).map(lambda fd: full(*fd)),
        wrong_shape,
        st.one_of(ANY_TEXT, st.none(), st.just([[1.0], [1.0, 2.0]]), st.just({"frames": 1}), st.just(b"\x00")),
        st.lists(st.floats(), max_size=5),
    )


@pytest.mark.timeout(900)
@pytest.mark.parametrize("env_id", ARRAY_IDS)
def test_array_env_step_rejects_bad_arrays_with_a_labelled_error(env_id: str) -> None:
    env = _env(env_id)
    shape = env.action_space.shape

    @_settings(env_id)
    @given(seed=st.integers(0, 2**31 - 1), actions=st.lists(_bad_arrays(shape), min_size=1, max_size=3))
    def run(seed: int, actions: list[Any]) -> None:
        env.reset(seed=seed)
        for action in actions:
            _, reward, terminated, truncated, info = env.step(action)
            assert isinstance(reward, float) and math.isfinite(reward)
            valid = isinstance(action, np.ndarray) and action.shape == shape and action.dtype.kind in "fu"
            valid = valid and (action.dtype.kind == "f" or action.dtype == np.uint8)
            assert (info.get("error") == "invalid_action") == (not valid), (info.get("error"), type(action))
            if info.get("error"):
                assert info["message"] and reward == 0.0 and not terminated
            if terminated or truncated:
                break

    run()


#: Text sent as a whole message. The slow one runs into the math verifier's hard timeout (seconds).
SLOW_TEXT = r"\boxed{(10!)!}"
PLAIN_TEXTS = ["", "\ud800", "\x00" * 10, "\u202e<answer>1</answer>", "<answer>" + "9" * 5000 + "</answer>",
               "<move>" + "9" * 5000 + "</move>", r"\boxed{" + "9" * 5000 + "}", SLOW_TEXT,
               r"\boxed{\ud800}", "<answer>\ud800</answer>", "[" * 50_000 + "]" * 50_000, "x" * 1_000_000]


def _nasty_actions(names: list[str], params: list[str], few: bool = False, texts: list[str] = PLAIN_TEXTS) -> list[str]:
    """Fixed attacks every text env must survive, aimed at each of its tools' parameters.

    Values the parser refuses are sent to one tool (the refusal does not depend on
    the tool); values that reach the tool's code are sent to every tool.
    """
    texts = list(texts)
    refused = ["9" * 4301, "-" + "9" * 5000, "NaN", "Infinity", "1e999", '"\\ud800"', '"\ud800"',
               "[" * 5000 + "]" * 5000]
    reaching = ["99999999999999999999", "-1e308", '"\\u0000"', '"' + "z" * 99_000 + '"', "null", "[]", "{}"]

    def arguments(value: str) -> str:
        return "{" + ", ".join(f'"{p}": {value}' for p in params or ["x"]) + "}"

    for name in (names or ["tool"])[:1]:
        for value in refused:
            texts.append(f'<tool_call>{{"name": "{name}", "arguments": {arguments(value)}}}</tool_call>')
            texts.append(f'[{{"name": "{name}", "arguments": {json.dumps(arguments(value))}}}]')
    for name in (names or ["tool"])[: 2 if few else None]:
        for value in reaching[:3] if few else reaching:
            texts.append(f'<tool_call>{{"name": "{name}", "arguments": {arguments(value)}}}</tool_call>')
    return texts


# the web ids share four sites; their -v1 ids stand for them (each step drives a real browser)
ATTACKED_IDS = [i for i in TEXT_IDS if rollgym.env_info(i).family != "web" or i.endswith("-v1")]
#: arguments that only choose the task set: a dataset, an app's scenario, a group of task templates
TASK_SET_KWARGS = ("dataset", "scenario", "groups")


def _task_set_twin(env_id: str) -> str | None:
    """The attacked id with ``env_id``'s entry point and arguments but no task set of its own, where ``env_id``
    chooses one (ToolWorld-v1 for ToolWorld-Shopping-v1, ToolGen-v0 for ToolGen-Chain-v0, MATH-v1 for AIME24-v1)."""
    spec = gym.spec(env_id)
    if not any(spec.kwargs.get(key) is not None for key in TASK_SET_KWARGS):
        return None
    rest = {k: v for k, v in spec.kwargs.items() if k not in TASK_SET_KWARGS}
    for other in ATTACKED_IDS:
        twin = gym.spec(other)
        if twin.entry_point == spec.entry_point and twin.kwargs == {**rest, **{
                k: None for k in TASK_SET_KWARGS if k in twin.kwargs}}:
            return other
    return None


#: A MATHTool-vN id grades its answer with the verifier call of MATH-vN (``MathProblemEnv.verify``), which takes
#: the text that waits on the verifier's hard timeout
SAME_VERIFY = {f"MATHTool-{version}": f"MATH-{version}" for version in ("v0", "v1")}


@pytest.mark.timeout(900)
@pytest.mark.parametrize("env_id", ATTACKED_IDS)
def test_step_survives_the_known_attacks(env_id: str) -> None:
    env = _env(env_id)
    env.reset(seed=0)  # a ToolGen env offers the tools of the episode's app: the attacks aim at those
    names, params = _tool_schema(env)
    done = False
    # A web step drives a real browser: those take the short list. A ToolWorld-v0 id serves the same apps and tools
    # as its -v1 id, and an id that only chooses a task set (a dataset, an app, a group of templates) runs the
    # code of its twin without one, which takes every attack: those take the short list, and leave out the text
    # that waits on the math verifier's hard timeout (the twin takes it; MATH-vN takes it for MATHTool-vN).
    # A RepoRepairReal submission runs a real project's suite (seconds); its parser and tools are RepoRepair-v0's,
    # which takes every attack, and its grader never reads the final message: a message without a tool call
    # ends the episode with the same grading run whatever it says, so one such message stands for them all.
    v1_twin = env_id.startswith("ToolWorld") and env_id.endswith("-v0") and env_id[:-1] + "1" in ATTACKED_IDS
    twin = _task_set_twin(env_id)
    few = rollgym.env_info(env_id).family == "web" or env_id in EXAMPLES_BY_ID or v1_twin or twin is not None
    texts = PLAIN_TEXTS
    if env_id in EXAMPLES_BY_ID:
        texts = PLAIN_TEXTS[:1]
    elif twin is not None or env_id in SAME_VERIFY:
        texts = [text for text in PLAIN_TEXTS if text != SLOW_TEXT]
    for i, action in enumerate(_nasty_actions(names, params, few=few, texts=texts)):
        if done:  # multi-turn envs take the next attack in the same episode
            env.reset(seed=i)
        done = _check_step(env.step(action))
