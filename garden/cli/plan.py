"""``python -m garden plan``: a composed run's model, planned into pipeline stages as its ``ipu``
group asks, and the plan printed (blocks, params, FLOPs and memory per stage).

    python -m garden plan model=vit ipu.ipus_per_replica=2 --json
    python -m garden plan model=vit ipu.ipus_per_replica=4 --plot          # plan-vit-4stages.png
    python -m garden plan model=vit ipu.ipus_per_replica=4 --plot=plan.png
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from garden.cli.browse import human, print_json
from garden.runs.planned import plan_run, plan_summary

__all__ = ["cmd_plan", "cmd_show_hf", "plan_run", "plan_summary", "plot_plan", "show_hf"]


def cmd_plan(argv: list[str]) -> int:
    """``plan model=M [task=T] ipu.ipus_per_replica=N [ipu.layers_per_ipu=[...]] [--json] [--plot[=PNG]]``."""
    as_json = "--json" in argv
    plots = [a for a in argv if a == "--plot" or a.startswith("--plot=")]
    summary = plan_summary([a for a in argv if a != "--json" and a not in plots])
    if plots:
        path = plot_plan(summary, plots[-1].partition("=")[2])
        if not as_json:
            Console().print(f"plot written to {path}")
    if as_json:
        print_json(summary)
        return 0
    table = Table(title=f"{summary['model']} ({summary['variant']}) · {summary['task']} · "
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


def plot_plan(summary: dict, path: str = "") -> Path:
    """The plan's cost per stage as a bar chart (bottleneck marked), written to ``path`` or to
    ``plan-MODEL-Nstages.png`` in the current folder."""
    from garden import plots

    stages = len(summary["stages"])
    target = Path(path or f"plan-{summary['model']}-{stages}stages.png")
    title = (f"{summary['model']} ({summary['variant']}) · {summary['task']} · {stages} stages · "
             f"cost={summary['cost']}")
    return plots.save(plots.stage_costs(summary, title), target)


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


def show_hf(name: str) -> dict:
    """What ``show hf:<repo-id>[@rev]`` prints, as a curated entry's ``show`` does: the architecture,
    the commit, the tasks it can do, parameters and FLOPs (its first task, one example of the
    default data) and planned stage layouts (by FLOPs) for 2 and 4 IPUs."""
    from garden.config import sugar
    from garden.partition.planner import plan_stages
    from garden.partition.profile import block_costs

    overrides = sugar([f"model={name}"])
    prepared, stage_plan = plan_run([*overrides, "ipu.cost=flops"])
    entry, variant = prepared.entry, prepared.variant
    costs = block_costs(stage_plan.profiles, "flops")
    layers = sum(b.kind == "layer" for b in stage_plan.blocks)
    layouts = {str(n): list(plan_stages(costs, [-1] * n, model=entry.name).layers_per_ipu)
               for n in (2, 4) if layers >= n}
    pinned = f"{entry.name}@{variant.revision}" if variant.revision else entry.name
    return {"name": entry.name, "architecture": (variant.config.get("architectures") or [entry.family])[0],
            "model_type": entry.family, "domain": entry.domain, "hub_id": variant.hub_id,
            "revision": variant.revision, "tasks": list(entry.tasks), "task": prepared.task.name,
            "params": sum(p.params for p in stage_plan.profiles),
            "flops_per_example": sum(p.flops_per_sample for p in stage_plan.profiles),
            "blocks": [b.name for b in stage_plan.blocks], "layouts": layouts,
            "commands": {t: f"python -m garden model={pinned} task={t}" for t in entry.tasks}}


def cmd_show_hf(argv: list[str]) -> int:
    """``show hf:<repo-id>[@rev]|hf:<folder> [--json]``."""
    shown = show_hf(next(a for a in argv if a != "--json"))
    if "--json" in argv:
        print_json(shown)
        return 0
    console = Console()
    console.print(f"[bold]{shown['name']}[/] · {shown['architecture']} ({shown['model_type']}) · {shown['domain']}")
    if shown["revision"]:
        console.print(f"Hub {shown['hub_id']} at commit {shown['revision']}")
    console.print(f"tasks: {', '.join(shown['tasks'])}")
    console.print(f"{human(shown['params'])} parameters, {human(shown['flops_per_example'])} FLOPs per example "
                  f"({shown['task']}, garden's default data)")
    console.print(f"stage blocks: {compact(shown['blocks'])}")
    for ipus, layout in shown["layouts"].items():
        console.print(f"planned layers_per_ipu for {ipus} IPUs (by FLOPs): {layout}")
    for command in shown["commands"].values():
        console.print(f"  {command}")
    return 0
