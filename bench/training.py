"""Training throughput: garden's ``mode=train`` loop against transformers' ``Trainer``.

    python bench/training.py            # ViT tiny and base, fp32 (and bf16 where the CPU has a bf16 path)
    python bench/training.py --quick    # ViT tiny, a few steps: a smoke run (saves nothing)

Both sides train the same model (the same initial weights, loaded into each run), on the same
data (garden's datasets and collate), with the same batch size, AdamW (lr, weight decay 0.01),
linear schedule, gradient clipping at 1.0, precision (autocast bf16, or fp32) and torch threads.

* ``garden``: :func:`garden.runs.loops.train` itself (the body of ``python -m garden ... mode=train``
  after start-up), with ``trainer.eval=false``; its backend is rebuilt per round and loaded
  with the shared initial weights.
* ``Trainer``: ``transformers.Trainer`` with ``max_steps``, no saving, no evaluation, no
  logging integrations; the model computes its own loss from ``labels``.

Samples/s is measured the same way for both: the time between the start of step ``warmup``
and the start of the last step (garden: a wrapper on ``backend.train_step``; Trainer: a
``TrainerCallback.on_step_begin``), so it covers data loading, forward, backward, clipping and
the optimizer step, and leaves out start-up, the first (slow) steps, evaluation and saving.
The two alternate round by round; medians are compared.

Goal: garden >= 1.0x Trainer at the same precision. Then garden trains ViT-tiny to the end of
its recipe in fp32 and in bf16 and reports the gain and the held-out accuracy of each.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (add_save_options, bf16_path, cpu_flags, header, load, machine_record, median,  # noqa: E402
                    save, silenced, table, verdict)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

#: name:variant -> (batch size, timed steps)
SIZES = {"vit:tiny": (16, 40), "vit:base": (4, 3), "bert:tiny": (16, 40), "bert:base": (16, 8)}
WARMUP = 2
LR = 5e-4


def compose_run(model: str, variant: str, batch: int, steps: int, precision: str, extra: list[str] = ()):
    from garden.config import compose

    return compose([f"model={model}", "task=classify", "weights=random", f"model.variant={variant}",
                    f"data.batch_size={batch}", f"trainer.max_steps={steps}", f"trainer.precision={precision}",
                    "trainer.eval=false", f"trainer.lr={LR}", "trainer.warmup_steps=0", "data.eval_limit=8",
                    *extra])


def garden_steps(prepared, initial: dict, out: Path, precision: str) -> list[float]:
    """Run garden's train() once from ``initial``; the start time of every step."""
    from garden.backends import select_backend
    from garden.runs.loops import train

    prepared.cfg.trainer.precision = precision
    with silenced():
        backend = select_backend(prepared.cfg, prepared)
    backend.model.load_state_dict(initial)
    starts: list[float] = []
    step = backend.train_step

    def timed_step(batch, *args, **kwargs):
        starts.append(time.perf_counter())
        return step(batch, *args, **kwargs)

    backend.train_step = timed_step
    out.mkdir(parents=True, exist_ok=True)
    with silenced():
        train(prepared, backend, out)
    backend.close()
    return starts


def trainer_steps(prepared, initial: dict, out: Path, precision: str, batch: int, steps: int) -> list[float]:
    """Run transformers' Trainer once from ``initial``; the start time of every step."""
    import torch
    from transformers import Trainer, TrainerCallback, TrainingArguments

    model = prepared.family.build(prepared.spec)
    model.load_state_dict(initial)
    starts: list[float] = []

    class Clock(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            starts.append(time.perf_counter())

    args = TrainingArguments(
        output_dir=str(out), per_device_train_batch_size=batch, max_steps=steps, learning_rate=LR,
        weight_decay=0.01, lr_scheduler_type="linear", warmup_steps=0, max_grad_norm=1.0, optim="adamw_torch",
        bf16=precision == "bf16", use_cpu=True, save_strategy="no", eval_strategy="no", report_to=[],
        logging_strategy="no", disable_tqdm=True, dataloader_num_workers=0, seed=prepared.cfg.seed,
    )
    threads = torch.get_num_threads()
    with silenced():
        Trainer(model=model, args=args, train_dataset=prepared.data.train, data_collator=prepared.data.collate,
                callbacks=[Clock()]).train()
    torch.set_num_threads(threads)  # in case accelerate touched it
    return starts


def rate(starts: list[float], batch: int) -> float:
    timed = starts[WARMUP:]
    return batch * (len(timed) - 1) / (timed[-1] - timed[0])


def bench_one(name: str, batch: int, steps: int, repeats: int, precisions: tuple[str, ...]) -> dict:
    import torch

    model, variant = name.split(":")
    total = steps + WARMUP + 1
    cfg = compose_run(model, variant, batch, total, "fp32")
    from garden.runs import prepare

    with silenced():
        prepared = prepare(cfg)
        initial = copy.deepcopy(prepared.family.build(prepared.spec).state_dict())
    first = prepared.data.collate([prepared.data.train[i] for i in range(batch)])
    size = "x".join(map(str, first["pixel_values"].shape[1:])) + " pixels" if "pixel_values" in first \
        else f"{first['input_ids'].shape[1]} tokens (first batch, padded to longest)"
    params = sum(v.numel() for v in initial.values())
    rates: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(repeats):
            for precision in precisions:
                sides = [("garden", lambda p=precision: garden_steps(prepared, initial, Path(tmp) / "g", p)),
                         ("Trainer", lambda p=precision: trainer_steps(prepared, initial, Path(tmp) / "t", p,
                                                                       batch, total))]
                for side, fn in (sides if r % 2 == 0 else sides[::-1]):
                    rates.setdefault(f"{side} {precision}", []).append(rate(fn(), batch))
    return {"name": name, "params": params, "batch": batch, "steps": steps, "size": size, "rates": rates,
            "threads": torch.get_num_threads()}


def accuracy_run(precision: str, quick: bool) -> tuple[float, float, float]:
    """garden's ViT-tiny recipe to the end at ``precision``: (seconds, train samples/s, accuracy)."""
    from garden.runs import run

    overrides = ["model=vit", "task=classify", "model.variant=tiny", "weights=random",
                 f"trainer.precision={precision}", "trainer.eval=false"]
    if quick:
        overrides += ["trainer.epochs=1"]
    with tempfile.TemporaryDirectory() as tmp, silenced():
        start = time.perf_counter()
        metrics = run(overrides, Path(tmp) / "run")
        seconds = time.perf_counter() - start
    return seconds, metrics["train_samples_per_second"], metrics["eval"]["accuracy"]


def report(record: dict) -> str:
    """The rates, ratios and accuracy runs of a saved run, as markdown."""
    rows, ratios = [], []
    for r in record["models"]:
        rates = r["rates"]
        for precision in ("fp32", "bf16"):
            if f"garden {precision}" not in rates:
                continue
            g, t = rates[f"garden {precision}"], rates[f"Trainer {precision}"]
            ratios.append(median(g) / median(t))
            rows.append([r["name"], f"{r['params'] / 1e6:.1f}M", str(r["batch"]), precision,
                         " ".join(f"{x:.1f}" for x in g), " ".join(f"{x:.1f}" for x in t),
                         f"{median(g) / median(t):.3f}"])
    inputs = "; ".join(f"{r['name']} {r['size']}" for r in record["models"])
    lines = [f"Samples/s per round (rounds alternate which side runs first), {record['machine'].get('threads')} "
             f"threads; inputs: {inputs}.", "",
             table(rows, ["model", "params", "batch", "precision", "garden samples/s", "Trainer samples/s",
                          "garden ÷ Trainer (medians)"]), ""]
    if ratios:
        lines.append(f"* garden ≥ 1.0× Trainer at the same precision (worst {min(ratios):.3f}): "
                     f"{verdict(min(ratios) >= 1.0)}.")
    for note in record.get("notes", []):
        lines.append(f"* {note}")
    if record.get("accuracy"):
        acc = record["accuracy"]
        lines += ["", f"bf16's effect on the final metric: garden's ViT-tiny recipe ({acc['length']}, scikit-learn "
                      "digits, held-out accuracy), one run per precision:", "",
                  table([[a["precision"], f"{a['seconds']:.1f} s", f"{a['samples_per_second']:.1f}",
                          f"{a['accuracy']:.4f}"] for a in acc["runs"]],
                        ["precision", "run wall time", "train samples/s", "eval accuracy"])]
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true",
                   help="ViT tiny, a few steps, one round, 1-epoch accuracy runs (saves nothing)")
    p.add_argument("--models", default=None, help="comma list of name:variant (default vit:tiny,vit:base)")
    p.add_argument("--repeats", type=int, default=None, help="rounds (default 2, quick 1)")
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--no-accuracy", action="store_true", help="skip the fp32-vs-bf16 accuracy runs")
    p.add_argument("--bf16", choices=("auto", "always", "never"), default="auto",
                   help="bf16 rounds: auto runs them only where the CPU has a bf16 path (AMX/AVX512-BF16)")
    add_save_options(p)
    args = p.parse_args()
    repeats = args.repeats or (1 if args.quick else 2)
    wanted = args.models.split(",") if args.models else (["vit:tiny"] if args.quick else ["vit:tiny", "vit:base"])

    import torch
    import transformers  # noqa: F401

    torch.set_num_threads(args.threads)
    header("garden training throughput vs transformers' Trainer", threads=args.threads)
    record = {"script": "training", "command": "python bench/" + " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
              "machine": machine_record(threads=args.threads), "settings": {"repeats": repeats, "lr": LR},
              "models": [], "notes": []}
    fast_bf16 = bf16_path(cpu_flags())
    bf16 = args.bf16 == "always" or (args.bf16 == "auto" and fast_bf16)
    precisions = ("fp32", "bf16") if bf16 else ("fp32",)
    if not bf16:
        note = ("bf16 rounds skipped: this CPU has no bf16 path (no AMX or AVX512-BF16), where bf16 autocast "
                "runs several times slower than fp32 (`--bf16 always` runs them anyway)")
        record["notes"].append(note)
        print(f"note: {note}", flush=True)
    for name in wanted:
        batch, steps = SIZES.get(name, (8, 6))
        if args.quick:
            steps = min(steps, 6)
        print(f"\n## {name}: batch {batch}, {steps} timed steps after {WARMUP} warm-up, {repeats} rounds "
              f"(load {load()})", flush=True)
        r = bench_one(name, batch, steps, repeats, precisions)
        record["models"].append(r)
        print(f"params {r['params'] / 1e6:.1f}M · input {r['size']} · AdamW lr {LR} wd 0.01, linear, clip 1.0")
        print(table([[k, " ".join(f"{x:.1f}" for x in v), f"{median(v):.1f}"] for k, v in r["rates"].items()],
                    ["loop", "samples/s per round", "median"]), flush=True)

    if not args.no_accuracy:
        length = "1 epoch (quick)" if args.quick else "10 epochs"
        print(f"\n## bf16's effect on the final metric: garden's ViT-tiny recipe ({length})", flush=True)
        runs = []
        for precision in precisions:
            seconds, sps, acc = accuracy_run(precision, args.quick)
            runs.append({"precision": precision, "seconds": seconds, "samples_per_second": sps, "accuracy": acc})
        record["accuracy"] = {"length": length, "runs": runs}
    save("training", record, args)
    print()
    print(report(record))
    print(f"\nload avg at end: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
