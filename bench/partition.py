"""Stage balance of garden's planner against the count-uniform split and Graphcore's layouts.

    python bench/partition.py            # every registered model, default variant, 2/4/8/16 stages
    python bench/partition.py --quick    # the smallest variant of each model: a smoke run (saves nothing)
    python bench/partition.py --models vit,bert --stages 4

For each model the default variant is built once with random weights, and garden's own
profiler (:func:`garden.partition.profile.profile_blocks`, ``ipu.cost=flops``: FLOPs per sample
counted on one real sample of the task's data) weighs its stage blocks. Then, for each stage
count the model has enough layers for, garden's planner (:func:`plan_stages` with all ``-1``),
Optimum Graphcore's count-uniform split (:func:`uniform_layers`) and the published layout
(``entry.layouts``, where one exists for that count) are each scored as bottleneck ÷ ideal
(the costliest stage over total ÷ stages) on the same costs. A model whose blocks cannot run
a sample forward here (no sample path) falls back to ``ipu.cost=params`` on the meta device,
and says so.

Targets: planner <= 1.10 of ideal, and never worse than the published layout on the same cost model.
The ideal is not always reachable: a block costlier than total ÷ stages (a large embedding or
LM head at high stage counts) bounds every plan; the 'optimum' column is the best any placement
reaches, from a min-max DP written independently of the planner.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import add_save_options, header, load, machine_record, save, silenced, table, verdict  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
STAGES = (2, 4, 8, 16)
TARGET = 1.10
#: FLOPs, not time: the figures do not depend on the machine or its load (bench/report.py)
TIMED = False


def model_costs(name: str, variant: str):
    """(blocks' costs, cost model used, variant name, seconds) for ``name``'s ``variant``."""
    import torch

    from garden import registry
    from garden.config import compose
    from garden.partition.profile import block_costs, parameter_profiles, profile_blocks
    from garden.runs import prepare

    entry = registry.get(name)
    task = entry.tasks[0]
    cfg = compose([f"model={name}", f"task={task}", "weights=random", f"model.variant={variant}",
                   "data.limit=8", "data.eval_limit=2", "data.batch_size=1"])
    start = time.perf_counter()
    with silenced():
        prepared = prepare(cfg)
    spec = dataclasses.replace(prepared.spec, weights_dir=None)
    cost = "flops"
    try:
        with silenced():
            model = prepared.family.build(spec)
            blocks = prepared.family.stage_blocks(model, task)
            sample = prepared.data.collate([prepared.data.eval[0]])
            profiles = profile_blocks(model, blocks, prepared.task.inputs(sample))
        if not any(p.flops_per_sample for p in profiles):
            raise ValueError("no FLOPs counted")
    except Exception as err:  # no forward sample path: weigh by parameters on the meta device
        cost = f"params ({type(err).__name__}: {str(err)[:80]})"
        with torch.device("meta"), silenced():
            model = prepared.family.build(spec)
        blocks = prepared.family.stage_blocks(model, task)
        profiles = parameter_profiles(model, blocks)
    costs = block_costs(profiles, "flops" if cost == "flops" else "params", training=True)
    del model
    gc.collect()
    return entry, prepared.variant.name, task, costs, cost, time.perf_counter() - start


def optimum(costs, n: int, name: str) -> float:
    """The least bottleneck ÷ ideal of any placement with ``n`` stages, by a plain min-max DP
    written independently of the planner (same placement rules: embeddings first, head last,
    in-between blocks with the layer before them, tied blocks with their twin)."""
    from garden.partition.planner import _anchors

    anchors = _anchors(costs, n, name)
    n_layers = sum(c.kind == "layer" for c in costs)
    per_layer, per_stage = [0.0] * n_layers, [0.0] * n
    for c, (where, i) in zip(costs, anchors):
        (per_layer if where == "layer" else per_stage)[i] += c.cost
    before = [0.0]
    for w in per_layer:
        before.append(before[-1] + w)
    inf = float("inf")
    best = [0.0] + [inf] * n_layers  # best[j]: least bottleneck placing layers [0, j) on the stages so far
    for k in range(n):
        best = [min(max(best[i], per_stage[k] + before[j] - before[i]) for i in range(j + 1)) for j in range(n_layers + 1)]
    ideal = (sum(per_layer) + sum(per_stage)) / n
    return best[n_layers] / ideal if ideal else 1.0


def report(record: dict) -> str:
    """The planner's table and verdicts of a saved run, as markdown."""
    rows, over, compared, beaten = [], [], 0, []
    for m in record["models"]:
        if "error" in m:
            rows.append([m["name"], m["variant"], "error", "-", "-", "-", "-", "-", "-", "NO"])
            over.append(f"{m['name']} (not profiled)")
            continue
        for s in m["stages"]:
            published = s["published"]
            if isinstance(published, float):
                compared += 1
                if s["planner"] > published + 1e-9:
                    beaten.append(f"{m['name']}@{s['n']}: {s['planner']:.3f} vs {published:.3f}")
            ok = s["planner"] <= TARGET or s["planner"] <= s["optimum"] * 1.0001
            if not ok:
                over.append(f"{m['name']}@{s['n']}={s['planner']:.3f}")
            rows.append([m["name"], m["variant"], m["cost"].split(" ")[0], str(s["n"]), f"{s['planner']:.3f}",
                         f"{s['uniform']:.3f}", f"{published:.3f}" if isinstance(published, float) else published,
                         f"{s['optimum']:.3f}", ",".join(map(str, s["layers_per_ipu"])), "yes" if ok else "NO"])
    lines = ["Bottleneck ÷ ideal (the costliest stage over total ÷ stages; 1.000 is perfect balance) on the "
             "FLOPs cost model, one sample of each model's first task, default variants.", "",
             table(rows, ["model", "variant", "cost", "stages", "planner", "uniform", "published", "optimum",
                          "planner layers_per_ipu", f"<={TARGET} or optimal"]), "",
             f"* Planner ≤ {TARGET} of ideal, or equal to the optimum where {TARGET} is unreachable: "
             f"{verdict(not over)}" + (f" (over: {', '.join(over)})" if over else "") + ".",
             f"* Planner never worse than Graphcore's published layout ({compared} compared): {verdict(not beaten)}"
             + (f" ({'; '.join(beaten)})" if beaten else "") + "."]
    lines += [f"* {note}" for note in record["notes"]]
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="smallest variants (fast), same table; saves nothing")
    p.add_argument("--models", default=None, help="comma list (default: every registered model)")
    p.add_argument("--stages", default=",".join(map(str, STAGES)), help="comma list of stage counts")
    add_save_options(p)
    args = p.parse_args()
    stages = [int(s) for s in args.stages.split(",")]

    import torch
    import transformers  # noqa: F401

    from garden import registry
    from garden.partition.planner import plan_stages, uniform_layers

    torch.set_num_threads(os.cpu_count() or 1)
    header("pipeline-stage balance: planner vs count-uniform vs Graphcore's published layouts")
    record = {"script": "partition", "command": "python bench/" + " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
              "machine": machine_record(), "settings": {"stages": stages, "quick": args.quick},
              "models": [], "notes": []}
    names = args.models.split(",") if args.models else [e.name for e in registry.list_models()]
    for name in names:
        entry = registry.get(name)
        variant = "smallest" if args.quick else entry.default_variant.name
        try:
            entry, variant, task, costs, cost, seconds = model_costs(name, variant)
        except Exception as err:  # one broken model must not hide the others
            record["models"].append({"name": name, "variant": variant, "error": f"{type(err).__name__}: {err}"})
            record["notes"].append(f"{name}: could not be profiled: {type(err).__name__}: {err}")
            continue
        n_layers = sum(c.kind == "layer" for c in costs)
        print(f"{name} ({variant}, task {task}): {len(costs)} blocks, {n_layers} layers, cost={cost}, "
              f"{seconds:.1f} s to build and profile", flush=True)
        model = {"name": name, "variant": variant, "task": task, "cost": cost, "blocks": len(costs),
                 "layers": n_layers, "stages": []}
        record["models"].append(model)
        for n in stages:
            if n_layers < n:
                record["notes"].append(f"{name}: {n_layers} layers, too few for {n} stages")
                continue
            planned = plan_stages(costs, [-1] * n, model=name)
            uniform = plan_stages(costs, uniform_layers(n_layers, n), model=name)
            published_layout = entry.layouts.get(n) if variant == entry.default_variant.name else None
            published: float | str = "-"
            if published_layout is not None:
                published = (plan_stages(costs, list(published_layout), model=name).bottleneck_ratio
                             if sum(published_layout) == n_layers else f"n/a (sums to {sum(published_layout)})")
            model["stages"].append({"n": n, "planner": planned.bottleneck_ratio, "uniform": uniform.bottleneck_ratio,
                                    "published": published, "optimum": optimum(costs, n, name),
                                    "layers_per_ipu": list(planned.layers_per_ipu)})
    save("partition", record, args)
    print()
    print(report(record))
    print("'optimum' = the least bottleneck ÷ ideal any placement reaches (an independent min-max DP); "
          f"where it is above {TARGET}, block granularity, not the planner, stands in the way. load avg at end {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
