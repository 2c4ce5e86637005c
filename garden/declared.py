"""What a plugin declares about its models: the curated facts, and generated results and sizes.

Three files beside the plugin module. ``models.yaml`` is the curator's: each model's entry (name,
family, domain, tasks, builder, variants with their pinned Hub revisions and configs, published
layouts, paper, license), so the plugin's ``garden_models()`` is one line,
``return DECLARED.models()``. The other two are written by a command and never by hand:

- ``results.json`` (``python bench/results.py --write``): per model, its recipe's held-out
  metrics, the baseline they beat, the command that reproduces them and where they were
  measured (garden, torch and transformers versions, CPU model, threads, git commit);
- ``measurements.json`` (``python -m garden registry measure --write``): per model and variant,
  parameters, FLOPs per sample (and the input they were counted on) and file size.

A plugin reads them when it builds its entries, so no number is pasted into Python::

    DECLARED = Declared.beside(__file__)

    @hookimpl
    def garden_models():
        return DECLARED.models()        # models.yaml, with the sizes and results filled in

(or, for entries built in Python, ``Variant("tiny", **DECLARED.sizes("bert", "tiny"))`` and
``ModelEntry(..., results=DECLARED.results("bert"))``).

A missing file, model or variant declares nothing: sizes stay ``None``, results empty, until the
command writes them. No torch here: ``list`` reads these through discovery.
"""

from __future__ import annotations

import functools
import json
import os
import platform
import subprocess
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping

from garden.entries import ModelEntry, Variant
from garden.errors import PluginError
from garden.files import write_atomic

MODELS = "models.yaml"
RESULTS = "results.json"
MEASUREMENTS = "measurements.json"
#: the Variant fields measurements.json holds
SIZES = ("params", "flops", "flops_input", "file_size")
WRITERS = {RESULTS: "python bench/results.py --write", MEASUREMENTS: "python -m garden registry measure --write"}


def read(file: Path) -> dict[str, Any]:
    """A declared-data document, or an empty one when the file does not exist yet."""
    if not file.exists():
        return {"written_by": WRITERS[file.name], "models": {}}
    try:
        document = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise PluginError(f"{file} is not JSON ({err.msg}, line {err.lineno}); regenerate it with "
                          f"{WRITERS[file.name]}") from None
    if not isinstance(document, dict) or not isinstance(document.get("models"), dict):
        raise PluginError(f"{file} holds no \"models\" object; regenerate it with {WRITERS[file.name]}")
    return document


@dataclass(frozen=True)
class Declared:
    """The two documents of one plugin folder, read once when the plugin module is imported."""

    folder: Path
    result_documents: Mapping[str, Any]
    measurement_documents: Mapping[str, Any]

    @classmethod
    def beside(cls, module_file: str | Path) -> "Declared":
        folder = Path(module_file).resolve().parent
        return cls(folder, read(folder / RESULTS), read(folder / MEASUREMENTS))

    def results(self, model: str) -> tuple[dict[str, Any], ...]:
        """``model``'s declared results, as ``ModelEntry.results`` holds them."""
        return tuple(self.result_documents["models"].get(model, ()))

    def sizes(self, model: str, variant: str) -> dict[str, Any]:
        """``params``, ``flops``, ``flops_input`` and ``file_size`` of one variant, as Variant keywords."""
        measured = self.measurement_documents["models"].get(model, {}).get("variants", {}).get(variant, {})
        return {k: measured[k] for k in SIZES if k in measured}

    def models(self) -> list[ModelEntry]:
        """The entries of ``models.yaml``, each variant with its measured sizes and each model with
        its declared results."""
        file = self.folder / MODELS
        try:
            import yaml  # PyYAML: Hydra's own dependency; read only when a plugin declares this way

            document = yaml.safe_load(file.read_text(encoding="utf-8"))
        except OSError as err:
            raise PluginError(f"cannot read {file} ({err.strerror}); the plugin's garden_models() reads it") from None
        except yaml.YAMLError as err:
            where = getattr(err, "problem_mark", None)
            line = f", line {where.line + 1}" if where else ""
            raise PluginError(f"{file} is not valid YAML ({getattr(err, 'problem', err)}{line})") from None
        if not isinstance(document, dict) or not isinstance(document.get("models"), list):
            raise PluginError(f"{file} holds no \"models:\" list of entries")
        return [self.entry(file, fields) for fields in document["models"]]

    def entry(self, file: Path, fields: Mapping[str, Any]) -> ModelEntry:
        """One ``models.yaml`` entry as a :class:`ModelEntry`; a wrong field names itself and the file."""
        fields = dict(fields)
        name = fields.get("name", "?")
        try:
            variants = tuple(Variant(**{**dict(v), **self.sizes(name, v.get("name", "?"))})
                             for v in fields.pop("variants", ()))
            layouts = {int(k): tuple(v) for k, v in (fields.pop("layouts", None) or {}).items()}
            tasks = tuple(fields.pop("tasks", ()))
            return ModelEntry(**fields, tasks=tasks, variants=variants, layouts=layouts, results=self.results(name))
        except TypeError as err:  # an unknown or missing field: dataclasses say which
            raise PluginError(f"{file}: model '{name}': {err}; the fields are ModelEntry's and Variant's "
                              f"(garden.entries)") from None


def write_results(folder: Path, model: str, results: list[dict[str, Any]]) -> Path:
    """Replace ``model``'s results in ``folder/results.json``, keeping the other models'."""
    file = Path(folder) / RESULTS
    document = read(file)
    document["models"][model] = results
    document["models"] = dict(sorted(document["models"].items()))
    write_atomic(file, json.dumps(document, indent=1) + "\n")
    return file


def write_sizes(folder: Path, model: str, variants: Mapping[str, Mapping[str, Any]]) -> Path:
    """Replace ``model``'s variant sizes in ``folder/measurements.json``, with where they were measured."""
    file = Path(folder) / MEASUREMENTS
    document = read(file)
    document["models"][model] = {"measured_with": environment(folder),
                                 "variants": {v: {k: sizes[k] for k in SIZES} for v, sizes in variants.items()}}
    document["models"] = dict(sorted(document["models"].items()))
    write_atomic(file, json.dumps(document, indent=1) + "\n")
    return file


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what ``platform`` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@functools.lru_cache(maxsize=1)
def cpu_features() -> frozenset[str]:
    """This CPU's feature flags (Linux /proc/cpuinfo), read once per process; empty elsewhere."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def vector_isa(features: frozenset[str] | None = None) -> str:
    """The widest vector instructions the CPU has (``amx``, ``avx512``, ``avx2``, else ``other``):
    torch's kernels dispatch on them, so two CPUs that share a model name ("AMD EPYC" in a VM)
    but not these round differently."""
    features = cpu_features() if features is None else features
    return next((name for name, flag in (("amx", "amx_tile"), ("avx512", "avx512f"), ("avx2", "avx2"))
                 if flag in features), "other")


def version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def commit(folder: Path) -> str | None:
    """The git commit ``folder`` is checked out at, ``-dirty`` when tracked files differ from it."""
    try:
        out = subprocess.run(["git", "-C", str(folder), "describe", "--always", "--dirty", "--abbrev=40"],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() or None


def environment(folder: Path, threads: int | None = None) -> dict[str, Any]:
    """What a declared number depends on: versions, CPU, threads, the code's commit and the date."""
    found = {"garden": version("garden"), "torch": version("torch"), "transformers": version("transformers"),
             "python": platform.python_version(), "cpu": cpu_model(), "isa": vector_isa(), "cores": os.cpu_count()}
    if threads is not None:
        found["threads"] = threads
    found.update(commit=commit(folder), date=datetime.now(timezone.utc).strftime("%Y-%m-%d"))
    return found
