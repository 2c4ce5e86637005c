"""``python -m garden``: browse the registry, or compose and run a model with Hydra overrides.

    python -m garden list 'bert*' --task qa --json
    python -m garden show vit
    python -m garden model=vit task=classify preset=smoke

The browsing commands (:mod:`garden.cli.browse`) never import torch; the others are imported
when they are asked for (:mod:`garden.cli.plan`, :mod:`garden.cli.launch` for a run, the model
measurements, the Hub push and the plugin check), so ``list`` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn

from garden.compat import strip_prefix
from garden import registry
from garden.cli.browse import cmd_list, cmd_plugins, cmd_search, cmd_show, cmd_tasks, human, megabytes, print_json
from garden.cli.browse import cmd_registry as browse_registry
from garden.errors import GardenError, WeightsError

USAGE = """\
usage: python -m garden COMMAND ...   or   python -m garden model=NAME task=TASK [KEY=VALUE ...]

Browse the registry:
  list [PATTERN ...]     models, filtered:  --task T --domain D --plugin P --max-params 400M
                         --exclude PAT --sort name|params|-params --pretrained --json
  search TEXT            models whose name, description or tasks mention TEXT
  show NAME              everything about a model: variants, tasks, layouts, commands
  show hf:ORG/NAME[@REV] any transformers model: architecture, commit, tasks, params, FLOPs, planned layouts
  tasks [--domain D] [--json]   the tasks plugins register (garden's own too), with their plugin
  registry build|check   write / verify registry.json (the registry page's data)
  registry measure [NAME ...] [--json] [--write]   measure each variant's params, FLOPs and file
                         size; --write stores them in each plugin's measurements.json
                         from the model itself and name the declared numbers that disagree
  push RUN_DIR org/name   upload a trained model folder to the Hub (one commit)
  plan model=M [task=T] ipu.ipus_per_replica=N [ipu.layers_per_ipu=[...]] [ipu.cost=flops] [--json]
                         [--plot[=PNG]]
                         the pipeline-stage plan: blocks, params, FLOPs, memory per stage
  coverage [--tasks T,...] [--types A,...]   which of transformers' architectures run with no plugin
                         (model=hf:...): checks them, writes coverage.json and docs/coverage.md
  registry serve [--port N]  the registry page on http://127.0.0.1:N (default 8000)
  notebook model=M [task=T] [variant=V] [--out PATH]   a tutorial notebook for one entry
  notebook --builtin [--out DIR]   every built-in entry's notebook (notebooks/, docs/notebooks.md)
  export model=M format=onnx|openvino [task=T] [weights=DIR] [out=DIR]
                         the model as an ONNX / OpenVINO graph, checked against torch, with its
                         preprocessor; run it with backend=onnxruntime|openvino weights=OUT

Plugins (docs/plugins.md):
  plugins [--json]       installed plugins: distribution, version, API, models, tasks, hooks, status
  plugin new NAME [--dir DIR] [--task TASK]   write a publishable plugin package (DIR/garden-NAME),
                         with a task of its own (garden_tasks) if --task names one
  plugin new NAME --from hf:ORG/REPO@REV   the same for a Hub model: pinned, measured, planned
  plugin check NAME [--json]    check an installed plugin (distribution or model) against the contract

Run a model (Hydra overrides; -m/--multirun sweeps comma lists):
  model=NAME task=TASK   what to run (required)
  mode=train|infer|eval  train (default) fine-tunes, evaluates and saves; infer predicts
  preset=smoke           smallest variant, tiny data, ~20 steps
  weights=auto|hub|random|hub:org/name[@rev]|DIR
  backend=auto|local|pipeline|ipu|onnxruntime|openvino
  infer.precision=auto|fp32|bf16|int8-dynamic[+compile]   auto: chosen for this CPU/GPU
  data.path=... data.limit=N trainer.lr=... trainer.max_steps=N infer.inputs=GLOB
  logger=tensorboard     also write TensorBoard event files (RUN_DIR/tensorboard)

Examples:
  python -m garden list --domain vision
  python -m garden model=vit task=classify model.variant=tiny
  python -m garden model=vit task=classify mode=infer weights=outputs/DATE/TIME/model infer.inputs='imgs/*.png'
"""


def cmd_registry(args: argparse.Namespace) -> int:
    """``registry measure`` builds the models; ``build``, ``check`` and ``serve`` only browse."""
    if args.action == "measure":
        return measure_variants(args)
    return browse_registry(args)


def measure_variants(args: argparse.Namespace) -> int:
    """Measure every variant of the named models (all by default); 1 when a declared number is off."""
    from garden.measure import measure_all  # builds every variant: torch and transformers

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
    if args.write:
        return write_measurements(models, measured)
    problems = [problem for found in off.values() for problem in found]
    for problem in problems:
        print(f"error: {problem}; rerun with --write and commit the plugin's measurements.json", file=sys.stderr)
    return 1 if problems else 0


def write_measurements(models: list, measured: list) -> int:
    """Each model's sizes into measurements.json beside the plugin that contributed it."""
    from garden.declared import write_sizes

    for entry in models:
        sizes = {m.variant: {"params": m.params, "flops": m.flops, "flops_input": m.input, "file_size": m.file_size}
                 for m in measured if m.model == entry.name}
        print(f"wrote {write_sizes(registry.declared_in(entry), entry.name, sizes)} ({entry.name})", file=sys.stderr)
    print("next: python -m garden registry build", file=sys.stderr)
    return 0


def cmd_push(args: argparse.Namespace) -> int:
    """Upload a run's model folder to the Hub in one commit (creating the repo if needed)."""
    from garden import hub  # huggingface_hub

    folder = Path(args.run_dir)
    if (folder / "model" / "config.json").exists():
        folder = folder / "model"
    if not (folder / "config.json").exists():
        raise WeightsError(f"{args.run_dir} holds no model folder (config.json); pass a run directory "
                           "(outputs/DATE/TIME) or its model/ folder")
    url = hub.push(folder, args.repo_id, private=args.private)
    print(f"pushed {folder} to {args.repo_id}: {url}")
    return 0


def cmd_plugin(args: argparse.Namespace) -> int:
    """``plugin new NAME [--dir DIR] [--task TASK]`` and ``plugin check NAME [--json]``."""
    if args.action == "new":
        from garden.scaffold import Names, files, new_hub_plugin, new_plugin

        if args.source:  # builds the Hub model to measure it: torch
            root = new_hub_plugin(args.name, args.source, args.dir, force=args.force)
        else:
            root = new_plugin(args.name, args.dir, force=args.force, task=args.task)
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


class Parser(argparse.ArgumentParser):
    """argparse, with its usage errors as one line (exit 2) instead of the whole usage text."""

    def error(self, message: str) -> NoReturn:
        command = strip_prefix(self.prog, "python -m garden").strip()
        print(f"error: {command + ': ' if command else ''}{message}; python -m garden --help shows usage",
              file=sys.stderr)
        raise SystemExit(2)


def port(text: str) -> int:
    """A TCP port number, 1 to 65535, or 0: any free port (the address is printed)."""
    try:
        number = int(text)
    except ValueError:
        number = -1
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"{text} is not a port number; give one from 1 to 65535 (0: any free "
                                         f"port), e.g. --port 8000")
    return number


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="python -m garden", usage=USAGE, add_help=False)
    sub = p.add_subparsers(dest="command", prog="python -m garden")
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
    tk = sub.add_parser("tasks")
    tk.add_argument("--domain")
    tk.add_argument("--json", action="store_true")
    tk.set_defaults(func=cmd_tasks)
    rg = sub.add_parser("registry")
    rg.add_argument("action", choices=["build", "check", "serve", "measure"])
    rg.add_argument("names", nargs="*", help="models to measure (registry measure; default all)")
    rg.add_argument("--json", action="store_true")
    rg.add_argument("--write", action="store_true", help="registry measure: write each plugin's measurements.json")
    rg.add_argument("--path", default=None, help="registry.json (default); serve without one shows the installed plugins")
    rg.add_argument("--port", type=port, default=8000)
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
    pg.add_argument("--task")
    pg.add_argument("--from", dest="source", default=None, help="hf:org/name@revision: a curated entry for a Hub model")
    pg.add_argument("--json", action="store_true")
    pg.set_defaults(func=cmd_plugin)
    return p


COMMANDS = {"list", "search", "show", "tasks", "registry", "push", "plugins", "plugin", "notebook"}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if not argv:  # a usage error, as argparse and Hydra treat a missing argument
            print(USAGE, file=sys.stderr)
            return 2
        if argv[0] in ("-h", "--help", "help"):
            print(USAGE)
            return 0
        if argv[0] == "notebook":
            from garden.notebooks import cmd_notebook  # nbformat; no torch

            return cmd_notebook(argv[1:])
        if argv[0] == "plan":
            from garden.cli.plan import cmd_plan  # builds the model: torch

            return cmd_plan(argv[1:])
        if argv[0] == "show" and any(a.startswith("hf:") for a in argv[1:]):
            from garden.cli.plan import cmd_show_hf  # reads the architecture and builds it: torch

            return cmd_show_hf(argv[1:])
        if argv[0] == "coverage":
            from garden.coverage import main as coverage  # builds every architecture: torch

            return coverage(argv[1:])
        if argv[0] == "export":
            from garden.cli.export import cmd_export  # builds the model: torch, an exporter

            return cmd_export(argv[1:])
        if argv[0] in COMMANDS:
            args = parser().parse_args(argv)
            return args.func(args)
        if "=" not in " ".join(a for a in argv if not a.startswith("-")):
            print(f"error: unknown command '{argv[0]}'; commands: {', '.join(sorted(COMMANDS))}, "
                  f"or a run: model=NAME task=TASK", file=sys.stderr)
            return 2
        from garden.cli.launch import run_hydra  # Hydra, then torch once the config composed

        return run_hydra(argv)
    except GardenError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
