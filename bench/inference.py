"""Inference speed and agreement: garden fp32, garden auto, pipeline(), ONNX Runtime and OpenVINO.

    python bench/inference.py            # ViT-base, BERT-base, wav2vec2-base, T5-small; batch 1 and 8
    python bench/inference.py --quick    # ViT-tiny and BERT-tiny, batch 8, one round (saves nothing)
    python bench/inference.py --models vit:base --batches 8 --repeats 5

What is timed, per model and batch size, in this one process on the same inputs (the first
``--inputs`` examples of the model's default held-out data, random-init weights of the
registry's config):

* ``garden fp32``: :func:`garden.runs.loops.infer` (the body of ``python -m garden ... mode=infer``
  after start-up: garden's loader, ``backend.forward``, ``task.predict``, predictions.jsonl) with
  ``infer.precision=fp32``: eager torch, what garden ran on CPUs without a bf16 path before the
  precision plan. Every ratio is against it.
* ``hand loop fp32`` (classification): ``model(**inputs).logits.argmax(-1)`` in ``inference_mode``
  over the same pre-collated batches, to show the cost of garden's loop itself.
* ``garden int8``: ``infer.precision=int8-dynamic`` unchecked, where auto's plan is not int8 (it
  fell back, or the CPU has a bf16 path): the quantised path's speed and agreement on their own.
* ``garden auto``: the same loop under the plan ``infer.precision=auto`` chooses on this machine
  for a run this short (garden.backends.plans: bf16 with AMX/AVX512-BF16, dynamic int8 on AVX2
  CPUs, ...). A quantised plan is checked against fp32 on each run's first batches; that check
  is a one-off cost per run (reported apart, as seconds per run) and the timed rounds run the
  plan without it.
* ``auto +compile``: auto's plan with ``+compile`` (``torch.compile``, inductor, weights frozen),
  what a long run on a GPU gets and what ``infer.precision=<plan>+compile`` asks for elsewhere:
  its warm-up is paid once per process (reported apart) and the timed rounds reuse the compiled
  model. It is what decides whether auto compiles on a CPU.
* ``pipeline()``: transformers' pipeline as users call it (fp32, its own preprocessing of the raw
  images/texts each call), same batch size.
* ``ONNX Runtime`` / ``OpenVINO``: garden's loop with ``backend=onnxruntime`` / ``backend=openvino``
  on the model exported by ``python -m garden export`` (fp32; export time reported apart).

Beside each speed: top-1 agreement with ``garden fp32`` over all inputs (the predicted label, or
the transcript / generated text for ASR and seq2seq). On random-init weights logits are near
ties, so agreement there is a harsh test that says little about accuracy. For that, a full run
first trains garden's own recipes' tiny checkpoints (``TRAINED``: ViT on the digits, BERT on the
reviews; the runs whose held-out accuracy the plugins declare) and labels each one's whole
held-out split in fp32 and in int8-dynamic: accuracy of both, their agreement, and what a run's
own check (``infer.min_agreement``) said (``--trained no`` skips it).

Each round runs the loops in its own shuffled order, each after a 0.2 s pause, and medians of the
rounds are compared, so load from other users of the machine (and a runtime's threads still
spinning after its call) falls on all of them. bf16 loops run only where the CPU has
a bf16 path (``--bf16 always`` overrides). No new round or model starts after ``--budget`` minutes.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import copy
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (add_save_options, bf16_path, cpu_flags, header, interleave, load, machine_record,  # noqa: E402
                    median, save, silenced, spread, table, verdict)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

#: name:variant -> task
MODELS = {"vit:base": "classify", "bert:base": "classify", "wav2vec2:base": "asr", "t5:small": "text2text"}
QUICK = {"vit:tiny": "classify", "bert:tiny": "classify"}
#: garden's own recipes (each plugin's declared result, bench/results.py): their fine-tuned tiny
#: checkpoints judge the quantised plan's accuracy, which near-tied random-init logits cannot
TRAINED = {"vit:tiny": "classify", "bert:tiny": "classify"}
FP32 = "garden fp32"
COMPILED = "auto +compile"


def prepare_run(model: str, variant: str, task: str, n_inputs: int):
    from garden.config import compose
    from garden.runs import prepare

    cfg = compose([f"model={model}", f"task={task}", "mode=infer", "weights=random", f"model.variant={variant}",
                   f"data.eval_limit={n_inputs}"])
    with silenced():
        return prepare(cfg)


def garden_infer(prepared, backend, out: Path, precision: str, batch: int, check: bool = False) -> dict:
    """One call of garden's infer loop at ``precision`` and ``batch`` (the check only when asked)."""
    from garden.runs.loops import infer

    prepared.cfg.infer.precision = precision
    prepared.cfg.infer.check_batches = 2 if check else 0
    prepared.cfg.data.batch_size, prepared.cfg.data.eval_batch_size = batch, None
    with silenced():
        return infer(prepared, backend, out)


def answers(out: Path) -> list[str]:
    """Each input's top answer from predictions.jsonl: a label, a transcript or a generated text."""
    rows = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
    return [str(r["predictions"][0]["label"] if "predictions" in r else r.get("transcript", r.get("output")))
            for r in rows]


def model_kwargs(task, batch: dict) -> dict:
    """The tensors a classification model is called with (texts: ids and masks; images: pixels)."""
    return task.model_kwargs(batch) if hasattr(task, "model_kwargs") else {"pixel_values": batch["pixel_values"]}


def hand_loop(model, batches: list[dict], labels):
    import torch

    def run() -> list[str]:
        preds = []
        with torch.inference_mode():
            for inputs in batches:
                preds += model(**inputs).logits.argmax(-1).tolist()
        return [labels[i] for i in preds]

    return run


def pipeline_runner(prepared, model, batch: int):
    """transformers' pipeline for classification (raw images or texts); None for other tasks."""
    from transformers import pipeline

    data = prepared.data
    if prepared.task.name != "classify":
        return None, "pipeline() not run for this task here"
    if hasattr(data.eval, "items"):
        kind, raw = "image-classification", [image for image, _ in data.eval.items]
        extra = {"image_processor": prepared.preprocessor}
    else:
        kind, raw = "text-classification", [e["text"] for e in data.eval]
        extra = {"tokenizer": prepared.preprocessor}
    with silenced():
        pipe = pipeline(kind, model=model, device="cpu", **extra)

    def run() -> list[str]:
        with silenced():
            return [r["label"] if isinstance(r, dict) else r[0]["label"] for r in pipe(raw, batch_size=batch)]

    return run, None


def train_recipe(name: str, task: str, cwd: Path) -> tuple[Path, float]:
    """The recipe's fine-tuned checkpoint and its training's wall time: the run a user types,
    ``python -m garden model=M task=T model.variant=V weights=random trainer.threads=1`` (one
    thread: bench/results.py's run, whose held-out accuracy the plugin declares)."""
    model, variant = name.split(":")
    argv = [sys.executable, "-m", "garden", f"model={model}", f"task={task}", f"model.variant={variant}",
            "weights=random", "trainer.threads=1"]
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=3600,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error"})
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv[3:])} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    [weights] = cwd.glob("outputs/*/*/model")
    return weights, time.perf_counter() - start


def accuracy(out: Path) -> float:
    """Share of predictions.jsonl's rows whose top label is the held-out label."""
    rows = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
    return sum(r["predictions"][0]["label"] == r["label"] for r in rows) / len(rows)


def judge_trained(models: dict[str, str], threads: int) -> list[dict]:
    """Each recipe's checkpoint, trained now (the trainings side by side, one thread each), then
    inferred over its whole held-out split in fp32 and in int8-dynamic: the accuracy of each, their
    top-1 agreement, and what a run's own agreement check (first 2 batches) said."""
    import torch

    from garden.backends import select_backend
    from garden.config import compose
    from garden.runs import prepare

    results = []
    with tempfile.TemporaryDirectory() as tmp, concurrent.futures.ThreadPoolExecutor(len(models)) as pool:
        folders = {name: Path(tmp, name.replace(":", "-")) for name in models}
        trainings = {name: pool.submit(train_recipe, name, task, folders[name].mkdir() or folders[name])
                     for name, task in models.items()}
        torch.set_num_threads(threads)
        for name, task in models.items():
            weights, seconds = trainings[name].result()
            model, variant = name.split(":")
            with silenced():
                prepared = prepare(compose([f"model={model}", f"task={task}", "mode=infer", f"weights={weights}",
                                            f"model.variant={variant}"]))
                backend = select_backend(prepared.cfg, prepared)
            outs = {key: folders[name] / key for key in ("fp32", "int8-dynamic", "checked", "auto")}
            for out in outs.values():
                out.mkdir()
            garden_infer(prepared, backend, outs["fp32"], "fp32", 32)
            garden_infer(prepared, backend, outs["int8-dynamic"], "int8-dynamic", 32)
            checked = garden_infer(prepared, backend, outs["checked"], "int8-dynamic", 32, check=True)
            auto = garden_infer(prepared, backend, outs["auto"], "auto", 32, check=True)
            fp32, int8 = answers(outs["fp32"]), answers(outs["int8-dynamic"])
            results.append({"name": name, "task": task, "params": backend.parameter_count(), "n": len(fp32),
                            "train_seconds": seconds, "dataset": prepared.data.source,
                            "accuracy": {"fp32": accuracy(outs["fp32"]),
                                         "int8-dynamic": accuracy(outs["int8-dynamic"])},
                            "agreement": sum(a == b for a, b in zip(fp32, int8)) / len(fp32),
                            "check": checked["plan"]["agreement"], "auto": auto["plan"]})
    return results


def export_for(prepared, fmt: str, folder: Path):
    """The model exported as ``fmt`` into ``folder`` and the backend that runs it, or the reason not."""
    from garden.backends import select_backend
    from garden.export import export

    cfg = copy.deepcopy(prepared.cfg)
    start = time.perf_counter()
    try:
        with silenced():
            export(cfg, fmt, folder, say=lambda _: None)
            runtime = dataclasses.replace(prepared, spec=dataclasses.replace(prepared.spec, weights_dir=folder))
            cfg.backend = "onnxruntime" if fmt == "onnx" else "openvino"
            runtime.cfg = cfg
            return select_backend(cfg, runtime), runtime, time.perf_counter() - start, None
    except Exception as err:  # noqa: BLE001  (a model the exporter cannot take is a row note, not a crash)
        return None, None, None, f"{type(err).__name__}: {str(err).splitlines()[0][:160]}"


def bench_one(name: str, task: str, n_inputs: int, batches: list[int], repeats: int, threads: int, bf16: bool,
              deadline: float, note) -> dict:
    import torch

    from garden.backends import select_backend
    from garden.runs.data import loader
    from garden.runs.loops import inference_plan

    model_name, variant = name.split(":")
    torch.set_num_threads(threads)
    prepared = prepare_run(model_name, variant, task, n_inputs)
    with silenced():
        backend = select_backend(prepared.cfg, prepared)
    model = backend.model.eval()
    params = sum(p.numel() for p in model.parameters())
    result = {"name": name, "task": task, "params": params, "n": len(prepared.data.eval), "cells": [],
              "notes": []}

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        runtimes = {}
        for fmt, label in (("onnx", "ONNX Runtime"), ("openvino", "OpenVINO")):
            rt_backend, runtime, seconds, why = export_for(prepared, fmt, tmp / f"export-{fmt}")
            if why:
                result["notes"].append(f"{label}: not run, export refused: {why}")
            else:
                runtimes[label] = (rt_backend, runtime)
                result[f"{fmt}_export_seconds"] = seconds

        for batch in batches:
            if result["cells"] and time.monotonic() > deadline:
                note(f"{name} batch {batch} skipped: the budget was spent")
                continue
            outs = {}

            def folder(key: str) -> Path:
                outs[key] = tmp / f"{batch}-{key.replace(' ', '_')}"
                outs[key].mkdir(exist_ok=True)
                return outs[key]

            # the plan auto picks, judged once with its agreement check, as a user's run does
            start = time.perf_counter()
            auto = garden_infer(prepared, backend, folder("auto-checked"), "auto", batch, check=True)
            plan = auto["plan"]
            chosen = plan["chosen"]
            checked_seconds = time.perf_counter() - start
            fns = {FP32: lambda b=batch: garden_infer(prepared, backend, folder(FP32), "fp32", b),
                   "garden auto": lambda b=batch, c=chosen: garden_infer(prepared, backend, folder("garden auto"), c, b)}
            if task == "classify":
                collated = [model_kwargs(prepared.task, x) for x in loader(
                    prepared.data.eval, prepared.data.collate, batch, shuffle=False, seed=prepared.cfg.seed)]
                fns["hand loop fp32"] = hand_loop(model, collated, prepared.data.labels)
            pipe, why = pipeline_runner(prepared, model, batch)
            if pipe is not None:
                fns["pipeline()"] = pipe
            elif batch == batches[0]:
                result["notes"].append(why)
            if backend.can_compile and not chosen.endswith("+compile"):
                fns[COMPILED] = lambda b=batch, c=f"{chosen}+compile": garden_infer(prepared, backend, folder(COMPILED),
                                                                                    c, b)
            if not chosen.startswith("int8-dynamic"):  # e.g. fell back: show the quantised path's speed anyway
                fns["garden int8"] = lambda b=batch: garden_infer(prepared, backend, folder("garden int8"),
                                                                  "int8-dynamic", b)
            if bf16 and chosen != "bf16":
                fns["garden bf16"] = lambda b=batch: garden_infer(prepared, backend, folder("garden bf16"), "bf16", b)
            for label, (rt_backend, runtime) in runtimes.items():
                fns[label] = (lambda b=batch, r=runtime, k=rt_backend, lab=label:
                              garden_infer(r, k, folder(lab), "fp32", b))
            returned, warm_up = {}, {}
            for k, fn in fns.items():  # warm-up: caches, kernels, compilation, and each loop's answers
                started = time.perf_counter()
                returned[k] = fn()
                warm_up[k] = time.perf_counter() - started
            times: dict[str, list[float]] = {k: [] for k in fns}
            for r in range(repeats):
                if r and time.monotonic() > deadline:
                    break
                for k, v in interleave(fns, 1, start=r).items():
                    times[k] += v
            reference = answers(outs[FP32])
            agreement = {}
            for key in fns:
                got = returned[key] if key in ("hand loop fp32", "pipeline()") else answers(outs[key])
                agreement[key] = sum(a == b for a, b in zip(got, reference)) / len(reference)
            result["cells"].append({"batch": batch, "times": times, "agreement": agreement, "plan": plan,
                                    "warm_up_seconds": warm_up,
                                    "checked_run_seconds": checked_seconds})
            rate = {k: result["n"] / median(v) for k, v in times.items()}
            print(f"{name} batch {batch}: plan {chosen} ({plan['reason']})", flush=True)
            print(table([[k, spread(v), f"{rate[k]:.2f}", f"{rate[k] / rate[FP32]:.2f}", f"{agreement[k]:.1%}"]
                         for k, v in times.items()],
                        ["loop", f"time for {result['n']} inputs", "inputs/s", "÷ garden fp32", "top-1 = fp32"]),
                  flush=True)
    return result


def report_trained(trained: list[dict]) -> list[str]:
    """The trained-checkpoint table: fp32 against int8-dynamic accuracy, as markdown lines."""
    if not trained:
        return []
    rows, verdicts = [], []
    for t in trained:
        fp32, int8 = t["accuracy"]["fp32"], t["accuracy"]["int8-dynamic"]
        check = t["check"]
        rows.append([t["name"], t["task"], f"{t['params'] / 1e6:.2f}M", f"{t['train_seconds']:.0f} s", str(t["n"]),
                     f"{fp32:.2%}", f"{int8:.2%}", f"{(int8 - fp32) * 100:+.2f}", f"{t['agreement']:.1%}",
                     f"{check['top1']:.0%} of {check['compared']}, max logit error {check['max_logit_error']:.3g}",
                     t["auto"]["chosen"]])
        verdicts.append(f"* {t['name']} ({t['dataset']}): int8-dynamic's accuracy within 0.5 points of fp32's: "
                        f"{verdict(abs(int8 - fp32) <= 0.005)}; top-1 agreement ≥ 99 %: {verdict(t['agreement'] >= 0.99)}.")
    return ["", "**On trained models.** Random-init logits are near ties, so the table above cannot say what "
            "int8 does to a model that has learned. Here garden's own recipes train their tiny checkpoints in "
            "this run (`python -m garden model=M task=classify model.variant=tiny weights=random "
            "trainer.threads=1`, the plugin's declared result), then garden's infer loop labels the whole "
            "held-out split in fp32 and in int8-dynamic (`infer.precision=int8-dynamic`, unchecked), and "
            "once more with the run's own agreement check. 'auto here' is what auto picks for the checkpoint "
            "(under 10 M parameters: fp32; the base models above get int8-dynamic).", "",
            table(rows, ["model", "task", "params", "trained in", "held-out", "fp32 accuracy", "int8 accuracy",
                         "Δ points", "int8 top-1 = fp32", "run's check", "auto here"]), "", *verdicts]


def summary(record: dict) -> str:
    """The README's lines: what auto ran on this CPU and its speed against fp32 and ``pipeline()``."""
    rows = []
    for m in record["models"]:
        for cell in m["cells"]:
            rate = {k: m["n"] / median(v) for k, v in cell["times"].items()}
            plan = cell["plan"]
            rows.append([m["name"], m["task"], str(cell["batch"]),
                         plan["chosen"] + (" (int8 fell back)" if plan["fell_back"] else ""),
                         f"{rate['garden auto'] / rate[FP32]:.2f}×",
                         f"{rate['garden auto'] / rate['pipeline()']:.2f}×" if "pipeline()" in rate else "–",
                         f"{cell['agreement']['garden auto']:.0%}"])
    lines = [table(rows, ["model", "task", "batch", "auto plan", "÷ eager fp32", "÷ pipeline()", "top-1 = fp32"])]
    if any(r[3].startswith("fp32") for r in rows):
        lines += ["", "Where auto's plan is fp32 it runs the eager fp32 loop itself: its ratio there is the rounds' "
                  "noise, not a cost."]
    trained = record.get("trained", [])
    if trained:
        lines += ["", "On garden's own trained checkpoints (the recipes' tiny ViT and BERT), int8-dynamic's held-out "
                  "accuracy minus fp32's: " + ", ".join(
                      f"{t['name']} {(t['accuracy']['int8-dynamic'] - t['accuracy']['fp32']) * 100:+.2f} points "
                      f"({t['accuracy']['fp32']:.1%} in fp32)" for t in trained) + "."]
    return "\n".join(lines)


def report(record: dict) -> str:
    """Speed beside agreement for every model, batch size and loop of a saved run, as markdown."""
    rows, autos, pipes, compiled = [], [], [], []
    loops = ["hand loop fp32", "garden auto", COMPILED, "pipeline()", "ONNX Runtime", "OpenVINO", "garden int8",
             "garden bf16"]
    for m in record["models"]:
        for cell in m["cells"]:
            rate = {k: m["n"] / median(v) for k, v in cell["times"].items()}
            base = rate[FP32]
            fmt = lambda k: (f"{rate[k] / base:.2f}× · {cell['agreement'][k]:.0%}"  # noqa: E731
                             if k in rate else "–")
            plan = cell["plan"]
            agreed = plan.get("agreement")
            checked = (f"{agreed['top1']:.0%} of {agreed['compared']}" + (", fell back" if plan["fell_back"] else "")
                       if agreed else "–")
            rows.append([m["name"], m["task"], f"{m['params'] / 1e6:.{0 if m['params'] >= 1e7 else 1}f}M", str(cell["batch"]),
                         f"{base:.2f}", plan["chosen"], checked, *(fmt(k) for k in loops),
                         f"{rate['garden auto'] / rate['pipeline()']:.2f}" if "pipeline()" in rate else "–"])
            if plan["chosen"] != "fp32":  # a plan of fp32 runs garden fp32's own loop: its ratio is noise
                autos.append(rate["garden auto"] / base)
            if "pipeline()" in rate:
                pipes.append((m["name"], cell["batch"], rate["garden auto"] / rate["pipeline()"],
                              rate[FP32] / rate["pipeline()"]))
            if COMPILED in rate:
                compiled.append((m["name"], cell["batch"], rate[COMPILED] / rate["garden auto"],
                                 cell.get("warm_up_seconds", {}).get(COMPILED)))
    for loop in (COMPILED, "garden bf16", "garden int8"):  # a loop that ran nowhere: leave its column out
        i = 7 + loops.index(loop)
        if all(r[i] == "–" for r in rows):
            loops.remove(loop)
            rows = [r[:i] + r[i + 1:] for r in rows]
    lines = [f"Inputs/s of garden fp32 (eager torch), then each loop as **speed ÷ garden fp32 · top-1 agreement "
             f"with garden fp32** over the same inputs (the first {record['models'][0]['n'] if record['models'] else 0} "
             "of each model's held-out data, random-init weights); medians of the interleaved rounds. "
             "'auto plan' is what `infer.precision=auto` chose here, 'checked' its agreement check on the run's "
             "first batches, and 'auto +compile' the same plan `torch.compile`d (warm-up paid once, below).", "",
             table(rows, ["model", "task", "params", "batch", "garden fp32 inputs/s", "auto plan", "checked",
                          *loops, "auto ÷ pipeline()"]), ""]
    if autos:
        lines.append(f"* garden auto ÷ garden fp32, where auto's plan is not fp32 itself: {min(autos):.2f}–{max(autos):.2f} "
                     f"(never slower than eager fp32: {verdict(min(autos) >= 0.97)}, 3% for noise).")
    goal, cpus = (2.0, "AMX/AVX512-BF16 CPUs") if bf16_path(record["machine"]["flags"]) else (1.6, "AVX2-only CPUs")
    for name, batch, auto, same in pipes:
        lines.append(f"* {name} batch {batch}: garden auto ÷ pipeline() {auto:.2f} (target ≥ {goal} on {cpus}: "
                     f"{verdict(auto >= goal)}); at the same precision, garden fp32 ÷ pipeline() {same:.2f}.")
    for name, batch, gain, warm in compiled:
        lines.append(f"* {name} batch {batch}: auto's plan +compile runs at {gain:.2f}× the uncompiled plan's speed, "
                     f"after a {warm:.0f} s warm-up.")
    for m in record["models"]:
        cost = [f"batch {c['batch']}: {c['checked_run_seconds']:.1f} s" for c in m["cells"]
                if c["plan"].get("agreement")]
        if cost:
            lines.append(f"* {m['name']}: a whole run with the agreement check (first 2 batches also in fp32) took "
                         + ", ".join(cost) + ".")
        exports = [f"{f} {m[f + '_export_seconds']:.0f} s" for f in ("onnx", "openvino") if f + "_export_seconds" in m]
        if exports:
            lines.append(f"* {m['name']}: export (with its check against torch) took " + ", ".join(exports) + ".")
        lines += [f"* {m['name']}: {n}" for n in m["notes"]]
    lines += [f"* {note}" for note in record.get("notes", [])]
    lines += report_trained(record.get("trained", []))
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="tiny models, batch 8, one round (saves nothing)")
    p.add_argument("--models", default=None, help=f"comma list of name:variant (default {','.join(MODELS)})")
    p.add_argument("--batches", default=None, help="comma list of batch sizes (default 1,8; quick 8)")
    p.add_argument("--inputs", type=int, default=16, help="held-out examples per model (default 16)")
    p.add_argument("--repeats", type=int, default=None, help="interleaved rounds after the warm-up (default 2, quick 1)")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="torch threads (default: all cores)")
    p.add_argument("--budget", type=float, default=20, help="minutes: no new round or model starts after it")
    p.add_argument("--trained", choices=("yes", "no"), default=None,
                   help="train garden's recipes' tiny checkpoints and judge int8 on them (default: yes, quick: no)")
    p.add_argument("--bf16", choices=("auto", "always", "never"), default="auto",
                   help="a garden bf16 loop: auto adds it only where the CPU has a bf16 path (AMX/AVX512-BF16)")
    add_save_options(p)
    args = p.parse_args()
    repeats = args.repeats or (1 if args.quick else 2)
    batches = [int(b) for b in (args.batches or ("8" if args.quick else "1,8")).split(",")]
    choice = QUICK if args.quick else MODELS
    wanted = {m: {**MODELS, **QUICK}.get(m, "classify") for m in args.models.split(",")} if args.models else choice
    deadline = time.monotonic() + args.budget * 60

    import torch
    import transformers  # noqa: F401  (for the machine line)

    torch.set_num_threads(args.threads)
    header("garden inference: fp32, auto, pipeline(), ONNX Runtime, OpenVINO", threads=args.threads)
    record = {"script": "inference", "command": "python bench/" + " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
              "machine": machine_record(threads=args.threads),
              "settings": {"repeats": repeats, "batches": batches, "inputs": args.inputs,
                           "budget_minutes": args.budget, "bf16": args.bf16},
              "models": [], "notes": []}

    def note(text: str) -> None:
        record["notes"].append(text)
        print(f"note: {text}", flush=True)

    bf16 = args.bf16 == "always" or (args.bf16 == "auto" and bf16_path(cpu_flags()))
    if not bf16:
        note("no garden bf16 loop: this CPU has no bf16 path (no AMX or AVX512-BF16), where bf16 autocast runs "
             "several times slower than fp32 and auto does not pick it (`--bf16 always` adds it anyway)")
    from garden import registry

    have = set(registry.entries())
    if (args.trained or ("no" if args.quick or args.models else "yes")) == "yes":
        recipes = {name: task for name, task in TRAINED.items() if name.split(":")[0] in have}
        print(f"\n## trained checkpoints: {', '.join(recipes)} (garden's recipes, one thread each, side by side)",
              flush=True)
        record["trained"] = judge_trained(recipes, args.threads)
        print("\n".join(report_trained(record["trained"])), flush=True)
    for name, task in wanted.items():
        if name.split(":")[0] not in have:
            note(f"{name} skipped: plugin not installed (python -m garden list)")
            continue
        if record["models"] and time.monotonic() > deadline:
            note(f"{name} skipped: the {args.budget:g}-minute budget was spent (--budget)")
            continue
        print(f"\n## {name} ({task}): {args.inputs} inputs, batches {batches}, {repeats} rounds (load {load()})",
              flush=True)
        record["models"].append(bench_one(name, task, args.inputs, batches, repeats, args.threads, bf16, deadline,
                                          note))
    save("inference", record, args)
    print()
    print(report(record))
    print(f"\nload avg at end: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
