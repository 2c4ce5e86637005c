"""Inference throughput: garden's ``mode=infer`` loop against a hand-written loop and ``pipeline()``.

    python bench/inference.py            # ViT tiny/base, BERT tiny/base; at most --budget 15 minutes
    python bench/inference.py --quick    # tiny models, one round: a smoke run (saves nothing)
    python bench/inference.py --models vit:base --repeats 5

What is timed, per model (all in this one process, on the same model object and the same inputs):

* ``garden``: :func:`garden.runs.loops.infer` itself, the body of ``python -m garden ... mode=infer``
  after start-up (compose, prepare, building the model and backend are done once, untimed). It
  batches the held-out split with garden's loader, runs ``backend.forward`` (local backend:
  ``inference_mode`` + autocast), turns outputs into predictions with ``task.predict`` and
  writes predictions.jsonl / metrics.json. Its own console output goes to /dev/null.
* ``hand``: the loop a user would write over the *same pre-collated batches*:
  ``with torch.inference_mode(): model(**inputs).logits.argmax(-1)`` (bf16: inside one autocast).
* ``pipeline()``: transformers' pipeline as users call it (fp32, its own preprocessing of the
  raw images / texts each call), with the same batch size.

The loops alternate within each round (A B C, B C A, ...), and medians of the rounds are
compared, so load from other users of the machine falls on all of them. bf16 loops run only
where the CPU has a bf16 path (AMX or AVX512-BF16; ``--bf16 always`` overrides): elsewhere bf16
autocast is several times slower than fp32 (ViT-base 0.13x on an AVX2-only EPYC) and garden's
``infer.precision=auto`` does not pick it. No new round or model starts after ``--budget``
minutes.

Goals: garden >= 0.97x the hand loop at the same precision; garden at its default precision
against pipeline() (fp32), reported beside garden fp32 against pipeline() fp32; bf16 predictions
(top-1) agree with fp32 on >= 99% of the eval inputs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (add_save_options, bf16_path, cpu_flags, header, interleave, load, machine_record,  # noqa: E402
                    median, save, silenced, spread, table, verdict)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

#: name:variant -> (eval examples, batch size) for a full run; quick runs use fewer
SIZES = {
    "vit:tiny": (320, 32),
    "vit:base": (48, 16),
    "bert:tiny": (120, 32),
    "bert:base": (120, 32),
}


def installed() -> set[str]:
    from garden import registry

    return set(registry.entries())


def prepare_run(model: str, variant: str, n_eval: int, batch: int, precision: str):
    """Compose and prepare a garden infer run exactly as ``python -m garden`` does, minus Hydra's job."""
    from garden.backends import select_backend
    from garden.config import compose
    from garden.runs import prepare

    overrides = [f"model={model}", "task=classify", "mode=infer", "weights=random", f"model.variant={variant}",
                 f"data.eval_limit={n_eval}", f"data.batch_size={batch}", f"infer.precision={precision}"]
    cfg = compose(overrides)
    with silenced():
        prepared = prepare(cfg)
        backend = select_backend(cfg, prepared)
    return cfg, prepared, backend


def garden_infer(prepared, backend, out: Path, precision: str) -> dict:
    """One call of garden's infer loop at ``precision`` (``auto`` resolves as a user's run does)."""
    from garden.runs.loops import infer

    prepared.cfg.infer.precision = precision
    with silenced():
        result = infer(prepared, backend, out)
    return result


def predicted_labels(out: Path) -> list[str]:
    rows = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
    return [r["predictions"][0]["label"] for r in rows]


def hand_loop(model, batches: list[dict], names: tuple[str, ...], dtype, *, per_batch: bool = False):
    """The loop a user writes: one ``inference_mode`` + autocast around all batches (or, with
    ``per_batch``, around each batch as garden's backend does, which re-casts the weights each time)."""
    import torch

    def ctx():
        return torch.autocast("cpu", dtype=dtype) if dtype is not None else contextlib.nullcontext()

    def run() -> list[int]:
        preds = []
        with torch.inference_mode(), (contextlib.nullcontext() if per_batch else ctx()):
            for inputs in batches:
                with (ctx() if per_batch else contextlib.nullcontext()):
                    preds += model(**inputs).logits.argmax(-1).tolist()
        return preds

    return run


def pipeline_runner(kind: str, model, preprocessor, raw: list, batch: int):
    from transformers import pipeline

    with silenced():
        if kind == "vision":
            pipe = pipeline("image-classification", model=model, image_processor=preprocessor, device="cpu")
        else:
            pipe = pipeline("text-classification", model=model, tokenizer=preprocessor, device="cpu")

    def run():
        with silenced():
            return pipe(raw, batch_size=batch)

    return run


def bench_one(name: str, n_eval: int, batch: int, repeats: int, threads: int, bf16: bool,
              deadline: float) -> dict:
    """Time garden, the hand loop and pipeline() on ``name``, interleaved, until ``repeats`` rounds
    or ``deadline`` (at least one round after the warm-up)."""
    import torch

    model_name, variant = name.split(":")
    torch.set_num_threads(threads)
    cfg, prepared, backend = prepare_run(model_name, variant, n_eval, batch, "auto")
    from garden.runs.data import loader
    from garden.runs.loops import BF16_MIN_PARAMS, resolve_precision

    data, task = prepared.data, prepared.task
    model = backend.model.eval()
    params = sum(p.numel() for p in model.parameters())
    default = resolve_precision("auto", allow_bf16=task.bf16_inference and params >= BF16_MIN_PARAMS)
    batches = [{k: v for k, v in b.items() if k in task.model_inputs or k == "pixel_values"}
               if hasattr(task, "model_inputs") else {"pixel_values": b["pixel_values"]}
               for b in loader(data.eval, data.collate, batch, shuffle=False, seed=cfg.seed)]
    kind = "vision" if "pixel_values" in batches[0] else "text"
    if kind == "vision":
        raw = [image for image, _ in data.eval.items]
        size = "x".join(str(s) for s in batches[0]["pixel_values"].shape[1:]) + " pixels"
    else:
        raw = [e["text"] for e in data.eval]
        lengths = [b["input_ids"].shape[1] for b in batches]
        size = f"padded to longest in batch: {min(lengths)}-{max(lengths)} tokens (mean {sum(lengths) / len(lengths):.0f})"
    n = sum(len(next(iter(b.values()))) for b in batches)

    with tempfile.TemporaryDirectory() as tmp:
        outs = {p: Path(tmp) / p for p in ("bf16", "fp32")}
        for folder in outs.values():
            folder.mkdir()
        fns = {
            "garden fp32": lambda: garden_infer(prepared, backend, outs["fp32"], "fp32"),
            "hand fp32": hand_loop(model, batches, data.labels, None),
            "pipeline() fp32": pipeline_runner(kind, model, prepared.preprocessor, raw, batch),
        }
        if bf16:
            fns.update({
                "garden bf16": lambda: garden_infer(prepared, backend, outs["bf16"], "bf16"),
                "hand bf16": hand_loop(model, batches, data.labels, torch.bfloat16),
            })
        for fn in fns.values():  # warm-up: caches, oneDNN kernels, autocast weight casts
            fn()
        times: dict[str, list[float]] = {k: [] for k in fns}
        for r in range(repeats):
            if r and time.monotonic() > deadline:
                break
            for k, v in interleave(fns, 1, start=r).items():
                times[k] += v
        agree = None
        if bf16:
            bf16_labels, fp32_labels = predicted_labels(outs["bf16"]), predicted_labels(outs["fp32"])
            agree = sum(a == b for a, b in zip(bf16_labels, fp32_labels)) / len(fp32_labels)
    return {"name": name, "params": params, "n": n, "batch": batch, "size": size, "default": default,
            "times": times, "bf16_agreement": agree}


def report(record: dict) -> str:
    """The speed ratios of a saved run, as markdown: each loop against the same precision first."""
    rows, hand, same, notes = [], [], [], list(record.get("notes", []))
    for r in record["models"]:
        rate = {k: r["n"] / median(v) for k, v in r["times"].items()}
        bf16 = "garden bf16" in rate
        default = r["default"] if f"garden {r['default']}" in rate else "fp32"
        hand.append(rate["garden fp32"] / rate["hand fp32"])
        same.append(rate["garden fp32"] / rate["pipeline() fp32"])
        rows.append([r["name"], f"{r['params'] / 1e6:.1f}M", str(r["batch"]), str(len(r["times"]["garden fp32"])),
                     r["default"], f"{rate['garden ' + default]:.1f}",
                     f"{rate['garden fp32'] / rate['hand fp32']:.3f}",
                     f"{rate['garden fp32'] / rate['pipeline() fp32']:.2f}",
                     f"{rate['garden bf16'] / rate['pipeline() fp32']:.2f}" if bf16 else "not run",
                     f"{rate['garden bf16'] / rate['garden fp32']:.2f}" if bf16 else "not run",
                     f"{r['bf16_agreement']:.1%}" if bf16 else "not run"])
    lines = ["Inputs per second from the median of the interleaved rounds; random-init weights of the "
             "registry's configs, the held-out split of each model's default data.", "",
             table(rows, ["model", "params", "batch", "rounds", "garden auto picks", "garden auto inputs/s",
                          "garden ÷ hand loop (fp32)", "garden fp32 ÷ pipeline() fp32",
                          "garden bf16 ÷ pipeline() fp32", "bf16 ÷ fp32", "bf16 = fp32 top-1"]), ""]
    if hand:
        lines.append(f"* garden ≥ 0.97× the hand loop at the same precision (worst {min(hand):.3f}): "
                     f"{verdict(min(hand) >= 0.97)}.")
        lines.append(f"* garden fp32 ÷ pipeline() fp32, the same-precision ratio: {min(same):.2f}–{max(same):.2f}. "
                     "A ratio above 1 here comes from garden's loop, not from its precision.")
    lines += [f"* {note}" for note in notes]
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="tiny models, small inputs, one round (saves nothing)")
    p.add_argument("--models", default=None, help="comma list of name:variant (default: vit and bert, tiny and base)")
    p.add_argument("--repeats", type=int, default=None, help="interleaved rounds (default 3, quick 1)")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="torch threads (default: all cores)")
    p.add_argument("--budget", type=float, default=15, help="minutes: no new round or model starts after it (default 15)")
    p.add_argument("--bf16", choices=("auto", "always", "never"), default="auto",
                   help="bf16 loops: auto runs them only where the CPU has a bf16 path (AMX/AVX512-BF16)")
    add_save_options(p)
    args = p.parse_args()
    repeats = args.repeats or (1 if args.quick else 3)
    wanted = args.models.split(",") if args.models else (["vit:tiny", "bert:tiny"] if args.quick else list(SIZES))
    deadline = time.monotonic() + args.budget * 60

    import torch
    import transformers  # noqa: F401  (for the machine line)

    torch.set_num_threads(args.threads)
    header("garden inference throughput vs a hand-written loop and pipeline()", threads=args.threads)
    record = {"script": "inference", "command": "python bench/" + " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
              "machine": machine_record(threads=args.threads),
              "settings": {"repeats": repeats, "budget_minutes": args.budget, "bf16": args.bf16},
              "models": [], "notes": []}

    def note(text: str) -> None:
        record["notes"].append(text)
        print(f"note: {text}", flush=True)

    bf16 = args.bf16 == "always" or (args.bf16 == "auto" and bf16_path(cpu_flags()))
    if not bf16:
        note("bf16 loops skipped: this CPU has no bf16 path (no AMX or AVX512-BF16), so garden's "
             "infer.precision=auto runs fp32 here and bf16 autocast would run several times slower "
             "(`--bf16 always` runs them anyway)")
    have = installed()
    for name in wanted:
        if name.split(":")[0] not in have:
            note(f"{name} skipped: plugin not installed (python -m garden list)")
            continue
        if record["models"] and time.monotonic() > deadline:
            note(f"{name} skipped: the {args.budget:g}-minute budget was spent (--budget)")
            continue
        n_eval, batch = SIZES.get(name, (64, 16))
        if args.quick:
            n_eval = min(n_eval, 2 * batch)
        print(f"\n## {name}: {n_eval} eval inputs, batch {batch}, up to {repeats} rounds (load {load()})", flush=True)
        r = bench_one(name, n_eval, batch, repeats, args.threads, bf16, deadline)
        done = len(r["times"]["garden fp32"])
        if done < repeats:
            note(f"{name}: {done} of {repeats} rounds, the budget was spent")
        record["models"].append(r)
        print(f"params {r['params'] / 1e6:.1f}M · input {r['size']} · garden auto picks: {r['default']}")
        print(table([[k, spread(v), f"{r['n'] / median(v):.1f}"] for k, v in r["times"].items()],
                    ["loop", f"time for {r['n']} inputs", "inputs/s"]), flush=True)
    save("inference", record, args)
    print()
    print(report(record))
    print(f"\nload avg at end: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
