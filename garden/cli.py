"""``python -m garden``: browse the registry, or compose and run a model with Hydra overrides.

    python -m garden list 'bert*' --task qa --json
    python -m garden show vit
    python -m garden model=vit task=classify preset=smoke

Browsing commands never import torch; a run imports it once the config has composed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from garden.errors import GardenError

USAGE = """\
usage: python -m garden COMMAND ...   or   python -m garden model=NAME task=TASK [KEY=VALUE ...]

Browse the registry:
  list [PATTERN ...]     models, filtered:  --task T --domain D --plugin P --max-params 400M
                         --exclude PAT --sort name|params|-params --pretrained --json
  search TEXT            models whose name, description or tasks mention TEXT
  show NAME              everything about a model: variants, tasks, layouts, commands
  registry build|check   write / verify registry.json (the registry page's data)
  registry measure [NAME ...] [--json]   measure each variant's params, FLOPs and file size
                         from the model itself and name the declared numbers that disagree
  push RUN_DIR org/name   upload a trained model folder to the Hub (one commit)
  plan model=M [task=T] ipu.ipus_per_replica=N [ipu.layers_per_ipu=[...]] [ipu.cost=flops] [--json]
                         the pipeline-stage plan: blocks, params, FLOPs, memory per stage
  registry serve [--port N]  the registry page on http://127.0.0.1:N (default 8000)

Plugins (docs/plugins.md):
  plugins [--json]       installed plugins: distribution, version, API, models, hooks, status
  plugin new NAME [--dir DIR]   write a publishable plugin package (DIR/garden-NAME)
  plugin check NAME [--json]    check an installed plugin (distribution or model) against the contract

Run a model (Hydra overrides; -m/--multirun sweeps comma lists):
  model=NAME task=TASK   what to run (required)
  mode=train|infer|eval  train (default) fine-tunes, evaluates and saves; infer predicts
  preset=smoke           smallest variant, tiny data, ~20 steps
  weights=auto|hub|random|hub:org/name[@rev]|DIR
  backend=auto|local|pipeline|ipu
  data.path=... data.limit=N trainer.lr=... trainer.max_steps=N infer.inputs=GLOB

Examples:
  python -m garden list --domain vision
  python -m garden model=vit task=classify model.variant=tiny
  python -m garden model=vit task=classify mode=infer weights=outputs/DATE/TIME/model infer.inputs='imgs/*.png'
"""


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
    from garden import registry

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
    from garden import registry

    found = registry.search(" ".join(args.text))
    if args.json:
        print_json([registry.entry_record(e) for e in found])
    else:
        table_of(found, title=f"{len(found)} models match '{' '.join(args.text)}'")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from garden import registry

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
        console.print("  " + " | ".join(registry.stage_summary(layout, entry.tasks)), highlight=False)
    if not entry.layouts:
        console.print("no published layout: ipu.layers_per_ipu=[-1] plans one at run time")
    for r in entry.results:
        metrics = " · ".join(f"{k} {v:g}" for k, v in r["metrics"].items())
        speed = f", {r['throughput']:g} samples/s" if r.get("throughput") else ""
        console.print(f"result ({r['task']}, {r.get('variant', entry.default_variant.name)}): {metrics} "
                      f"on {r['dataset']}{speed}", highlight=False)
    for task, command in record["commands"].items():
        console.print(f"{task}: [green]{command}[/]")
    return 0


def cmd_registry(args: argparse.Namespace) -> int:
    from garden import registry

    path = Path(args.path)
    if args.action == "serve":
        from garden.serve import serve

        serve(path, args.port)
        return 0
    if args.action == "measure":
        return measure_variants(args)
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


def measure_variants(args: argparse.Namespace) -> int:
    """Measure every variant of the named models (all by default); 1 when a declared number is off."""
    from garden import registry
    from garden.measure import measure_all

    models = [registry.get(n) for n in args.names] if args.names else registry.list_models()
    measured = measure_all(models)
    declared = {(e.name, v.name): v for e in models for v in e.variants}
    off = {(m.model, m.variant): m.disagreements(declared[m.model, m.variant]) for m in measured}
    if args.json:
        print_json([m.__dict__ for m in measured])
    else:
        from rich.console import Console
        from rich.table import Table

        table = Table(title="variants measured (random weights, first task, default data; --json: exact)")
        for column in ("model", "variant", "params", "FLOPs", "file", "declared", "input"):
            table.add_column(column, justify="right" if column in ("params", "FLOPs", "file") else "left")
        for m in measured:
            table.add_row(m.model, m.variant, human(m.params), human(m.flops), megabytes(m.file_size),
                          "[red]differs[/]" if off[m.model, m.variant] else "[green]agrees[/]", m.input)
        Console().print(table)
    problems = [problem for found in off.values() for problem in found]
    for problem in problems:
        print(f"error: {problem}; declare the measured number on the plugin's Variant", file=sys.stderr)
    return 1 if problems else 0


def cmd_push(args: argparse.Namespace) -> int:
    """Upload a run's model folder to the Hub in one commit (creating the repo if needed)."""
    from garden import hub
    from garden.errors import WeightsError

    folder = Path(args.run_dir)
    if (folder / "model" / "config.json").exists():
        folder = folder / "model"
    if not (folder / "config.json").exists():
        raise WeightsError(f"{args.run_dir} holds no model folder (config.json); pass a run directory "
                           "(outputs/DATE/TIME) or its model/ folder")
    url = hub.push(folder, args.repo_id, private=args.private)
    print(f"pushed {folder} to {args.repo_id}: {url}")
    return 0


def cmd_plan(argv: list[str]) -> int:
    """``plan model=M [task=T] ipu.ipus_per_replica=N [ipu.layers_per_ipu=[...]] [--json]``."""
    from garden.planning import plan_run

    as_json = "--json" in argv
    prepared, stage_plan = plan_run([a for a in argv if a != "--json"])
    summary = stage_plan.summary()
    summary.update({"model": prepared.entry.name, "variant": prepared.variant.name,
                    "task": prepared.task.name, "cost": prepared.cfg.ipu.cost})
    if as_json:
        print_json(summary)
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{prepared.entry.name} ({prepared.variant.name}) · {prepared.task.name} · "
                        f"{len(summary['stages'])} stages · cost={summary['cost']}")
    for column in ("stage", "blocks", "layers", "params", "GFLOPs/sample", "memory", "cost share"):
        table.add_column(column, justify="left" if column == "blocks" else "right")
    for stage in summary["stages"]:
        table.add_row(str(stage["index"]), compact(stage["blocks"]), str(stage["layers"]), human(stage["params"]),
                      f"{stage['flops_per_sample'] / 1e9:.3f}", f"{stage['memory_bytes'] / 2**20:.0f} MiB",
                      f"{stage['cost_share']:.1%}")
    console = Console()
    console.print(table)
    console.print(f"layers_per_ipu={summary['layers_per_ipu']} · bottleneck / ideal = "
                  f"{summary['bottleneck_ratio']:.3f}")
    if summary["uniform_layers_per_ipu"] is not None:
        console.print(f"count-uniform {summary['uniform_layers_per_ipu']}: bottleneck / ideal = "
                      f"{summary['uniform_bottleneck_ratio']:.3f}")
    console.print(f"pipeline bubble with {summary['micro_batches']} micro-batches: {summary['bubble']:.1%}")
    return 0


def compact(blocks: list[str]) -> str:
    """``['embeddings', 'layer.0', 'layer.1', 'layer.2']`` -> ``'embeddings, layer.0-2'``."""
    out: list[str] = []
    run: list[str] = []

    def flush() -> None:
        if run:
            out.append(run[0] if len(run) == 1 else f"{run[0]}-{run[-1].rsplit('.', 1)[1]}")
            run.clear()

    for name in blocks:
        head, _, tail = name.rpartition(".")
        if tail.isdigit() and run and run[-1].rpartition(".")[0] == head and int(run[-1].rpartition(".")[2]) + 1 == int(tail):
            run.append(name)
            continue
        flush()
        if tail.isdigit():
            run.append(name)
        else:
            out.append(name)
    flush()
    return ", ".join(out)


def cmd_plugins(args: argparse.Namespace) -> int:
    """Every installed plugin and what discovery made of it (loaded, failed with why, blocked)."""
    from garden.plugins import discover

    plugins = discover().plugins
    if args.json:
        print_json([p.to_dict() for p in plugins])
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{len(plugins)} plugins")
    for column in ("distribution", "version", "API", "models", "hooks", "status"):
        table.add_column(column)
    colour = {"loaded": "green", "failed": "red", "blocked": "yellow"}
    for p in plugins:
        status = f"[{colour.get(p.status, 'white')}]{p.status}[/]" + (f": {p.error}" if p.error else "")
        table.add_row(p.distribution, p.version, p.api_version or "-", ", ".join(p.models) or "-",
                      ", ".join(h.removeprefix("garden_") for h in p.hooks) or "-", status)
    Console().print(table)
    return 0


def cmd_plugin(args: argparse.Namespace) -> int:
    """``plugin new NAME [--dir DIR]`` and ``plugin check NAME [--json]``."""
    if args.action == "new":
        from garden.scaffold import Names, files, new_plugin

        root = new_plugin(args.name, args.dir, force=args.force)
        names = Names.of(args.name)
        print(f"wrote {root}:")
        for f in files(root):
            print(f"  {f}")
        print(f"next: pip install -e {root} && python -m garden plugin check {names.dist} "
              f"&& (cd {root} && pytest)")
        return 0
    from garden.contract import check_plugin, failures

    results = check_plugin(args.name)
    failed = failures(results)
    if args.json:
        print_json({"plugin": args.name, "ok": not failed, "checks": [r.to_dict() for r in results]})
    else:
        for r in results:
            print(r.line())
        passed = sum(r.status == "pass" for r in results)
        print(f"{passed} passed, {len(failed)} failed, {len(results) - passed - len(failed)} skipped")
    for r in failed:
        print(f"error: plugin check {args.name}: {r.name}: {r.detail}", file=sys.stderr)
    return 1 if failed else 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m garden", usage=USAGE, add_help=False)
    sub = p.add_subparsers(dest="command")
    ls = sub.add_parser("list")
    ls.add_argument("patterns", nargs="*")
    ls.add_argument("--task")
    ls.add_argument("--domain")
    ls.add_argument("--plugin")
    ls.add_argument("--max-params")
    ls.add_argument("--min-params")
    ls.add_argument("--exclude", action="append", default=[])
    ls.add_argument("--sort", default="name")
    ls.add_argument("--pretrained", action="store_true")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=cmd_list)
    se = sub.add_parser("search")
    se.add_argument("text", nargs="+")
    se.add_argument("--json", action="store_true")
    se.set_defaults(func=cmd_search)
    sh = sub.add_parser("show")
    sh.add_argument("name")
    sh.add_argument("--json", action="store_true")
    sh.set_defaults(func=cmd_show)
    rg = sub.add_parser("registry")
    rg.add_argument("action", choices=["build", "check", "serve", "measure"])
    rg.add_argument("names", nargs="*", help="models to measure (registry measure; default all)")
    rg.add_argument("--json", action="store_true")
    rg.add_argument("--path", default="registry.json")
    rg.add_argument("--port", type=int, default=8000)
    rg.set_defaults(func=cmd_registry)
    pu = sub.add_parser("push")
    pu.add_argument("run_dir")
    pu.add_argument("repo_id")
    pu.add_argument("--private", action="store_true")
    pu.set_defaults(func=cmd_push)
    pl = sub.add_parser("plugins")
    pl.add_argument("--json", action="store_true")
    pl.set_defaults(func=cmd_plugins)
    pg = sub.add_parser("plugin")
    pg.add_argument("action", choices=["new", "check"])
    pg.add_argument("name")
    pg.add_argument("--dir", default=".")
    pg.add_argument("--force", action="store_true")
    pg.add_argument("--json", action="store_true")
    pg.set_defaults(func=cmd_plugin)
    return p


COMMANDS = {"list", "search", "show", "registry", "push", "plugins", "plugin"}


def run_hydra(argv: list[str]) -> int:
    """Validate the overrides (one-line errors), then hand them to ``hydra.main``."""
    from garden.config import compose, sugar, validate_choices

    argv = sugar(argv)
    multirun = any(a in ("-m", "--multirun") for a in argv)
    overrides = [a for a in argv if not a.startswith("-")]
    if multirun:
        from garden.config import register

        for values in _sweep_choices(overrides):
            validate_choices(values)
        register()  # garden's schema and plugin config dirs, which compose() registers otherwise
    else:
        compose(overrides)
        from garden.checkpoint import resume_overrides

        argv = resume_overrides(argv)  # resume=true|DIR: continue in that run's folder

    import hydra

    from garden.runs import execute

    @hydra.main(version_base="1.3", config_path="pkg://garden.conf", config_name="config")
    def job(cfg: Any) -> Any:
        from hydra.core.hydra_config import HydraConfig

        from garden.runs import command_line

        hydra_cfg = HydraConfig.get()
        try:
            return execute(cfg, Path(hydra_cfg.runtime.output_dir), command=command_line(hydra_cfg.overrides.task))
        except GardenError as err:
            print(f"error: {err}", file=sys.stderr)
            raise SystemExit(2) from None

    sys.argv = [sys.argv[0], *argv]
    job()
    return 0


def _sweep_choices(overrides: list[str]) -> list[list[str]]:
    """Each combination of the swept model and task values, for validation before a sweep."""
    import itertools

    picked = {k: v.split(",") for k, v in (o.split("=", 1) for o in overrides if "=" in o) if k in ("model", "task")}
    keys = list(picked)
    return [[f"{k}={v}" for k, v in zip(keys, combo)] for combo in itertools.product(*picked.values())]


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if not argv or argv[0] in ("-h", "--help", "help"):
            print(USAGE)
            return 0
        if argv[0] == "plan":
            return cmd_plan(argv[1:])
        if argv[0] in COMMANDS:
            args = parser().parse_args(argv)
            return args.func(args)
        if "=" not in " ".join(a for a in argv if not a.startswith("-")):
            print(f"error: unknown command '{argv[0]}'; commands: {', '.join(sorted(COMMANDS))}, "
                  f"or a run: model=NAME task=TASK", file=sys.stderr)
            return 2
        return run_hydra(argv)
    except GardenError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
