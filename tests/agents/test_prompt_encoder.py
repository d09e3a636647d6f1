"""PromptEncoder: cached pieces between special tokens give exactly the ids of a whole-text tokenization."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import rollgym
from rollgym.agents.backends.encoding import PromptEncoder
from rollgym.agents.backends.hf import render_chat_text
from tests.conftest import require_module

require_module("transformers")


@pytest.fixture()
def tokenizer(tiny_model_dir: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tiny_model_dir))


def whole(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def prompts(tokenizer: Any) -> list[str]:
    """First prompts of real envs (with and without tools), multi-turn conversations, and awkward texts."""
    texts = []
    for env_id in ("Countdown-v0", "ToolWorld-v0", "ConnectFour-v0", "Sudoku4x4-v0"):
        env = rollgym.make(env_id, split="test")
        for seed in range(3):
            observation, info = env.reset(seed=seed)
            messages = [{"role": "system", "content": info["system_prompt"]}, {"role": "user", "content": observation}]
            texts.append(render_chat_text(tokenizer, messages, info.get("tools") or None))
            messages += [{"role": "assistant", "content": "<think>\nhm</think> <answer>1 + 2</answer>"},
                         {"role": "user", "content": "Wrong. " + observation[:50]}]
            texts.append(render_chat_text(tokenizer, messages, info.get("tools") or None))
        env.close()
    awkward = [
        "", "plain text, no special token", "<|im_start|>", "<|im_end|><|im_start|><|im_end|>",
        "  <|im_start|>  user\n\n  <|im_end|>  ", "a<|im_end|>b<tool_call>{\"x\": 1}</tool_call>c",
        "\n\n<|im_start|>assistant\n<|endoftext|>", "<|im_start|<|im_start|>>", "é漢字 😀<|im_end|>\t\r\n",
        "<tool_call><tool_call></tool_call>", "x" * 3000 + "<|im_end|>" + " " * 50,
    ]
    return texts + awkward


def test_pieces_give_the_whole_text_ids_without_the_safety_check(tokenizer):
    encoder = PromptEncoder(tokenizer, verify=0)  # the splitting argument alone, no comparison to fall back on
    assert encoder.exact_pieces
    for text in prompts(tokenizer):
        assert encoder.encode(text) == whole(tokenizer, text), text[:80]
    for text in prompts(tokenizer):  # again, now from the cache
        assert encoder.encode(text) == whole(tokenizer, text), text[:80]
    assert encoder.exact_pieces


def test_a_repeated_prefix_is_tokenized_once(tokenizer):
    encoder = PromptEncoder(tokenizer, verify=0)
    encoded: list[str] = []
    inner = encoder._encode_whole

    def counting(text: str) -> list[int]:
        encoded.append(text)
        return inner(text)

    encoder._encode_whole = counting  # type: ignore[method-assign]
    system = "<|im_start|>system\n" + "A long system prompt. " * 50 + "<|im_end|>\n"
    first = system + "<|im_start|>user\nTask one<|im_end|>\n<|im_start|>assistant\n"
    second = system + "<|im_start|>user\nTask two<|im_end|>\n<|im_start|>assistant\n"
    assert encoder.encode(first) == whole(tokenizer, first)
    encoded.clear()
    assert encoder.encode(second) == whole(tokenizer, second)
    assert encoded == ["<|im_start|>user\nTask two"]  # only the new piece (cut before each special token)


def test_tokens_that_swallow_whitespace_are_never_cut_before(tokenizer):
    from tokenizers import AddedToken

    tokenizer.add_special_tokens({"additional_special_tokens": [AddedToken("<sep>", lstrip=True, rstrip=True)]})
    encoder = PromptEncoder(tokenizer, verify=0)
    assert "<sep>" not in encoder._cut_before and "<|im_start|>" in encoder._cut_before
    for text in ["a  <sep>  b", "<|im_start|>user\nx   <sep>\n<|im_end|>\n", "  <sep><|im_start|> <sep> "]:
        assert encoder.encode(text) == whole(tokenizer, text)


def test_tokenizers_where_the_argument_does_not_hold_are_encoded_whole(tokenizer):
    from tokenizers import AddedToken

    tokenizer.add_special_tokens({"additional_special_tokens": [AddedToken("<w>", single_word=True)]})
    assert not PromptEncoder(tokenizer).exact_pieces
    tokenizer.split_special_tokens = True
    encoder = PromptEncoder(tokenizer)
    assert not encoder.exact_pieces
    text = "<|im_start|>user\nhi<|im_end|>\n"
    assert encoder.encode(text) == whole(tokenizer, text)


def test_a_wrong_cut_is_caught_by_the_first_comparisons_and_switches_cutting_off(tokenizer):
    import re

    text = "<|im_start|>user\nthe target, the numbers<|im_end|>\n"
    pieces = ["<|im_start|>user\nth", "e targ", "et, th", "e numb", "ers<|im_end|>\n"]  # cut before every "e"
    assert "".join(pieces) == text
    assert [i for p in pieces for i in whole(tokenizer, p)] != whole(tokenizer, text)  # so such a cut is wrong
    encoder = PromptEncoder(tokenizer, verify=2)
    encoder._splitter = re.compile(r"e|<\|im_start\|>")
    encoder._cut_before = frozenset({"e", "<|im_start|>"})
    assert encoder.encode(text) == whole(tokenizer, text)
    assert not encoder.exact_pieces
    assert encoder.encode(text) == whole(tokenizer, text)


def test_comparisons_already_passed_with_a_tokenizer_are_not_made_again(tokenizer):
    """Every ChatAgent has its own encoder; the whole-text comparisons are made once per tokenizer and cuts."""
    import re

    texts = prompts(tokenizer)[:8]
    first = PromptEncoder(tokenizer, verify=3)
    for text in texts[:3]:
        assert first.encode(text) == whole(tokenizer, text)
    calls: list[str] = []
    original = type(tokenizer).__call__

    def counting(self: Any, text: str, *args: Any, **kwargs: Any) -> Any:
        calls.append(text)
        return original(self, text, *args, **kwargs)

    type(tokenizer).__call__ = counting  # type: ignore[method-assign]
    try:
        second = PromptEncoder(tokenizer, verify=3)
        assert [second.encode(t) for t in texts[3:6]] == [whole(tokenizer, t) for t in texts[3:6]]
        assert len(calls) == 3  # only the test's own `whole` calls: the encoder compared nothing
        calls.clear()
        other = PromptEncoder(tokenizer, verify=2)  # other cuts: compared afresh
        other._splitter = re.compile(r"e|<\|im_start\|>")
        other._cut_before = frozenset({"e", "<|im_start|>"})
        other.encode(texts[6])
        assert calls == [texts[6]]
    finally:
        type(tokenizer).__call__ = original  # type: ignore[method-assign]
