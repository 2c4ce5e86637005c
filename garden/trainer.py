"""The training and inference loops, shared by every backend.

A loop sees batches, a backend and a task; it never touches the model directly, so the same
loop drives one process, a pipeline of ranks, or IPUs.
"""

from __future__ import annotations

import json
import math
import time
import warnings
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from garden.runs import Prepared, write_json

console = Console(stderr=True)


def loader(dataset: Any, collate: Any, batch_size: int, *, shuffle: bool, seed: int, workers: int = 0):
    import torch
    from torch.utils.data import DataLoader

    generator = torch.Generator().manual_seed(seed)
    return DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, collate_fn=collate,
                      generator=generator, num_workers=workers, drop_last=False)


def progress(quiet: bool) -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("{task.fields[info]}"), TimeElapsedColumn(),
        console=console, disable=quiet, transient=False,
    )


def schedule(optimizer: Any, kind: str, warmup: int, total: int):
    import torch

    def factor(step: int) -> float:
        if warmup and step < warmup:
            return (step + 1) / warmup
        if kind == "constant":
            return 1.0
        return max(0.0, (total - step) / max(1, total - warmup))

    if kind not in ("linear", "constant"):
        from garden.errors import ConfigError

        raise ConfigError(f"trainer.scheduler={kind} is not one of: linear, constant")
    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def evaluate(prepared: Prepared, backend: Any, bar: Progress | None = None) -> dict[str, float]:
    """The task's metrics over the eval split."""
    cfg, data = prepared.cfg, prepared.data
    batches, outputs = [], []
    eval_loader = loader(data.eval, data.collate, cfg.data.eval_batch_size or cfg.data.batch_size,
                         shuffle=False, seed=cfg.seed, workers=cfg.data.num_workers)
    job = bar.add_task("eval", total=len(eval_loader), info="") if bar else None
    for batch in eval_loader:
        output = backend.forward(batch)
        if output is not None:
            outputs.append(output.detach().cpu() if hasattr(output, "detach") else output)
            batches.append(batch)
        if bar:
            bar.advance(job)
    return backend.share(prepared.task.evaluate(outputs, batches) if outputs else None) or {}


def announce(prepared: Prepared, backend: Any) -> None:
    """The run's notes, the weights' load summary and a one-line header, from the writing process."""
    if not backend.is_writer:
        return
    for note in prepared.notes:
        console.print(f"[yellow]note:[/] {note}")
    loaded = getattr(getattr(backend, "model", None), "garden_load_summary", None)
    if loaded:
        console.print(f"weights: {loaded}")
    data = prepared.data
    console.print(f"[bold]{prepared.entry.name}[/] ({prepared.variant.name}) · task {prepared.task.name} · "
                  f"data {data.source}: {len(data.train)} train / {len(data.eval)} eval · "
                  f"weights {prepared.weights_origin} · backend {backend.name} · precision {backend.precision}")


def train(prepared: Prepared, backend: Any, output_dir: Path, *, evaluate_only: bool = False) -> dict[str, Any]:
    import torch

    cfg, data, task = prepared.cfg, prepared.data, prepared.task
    tcfg = cfg.trainer
    quiet = not backend.is_writer
    if tcfg.threads:
        torch.set_num_threads(tcfg.threads)
    backend.precision = tcfg.precision
    announce(prepared, backend)

    history: list[dict[str, Any]] = []
    steps_done, samples, seconds = 0, 0, 0.0
    if not evaluate_only:
        train_loader = loader(data.train, data.collate, cfg.data.batch_size, shuffle=task.shuffle_train, seed=cfg.seed,
                              workers=cfg.data.num_workers)
        per_epoch = len(train_loader)
        total = tcfg.max_steps if tcfg.max_steps is not None else max(1, math.ceil(tcfg.epochs * per_epoch))
        optimizer = torch.optim.AdamW(backend.parameters(), lr=tcfg.lr, weight_decay=tcfg.weight_decay)
        scheduler = schedule(optimizer, tcfg.scheduler, tcfg.warmup_steps, total)
        # A backend that ``steps_optimizer`` (ipu: poptorch updates the weights on the device)
        # follows this optimizer's settings and scheduled lr; the loop then neither clips nor steps.
        steps_itself = getattr(backend, "steps_optimizer", False)
        if steps_itself:
            backend.follow_optimizer(optimizer, max_grad_norm=tcfg.grad_clip)
        epoch = 0
        with progress(quiet) as bar:
            job = bar.add_task("train", total=total, info="")
            while steps_done < total:
                epoch += 1
                losses = []
                for batch in train_loader:
                    start = time.perf_counter()
                    loss = backend.train_step(batch)
                    if not steps_itself:
                        if tcfg.grad_clip:
                            backend.clip_grad_norm(tcfg.grad_clip)
                        optimizer.step()
                    with warnings.catch_warnings():  # steps_itself: no host optimizer.step() precedes it
                        warnings.filterwarnings("ignore", "Detected call of `lr_scheduler.step", UserWarning)
                        scheduler.step()
                    optimizer.zero_grad(set_to_none=True)
                    seconds += time.perf_counter() - start
                    samples += len(next(iter(v for v in batch.values() if hasattr(v, "__len__"))))
                    steps_done += 1
                    if loss is not None:
                        losses.append(float(loss))
                    if losses and steps_done % max(1, tcfg.log_every) == 0:
                        bar.update(job, info=f"loss {sum(losses[-tcfg.log_every:]) / len(losses[-tcfg.log_every:]):.4f}")
                    bar.advance(job)
                    if steps_done >= total:
                        break
                record: dict[str, Any] = {"epoch": epoch, "steps": steps_done}
                if losses:
                    record["train_loss"] = sum(losses) / len(losses)
                record = backend.share(record)
                if tcfg.eval:
                    record.update({f"eval_{k}": v for k, v in evaluate(prepared, backend, bar).items()})
                history.append(record)
    with progress(quiet) as bar:
        final = evaluate(prepared, backend, bar)

    metrics = {
        "model": prepared.entry.name,
        "variant": prepared.variant.name,
        "task": task.name,
        "mode": cfg.mode,
        "backend": backend.name,
        "data": data.source,
        "weights": prepared.weights_origin,
        "train_examples": len(data.train),
        "eval_examples": len(data.eval),
        "steps": steps_done,
        "train_samples_per_second": round(samples / seconds, 3) if seconds else None,
        "history": history,
        "eval": final,
    }
    model = None if evaluate_only else backend.model_for_saving()  # collective on pipelines
    if backend.is_writer:
        write_json(output_dir / "metrics.json", metrics)
        if model is not None:
            save_model(prepared, model, output_dir / "model", metrics, getattr(backend, "stage_plan", None))
        summary(metrics, output_dir)
    return metrics


def save_model(prepared: Prepared, model: Any, folder: Path, metrics: dict[str, Any], stage_plan: Any = None) -> None:
    """The trained model as a Hub-ready folder: ``save_pretrained`` (safetensors), the
    preprocessor, a model card and ``ipu_config.json``; swapped in whole, never half-written."""
    from garden.modelcard import write_run_files

    import shutil
    import tempfile

    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=folder.parent, prefix=".model."))
    try:
        prepared.family.save(model, prepared.preprocessor, staging)
        write_run_files(staging, prepared, metrics, prepared.command, stage_plan)
        if folder.exists():
            shutil.rmtree(folder)
        staging.rename(folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def summary(metrics: dict[str, Any], output_dir: Path) -> None:
    table = Table(title=f"{metrics['model']} · {metrics['task']} · {metrics['mode']}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in metrics["eval"].items():
        table.add_row(f"eval {key}", f"{value:.4f}" if isinstance(value, float) else str(value))
    if metrics.get("train_samples_per_second"):
        table.add_row("train samples/s", f"{metrics['train_samples_per_second']:.1f}")
    table.add_row("steps", str(metrics["steps"]))
    table.add_row("outputs", str(output_dir))
    Console().print(table)


def infer(prepared: Prepared, backend: Any, output_dir: Path) -> dict[str, Any]:
    """Predictions for ``infer.inputs`` (or the held-out split), written to predictions.jsonl."""
    cfg, task, data = prepared.cfg, prepared.task, prepared.data
    backend.precision = resolve_precision(cfg.infer.precision, allow_bf16=task.bf16_inference)
    announce(prepared, backend)
    examples = task.load_inputs(cfg.infer.inputs, prepared.preprocessor, data) if cfg.infer.inputs else data.eval
    rows: list[dict] = []
    batches = loader(examples, data.collate, cfg.data.eval_batch_size or cfg.data.batch_size, shuffle=False,
                     seed=cfg.seed, workers=cfg.data.num_workers)
    start = time.perf_counter()
    with progress(not backend.is_writer) as bar:
        job = bar.add_task("infer", total=len(batches), info="")
        for batch in batches:
            output = backend.forward(batch)
            if output is not None:
                rows.extend(task.predict(output, batch, data, cfg.infer.top_k))
            bar.advance(job)
    seconds = time.perf_counter() - start
    rows = backend.share(rows)
    result = {
        "model": prepared.entry.name, "variant": prepared.variant.name, "task": task.name, "mode": "infer",
        "backend": backend.name, "precision": backend.precision, "weights": prepared.weights_origin,
        "inputs": cfg.infer.inputs or f"held-out split of {data.source}", "predictions": len(rows),
        "samples_per_second": round(len(rows) / seconds, 3) if seconds and rows else None,
    }
    if backend.is_writer:
        from garden.registry import write_atomic

        write_atomic(output_dir / "predictions.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
        write_json(output_dir / "metrics.json", result)
        show_predictions(rows[: min(len(rows), 10)])
        console.print(f"{len(rows)} predictions written to {output_dir / 'predictions.jsonl'}")
    return result


def show_predictions(rows: list[dict]) -> None:
    table = Table(title="predictions")
    table.add_column("input")
    table.add_column("prediction")
    for row in rows:
        name = row.get("input") or (f"label {row['label']}" if "label" in row else "")
        preds = row.get("predictions")
        text = ", ".join(f"{p['label']} {p['score']:.3f}" for p in preds) if preds else json.dumps(row.get("output", row))
        table.add_row(str(name), text)
    Console().print(table)


def resolve_precision(precision: str, *, allow_bf16: bool = True) -> str:
    """``auto`` is bf16 where the CPU or GPU computes it natively (and the task allows), else fp32."""
    if precision != "auto":
        return precision
    if not allow_bf16:
        return "fp32"
    import torch

    if torch.cuda.is_available():
        return "bf16" if torch.cuda.is_bf16_supported() else "fp32"
    return "bf16" if cpu_has_native_bf16() else "fp32"


def cpu_has_native_bf16() -> bool:
    """Whether this CPU multiplies bf16 in hardware (AMX or AVX512-BF16), where bf16 pays off."""
    try:
        flags = Path("/proc/cpuinfo").read_text().split()
    except OSError:
        return False
    return "amx_bf16" in flags or "avx512_bf16" in flags
