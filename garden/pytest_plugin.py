"""garden's pytest plugin: run ``python -m garden`` as a real subprocess, and install hand-made
plugin distributions, in any test suite (garden's, or a plugin package's own ``tests/``).

pytest loads it through garden's ``pytest11`` entry point, as it loads any installed pytest
plugin, so a plugin's tests use the fixtures without a conftest::

    def test_my_model_trains(cli):
        result = cli("model=mymodel", "task=classify", "preset=smoke", "weights=random")
        assert result.returncode == 0, result.output

Standard library and pytest only: it is imported at every pytest start.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

__all__ = ["Result", "cli", "garden_cli", "make_distribution", "plugin_site"]


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def garden_cli(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 300) -> Result:
    """Run ``python -m garden ARGS`` in a fresh interpreter, as a user would (offline, in ``cwd``)."""
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "COLUMNS": "200",
                "TRANSFORMERS_VERBOSITY": "error", **(env or {})}
    proc = subprocess.run([sys.executable, "-m", "garden", *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=timeout)
    return Result(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def cli(tmp_path):
    """``cli(*args)`` runs garden in a temporary working directory (outputs land there)."""

    def run(*args: str, env: dict | None = None, timeout: float = 300) -> Result:
        return garden_cli(*args, cwd=tmp_path, env=env, timeout=timeout)

    return run


def make_distribution(site: Path, dist: str, module: str, source: str, *, entry: str | None = None,
                      version: str = "1.0") -> None:
    """Install a plugin distribution by hand: the module and a ``.dist-info`` with its entry point."""
    (site / f"{module}.py").write_text(textwrap.dedent(source))
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[garden.plugins]\n{entry or module} = {module}\n")


@pytest.fixture
def plugin_site(tmp_path):
    """A directory for hand-made plugin distributions, and the env that puts it on sys.path."""
    site = tmp_path / "site"
    site.mkdir()
    env = {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    return site, env
