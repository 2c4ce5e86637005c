"""Inference throughput: garden's ``mode=infer`` loop against a hand-written loop and ``pipeline()``.

    python bench/inference.py            # ViT tiny/base, BERT tiny/base; ~4 minutes on 2 cores
    python bench/inference.py --quick    # tiny models, one round: a smoke run
    python bench/inference.py --models vit:base --repeats 5

What is timed, per model (all in this one process, on the same model object and the same inputs):

* ``garden``: :func:`garden.runs.loops.infer` itself, the body of ``python -m garden ... mode=infer``
  after start-up (compose, prepare, building the model and backend are done once, untimed). It
  batches the held-out split with garden's loader, runs ``backend.forward`` (local backend:
  ``inference_mode`` + autocast), turns outputs into predictions with ``task.predict`` and
  writes predictions.jsonl / metrics.json. Its own console output goes to /dev/null.
* ``hand``: the loop a user would write over the *same pre-collated batches*:
  ``with torch.inference_mode(), torch.autocast("cpu", torch.bfloat16): model(**inputs).logits.argmax(-1)``.
* ``pipeline()``: transformers' pipeline as users call it (fp32, its own preprocessing of the
  raw images / texts each call), with the same batch size.

The three alternate within each round (A B C, B C A, ...), and medians of the rounds are
compared, so load from other users of the machine falls on all of them. Inputs are preprocessed
once before timing for garden and the hand loop (garden's datasets cache them after the first
pass); pipeline() preprocesses every call, as it does for users.

Goals: garden >= 0.97x the hand loop at the same precision; garden at its default precision
(bf16 where the CPU has AMX/AVX512-BF16, see trainer.resolve_precision) >= 2x pipeline() (fp32);
bf16 predictions (top-1) agree with fp32 on >= 99% of the eval inputs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import header, interleave, load, median, silenced, spread, table, verdict  # noqa: E402

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


def bench_one(name: str, n_eval: int, batch: int, repeats: int, threads: int) -> dict:
    import torch

    model_name, variant = name.split(":")
    torch.set_num_threads(threads)
    cfg, prepared, backend = prepare_run(model_name, variant, n_eval, batch, "auto")
    from garden.runs.data import loader
    from garden.runs.loops import resolve_precision

    default = resolve_precision("auto", allow_bf16=prepared.task.bf16_inference)
    data, task = prepared.data, prepared.task
    model = backend.model.eval()
    batches = [{k: v for k, v in b.items() if k in task.model_inputs or k == "pixel_values"}
               if hasattr(task, "model_inputs") else {"pixel_values": b["pixel_values"]}
               for b in loader(data.eval, data.collate, batch, shuffle=False, seed=cfg.seed)]
    kind = "vision" if "pixel_values" in batches[0] else "text"
    if kind == "vision":
        raw = [image for image, _ in data.eval.items]
        shape = "x".join(str(s) for s in batches[0]["pixel_values"].shape[1:])
        size = f"{shape} pixels"
    else:
        raw = [e["text"] for e in data.eval]
        lengths = [b["input_ids"].shape[1] for b in batches]
        size = f"padded to longest in batch: {min(lengths)}-{max(lengths)} tokens (mean {sum(lengths) / len(lengths):.0f})"
    n = sum(len(next(iter(b.values()))) for b in batches)
    params = sum(p.numel() for p in model.parameters())

    with tempfile.TemporaryDirectory() as tmp:
        outs = {p: Path(tmp) / p for p in ("bf16", "fp32")}
        for folder in outs.values():
            folder.mkdir()
        fns = {
            "garden bf16": lambda: garden_infer(prepared, backend, outs["bf16"], "bf16"),
            "hand bf16": hand_loop(model, batches, data.labels, torch.bfloat16),
            "hand bf16, autocast per batch": hand_loop(model, batches, data.labels, torch.bfloat16, per_batch=True),
            "garden fp32": lambda: garden_infer(prepared, backend, outs["fp32"], "fp32"),
            "hand fp32": hand_loop(model, batches, data.labels, None),
            "pipeline() fp32": pipeline_runner(kind, model, prepared.preprocessor, raw, batch),
        }
        for fn in fns.values():  # warm-up: caches, oneDNN kernels, autocast weight casts
            fn()
        times = interleave(fns, repeats)
        bf16, fp32 = predicted_labels(outs["bf16"]), predicted_labels(outs["fp32"])
    agree = sum(a == b for a, b in zip(bf16, fp32)) / len(fp32)
    rate = {k: n / median(v) for k, v in times.items()}
    garden_default = rate[f"garden {default}"]
    return {
        "name": name, "params": params, "n": n, "batch": batch, "size": size, "default": default,
        "times": times, "rate": rate, "agree": agree, "n_agree": len(fp32),
        "best": {k: n / min(v) for k, v in times.items()},
        "vs_hand_bf16": rate["garden bf16"] / rate["hand bf16"],
        "vs_hand_fp32": rate["garden fp32"] / rate["hand fp32"],
        "vs_pipeline": garden_default / rate["pipeline() fp32"],
        "bf16_gain": rate["garden bf16"] / rate["garden fp32"],
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="tiny models, small inputs, one round")
    p.add_argument("--models", default=None, help="comma list of name:variant (default: vit and bert, tiny and base)")
    p.add_argument("--repeats", type=int, default=None, help="interleaved rounds (default 3, quick 1)")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="torch threads (default: all cores)")
    args = p.parse_args()
    repeats = args.repeats or (1 if args.quick else 3)
    wanted = args.models.split(",") if args.models else (["vit:tiny", "bert:tiny"] if args.quick else list(SIZES))

    import torch
    import transformers  # noqa: F401  (for the machine line)

    torch.set_num_threads(args.threads)
    header("garden inference throughput vs a hand-written loop and pipeline()", threads=args.threads)
    have = installed()
    results, skipped = [], []
    for name in wanted:
        if name.split(":")[0] not in have:
            skipped.append(f"{name}: plugin not installed (python -m garden list)")
            continue
        n_eval, batch = SIZES.get(name, (64, 16))
        if args.quick:
            n_eval = min(n_eval, 2 * batch)
        print(f"\n## {name}: {n_eval} eval inputs, batch {batch}, {repeats} rounds (load {load()})", flush=True)
        r = bench_one(name, n_eval, batch, repeats, args.threads)
        results.append(r)
        print(f"params {r['params'] / 1e6:.1f}M · input {r['size']} · garden default precision: {r['default']}")
        rows = [[k, spread(v), f"{r['n'] / median(v):.1f}"] for k, v in r["times"].items()]
        print(table(rows, ["loop", f"time for {r['n']} inputs", "inputs/s"]))
        print(f"garden ÷ hand: bf16 {r['vs_hand_bf16']:.3f}, fp32 {r['vs_hand_fp32']:.3f} · "
              f"garden ({r['default']}) ÷ pipeline() fp32: {r['vs_pipeline']:.2f} · "
              f"bf16 ÷ fp32 (garden): {r['bf16_gain']:.2f} · top-1 agreement bf16 vs fp32: "
              f"{r['agree']:.1%} of {r['n_agree']}", flush=True)
        b = r["best"]
        print(f"same ratios from each loop's fastest round (least disturbed by other load): garden ÷ hand: "
              f"bf16 {b['garden bf16'] / b['hand bf16']:.3f}, fp32 {b['garden fp32'] / b['hand fp32']:.3f} · "
              f"garden ({r['default']}) ÷ pipeline(): {b['garden ' + r['default']] / b['pipeline() fp32']:.2f}", flush=True)

    print("\n## summary (random-init weights of the registry's configs; threads "
          f"{args.threads}; load avg at end {load()})")
    rows = [[r["name"], f"{r['params'] / 1e6:.1f}M", str(r["batch"]), f"{r['rate'][f'garden ' + r['default']]:.1f}",
             f"{r['vs_hand_bf16']:.3f}", f"{r['vs_hand_fp32']:.3f}", f"{r['vs_pipeline']:.2f}",
             f"{r['bf16_gain']:.2f}", f"{r['agree']:.1%}"] for r in results]
    print(table(rows, ["model", "params", "batch", "garden inputs/s", "÷ hand bf16", "÷ hand fp32",
                       "÷ pipeline() fp32", "bf16 gain", "bf16=fp32 top-1"]))
    for s in skipped:
        print(f"skipped {s}")
    if results:
        hand = min(min(r["vs_hand_bf16"], r["vs_hand_fp32"]) for r in results)
        pipe = min(r["vs_pipeline"] for r in results)
        agree = min(r["agree"] for r in results)
        print(f"\ngoals: garden >= 0.97x hand loop (worst {hand:.3f}): {verdict(hand >= 0.97)} · "
              f">= 2x pipeline() (worst {pipe:.2f}): {verdict(pipe >= 2)} · "
              f"bf16 agrees with fp32 on >= 99% (worst {agree:.1%}): {verdict(agree >= 0.99)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
