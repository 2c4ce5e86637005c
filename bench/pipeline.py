"""Two-stage pipeline training throughput against one process, at one thread per process.

    python bench/pipeline.py            # ViT-base (random init, 224x224), batch 32, 8 micro-batches of 4
    python bench/pipeline.py --quick    # ViT-tiny: a smoke run of the same machinery (saves nothing)
    python bench/pipeline.py --image-size 112 --batch 16   # micro-batches too small to pay (see below)

Both sides run garden's own training loop (:func:`garden.runs.loops.train`) on the same config:

* ``1 process``: ``backend=local`` with one torch thread (OMP_NUM_THREADS=1, trainer.threads=1);
* ``2-stage pipeline``: ``torchrun --nproc-per-node 2`` with ``backend=pipeline
  ipu.ipus_per_replica=2 ipu.micro_batches=8`` (1F1B, gloo), one thread per process, stages
  planned by garden's planner (ipu.cost=flops).

Each run is a fresh subprocess (this file re-run with ``--worker``); a wrapper on
``backend.train_step`` records when each step starts, and samples/s is taken between the start
of the first step after ``--warmup`` and the start of the last, so start-up, the model build,
the planner and the final evaluation/save are left out. The two sides alternate round by round
and medians are compared.

Target: pipeline ÷ one process >= 1.6 (the bubble of 2 stages x 8 micro-batches allows 1/(1 +
1/8) x 2 = 1.78 at equal efficiency per sample). A micro-batch must still be big enough to keep
a core busy: 8 micro-batches of 2 images at 112 px (100 token rows each) cost ~1.5x more per
sample than the whole batch of 16, which held the ratio near 1.1x; 4 images at 224 px (788
rows) cost no more per sample than 32 at once. Two processes on a two-core machine need both
cores: other users' load shows directly in the ratio, so the load average is printed with every
round.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (add_save_options, header, load, loadavg, machine_record, median, save, table,  # noqa: E402
                    verdict)


def worker(args: argparse.Namespace) -> None:
    """One run of garden's train() (a torchrun rank or the single process): prints step start times."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    import torch

    from garden.backends import select_backend
    from garden.config import compose
    from garden.runs import prepare
    from garden.runs.loops import train

    overrides = json.loads(args.worker)
    cfg = compose(overrides)
    starts: list[float] = []
    cpu: list[float] = []
    with open(os.devnull, "w") as null, contextlib.redirect_stdout(null), contextlib.redirect_stderr(null), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.set_num_threads(1)
        prepared = prepare(cfg)
        backend = select_backend(cfg, prepared)
        step = backend.train_step

        def timed_step(batch, *a, **k):
            starts.append(time.perf_counter())
            cpu.append(time.process_time())
            return step(batch, *a, **k)

        backend.train_step = timed_step
        plan = getattr(backend, "stage_plan", None)
        with tempfile.TemporaryDirectory() as tmp:
            try:
                train(prepared, backend, Path(tmp))
            finally:
                backend.close()
    layout = list(plan.plan.layers_per_ipu) if plan is not None else None
    ratio = plan.plan.bottleneck_ratio if plan is not None else None
    print("RESULT " + json.dumps({"rank": int(os.environ.get("RANK", 0)), "starts": starts, "cpu": cpu, "layout": layout,
                                  "bottleneck_ratio": ratio, "threads": torch.get_num_threads()}), flush=True)


def launch(overrides: list[str], processes: int) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    me = [str(Path(__file__).resolve()), "--worker", json.dumps(overrides)]
    if processes == 1:
        argv = [sys.executable, *me]
    else:
        argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={processes}", *me]
    with tempfile.TemporaryDirectory() as cwd:
        proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    results = [json.loads(line.split("RESULT ", 1)[1]) for line in proc.stdout.splitlines() if "RESULT " in line]
    if proc.returncode != 0 or not results:
        raise SystemExit(f"{' '.join(argv[:6])} ... failed ({proc.returncode}):\n{(proc.stdout + proc.stderr)[-3000:]}")
    last = max(results, key=lambda r: r["rank"])  # the last stage: its step cadence is the pipeline's
    last["busiest_cpu"] = max((r["cpu"] for r in results), key=lambda c: c[-1] - c[0])
    return last


def rate(starts: list[float], warmup: int, batch: int) -> float:
    timed = starts[warmup:]
    return batch * (len(timed) - 1) / (timed[-1] - timed[0])


def report(record: dict) -> str:
    """The two sides' rates, the ratio and its bounds of a saved run, as markdown."""
    st = record["settings"]
    rates = {side: [r["samples_per_second"] for r in record["rounds"] if r["side"] == side] for side in SIDES}
    cpu = {side: [r["cpu_samples_per_second"] for r in record["rounds"] if r["side"] == side] for side in SIDES}
    speedup = median(rates["2-stage pipeline"]) / median(rates["1 process"])
    cpu_speedup = median(cpu["2-stage pipeline"]) / median(cpu["1 process"])
    bubble = 2 / (1 + 1 / st["micro_batches"])
    lines = [f"ViT-{st['variant']} (random init), {st['image_size']}×{st['image_size']} images, batch {st['batch']}, "
             f"{st['micro_batches']} micro-batches (1F1B), fp32, AdamW, one thread per process; {st['steps']} timed "
             f"steps after {st['warmup']} warm-up, {st['repeats']} rounds, sides alternating.", "",
             table([[k, " ".join(f"{x:.2f}" for x in v), f"{median(v):.2f}", f"{median(v) / st['batch']:.3f}"]
                    for k, v in rates.items()], ["side", "samples/s per round", "median samples/s", "steps/s"]),
             "",
             "Load average (1 min) before each round: "
             + ", ".join(f"{r['side']} {r['load_before'][0]:.1f}" for r in record["rounds"] if r["load_before"]) + ".",
             "",
             f"* **Pipeline ÷ one process: {speedup:.2f}×** (target ≥ 1.6×): {verdict(speedup >= 1.6)}.",
             f"* Planned `layers_per_ipu` {record['layout']} (FLOPs bottleneck ÷ ideal "
             f"{record['bottleneck_ratio']:.3f}); the bubble of 2 stages × {st['micro_batches']} micro-batches "
             f"allows {bubble:.2f}× at equal cost per sample.",
             f"* CPU-time estimate for an idle machine (one process's CPU seconds per step ÷ the busiest rank's; "
             f"leaves out the bubble, so an upper bound): {cpu_speedup:.2f}×."]
    return "\n".join(lines)


SIDES = ("1 process", "2-stage pipeline")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="ViT-tiny, few steps, one round: a smoke run (saves nothing)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--variant", default=None, help="ViT variant (default base, quick tiny)")
    p.add_argument("--image-size", type=int, default=224, help="input size for base (default 224)")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--micro-batches", type=int, default=8)
    p.add_argument("--steps", type=int, default=4, help="timed steps per run")
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--repeats", type=int, default=None, help="rounds (default 2, quick 1)")
    add_save_options(p)
    args = p.parse_args()
    if args.worker:
        worker(args)
        return 0
    variant = args.variant or ("tiny" if args.quick else "base")
    steps = args.steps
    repeats = args.repeats or (1 if args.quick else 2)
    total = args.warmup + steps + 1
    common = ["model=vit", "task=classify", "weights=random", f"model.variant={variant}", f"data.batch_size={args.batch}",
              f"trainer.max_steps={total}", "trainer.eval=false", "data.eval_limit=2", "data.limit=512",
              "trainer.threads=1", "trainer.precision=fp32", "trainer.warmup_steps=0"]
    if variant != "tiny":
        common.append(f"+model.options.config.image_size={args.image_size}")
    local = [*common, "backend=local"]
    piped = [*common, "backend=pipeline", "ipu.ipus_per_replica=2", f"ipu.micro_batches={args.micro_batches}",
             "ipu.cost=flops"]

    import torch  # noqa: F401  (for the machine line)

    header("2-stage pipeline vs one process, training, 1 thread per process", threads=1)
    size = args.image_size if variant != "tiny" else 32
    record = {"script": "pipeline", "command": "python bench/" + " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
              "machine": machine_record(threads=1),
              "settings": {"variant": variant, "image_size": size, "batch": args.batch,
                           "micro_batches": args.micro_batches, "steps": steps, "warmup": args.warmup,
                           "repeats": repeats},
              "rounds": [], "layout": None, "bottleneck_ratio": None}
    for r in range(repeats):
        order = [("1 process", local, 1), ("2-stage pipeline", piped, 2)]
        for name, overrides, procs in (order if r % 2 == 0 else order[::-1]):
            before = loadavg()
            result = launch(overrides, procs)
            sps = rate(result["starts"], args.warmup, args.batch)
            record["rounds"].append({"side": name, "round": r + 1, "samples_per_second": sps,
                                     "cpu_samples_per_second": rate(result["busiest_cpu"], args.warmup, args.batch),
                                     "load_before": before, "step_starts": result["starts"]})
            if result["layout"]:
                record["layout"], record["bottleneck_ratio"] = result["layout"], result["bottleneck_ratio"]
            print(f"round {r + 1} {name:17s} {sps:7.2f} samples/s (load avg before: {before})", flush=True)
    save("pipeline", record, args)
    print()
    print(report(record))
    print(f"load avg at end: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
