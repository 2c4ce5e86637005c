"""The registry: every model entry the installed plugins contribute, and questions about them.

Plain functions over frozen entries, in the spirit of timm's ``list_models``::

    >>> list_models("vit*", task="classify")          # doctest: +SKIP
    ['vit']

None of this imports torch. ``registry.json`` at the repository root is the same data written
down (``python -m garden registry build``) for the registry page and for review in diffs.
"""

from __future__ import annotations

import difflib
import fnmatch
import json
from pathlib import Path
from typing import Any, Iterable

from garden.entries import ModelEntry, TaskEntry
from garden.files import write_atomic
from garden.errors import ConfigError, PluginError, UnknownModelError, UnknownTaskError
from garden.plugins import discover
from garden.schema import validate_registry

SCHEMA_VERSION = 1


def entries() -> dict[str, ModelEntry]:
    """All model entries of the loaded plugins, by name."""
    return discover().entries


def get(name: str) -> ModelEntry:
    """The entry called ``name``, or an error that says why there is none: its plugin failed or
    is disabled, or the name is misspelled (the closest names, case aside)."""
    known = entries()
    if name in known:
        return known[name]
    for plugin in discover().failures:
        if plugin.error and f"'{name}'" in plugin.error:
            raise PluginError(f"model '{name}' is unavailable: {plugin.error}")
    blocked = discover().blocked_models()
    if name.lower() in blocked:
        raise PluginError(f"model '{name}' is unavailable: {blocked[name.lower()]}")
    by_lower = {n.lower(): n for n in known}
    close = [by_lower[c] for c in difflib.get_close_matches(name.lower(), by_lower, n=3, cutoff=0.5)]
    close = close or sorted(known)[:8]
    hint = f"did you mean {', '.join(close)}?" if close else "no models are installed"
    raise UnknownModelError(
        f"unknown model '{name}' (model={name}); {hint} (python -m garden list shows all)"
    )


def declared_in(entry: ModelEntry) -> Path:
    """The folder of the plugin module that contributed ``entry``: where its generated
    ``results.json`` and ``measurements.json`` live (:mod:`garden.declared`)."""
    found = discover()
    for plugin in found.plugins:
        if entry.name in plugin.models:
            return Path(found.manager.get_plugin(plugin.name).__file__).resolve().parent
    raise PluginError(f"model '{entry.name}' came from no loaded plugin; its declared data has no folder")


def check_task(entry: ModelEntry, task: str) -> None:
    """Raise unless ``entry`` supports ``task``; the message lists the tasks it has."""
    if task not in entry.tasks:
        raise UnknownTaskError(
            f"model '{entry.name}' has no task '{task}' (task={task}); "
            f"its tasks are: {', '.join(entry.tasks)}"
        )


def tasks() -> dict[tuple[str, str], TaskEntry]:
    """Every task the loaded plugins contribute (garden's own among them), by ``(name, domain)``."""
    return discover().tasks


def list_tasks(domain: str | None = None) -> list[TaskEntry]:
    """The registered tasks, of one domain or all, by name then domain."""
    return sorted((t for t in tasks().values() if domain is None or t.domain == domain), key=lambda t: t.key)


def task_entry(entry: ModelEntry, task: str) -> TaskEntry:
    """The task ``task=NAME`` runs for ``entry``: the one registered for its name and the model's domain."""
    check_task(entry, task)
    found = tasks().get((task, entry.domain))
    if found is None:
        elsewhere = sorted(t.domain for t in tasks().values() if t.name == task)
        where = f"only for {', '.join(elsewhere)}" if elsewhere else "by no installed plugin"
        raise UnknownTaskError(
            f"model '{entry.name}' (domain {entry.domain}) lists task '{task}', which is registered {where}; "
            f"install the plugin that brings it, or have plugin {entry.plugin} register it (garden_tasks)"
        )
    return found


def tied_head_tasks(entry: ModelEntry) -> list[str]:
    """``entry``'s tasks whose head shares the token embeddings' weights (``TaskEntry.tied_head``)."""
    return [t for t in entry.tasks if (found := tasks().get((t, entry.domain))) is not None and found.tied_head]


def domains() -> list[str]:
    """The domains of the registered models and tasks: open, whatever the plugins name."""
    return sorted({e.domain for e in entries().values()} | {t.domain for t in tasks().values()})


def parse_count(text: str | int | float) -> float:
    """``'400M'`` -> 4e8; accepts K, M, B/G suffixes (as users write parameter counts)."""
    if isinstance(text, (int, float)):
        return float(text)
    units = {"K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9}
    s = text.strip().upper()
    try:
        return float(s[:-1]) * units[s[-1]] if s and s[-1] in units else float(s)
    except ValueError:
        raise ConfigError(f"cannot read '{text}' as a count; write e.g. 400M or 1.2B") from None


def _matches(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def list_models(
    pattern: str | Iterable[str] = "*",
    *,
    exclude: str | Iterable[str] = (),
    task: str | None = None,
    domain: str | None = None,
    plugin: str | None = None,
    max_params: str | float | None = None,
    min_params: str | float | None = None,
    pretrained: bool = False,
    sort: str = "name",
) -> list[ModelEntry]:
    """Entries whose name matches ``pattern`` (shell wildcards) and every filter given."""
    patterns = [pattern] if isinstance(pattern, str) else list(pattern)
    excludes = [exclude] if isinstance(exclude, str) else list(exclude)
    hi = parse_count(max_params) if max_params is not None else None
    lo = parse_count(min_params) if min_params is not None else None
    found = []
    for e in entries().values():
        if not _matches(e.name, patterns) or _matches(e.name, excludes):
            continue
        if (task and task not in e.tasks) or (domain and e.domain != domain):
            continue
        if plugin and plugin not in (e.plugin, e.family):
            continue
        if pretrained and not any(v.hub_id for v in e.variants):
            continue
        if hi is not None and (e.params is None or e.params > hi):
            continue
        if lo is not None and (e.params is None or e.params < lo):
            continue
        found.append(e)
    keys = {
        "name": lambda e: e.name,
        "params": lambda e: (e.params or 0, e.name),
        "domain": lambda e: (e.domain, e.name),
        "family": lambda e: (e.family, e.name),
    }
    if sort.lstrip("-") not in keys:
        raise ConfigError(f"cannot sort by '{sort}'; use one of {', '.join(keys)}")
    return sorted(found, key=keys[sort.lstrip("-")], reverse=sort.startswith("-"))


def search(text: str) -> list[ModelEntry]:
    """Entries whose name, family, description, tasks or variants mention every word of ``text``."""
    words = text.lower().split()

    def haystack(e: ModelEntry) -> str:
        parts = [e.name, e.family, e.domain, e.description, *e.tasks, e.paper or ""]
        parts += [v.name for v in e.variants] + [v.hub_id or "" for v in e.variants]
        return " ".join(parts).lower()

    return [e for e in list_models() if all(w in haystack(e) for w in words)]


def run_command(entry: ModelEntry, task: str, variant: str | None = None) -> str:
    """The command line that runs ``task`` for ``entry`` (its default variant unless ``variant``
    names another), with what that variant's weights need, e.g. ``weights.allow_pickle=true``."""
    chosen = entry.variant(variant) if variant else entry.default_variant
    named = [] if chosen is entry.default_variant else [f"model.variant={chosen.name}"]
    return " ".join([f"python -m garden model={entry.name} task={task}", *named, *chosen.run_overrides])


def stage_summary(layers_per_ipu: Iterable[int], tasks: Iterable[str] = (), tied: Iterable[str] = ()) -> list[str]:
    """What each IPU holds under a published layout, placed as the planner places it (embeddings
    on the first IPU; the head of a task in ``tied``, which shares the token embeddings' weights,
    beside them, as Optimum Graphcore places a pre-training head; any other head on the last), so
    ``show`` needs no model::

        >>> stage_summary([3, 3, 3, 3])
        ['IPU 0: embeddings + layers 0-2', 'IPU 1: layers 3-5', 'IPU 2: layers 6-8', 'IPU 3: layers 9-11 + head']
        >>> stage_summary([0, 6, 6], ["classify", "mlm"], tied=["mlm"])
        ['IPU 0: embeddings + tied head (mlm)', 'IPU 1: layers 0-5', 'IPU 2: layers 6-11 + head (classify)']
    """
    tasks, tied_tasks = list(tasks), set(tied)
    tied = [t for t in tasks if t in tied_tasks]
    untied = [t for t in tasks if t not in tied_tasks]
    which = (lambda names: f" ({', '.join(names)})") if tied and untied else (lambda names: "")
    counts = list(layers_per_ipu)
    lines, first = [], 0
    for ipu, count in enumerate(counts):
        parts = ["embeddings" + (f" + tied head{which(tied)}" if tied else "")] if ipu == 0 else []
        if count:
            parts.append(f"layer {first}" if count == 1 else f"layers {first}-{first + count - 1}")
        if ipu == len(counts) - 1 and (untied or not tied):
            parts.append(f"head{which(untied)}")
        lines.append(f"IPU {ipu}: {' + '.join(parts) or 'nothing'}")
        first += count
    return lines


def pin_problems(entry: ModelEntry) -> list[str]:
    """One line for each variant of ``entry`` whose Hub checkpoint is not pinned to a full commit
    hash: such a variant's files can change under a user, and its printed command may not run."""
    return [
        f"model '{entry.name}' variant '{v.name}' {problem}; write the full commit hash (the repo's "
        f"History page on the Hub) as its Variant(revision=...) in plugin {entry.plugin}"
        for v in entry.variants
        if (problem := v.pin_problem())
    ]


def entry_record(entry: ModelEntry) -> dict[str, Any]:
    """One model as it appears in ``registry.json``."""
    record = entry.to_dict()
    record["commands"] = {t: run_command(entry, t) for t in entry.tasks}
    tied = tied_head_tasks(entry)
    record["stage_summaries"] = {str(ipus): stage_summary(layout, entry.tasks, tied)
                                 for ipus, layout in entry.layouts.items()}
    return record


def registry_document() -> dict[str, Any]:
    """The whole registry as the JSON document ``registry build`` writes."""
    return {
        "schema_version": SCHEMA_VERSION,
        "models": [entry_record(e) for e in list_models()],
        "tasks": [t.to_dict() for t in list_tasks()],
    }


def render(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=False) + "\n"


def build(path: Path) -> int:
    """Write ``registry.json``; returns the number of entries. A plugin that fails to load stops
    the build: browsing goes on without it, but a registry written without it would drop its
    models silently."""
    failed = discover().failures
    if failed:
        first = failed[0]
        raise PluginError(
            f"registry build: {first.error}; fix it, or block it "
            f"with GARDEN_DISABLE_PLUGINS={first.distribution} to build without its models"
        )
    unpinned = [problem for e in entries().values() for problem in pin_problems(e)]
    if unpinned:
        more = f" ({len(unpinned) - 1} more: registry check lists them all)" if len(unpinned) > 1 else ""
        raise PluginError(f"registry build: {unpinned[0]}{more}")
    document = registry_document()
    write_atomic(path, render(document))
    return len(document["models"])


def check(path: Path) -> list[str]:
    """Problems with the ``registry.json`` at ``path``: unreadable, off-schema, or stale against the
    plugins; first, any variant of the plugins that is not pinned to a full commit (build refuses those)."""
    unpinned = [problem for e in entries().values() for problem in pin_problems(e)]
    if unpinned:
        return unpinned
    path = Path(path)
    if not path.exists():
        return [f"{path} does not exist; run: python -m garden registry build"]
    try:
        on_disk = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        return [f"{path} is not valid JSON ({err}); run: python -m garden registry build"]
    fresh = json.loads(render(registry_document()))
    off_schema = [f"{path}: {problem}" for problem in validate_registry(on_disk)]
    if off_schema:
        fix = ("fix the plugin's ModelEntry, then rebuild" if on_disk == fresh
               else "run: python -m garden registry build")
        return off_schema + [f"{path} does not follow garden/registry.schema.json; {fix}"]
    if on_disk != fresh:
        have = {m.get("name") for m in on_disk.get("models", [])}
        want = set(entries())
        detail = []
        if want - have:
            detail.append(f"missing {', '.join(sorted(want - have))}")
        if have - want:
            detail.append(f"extra {', '.join(sorted(str(n) for n in have - want))}")
        detail = "; ".join(detail) or "entries differ from the installed plugins"
        return [f"{path} is stale ({detail}); run: python -m garden registry build"]
    return []
