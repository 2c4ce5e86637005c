"""The declared results in registry.json: each model's recipe trained from scratch on shipped data.

    python bench/results.py                # every model's first task, tiny variant: a table
    python bench/results.py vit tgn        # some models
    python bench/results.py --write        # and store each in its plugin's results.json

Each run is a command a user can type, ``python -m garden model=M task=T model.variant=tiny
weights=random trainer.threads=1`` (the plugin's recipe for M and T), in a fresh subprocess; its
``metrics.json`` gives the held-out metrics and the training throughput. One thread makes the
numbers independent of the core count and, on one CPU model with the same torch and
transformers, equal bit for bit, so the plugins' tests rerun the faster ones and compare to 4
decimals (``garden.testing.rerun_declared_result``). Beside each result goes its baseline (``Task.baseline``: what a predictor that ignores
the inputs scores on the same held-out split) and the margin it must beat it by; ``show`` and
the registry page display them (OpenMMLab's Results: task, dataset, metrics).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import header, table  # noqa: E402

#: a declared result closes at least this share of the gap between its baseline and a perfect score
MARGIN = 0.25
THREADS = 1


def command(model: str, task: str, variant: str) -> list[str]:
    """The garden overrides of the recipe run (``python -m garden`` and these)."""
    return [f"model={model}", f"task={task}", f"model.variant={variant}", "weights=random",
            f"trainer.threads={THREADS}"]


def run_recipe(overrides: list[str]) -> tuple[dict, float, float]:
    """metrics.json of one recipe run, its wall time and its CPU time in seconds (the CPU time
    barely moves with other processes' load on a shared machine; the wall time does)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error"}
    argv = [sys.executable, "-m", "garden", *overrides]
    with tempfile.TemporaryDirectory() as cwd:
        start, cpu = time.perf_counter(), cpu_seconds()
        proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=3600)
        elapsed, cpu = time.perf_counter() - start, cpu_seconds() - cpu
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(overrides)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
        [metrics] = Path(cwd).glob("outputs/*/*/metrics.json")
        return json.loads(metrics.read_text()), elapsed, cpu


def cpu_seconds() -> float:
    """User and system CPU time of this process's finished children."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def baseline(overrides: list[str]) -> dict:
    """The task's baseline on the run's own data split (no model is built)."""
    from garden.config import compose
    from garden.runs.prepared import prepare

    from common import silenced

    with silenced():
        prepared = prepare(compose(overrides))
    found = prepared.task.baseline(prepared.data)
    if found is None:
        raise SystemExit(f"task '{prepared.task.name}' has no baseline (Task.baseline); give it one")
    return {**found, "value": round(found["value"], 4), "margin": MARGIN}


def gap_closed(value: float, against: dict) -> float:
    """How much of the way from the baseline to a perfect score ``value`` goes (1: perfect)."""
    return (value - against["value"]) / (against["perfect"] - against["value"])


def declaration(task: str, variant: str, overrides: list[str], metrics: dict, against: dict, folder: Path) -> dict:
    from garden.declared import environment

    measured_with = environment(folder, threads=THREADS)
    return {
        "task": task, "variant": variant, "dataset": f"{metrics['data']}, held-out split",
        "metrics": {k: round(v, 4) for k, v in metrics["eval"].items()},
        "baseline": against,
        "command": shlex.join(["python", "-m", "garden", *overrides]),
        "throughput": round(metrics["train_samples_per_second"], 1),
        "hardware": f"{measured_with['cpu']}, {THREADS} thread",
        "measured_with": measured_with,
        "source": "python bench/results.py --write",
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("models", nargs="*", help="model names (default: every registered model)")
    p.add_argument("--variant", default="tiny")
    p.add_argument("--write", action="store_true", help="store each result in its plugin's results.json")
    args = p.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from garden import registry
    from garden.declared import write_results

    entries = [registry.get(n) for n in args.models] if args.models else registry.list_models()
    header("registry results: each model's recipe from scratch, on its shipped data", threads=THREADS)
    rows, short = [], []
    for entry in entries:
        task = entry.tasks[0]
        overrides = command(entry.name, task, args.variant)
        metrics, elapsed, cpu = run_recipe(overrides)
        against = baseline(overrides)
        folder = registry.declared_in(entry)
        result = declaration(task, args.variant, overrides, metrics, against, folder)
        closed = gap_closed(result["metrics"][against["metric"]], against)
        if closed < MARGIN:
            short.append(f"{entry.name}/{task}: {against['metric']} {result['metrics'][against['metric']]} closes "
                         f"{closed:.0%} of the gap from {against['name']} ({against['value']}) to perfect")
        shown = ", ".join(f"{k} {v:.4f}" for k, v in result["metrics"].items())
        rows.append([entry.name, task, str(metrics["steps"]), shown, f"{against['value']:.4f}", f"{closed:.0%}",
                     f"{metrics['train_samples_per_second']:.1f}", f"{elapsed:.0f} s", f"{cpu:.0f} s"])
        print(f"{entry.name}/{task}: {shown}; baseline {against['metric']} {against['value']:.4f} "
              f"({against['name']}), {closed:.0%} of the gap closed ({elapsed:.0f} s, {cpu:.0f} s of CPU)", flush=True)
        if args.write:
            print(f"  wrote {write_results(folder, entry.name, [result])}", flush=True)
    print()
    print(table(rows, ["model", "task", "steps", "held-out metrics", "baseline", "gap closed", "train samples/s",
                       "run", "CPU"]))
    for line in short:
        print(f"below the margin ({MARGIN:.0%} of the gap): {line}", file=sys.stderr)
    if args.write:
        print("next: python -m garden registry build", file=sys.stderr)
    return 1 if short else 0


if __name__ == "__main__":
    sys.exit(main())
