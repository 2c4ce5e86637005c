"""The browsing commands: ``list``, ``search``, ``show``, ``tasks``, ``registry build|check|serve``
and ``plugins``. They read plugin entries and ``registry.json`` only, so they never import torch,
transformers or Hydra (an import-layer contract in ``pyproject.toml`` holds them to it); rich
and http.server are imported by the commands that use them, so ``list --json`` starts fast.

    python -m garden list 'bert*' --task qa --json
    python -m garden show vit
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from garden import registry
from garden.compat import strip_prefix
from garden.errors import ConfigError
from garden.plugins import discover


def human(n: int | None) -> str:
    if n is None:
        return "-"
    for unit, size in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return str(n)


def megabytes(n: int | None) -> str:
    return "-" if n is None else f"{n / 1e6:,.1f} MB"


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, default=str) + "\n")


def cmd_list(args: argparse.Namespace) -> int:
    found = registry.list_models(
        args.patterns or "*", exclude=args.exclude, task=args.task, domain=args.domain, plugin=args.plugin,
        max_params=args.max_params, min_params=args.min_params, pretrained=args.pretrained, sort=args.sort,
    )
    if args.json:
        print_json([registry.entry_record(e) for e in found])
        return 0
    table_of(found, title=f"{len(found)} models")
    return 0


def table_of(found: list, title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for column in ("name", "domain", "tasks", "variants", "params", "plugin"):
        table.add_column(column, justify="right" if column == "params" else "left")
    for e in found:
        table.add_row(e.name, e.domain, ", ".join(e.tasks), ", ".join(v.name for v in e.variants),
                      human(e.params), e.plugin or "")
    Console().print(table)


def cmd_search(args: argparse.Namespace) -> int:
    found = registry.search(" ".join(args.text))
    if args.json:
        print_json([registry.entry_record(e) for e in found])
    else:
        table_of(found, title=f"{len(found)} models match '{' '.join(args.text)}'")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    entry = registry.get(args.name)
    record = registry.entry_record(entry)
    if args.json:
        print_json(record)
        return 0
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(f"[bold]{entry.name}[/] · {entry.domain} · family {entry.family} · "
                  f"plugin {entry.plugin} {entry.plugin_version}")
    console.print(entry.description)
    if entry.paper:
        console.print(f"paper: {entry.paper}" + (f" ({entry.paper_url})" if entry.paper_url else ""))
    if entry.license:
        console.print(f"license: {entry.license}")
    variants = Table(title="variants")
    for column in ("variant", "hub", "revision", "params", "FLOPs", "file", "about"):
        variants.add_column(column)
    for v in entry.variants:
        mark = " (default)" if v.name == entry.default_variant.name else ""
        revision = v.revision[:7] if v.revision else "-"  # as the Hub and the registry page show a commit; --json: all
        variants.add_row(v.name + mark, v.hub_id or "-", revision, human(v.params), human(v.flops),
                         megabytes(v.file_size), v.description)
    console.print(variants)
    inputs: dict[str, list[str]] = {}
    for v in entry.variants:
        if v.flops_input:
            inputs.setdefault(v.flops_input, []).append(v.name)
    for shapes, names in inputs.items():
        which = "" if len(inputs) == 1 else f" ({', '.join(names)})"
        console.print(f"FLOPs{which}: one forward pass on {shapes}", highlight=False)
    for ipus, layout in sorted(entry.layouts.items()):
        console.print(f"published layout on {ipus} IPUs: layers_per_ipu={list(layout)}")
        console.print("  " + " | ".join(registry.stage_summary(layout, entry.tasks, registry.tied_head_tasks(entry))),
                      highlight=False)
    if not entry.layouts:
        console.print("no published layout: ipu.layers_per_ipu=[-1] plans one at run time")
    for r in entry.results:
        metrics = " · ".join(f"{k} {v:g}" for k, v in r["metrics"].items())
        speed = f", {r['throughput']:g} samples/s" if r.get("throughput") else ""
        console.print(f"result ({r['task']}, {r.get('variant', entry.default_variant.name)}): {metrics} "
                      f"on {r['dataset']}{speed}", highlight=False)
        if r.get("baseline"):
            b = r["baseline"]
            console.print(f"  baseline: {b['metric']} {b['value']:g} ({b['name']})", highlight=False)
        if r.get("command"):
            console.print(f"  reproduce: {r['command']}", highlight=False)
        if r.get("note"):
            console.print(f"  note: {r['note']}", highlight=False)
    sources = registry.tasks()
    console.print("tasks: " + ", ".join(
        f"{t} (from {sources[t, entry.domain].plugin})" if (t, entry.domain) in sources else f"{t} (unregistered)"
        for t in entry.tasks), highlight=False)
    for task, command in record["commands"].items():
        console.print(f"{task}: [green]{command}[/]")
    from garden.serve import NOTEBOOK_DIR, launch_url, notebook_path  # standard library only

    for task in entry.tasks:
        path = notebook_path(entry.name, task)
        opened = launch_url(path)
        if (NOTEBOOK_DIR / Path(path).name).is_file():
            console.print(f"notebook ({task}): {path}" + (f" · open: {opened}" if opened else ""), highlight=False)
        else:
            console.print(f"notebook ({task}): python -m garden notebook model={entry.name} task={task}",
                          highlight=False)
    return 0


def cmd_tasks(args: argparse.Namespace) -> int:
    """Every registered task: its name, domain, the plugin it comes from and the models that run it."""
    found = registry.list_tasks(args.domain)
    runs = {t.key: [e.name for e in registry.list_models(task=t.name, domain=t.domain)] for t in found}
    if args.json:
        print_json([{**t.to_dict(), "models": runs[t.key]} for t in found])
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{len(found)} tasks")
    for column in ("task", "domain", "plugin", "models", "about"):
        table.add_column(column)
    for t in found:
        table.add_row(t.name, t.domain, t.plugin or "", ", ".join(runs[t.key]) or "-", t.description)
    Console().print(table)
    return 0


def cmd_registry(args: argparse.Namespace) -> int:
    """``registry build|check|serve`` (``registry measure`` builds models: :mod:`garden.cli` runs it)."""
    path = Path(args.path or "registry.json")
    if args.action == "serve":
        from garden.serve import serve  # http.server: only for this command

        if args.path and not path.is_file():  # a file the user named: not the installed plugins instead
            raise ConfigError(f"{path} does not exist; run: python -m garden registry build --path {path}")
        serve(path, args.port)
        return 0
    if args.names:
        raise SystemExit(f"error: registry {args.action} takes no model names (only registry measure does)")
    if args.action == "build":
        n = registry.build(path)
        print(f"wrote {path} ({n} models)")
        return 0
    problems = registry.check(path)
    for p in problems:
        print(f"error: {p}", file=sys.stderr)
    if not problems:
        print(f"{path} is up to date ({len(registry.entries())} models)")
    return 1 if problems else 0


def cmd_plugins(args: argparse.Namespace) -> int:
    """Every installed plugin and what discovery made of it (loaded, failed with why, blocked)."""
    plugins = discover().plugins
    if args.json:
        print_json([p.to_dict() for p in plugins])
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{len(plugins)} plugins")
    for column in ("distribution", "version", "API", "models", "tasks", "hooks", "status"):
        table.add_column(column)
    colour = {"loaded": "green", "failed": "red", "blocked": "yellow"}
    for p in plugins:
        status = f"[{colour.get(p.status, 'white')}]{p.status}[/]" + (f": {p.error}" if p.error else "")
        table.add_row(p.distribution, p.version, p.api_version or "-", ", ".join(p.models) or "-",
                      ", ".join(p.tasks) or "-", ", ".join(strip_prefix(h, "garden_") for h in p.hooks) or "-", status)
    Console().print(table)
    return 0
