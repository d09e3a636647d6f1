"""Build a tiny, randomly initialised chat model and tokenizer from a config, with no download.

Tests, examples and the CPU demonstrations use it: the tokenizer is a byte-level
BPE trained on a few thousand generated lines (digits, arithmetic, grids, chat
tags), the chat template is ChatML with Hermes-style tools, and the model is a
two-layer Llama-architecture network. Everything is written to a folder that
:meth:`TransformersBackend.from_pretrained` and ``rollgym serve-model`` load.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"]

# ChatML with Hermes tool calls. Newlines are spelled out so Jinja's whitespace control cannot eat them.
CHAT_TEMPLATE = (
    "{%- if tools -%}"
    "{{ '<|im_start|>system\\n' }}"
    "{%- if messages[0].role == 'system' -%}{{ messages[0].content + '\\n\\n' }}{%- endif -%}"
    "{{ '# Tools\\n<tools>' }}"
    "{%- for tool in tools -%}{{ '\\n' + (tool | tojson) }}{%- endfor -%}"
    "{{ '\\n</tools>\\nCall a tool as <tool_call>{\"name\": ..., \"arguments\": {...}}</tool_call>.<|im_end|>\\n' }}"
    "{%- elif messages[0].role == 'system' -%}"
    "{{ '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}"
    "{%- endif -%}"
    "{%- for message in messages -%}"
    "{%- if message.role != 'system' -%}"
    "{{ '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\\n' }}{%- endif -%}"
)

# Like Qwen3's: earlier assistant turns lose their <think> block, so the template is not prefix-preserving.
THINK_STRIPPING_TEMPLATE = CHAT_TEMPLATE.replace(
    "{{ '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}",
    "{%- if message.role == 'assistant' and not loop.last and '</think>' in message.content -%}"
    "{{ '<|im_start|>assistant\\n' + message.content.split('</think>')[-1].lstrip() + '<|im_end|>\\n' }}"
    "{%- else -%}"
    "{{ '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- endif -%}",
)


def _corpus(rng: np.random.Generator, lines: int) -> list[str]:
    words = ["answer", "think", "the", "numbers", "target", "use", "each", "once", "grid", "row", "column",
             "move", "call", "tool", "result", "search", "python", "print", "user", "assistant", "system"]
    out = []
    for _ in range(lines):
        nums = " ".join(str(int(x)) for x in rng.integers(0, 1000, size=4))
        expr = f"({rng.integers(1, 100)} + {rng.integers(1, 100)}) * {rng.integers(1, 10)} - {rng.integers(1, 50)}"
        grid = "\n".join(" ".join(str(int(v)) for v in rng.integers(1, 10, size=4)) for _ in range(2))
        text = " ".join(rng.choice(words, size=6))
        out.append(f"<answer>{expr}</answer> {nums} {text}\n{grid} \\boxed{{{rng.integers(0, 99)}}}")
    return out


def build_tiny_model(
    folder: str | Path,
    *,
    seed: int = 0,
    vocab_size: int = 400,
    hidden_size: int = 32,
    layers: int = 2,
    chat_template: str = CHAT_TEMPLATE,
) -> Path:
    """Write a tiny tokenizer and random model to ``folder`` and return the folder.

    Example:
        >>> path = build_tiny_model("/tmp/tiny-model")  # doctest: +SKIP
    """
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    core = Tokenizer(models.BPE(unk_token=None))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    core.train_from_iterator(_corpus(rng, 2000), trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|endoftext|>", bos_token=None,
    )
    tokenizer.chat_template = chat_template
    tokenizer.save_pretrained(folder)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=hidden_size * 2,
        num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
        tie_word_embeddings=True, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(folder)
    return folder


def load_tiny(folder: str | Path) -> tuple[Any, Any]:
    """Load a model and tokenizer that :func:`build_tiny_model` wrote."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoModelForCausalLM.from_pretrained(folder), AutoTokenizer.from_pretrained(folder)
