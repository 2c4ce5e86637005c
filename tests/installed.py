"""The rows of the core tests that check one behaviour across model families, read from the installed
registry (:func:`garden.registry.entries`) rather than listed: a model whose plugin is not installed
has no rows, and a new plugin gets its rows without a test edit::

    >>> rows(lambda entry: entry.domain == "speech")          # doctest: +SKIP
    [('hubert', 'asr'), ('hubert', 'audio-classify'), ('wav2vec2', 'asr')]
    >>> specialist(rows(lambda entry: entry.domain == "speech"), "asr")   # doctest: +SKIP
    'wav2vec2'

Reading the registry imports no torch; :func:`family_class` imports a plugin's family module only.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest


def rows(keep: Callable[[Any], bool]) -> list[tuple[str, str]]:
    """``(model, task)`` for every task of every installed model ``keep(entry)`` accepts, by model name
    then in the order the entry lists its tasks."""
    from garden.registry import entries

    return [(name, task) for name, entry in sorted(entries().items()) if keep(entry) for task in entry.tasks]


def one_row_each(keep: Callable[[Any], bool] = lambda entry: True) -> list[tuple[str, str]]:
    """Each installed model ``keep(entry)`` accepts once, with the first of its tasks that no model
    before it (by name) took, else its first: a test of every family covers as many tasks' heads
    as it has families."""
    from garden.registry import entries

    taken, chosen = set(), []
    for name, entry in sorted(entries().items()):
        if keep(entry):
            task = next((t for t in entry.tasks if t not in taken), entry.tasks[0])
            taken.add(task)
            chosen.append((name, task))
    return chosen


def family_class(entry: Any) -> type:
    """The family class that builds ``entry`` (its ``builder``), imported but not instantiated."""
    from pkgutil import resolve_name

    return resolve_name(entry.builder)


def specialist(among: list[tuple[str, str]], task: str) -> str | None:
    """The model of ``among`` most specialised in ``task``: the fewest tasks in ``among``, then the
    first by name; None when no row has the task. Tests of a task's own behaviour run on it, so
    each task is exercised once whichever families are installed."""
    counts = {model: sum(m == model for m, _ in among) for model, t in among if t == task}
    return min(counts, key=lambda model: (counts[model], model)) if counts else None


def vehicle(among: list[tuple[str, str]], task: str) -> str:
    """:func:`specialist`, or skip the calling test when no installed model has ``task``."""
    model = specialist(among, task)
    if model is None:
        pytest.skip(f"no installed model has task '{task}'")
    return model
