"""garden's import layers (docs/architecture.md), checked by import-linter's contracts in
pyproject.toml: each layer imports only from the layers below it, the backends know only their
shared base, and the modules behind ``list``/``show``/``search`` import no torch, transformers or
Hydra. An import inside a function counts the same as one at the top of a module."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: the ``lint-imports`` command of the interpreter running the tests (import-linter is a dev extra)
LINT_IMPORTS = [sys.executable, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()"]


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` over the ``garden`` package in ``root`` (it puts its working directory
    first on the path), with the contracts of ``root/pyproject.toml``."""
    return subprocess.run([*LINT_IMPORTS, "--no-cache", "--no-logo"], cwd=root, capture_output=True,
                          text=True, timeout=300)


def test_every_import_follows_the_layers_and_the_browsing_modules_stay_torch_free():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def _copy_of_garden(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "garden", tmp_path / "garden", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


# Each breaks one rule, as the import cycle this layering replaced did (a backend reaching up into
# the training loop from inside a function); the contracts must name the offending import.
BREAKS = {
    "a backend imports the loops": (
        "backends/base.py", "\n\ndef _up():\n    from garden.runs.loops import train  # noqa: F401\n",
        "garden.backends is not allowed to import garden.runs"),
    "the registry imports torch": (
        "registry.py", "\n\ndef _heavy():\n    import torch  # noqa: F401\n",
        "garden.registry is not allowed to import torch"),
    "one backend imports another": (
        "backends/pipeline.py", "\nfrom garden.backends.local import LocalBackend  # noqa: E402,F401\n",
        "garden.backends.pipeline is not allowed to import garden.backends.local"),
    "a module outside every layer": (
        "orphan.py", '"""Placed in no layer."""\n',
        "garden.orphan"),
}


@pytest.mark.parametrize("rule", list(BREAKS))
def test_an_import_against_the_layers_breaks_a_contract_and_is_named(tmp_path, rule):
    module, code, message = BREAKS[rule]
    root = _copy_of_garden(tmp_path)
    with open(root / "garden" / module, "a", encoding="utf-8") as f:
        f.write(code)
    result = lint_imports(root)
    assert result.returncode == 1, result.stdout + result.stderr
    assert message in result.stdout, result.stdout
