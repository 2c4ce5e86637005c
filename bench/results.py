"""The measured results in registry.json: each model's recipe trained from scratch on shipped data.

    python bench/results.py               # every model's first task, tiny variant
    python bench/results.py vit tgn       # some models

Each run is the command a user types, ``python -m garden model=M task=T model.variant=tiny``
(the plugin's recipe for M and T, weights=random), in a fresh subprocess; its ``metrics.json``
gives the held-out metrics and the training throughput. Printed: a table for
docs/benchmarks.md, and per model the ``results=(...)`` to declare on the plugin's ModelEntry,
which ``show`` and the registry page then display (OpenMMLab's Results: task, dataset, metrics).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import cpu_model, header, table  # noqa: E402


def run_recipe(model: str, task: str, variant: str) -> tuple[dict, float]:
    """metrics.json of one recipe run, and its wall time in seconds."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error"}
    argv = [sys.executable, "-m", "garden", f"model={model}", f"task={task}", f"model.variant={variant}",
            "weights=random"]
    with tempfile.TemporaryDirectory() as cwd:
        start = time.perf_counter()
        proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=3600)
        elapsed = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(argv[2:])} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
        [metrics] = Path(cwd).glob("outputs/*/*/metrics.json")
        return json.loads(metrics.read_text()), elapsed


def declaration(task: str, variant: str, metrics: dict, hardware: str) -> dict:
    return {
        "task": task, "variant": variant, "dataset": f"{metrics['data']}, held-out split",
        "metrics": {k: round(v, 4) for k, v in metrics["eval"].items()},
        "throughput": round(metrics["train_samples_per_second"], 1), "hardware": hardware,
        "source": "python bench/results.py",
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("models", nargs="*", help="model names (default: every registered model)")
    p.add_argument("--variant", default="tiny")
    args = p.parse_args()
    from garden import registry

    entries = [registry.get(n) for n in args.models] if args.models else registry.list_models()
    header("registry results: each model's recipe from scratch, on its shipped data", threads=os.cpu_count())
    hardware = f"{cpu_model()}, {os.cpu_count()} cores, 1 process"
    rows, declared = [], {}
    for entry in entries:
        task = entry.tasks[0]
        metrics, elapsed = run_recipe(entry.name, task, args.variant)
        declared[entry.name] = declaration(task, args.variant, metrics, hardware)
        shown = ", ".join(f"{k} {v:.4f}" for k, v in metrics["eval"].items())
        rows.append([entry.name, task, metrics["data"], str(metrics["steps"]), shown,
                     f"{metrics['train_samples_per_second']:.1f}", f"{elapsed:.0f} s"])
        print(f"{entry.name}/{task}: {shown} ({elapsed:.0f} s)", flush=True)
    print()
    print(table(rows, ["model", "task", "data", "steps", "held-out metrics", "train samples/s", "run"]))
    print("\nresults to declare on each ModelEntry:")
    for name, result in declared.items():
        print(f"{name}: results=({json.dumps(result)},)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
