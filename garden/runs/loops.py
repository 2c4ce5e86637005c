"""The training and inference loops, shared by every backend.

A loop sees batches, a backend and a task; it never touches the model directly, so the same
loop drives one process, a pipeline of ranks, or IPUs through one :class:`Backend` surface.
"""

from __future__ import annotations

import dataclasses
import json
import math
import signal
import threading
import time
import warnings
from pathlib import Path
from typing import Any

from rich.progress import Progress

from garden.compat import strip_prefix
from garden.backends import plans
from garden.backends.base import Backend
from garden.console import console, duration, progress
from garden.errors import ConfigError, reading
from garden.files import write_atomic
from garden.runs import checkpoint
from garden.runs.data import loader, shard_sizes, sharded_loader
from garden.runs.history import History, draw
from garden.runs.outputs import save_model, show_predictions, summary, write_json
from garden.runs.prepared import Prepared, pinned_override


def schedule(optimizer: Any, kind: str, warmup: int, total: int):
    import torch

    def factor(step: int) -> float:
        if warmup and step < warmup:
            return (step + 1) / warmup
        if kind == "constant":
            return 1.0
        return max(0.0, (total - step) / max(1, total - warmup))

    if kind not in ("linear", "constant"):
        raise ConfigError(f"trainer.scheduler={kind} is not one of: linear, constant")
    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


OPTIMIZERS = ("adamw", "sgd")


def make_optimizer(tcfg: Any, parameters: list):
    """``trainer.optimizer``: AdamW (the fine-tuning default) or plain SGD with momentum 0.9."""
    import torch

    if tcfg.optimizer == "adamw":
        return torch.optim.AdamW(parameters, lr=tcfg.lr, weight_decay=tcfg.weight_decay)
    if tcfg.optimizer == "sgd":
        return torch.optim.SGD(parameters, lr=tcfg.lr, momentum=0.9, weight_decay=tcfg.weight_decay)
    raise ConfigError(f"trainer.optimizer={tcfg.optimizer} is not one of: {', '.join(OPTIMIZERS)}")


def evaluate(prepared: Prepared, backend: Backend, bar: Progress | None = None,
             stop: "StopSignals | None" = None, details: dict[str, Any] | None = None) -> dict[str, float]:
    """The task's metrics over the eval split; replicas evaluate their shares of each batch and the
    task's metrics are computed once over everything gathered (so they equal one process's).
    Raises :class:`Stopping` before the next batch once ``stop`` has caught a signal. A
    ``details`` dict receives the task's confusion matrix (``None`` for a task without classes)."""
    cfg, data = prepared.cfg, prepared.data
    replica, replicas = backend.replica, backend.replicas
    eval_loader, batches, _ = sharded_loader(data.eval, data.collate, cfg.data.eval_batch_size or cfg.data.batch_size,
                                             shuffle=False, seed=cfg.seed, workers=cfg.data.num_workers,
                                             replica=replica, replicas=replicas)
    job = bar.add_task("eval", total=len(eval_loader), info="") if bar else None
    pieces = []
    for j, batch in enumerate(eval_loader):
        if stop is not None and stop.agreed():
            raise Stopping
        if shard_sizes(batches.size_of(j), replicas)[replica][0]:
            output = backend.forward(batch)
            if output is not None:
                pieces.append((j, output.detach().cpu() if hasattr(output, "detach") else output, batch))
        if bar:
            bar.advance(job)
    gathered = backend.gather_replicas(pieces)
    metrics = confusion = None
    if gathered is not None and any(gathered):
        ordered = sorted(((j, r, out, b) for r, part in enumerate(gathered) for j, out, b in part),
                         key=lambda x: (x[0], x[1]))
        outputs, seen = [o for _, _, o, _ in ordered], [b for _, _, _, b in ordered]
        metrics = prepared.task.evaluate(outputs, seen)
        if details is not None:
            confusion = prepared.task.confusion(outputs, seen)
    if details is not None:
        details["confusion"] = backend.share(confusion)
    return backend.share(metrics) or {}


def batch_layout(cfg: Any, backend: Backend) -> dict[str, Any]:
    """The effective batch as Optimum Graphcore reports it: micro-batch x replicas x gradient
    accumulation x device iterations (= ``data.batch_size``, the examples one trainer step takes)."""
    ipu = cfg.ipu
    replicas, accumulation = ipu.replication_factor, ipu.gradient_accumulation_steps
    iterations = ipu.device_iterations if backend.name == "ipu" else 1
    pieces = replicas * accumulation * iterations
    micro = math.ceil(cfg.data.batch_size / pieces)
    return {"micro_batch_size": micro, "replicas": replicas, "gradient_accumulation_steps": accumulation,
            "device_iterations": iterations, "effective_batch_size": cfg.data.batch_size,
            "even": cfg.data.batch_size % pieces == 0}


def announce(prepared: Prepared, backend: Backend, layout: dict[str, Any] | None = None) -> None:
    """The run's notes, the weights' load summary and a one-line header, from the writing process."""
    if not backend.is_writer:
        return
    for note in prepared.notes:
        console.print(f"[yellow]note:[/] {note}")
    loaded = getattr(backend.model, "garden_load_summary", None)  # set by families that load weights
    if loaded:
        console.print(f"weights: {loaded}")
    data = prepared.data
    console.print(f"[bold]{prepared.entry.name}[/] ({prepared.variant.name}) · task {prepared.task.name} · "
                  f"data {data.source}: {len(data.train)} train / {len(data.eval)} eval · "
                  f"weights {prepared.weights_origin} · backend {backend.name} · precision {backend.precision}")
    if layout:
        console.print(f"batch {layout['effective_batch_size']} = {layout['micro_batch_size']} micro-batch"
                      f"{'' if layout['even'] else ' (at most)'} x {layout['replicas']} replica{'s' * (layout['replicas'] != 1)} x "
                      f"{layout['gradient_accumulation_steps']} accumulation x {layout['device_iterations']} "
                      "device iterations")


class Stopping(Exception):
    """A stop signal seen between two evaluation batches: the loop leaves the evaluation for a
    checkpoint and the exit."""


class StopSignals:
    """SIGINT and SIGTERM ask the run to stop at the next step or evaluation batch (after a
    checkpoint) instead of killing it mid-write; a second SIGINT interrupts at once.

    So a stop takes at most one training step or one evaluation batch, plus one checkpoint
    write, from any phase of training: within a scheduler's grace period (Slurm's KillWait,
    Kubernetes' terminationGracePeriodSeconds: 30 s by default) for steps and checkpoints that
    fit in it.
    """

    def __init__(self) -> None:
        self.signal: int | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> "StopSignals":
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        if self.signal == signal.SIGINT and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.signal = signum

    def agreed(self) -> bool:
        """Whether any process of the run caught a signal (a collective where there are several,
        so all of them stop at the same step or batch)."""
        return checkpoint.any_true(self.signal is not None)

    def __exit__(self, *exc: Any) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


def checkpoint_identity(prepared: Prepared, backend: Backend) -> dict[str, Any]:
    return {"model": prepared.entry.name, "variant": prepared.variant.name, "task": prepared.task.name,
            "revision": prepared.revision, "backend": backend.name, "seed": prepared.cfg.seed, "replicas": backend.replicas,
            "stages": backend.stages, "gradient_accumulation_steps": backend.accumulation,
            "config": checkpoint.result_config(prepared.cfg)}


def train(prepared: Prepared, backend: Backend, output_dir: Path, *, evaluate_only: bool = False) -> dict[str, Any]:
    """Train (unless ``evaluate_only``), evaluate and write the model folder and metrics.json.

    One step takes ``data.batch_size`` examples, cut across replicas and accumulation micro-steps
    (:func:`shard_sizes`); each micro-loss is weighed by its share, so a step follows the whole
    batch's mean loss. With ``trainer.checkpoint_every=N`` a checkpoint is written every N steps
    and at the end; SIGINT/SIGTERM, in a step or an evaluation, write one and stop
    (:class:`StopSignals`); ``resume=`` continues from the newest good one with the same data
    order and RNG states, so the result is the uninterrupted run's.
    """
    with StopSignals() as stop:
        return train_until_stopped(prepared, backend, output_dir, stop, evaluate_only=evaluate_only)


def train_until_stopped(prepared: Prepared, backend: Backend, output_dir: Path, stop: StopSignals, *,
                        evaluate_only: bool = False) -> dict[str, Any]:
    import torch

    cfg, data, task = prepared.cfg, prepared.data, prepared.task
    tcfg = cfg.trainer
    quiet = not backend.is_writer
    if tcfg.threads:
        torch.set_num_threads(tcfg.threads)
    backend.precision = tcfg.precision
    layout = batch_layout(cfg, backend)
    if not layout["even"] and not evaluate_only:
        prepared.notes.append(
            f"data.batch_size={cfg.data.batch_size} does not split evenly into {layout['replicas']} replicas x "
            f"{layout['gradient_accumulation_steps']} accumulation steps; micro-batches differ by one example "
            "and their losses are weighed by size, so a step still follows the whole batch's mean loss")
    announce(prepared, backend, None if evaluate_only else layout)

    state = checkpoint.Position()
    history = None
    estimate: dict[str, Any] = {}
    epoch_details: dict[str, Any] = {}  # the latest per-epoch evaluation's confusion matrix
    if not evaluate_only:
        replica, replicas, accumulation = backend.replica, backend.replicas, backend.accumulation
        train_loader, batches, generator = sharded_loader(
            data.train, data.collate, cfg.data.batch_size, shuffle=task.shuffle_train, seed=cfg.seed,
            workers=cfg.data.num_workers, replica=replica, replicas=replicas, accumulation=accumulation)
        per_epoch = batches.global_batches
        total = tcfg.max_steps if tcfg.max_steps is not None else max(1, math.ceil(tcfg.epochs * per_epoch))
        optimizer = make_optimizer(tcfg, backend.parameters())
        scheduler = schedule(optimizer, tcfg.scheduler, tcfg.warmup_steps, total)
        # A backend that ``steps_optimizer`` (ipu: poptorch updates the weights on the device)
        # follows this optimizer's settings and scheduled lr; the loop then neither clips nor steps.
        steps_itself = backend.steps_optimizer
        backend.follow_optimizer(optimizer, max_grad_norm=tcfg.grad_clip)
        identity = checkpoint_identity(prepared, backend)
        data_state = generator.get_state()

        def say(text: str) -> None:
            if backend.is_writer:
                console.print(f"[yellow]note:[/] {text}")

        last_saved: dict[str, Any] = {}

        def save_checkpoint() -> Path:
            """This position's checkpoint (written once: a stop right after a save reuses it)."""
            state.losses = backend.share(state.losses)  # a pipeline's losses live on its last stage
            at = (state.step, state.epoch, state.epoch_open, len(state.history))
            if last_saved.get("at") != at:
                last_saved.update(at=at, path=checkpoint.save(
                    output_dir, state, part=backend.checkpoint_part(), optimizer=optimizer, scheduler=scheduler,
                    data_state=data_state, identity=identity, keep=tcfg.keep_checkpoints))
            return last_saved["path"]

        if checkpoint.wants_resume(checkpoint.resume_target(cfg)):
            folder, manifest = checkpoint.latest_good(output_dir, say)
            if manifest.get("revision", prepared.revision) != prepared.revision:
                raise checkpoint.CheckpointError(
                    f"checkpoint {folder} was made from commit {manifest['revision']} of {prepared.variant.hub_id}, "
                    f"this run's model is at {prepared.revision}; resume with {pinned_override(prepared, manifest['revision'])}")
            saved = {k: manifest.get(k) for k in ("replicas", "stages", "gradient_accumulation_steps")}
            now = {k: identity[k] for k in saved}
            if saved != now:
                raise checkpoint.CheckpointError(
                    f"checkpoint {folder} was written by {saved['replicas']} replicas x {saved['stages']} stages x "
                    f"{saved['gradient_accumulation_steps']} accumulation steps, this run has {now['replicas']} x "
                    f"{now['stages']} x {now['gradient_accumulation_steps']}; resume it with the same ipu.* settings")
            data_state = checkpoint.load(folder, part=backend.checkpoint_part(), optimizer=optimizer,
                                         scheduler=scheduler, device=backend.device)
            state = checkpoint.Position(**manifest["position"])
            say(f"resuming from {folder.name}: epoch {state.epoch}, step {state.step} of {total}")
        history = History(output_dir, writer=backend.is_writer, share=backend.share, logger=cfg.logger,
                          resumed_at=state.step if checkpoint.wants_resume(checkpoint.resume_target(cfg)) else None)

        timed: list[float] = []  # this process's step times, for the estimate of the whole run
        with progress(quiet) as bar:
            job = bar.add_task("train", total=total, completed=state.step, info="")
            while state.step < total or state.epoch_open:
                if state.epoch_open:  # resuming mid-epoch: the same order, past the batches done
                    generator.set_state(data_state)
                    batches.skip = state.batch
                else:  # each epoch's order follows from (seed, epoch) alone, as DistributedSampler's
                    state = dataclasses.replace(state, epoch=state.epoch + 1, batch=0, losses=[], epoch_open=True)
                    generator.manual_seed(cfg.seed + state.epoch - 1)
                    data_state = generator.get_state()
                    batches.skip = 0
                micro_batches = iter(train_loader)
                while state.step < total and state.batch < per_epoch:
                    start = time.perf_counter()
                    size = batches.size_of(state.batch)
                    sizes = shard_sizes(size, replicas, accumulation)[replica]
                    step_loss: float | None = None
                    for a, n in enumerate(sizes):
                        micro = next(micro_batches)
                        loss = backend.train_step(micro, scale=n / size, sync=a == accumulation - 1)
                        if loss is not None:
                            step_loss = (step_loss or 0.0) + float(loss) * n / size
                    if step_loss is not None:
                        step_loss = backend.replica_sum(step_loss)
                    if not steps_itself:
                        if tcfg.grad_clip:
                            backend.clip_grad_norm(tcfg.grad_clip)
                        optimizer.step()
                    lr = optimizer.param_groups[0]["lr"]
                    with warnings.catch_warnings():  # steps_itself: no host optimizer.step() precedes it
                        warnings.filterwarnings("ignore", "Detected call of `lr_scheduler.step", UserWarning)
                        scheduler.step()
                    optimizer.zero_grad(set_to_none=True)
                    seconds = time.perf_counter() - start
                    state.seconds += seconds
                    timed.append(seconds)
                    state.samples += size
                    state.step += 1
                    state.batch += 1
                    history.step(state.step, state.epoch, step_loss, lr, size, seconds)
                    if step_loss is not None:
                        state.losses.append(step_loss)
                    recent = state.losses[-tcfg.log_every:]
                    if recent and state.step % max(1, tcfg.log_every) == 0:
                        bar.update(job, info=f"loss {sum(recent) / len(recent):.4f}")
                    bar.advance(job)
                    if len(timed) == ESTIMATE_AFTER and state.step < total and backend.is_writer:
                        estimate = estimate_line(timed, state.step, total, per_epoch, tcfg.eval, len(data.eval))
                        console.print(f"[yellow]estimate:[/] {estimate.pop('line')}", highlight=False)
                    stopping = stop.agreed()
                    if stopping or (tcfg.checkpoint_every and state.step % tcfg.checkpoint_every == 0):
                        saved_at = save_checkpoint()
                    if stopping:
                        stopped(stop.signal, state.step, total, saved_at, output_dir, backend)
                record: dict[str, Any] = {"epoch": state.epoch, "steps": state.step}
                if state.losses:
                    record["train_loss"] = sum(state.losses) / len(state.losses)
                record = backend.share(record)
                if tcfg.eval:
                    try:
                        epoch_details.clear()
                        record.update({f"eval_{k}": v
                                       for k, v in evaluate(prepared, backend, bar, stop, epoch_details).items()})
                    except Stopping:  # the epoch stays open: a resume evaluates it again
                        stopped(stop.signal, state.step, total, save_checkpoint(), output_dir, backend,
                                during="an evaluation")
                    history.evaluated(state.step, state.epoch, {k[5:]: v for k, v in record.items()
                                                                if k.startswith("eval_")})
                state.history.append(record)
                state.epoch_open = False
            if tcfg.checkpoint_every:
                save_checkpoint()
    details: dict[str, Any] = {}  # the final evaluation's confusion matrix
    final = evaluated_at(state, epoch_details)  # the last epoch's evaluation, when it saw these very weights
    if final is None:
        with progress(quiet) as bar:
            try:
                final = evaluate(prepared, backend, bar, stop, details)
            except Stopping:
                if evaluate_only:
                    stopped(stop.signal, None, None, None, output_dir, backend, during="the evaluation")
                stopped(stop.signal, state.step, state.step, save_checkpoint(), output_dir, backend,
                        during="the final evaluation")
    else:
        details = epoch_details

    samples, seconds = state.samples, state.seconds
    metrics = {
        "model": prepared.entry.name,
        "variant": prepared.variant.name,
        "task": task.name,
        "mode": cfg.mode,
        "backend": backend.name,
        "data": data.source,
        "weights": prepared.weights_origin,
        "revision": prepared.revision,
        "train_examples": len(data.train),
        "eval_examples": len(data.eval),
        "steps": state.step,
        "batch": {k: v for k, v in layout.items() if k != "even"},
        "train_samples_per_second": round(samples / seconds, 3) if seconds else None,
        "train_seconds": round(seconds, 3),
        "estimate": estimate or None,
        "history": state.history,
        "eval": final,
    }
    model = None if evaluate_only else backend.model_for_saving()  # collective on pipelines
    stage_seconds = backend.stage_seconds()  # collective on pipelines
    if history is not None:
        if not tcfg.eval:
            history.evaluated(state.step, state.epoch, final)
        history.close()
    if backend.is_writer:
        if model is not None:
            save_model(prepared, model, output_dir / "model", metrics, backend.stage_plan)
        if history is not None:
            draw(output_dir, title=f"{prepared.entry.name} ({prepared.variant.name}) · {task.name}",
                 stage_plan=backend.stage_plan.summary() if backend.stage_plan is not None else None,
                 confusion={"labels": list(data.labels or ()), "matrix": details.get("confusion")},
                 stage_seconds=stage_seconds)
        write_json(output_dir / "metrics.json", metrics)  # last: the mark of a finished run
        summary(metrics, output_dir)
    return metrics


#: the step after which a run prints its estimate: the first step (allocations, caches, lazy
#: initialisation) is left out of the pace, the next ones measure it
ESTIMATE_AFTER = 3


def estimate_line(timed: list[float], step: int, total: int, per_epoch: int, evaluates: bool,
                  eval_examples: int) -> dict[str, Any]:
    """The whole run's training time at the pace of the steps after the first, as a record for
    metrics.json (``train_seconds`` the estimate, ``seconds_per_step``) with a ``line`` to print
    that names the ways to a shorter run when this one takes long."""
    pace = sum(timed[1:]) / len(timed[1:])
    whole = sum(timed) + pace * (total - step)
    evaluations = math.ceil(total / per_epoch) if evaluates else 1  # the last epoch's is the final one
    line = (f"{total} steps at {pace:.2f} s a step: about {duration(whole)} of training, plus {evaluations} "
            f"evaluation{'s' * (evaluations != 1)} of {eval_examples} examples")
    if whole > LONG_RUN_S:
        fit = max(1, int(LONG_RUN_S / pace))
        line += (f"; to finish in about {duration(LONG_RUN_S)} set trainer.max_steps={fit} (or preset=smoke, "
                 "model.variant=tiny); Ctrl-C stops with a checkpoint to resume")
    return {"train_seconds": round(whole, 1), "seconds_per_step": round(pace, 4), "after_steps": len(timed),
            "line": line}


#: a run estimated longer than this gets a suggestion for a shorter one
LONG_RUN_S = 600


def evaluated_at(state: checkpoint.Position, details: dict[str, Any]) -> dict[str, float] | None:
    """The metrics of the evaluation that closed the last epoch in this process, when no step came
    after it (the run ended at that epoch's end, or ``trainer.max_steps`` ended the epoch there):
    the final evaluation would see the same weights and give the same numbers (and ``details``,
    its confusion matrix), at the cost of another pass."""
    last = state.history[-1] if state.history else {}
    metrics = {strip_prefix(k, "eval_"): v for k, v in last.items() if k.startswith("eval_")}
    return metrics if metrics and last.get("steps") == state.step and "confusion" in details else None


def stopped(signum: int | None, step: int | None, total: int | None, saved_at: Path | None, output_dir: Path,
            backend: Backend, *, during: str | None = None) -> None:
    """Leave after a stop signal (exit status 128 + its number), saying where the checkpoint is
    and how to continue."""
    name = signal.Signals(signum).name if signum else "a signal to another process"
    if backend.is_writer:
        where = ", ".join(filter(None, [f"at step {step} of {total}" if step is not None else "",
                                        f"in {during}" if during else ""]))
        then = (f"checkpoint {saved_at}; continue with the same command and resume={output_dir}" if saved_at
                else "nothing to resume (mode=eval): run it again")
        console.print(f"[yellow]stopped[/] by {name} {where}; {then}")
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise SystemExit(128 + (signum or signal.SIGTERM))


def infer(prepared: Prepared, backend: Backend, output_dir: Path) -> dict[str, Any]:
    """Predictions for ``infer.inputs`` (or the held-out split), written to predictions.jsonl.

    The precision plan (:func:`inference_plan`) is printed in one line; a quantised plan's
    outputs on the first ``infer.check_batches`` batches are compared with fp32's, and below
    ``infer.min_agreement`` the run continues in fp32 (those batches' predictions are fp32's).
    """
    cfg, task, data = prepared.cfg, prepared.task, prepared.data
    examples = data.eval
    if cfg.infer.inputs:
        with reading(cfg.data.skip_unreadable) as policy:
            examples = task.load_inputs(cfg.infer.inputs, prepared.preprocessor, data)
        if policy.warning() and backend.is_writer:
            console.print(f"[yellow]warning:[/] {policy.warning()}", highlight=False)
    batches = loader(examples, data.collate, cfg.data.eval_batch_size or cfg.data.batch_size, shuffle=False,
                     seed=cfg.seed, workers=cfg.data.num_workers)
    plan = inference_plan(prepared, backend, len(batches))
    backend.use_plan(plan)
    announce(prepared, backend)
    if backend.is_writer:
        console.print(f"precision plan: {plan.label} ({plan.reason or 'infer.precision=' + plan.label})",
                      highlight=False)
    check = plans.Agreement(cfg.infer.min_agreement) if plan.quantised and cfg.infer.check_batches > 0 else None
    to_check = min(cfg.infer.check_batches, len(batches))
    pending: list[tuple[Any, Any, dict]] = []  # a quantised plan's first batches, until it is judged
    fell_back = False
    rows: list[dict] = []
    start = time.perf_counter()
    with progress(not backend.is_writer) as bar:
        job = bar.add_task("infer", total=len(batches), info="")
        for batch in batches:
            output = backend.forward(batch)
            if check is not None and len(pending) < to_check:
                reference = backend.reference_forward(batch)
                check.add(reference, output)
                pending.append((output, reference, batch))
                if len(pending) == to_check:
                    keep = check.accepted
                    if keep:
                        say = f"{plan.label} kept: {check.summary()}"
                    else:
                        plan = plans.Plan("fp32", plan.compile, f"fell back from {plan.label}: {check.summary()}, "
                                                                f"under infer.min_agreement={cfg.infer.min_agreement:g}")
                        backend.use_plan(plan)
                        fell_back = True
                        say = f"[yellow]note:[/] {plan.reason}; continuing in {plan.label}"
                    if backend.is_writer:
                        console.print(say, highlight=False)
                    for out, ref, b in pending:
                        if (out if keep else ref) is not None:
                            rows.extend(task.predict(out if keep else ref, b, data, cfg.infer.top_k))
            elif output is not None:
                rows.extend(task.predict(output, batch, data, cfg.infer.top_k))
            bar.advance(job)
    seconds = time.perf_counter() - start
    rows = backend.share(rows)
    result = {
        "model": prepared.entry.name, "variant": prepared.variant.name, "task": task.name, "mode": "infer",
        "backend": backend.name, "precision": plan.label, "weights": prepared.weights_origin,
        "revision": prepared.revision, "inputs": cfg.infer.inputs or f"held-out split of {data.source}",
        "predictions": len(rows),
        "samples_per_second": round(len(rows) / seconds, 3) if seconds and rows else None,
        "plan": {"requested": cfg.infer.precision, "chosen": plan.label, "reason": plan.reason,
                 "agreement": check.to_dict() if check is not None else None, "fell_back": fell_back},
    }
    if backend.is_writer:
        write_atomic(output_dir / "predictions.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
        write_json(output_dir / "metrics.json", result)
        show_predictions(rows[: min(len(rows), 10)])
        console.print(f"{len(rows)} predictions written to {output_dir / 'predictions.jsonl'}")
    return result


def inference_plan(prepared: Prepared, backend: Backend, batches: int, *, checked: bool = True) -> plans.Plan:
    """``infer.precision`` as a plan for this machine, model, task, backend and run length;
    ``auto`` picks a quantised plan only where its first batches are ``checked`` against fp32."""
    cfg, task = prepared.cfg, prepared.task
    device = getattr(backend.device, "type", str(backend.device))
    return plans.choose(cfg.infer.precision, plans.Machine.here(device), params=backend.parameter_count(),
                        batches=batches, allow_bf16=task.bf16_inference, allow_int8=task.int8_inference and checked,
                        offered=backend.inference_precisions, can_compile=backend.can_compile,
                        compile_min_batches=cfg.infer.compile_min_batches)
