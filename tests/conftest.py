"""Shared fixtures: garden's pytest plugin (:mod:`garden.pytest_plugin`, loaded by pytest through
its entry point) gives ``cli``, ``plugin_site``, ``garden_cli`` and ``make_distribution``; this
module adds the repository's root and runs ``garden_cli`` there unless told otherwise."""

from __future__ import annotations

from pathlib import Path

from garden import pytest_plugin
from garden.pytest_plugin import Result, make_distribution  # noqa: F401  (re-exported for the tests)

ROOT = Path(__file__).resolve().parents[1]


def garden_cli(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 300) -> Result:
    """``python -m garden ARGS`` in the repository's root unless ``cwd`` says where."""
    return pytest_plugin.garden_cli(*args, cwd=cwd or ROOT, env=env, timeout=timeout)
