"""First contact: how soon a run says something, and what the README's first command costs here.

    python bench/first_contact.py              # 5 rounds of start-up, then ViT-base for 8 steps and one evaluation
    python bench/first_contact.py --quick      # 2 rounds, 5 steps, no evaluation

Start-up, in fresh interpreters, interleaved round by round (load from other users hits each
alike), timed to each one's first line on screen (stdout or stderr):

- ``python -m garden model=vit task=classify`` offline: the headline command, refused in one line
  (ViT-base's weights are not cached);
- ``python -m garden model=vit task=classify model.variant=tiny``: a run's first line, and its
  header (torch, the data and the model loaded);
- ``python -c "import torch"``: the yardstick, the floor for anything that runs a model.

The headline command's cost: ``python -m garden model=vit task=classify`` with ViT-base's
weights is a fine-tune from the checkpoint; a step costs the same from random weights, so it
runs here with ``weights=random`` (no Hub on this machine) for ``--steps`` steps, and the
estimate the run printed after its first steps is compared with the time the steps took. The
whole recipe (10 epochs of the digits) is then steps x measured pace plus one evaluation per
epoch, each timed as ``mode=eval`` over the same held-out split. Raw results go to
bench/results/first_contact.json; GPU figures are not measured (no GPU here).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import add_save_options, header, load, machine_record, save, spread, table  # noqa: E402

HEADLINE = ["model=vit", "task=classify"]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200", "TRANSFORMERS_VERBOSITY": "error"}
HEADER = "· task classify · data"  # the line a run prints once torch, the data and the model are loaded
RECIPE_EPOCHS = 10  # plugins/vit/garden_vit/conf/recipe/vit/classify.yaml


def timed_lines(argv: list[str], *, until: str | None = None) -> tuple[list[tuple[float, str]], int]:
    """``(seconds since start, line)`` for each line the command prints (stdout and stderr
    together), and its exit status; stopped (SIGKILL) at the first line that contains ``until``."""
    with tempfile.TemporaryDirectory() as cwd:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lines = []
        for line in proc.stdout:
            lines.append((time.perf_counter() - start, line.rstrip()))
            if until is not None and until in line:
                proc.send_signal(signal.SIGKILL)
                break
        proc.stdout.close()
        return lines, proc.wait()


def startup(rounds: int) -> dict[str, list[float]]:
    """Seconds to the first line (and, for a run, to its header), per command, round by round,
    the commands' order rotating from round to round."""
    garden = [sys.executable, "-m", "garden"]
    commands = {
        "headline offline (refused)": (garden + HEADLINE, None),
        "tiny run": (garden + HEADLINE + ["model.variant=tiny"], HEADER),
        "import torch": ([sys.executable, "-c", "import torch; print('imported')"], None),
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    times["tiny run: header (torch, data and model loaded)"] = []
    for r in range(rounds):
        names = list(commands)
        for name in names[r % len(names):] + names[: r % len(names)]:
            argv, until = commands[name]
            lines, code = timed_lines(argv, until=until)
            if not lines:  # killed before it printed anything (by memory pressure on a shared machine)
                raise SystemExit(f"{name}: exited {code} without a line; run the benchmark again")
            times[name].append(round(lines[0][0], 3))
            if until is not None:
                times["tiny run: header (torch, data and model loaded)"].append(
                    round(next(t for t, text in lines if until in text), 3))
    return times


def headline_cost(steps: int, evaluate: bool) -> dict:
    """ViT-base for ``steps`` steps of its recipe (the estimate it printed vs the time the steps
    took), and one evaluation pass over the held-out split."""
    with tempfile.TemporaryDirectory() as out:
        argv = [sys.executable, "-m", "garden", *HEADLINE, "weights=random", f"trainer.max_steps={steps}",
                "trainer.eval=false", f"hydra.run.dir={out}/run"]
        lines, code = timed_lines(argv)
        if code != 0:
            raise SystemExit(f"{' '.join(argv[2:])} failed ({code}):\n" + "\n".join(t for _, t in lines[-20:]))
        metrics = json.loads((Path(out) / "run" / "metrics.json").read_text())
    estimate = metrics["estimate"]
    record = {
        "command": "python -m garden " + " ".join(argv[3:-1]), "steps": steps,
        "estimate_after_steps": estimate["after_steps"], "estimated_train_seconds": estimate["train_seconds"],
        "actual_train_seconds": metrics["train_seconds"], "seconds_per_step": estimate["seconds_per_step"],
        "estimate_line": next(t for _, t in lines if t.startswith("estimate:")),
        "train_examples": metrics["train_examples"], "eval_examples": metrics["eval_examples"],
        "steps_per_epoch": math.ceil(metrics["train_examples"] / metrics["batch"]["effective_batch_size"]),
    }
    if evaluate:
        argv = [sys.executable, "-m", "garden", *HEADLINE, "weights=random", "mode=eval"]
        lines, _ = timed_lines(argv)
        started = next(t for t, text in lines if HEADER in text)
        record["evaluation_seconds"] = round(lines[-1][0] - started, 1)
    return record


def recipe(cost: dict) -> dict:
    """The whole recipe at the measured pace: 10 epochs of steps, one evaluation after each."""
    steps = RECIPE_EPOCHS * cost["steps_per_epoch"]
    seconds = steps * cost["seconds_per_step"] + RECIPE_EPOCHS * cost.get("evaluation_seconds", 0)
    return {"steps": steps, "evaluations": RECIPE_EPOCHS, "seconds": round(seconds)}


def report(record: dict) -> str:
    """The start-up table and the headline command's cost, as markdown."""
    times = record["startup_seconds"]
    rows = [[name, spread(values)] for name, values in times.items()]
    cost, whole = record["headline"], recipe(record["headline"])
    evaluation = (f" + {whole['evaluations']} evaluations of {cost['eval_examples']} images × "
                  f"{cost['evaluation_seconds']:.0f} s" if "evaluation_seconds" in cost else "")
    lines = [f"Seconds to the first line on screen, over {record['settings']['rounds']} interleaved rounds "
             "(median, min–max):", "", table(rows, ["command", "first line"]), "",
             f"* `python -m garden model=vit task=classify` fine-tunes ViT-base (86 M parameters, 224×224) for "
             f"{whole['steps']} steps ({RECIPE_EPOCHS} epochs of {cost['train_examples']} digits, batch 16): "
             f"{cost['seconds_per_step']:.1f} s a step here{evaluation} ≈ **{whole['seconds'] / 3600:.1f} h** on "
             "this CPU. One GPU: not measured (none here).",
             f"* The run's own estimate after {cost['estimate_after_steps']} of {cost['steps']} steps: "
             f"{cost['estimated_train_seconds']:.0f} s; the steps took {cost['actual_train_seconds']:.0f} s "
             f"({cost['estimated_train_seconds'] / cost['actual_train_seconds'] - 1:+.0%}). It printed: "
             f"`{cost['estimate_line']}`"]
    m = record["machine"]
    loads = [x[0] for x in (m.get("load_start"), m.get("load_end")) if x]
    if loads and min(loads) > m["cores"]:
        lines.append(f"* The load average ({' → '.join(f'{x:.1f}' for x in loads)}) stayed above the {m['cores']} "
                     "cores: other processes inflated every time above.")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="2 rounds, 5 steps, no evaluation")
    p.add_argument("--steps", type=int, default=None, help="ViT-base steps to time (default 8, quick 5)")
    p.add_argument("--rounds", type=int, default=None, help="start-up rounds (default 5, quick 2)")
    add_save_options(p)
    args = p.parse_args()
    rounds, steps = (2, 5) if args.quick else (5, 8)
    rounds, steps = args.rounds or rounds, args.steps or steps
    header("first contact: the first line on screen, and the headline command's cost")
    import torch  # noqa: F401  (for the machine record: the threads a run here gets by default)

    record = {"script": "first_contact",
              "command": "python bench/" + " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
              "machine": machine_record(), "settings": {"rounds": rounds, "steps": steps}}
    record["startup_seconds"] = startup(rounds)
    record["headline"] = headline_cost(steps, evaluate=not args.quick)
    record["recipe"] = recipe(record["headline"])
    save("first_contact", record, args)
    print(report(record))
    print(f"\nload avg at end: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
