"""Write a model folder as a llama GGUF inside a wheel, the shape ``rollgym models pull`` fetches from the registry.

The tests build it from the tiny random model, so the whole pull (pip, the
wheel, the GGUF reader, the conversion) runs offline in seconds.
"""

from __future__ import annotations

import base64
import hashlib
import json
import zipfile
from pathlib import Path

import numpy as np


def _rope_permute(weight: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's layout of a q/k projection (rows of each head interleaved in halves); transformers undoes it."""
    rows = weight.shape[0]
    return weight.reshape(heads, 2, rows // heads // 2, *weight.shape[1:]).swapaxes(1, 2).reshape(weight.shape)


def write_llama_gguf(model_folder: Path, out: Path) -> Path:
    """The model and tokenizer in ``model_folder`` (Llama architecture, byte-level BPE) as a float32 GGUF file."""
    import gguf
    from safetensors.numpy import load_file

    config = json.loads((model_folder / "config.json").read_text())
    tokenizer = json.loads((model_folder / "tokenizer.json").read_text())
    tokenizer_config = json.loads((model_folder / "tokenizer_config.json").read_text())
    weights = load_file(str(model_folder / "model.safetensors"))
    heads, kv_heads = config["num_attention_heads"], config["num_key_value_heads"]
    hidden = config["hidden_size"]

    writer = gguf.GGUFWriter(str(out), "llama")
    writer.add_block_count(config["num_hidden_layers"])
    writer.add_context_length(config["max_position_embeddings"])
    writer.add_embedding_length(hidden)
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_rope_dimension_count(hidden // heads)
    writer.add_rope_freq_base(float((config.get("rope_parameters") or {}).get("rope_theta", 10000.0)))
    writer.add_layer_norm_rms_eps(config["rms_norm_eps"])
    writer.add_vocab_size(config["vocab_size"])

    vocab: dict[str, int] = tokenizer["model"]["vocab"]
    specials = {t["content"]: t["id"] for t in tokenizer["added_tokens"]}
    tokens = [""] * config["vocab_size"]
    for token, index in {**vocab, **specials}.items():
        tokens[index] = token
    merges = [m if isinstance(m, str) else " ".join(m) for m in tokenizer["model"]["merges"]]
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types([gguf.TokenType.CONTROL if t in specials else gguf.TokenType.NORMAL for t in tokens])
    writer.add_token_merges(merges)
    writer.add_eos_token_id(specials[tokenizer_config["eos_token"]])
    writer.add_pad_token_id(specials[tokenizer_config["pad_token"]])
    writer.add_add_bos_token(False)
    writer.add_chat_template((model_folder / "chat_template.jinja").read_text())

    names = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
             "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
             "mlp.down_proj": "ffn_down", "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm"}
    writer.add_tensor("token_embd.weight", weights["model.embed_tokens.weight"].astype(np.float32))
    writer.add_tensor("output_norm.weight", weights["model.norm.weight"].astype(np.float32))
    for layer in range(config["num_hidden_layers"]):
        for ours, theirs in names.items():
            weight = weights[f"model.layers.{layer}.{ours}.weight"].astype(np.float32)
            if theirs == "attn_q":
                weight = _rope_permute(weight, heads)
            elif theirs == "attn_k":
                weight = _rope_permute(weight, kv_heads)
            writer.add_tensor(f"blk.{layer}.{theirs}.weight", np.ascontiguousarray(weight))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def write_wheel(folder: Path, package: str, version: str, files: dict[str, bytes]) -> Path:
    """A minimal pure-Python wheel holding ``files`` (archive path -> bytes), as pip accepts it."""
    module = package.replace("-", "_")
    info = f"{module}-{version}.dist-info"
    contents = {
        **files,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: rollgym-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "\n".join([*(_record_line(name, data) for name, data in contents.items()), f"{info}/RECORD,,", ""])
    contents[f"{info}/RECORD"] = record.encode()
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{module}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in contents.items():
            archive.writestr(name, data)
    return wheel
