"""Resumable training checkpoints: written whole or not at all, the last two kept, resumed bit for bit.

A checkpoint is a folder ``RUN_DIR/checkpoints/step-000040/``::

    model.safetensors        the weights (a pipeline writes stage-0.safetensors, stage-1..., one per stage)
    model.optimizer.pt       the optimizer state of those weights (torch.save, loadable with weights_only)
    scheduler.pt             the learning-rate schedule
    rng-rank-000.pt          one per process: python, numpy and torch RNG states and the data order's
                             generator as it was when the epoch began
    checkpoint.json          written last: the loop's position (epoch, batch, step), its history, the
                             run's identity (model, task, layout), the settings that decide its result
                             (compared on resume) and every file's size and sha256

Every process writes its files into ``.partial-step-000040/``; once all have, rank 0 writes
``checkpoint.json`` and renames the folder into place with ``os.replace``. A kill, a full disk or
a failed write therefore never leaves a half-written checkpoint where a good one was. On resume a
checkpoint whose files do not match their recorded sizes and hashes is set aside
(``damaged-step-...``) and the one before it is used, with a note saying so.

    >>> resume_dir("true", "vit", "classify")          # doctest: +SKIP
    PosixPath('outputs/2026-11-30/02-26-09-4f2a9c')
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from garden import registry
from garden.config import HF, choices, model_name
from garden.errors import GardenError

CHECKPOINTS = "checkpoints"
MANIFEST = "checkpoint.json"
FORMAT = 1
LATEST = ("true", "yes", "latest", "1")
OFF = ("", "false", "no", "none", "null", "0")


class CheckpointError(GardenError):
    """A checkpoint that cannot be written, found or read back."""


@dataclass
class Position:
    """Where the training loop is, and what it has recorded so far (all of it JSON)."""

    step: int = 0
    epoch: int = 0
    batch: int = 0  #: global batches of ``epoch`` already trained on
    epoch_open: bool = False  #: ``epoch`` has begun and its record is not in ``history`` yet
    history: list = field(default_factory=list)
    losses: list = field(default_factory=list)  #: this epoch's step losses so far
    samples: int = 0
    seconds: float = 0.0


def step_name(step: int) -> str:
    return f"step-{step:06d}"


def step_of(folder: Path) -> int:
    return int(folder.name.split("-")[-1])


# -- the processes of a run, when there are several ---------------------------------------------------


def _dist():
    import torch.distributed as dist

    return dist if dist.is_available() and dist.is_initialized() else None


def rank() -> int:
    d = _dist()
    return d.get_rank() if d else 0


def barrier() -> None:
    d = _dist()
    if d:
        d.barrier()


def all_true(flag: bool) -> bool:
    """Whether ``flag`` holds on every process (a collective where there are several)."""
    d = _dist()
    if not d:
        return flag
    import torch

    device = "cuda" if d.get_backend() == "nccl" else "cpu"
    value = torch.tensor([1 if flag else 0], device=device)
    d.all_reduce(value, op=d.ReduceOp.MIN)
    return bool(value.item())


def any_true(flag: bool) -> bool:
    return not all_true(not flag)


# -- RNG states ---------------------------------------------------------------------------------------


def rng_state(data_generator: Any = None) -> dict[str, Any]:
    """Python, numpy and torch RNG states (and the data order's generator state), as tensors and
    plain values that ``torch.load(weights_only=True)`` reads back."""
    import random

    import numpy as np
    import torch

    kind, keys, pos, has_gauss, cached = np.random.get_state()
    state: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": {"kind": kind, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
                  "has_gauss": int(has_gauss), "cached": float(cached)},
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    if data_generator is not None:
        state["data"] = data_generator
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    import random

    import numpy as np
    import torch

    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    n = state["numpy"]
    np.random.set_state((n["kind"], n["keys"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["cached"]))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


# -- writing ------------------------------------------------------------------------------------------


def write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` and flush it to the disk (the one place checkpoint bytes are written)."""
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def torch_bytes(obj: Any) -> bytes:
    import io

    import torch

    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def tensor_bytes(module: Any) -> bytes:
    """``module``'s state as safetensors; a tensor tied to another (shared weights) is stored once
    and named in the metadata's ``aliases``."""
    from safetensors.torch import save

    tensors, aliases, seen = {}, {}, {}
    for name, value in module.state_dict().items():
        key = (value.untyped_storage().data_ptr(), value.storage_offset(), tuple(value.shape), value.stride())
        if key in seen and value.numel():
            aliases[name] = seen[key]
            continue
        seen[key] = name
        tensors[name] = value.detach().cpu().contiguous()
    return save(tensors, metadata={"aliases": json.dumps(aliases)})


def load_tensors(module: Any, path: Path) -> None:
    from safetensors import safe_open
    from safetensors.torch import load_file

    state = load_file(str(path))
    with safe_open(str(path), "pt") as f:
        aliases = json.loads((f.metadata() or {}).get("aliases", "{}"))
    for name, original in aliases.items():
        state[name] = state[original]
    module.load_state_dict(state, strict=True)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__


def save(run_dir: Path, position: Position, *, part: tuple[str, Any, bool], optimizer: Any, scheduler: Any,
         data_state: Any, identity: dict[str, Any], keep: int = 2) -> Path:
    """Write the checkpoint for ``position.step`` (a collective: every process calls it).

    ``part`` is ``(name, module, writes)``: this process's share of the weights (``model`` or
    ``stage-1``) and whether it writes them (one replica does). Raises :class:`CheckpointError`
    with one line, leaving the previous checkpoints as they were, when anything fails.
    """
    root = run_dir / CHECKPOINTS
    name = step_name(position.step)
    partial = root / f".partial-{name}"
    me = rank()
    error: BaseException | None = None
    if me == 0:
        try:
            root.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(partial, ignore_errors=True)
            partial.mkdir()
        except OSError as err:
            error = err
    if all_true(error is None):  # the folder exists for everyone, or nobody writes
        try:
            tag, module, writes = part
            if writes:
                write_bytes(partial / f"{tag}.safetensors", tensor_bytes(module))
                write_bytes(partial / f"{tag}.optimizer.pt", torch_bytes(optimizer.state_dict()))
            if me == 0:
                write_bytes(partial / "scheduler.pt", torch_bytes(scheduler.state_dict()))
            write_bytes(partial / f"rng-rank-{me:03d}.pt", torch_bytes(rng_state(data_state)))
        except Exception as err:
            error = err
    ok = all_true(error is None)
    if ok and me == 0:
        try:
            publish(root, partial, name, position, identity)
        except Exception as err:
            error = err
    ok = all_true(error is None)
    if not ok:
        if me == 0:
            shutil.rmtree(partial, ignore_errors=True)
        previous = [p.name for p in good_names(root) if p.name != name]
        cause = first_line(error) if error is not None else "another process could not write its part"
        raise CheckpointError(
            f"could not write checkpoint {name} in {root}: {cause}; "
            + (f"the previous checkpoint {previous[0]} is intact" if previous else "no earlier checkpoint exists")
        )
    if me == 0:
        prune(root, keep)
    return root / name


def publish(root: Path, partial: Path, name: str, position: Position, identity: dict[str, Any]) -> None:
    """checkpoint.json (hashes of everything written), then the folder renamed into place."""
    files = {p.name: {"bytes": p.stat().st_size, "sha256": sha256(p)} for p in sorted(partial.iterdir())}
    manifest = {"format": FORMAT, **identity, "position": asdict(position), "files": files}
    write_bytes(partial / MANIFEST, (json.dumps(manifest, indent=2, default=str) + "\n").encode())
    fsync_dir(partial)
    final = root / name
    aside = root / f".replaced-{name}"
    if final.exists():  # the same step again (a resumed run, or the end of a run): swap it whole
        shutil.rmtree(aside, ignore_errors=True)
        os.replace(final, aside)
    os.replace(partial, final)
    shutil.rmtree(aside, ignore_errors=True)
    fsync_dir(root)


def good_names(root: Path) -> list[Path]:
    """The published checkpoints in ``root``, newest first (not checked)."""
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir() if p.is_dir() and p.name.startswith("step-") and (p / MANIFEST).is_file()]
    return sorted(found, key=step_of, reverse=True)


def prune(root: Path, keep: int) -> None:
    for old in good_names(root)[max(1, keep):]:
        shutil.rmtree(old, ignore_errors=True)


# -- reading ------------------------------------------------------------------------------------------


def verify(folder: Path) -> dict[str, Any]:
    """The manifest of ``folder`` once every file in it matches its size and sha256."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
        files = manifest["files"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise CheckpointError(f"{MANIFEST} is unreadable ({first_line(err)})") from None
    for name, info in files.items():
        path = folder / name
        if not path.is_file():
            raise CheckpointError(f"{name} is missing")
        if path.stat().st_size != info["bytes"]:
            raise CheckpointError(f"{name} has {path.stat().st_size} bytes, not {info['bytes']}")
        if sha256(path) != info["sha256"]:
            raise CheckpointError(f"{name} does not match its sha256")
    return manifest


def latest_good(run_dir: Path, say: Callable[[str], None]) -> tuple[Path, dict[str, Any]]:
    """The newest checkpoint of ``run_dir`` that reads back whole; damaged ones are reported by
    ``say`` and set aside (by rank 0, once every process has chosen)."""
    root = run_dir / CHECKPOINTS
    candidates = good_names(root)
    if not candidates:
        raise CheckpointError(f"{run_dir} has no checkpoint to resume from (a run writes them every "
                              f"trainer.checkpoint_every=N steps, and when stopped with Ctrl-C or SIGTERM)")
    damaged, problems = [], []
    chosen: tuple[Path, dict[str, Any]] | None = None
    for folder in candidates:
        try:
            chosen = (folder, verify(folder))
            break
        except CheckpointError as err:
            damaged.append(folder)
            problems.append(f"{folder.name}: {err}")
            later = candidates[candidates.index(folder) + 1:]
            say(f"checkpoint {folder.name} is damaged ({err}); "
                + (f"falling back to {later[0].name}" if later else "no earlier checkpoint"))
    barrier()
    if rank() == 0:
        for folder in damaged:
            aside = folder.with_name(f"damaged-{folder.name}")
            shutil.rmtree(aside, ignore_errors=True)
            os.replace(folder, aside)
    barrier()
    if chosen is None:
        raise CheckpointError(f"no readable checkpoint in {root} ({'; '.join(problems)})")
    return chosen


def load(folder: Path, *, part: tuple[str, Any, bool], optimizer: Any, scheduler: Any, device: Any = "cpu") -> Any:
    """Weights, optimizer, scheduler and RNG states from ``folder``; returns the data generator's state."""
    import torch

    tag, module, _ = part
    me = rank()
    try:
        load_tensors(module, folder / f"{tag}.safetensors")
        optimizer.load_state_dict(torch.load(folder / f"{tag}.optimizer.pt", weights_only=True, map_location=device))
        scheduler.load_state_dict(torch.load(folder / "scheduler.pt", weights_only=True))
        state = torch.load(folder / f"rng-rank-{me:03d}.pt", weights_only=True)
    except FileNotFoundError as err:
        raise CheckpointError(f"checkpoint {folder} has no {Path(err.filename or '?').name} for this process "
                              f"(rank {me}); was it written by a run with another layout?") from None
    except (RuntimeError, ValueError, KeyError) as err:
        raise CheckpointError(f"checkpoint {folder} does not fit this run: {first_line(err)}") from None
    set_rng_state(state)
    return state.get("data")


# -- which run to resume, and whether this command may continue it -----------------------------------

FINISHED = "metrics.json"  #: written last by a run that completed; its outputs are never overwritten
#: the sections whose settings decide what a run computes, compared on resume ...
RESULT_SECTIONS = ("model", "task", "data", "trainer", "weights", "seed")
#: ... except these, which change how it runs, not what it computes (the layout, replicas x
#: stages x accumulation, is compared on its own from the checkpoint's identity)
FREE_SETTINGS = ("data.num_workers", "data.eval_batch_size", "trainer.log_every", "trainer.threads",
                 "trainer.checkpoint_every", "trainer.keep_checkpoints",
                 "model.revision")  # how an hf: model's commit was named; the commit is compared itself


def resume_target(cfg: Any) -> Any:
    """The ``resume.run`` value of a composed config (``resume=...`` on the command line)."""
    resume = cfg.get("resume")
    return resume.get("run") if resume is not None else None


def result_config(cfg: Any) -> dict[str, Any]:
    """The settings that change a run's result, flat (``{"data.batch_size": 8, ...}``), as JSON values.

    Saved in every checkpoint, so a resumed run can be compared with the one that wrote it.
    """
    from omegaconf import OmegaConf

    flat: dict[str, Any] = {}

    def walk(prefix: str, node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk(f"{prefix}.{key}", value)
        elif prefix not in FREE_SETTINGS:
            flat[prefix] = node

    tree = OmegaConf.to_container(cfg, resolve=True)
    for section in RESULT_SECTIONS:
        if section in tree:
            walk(section, tree[section])
    return json.loads(json.dumps(flat, default=str))


def allowed(key: str, patterns: list[str]) -> bool:
    """``key`` is named by ``resume.allow_changes``: itself, a section above it, or a glob."""
    import fnmatch

    return any(key == p or key.startswith(p + ".") or fnmatch.fnmatchcase(key, p) for p in patterns)


def changed_settings(saved: dict[str, Any], now: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """``{key: (checkpoint's value, this command's value)}`` for every setting that differs."""
    missing = object()
    return {k: (saved.get(k), now.get(k)) for k in sorted(set(saved) | set(now))
            if saved.get(k, missing) != now.get(k, missing)}


def check_resumable(cfg: Any, run_dir: Path) -> dict[str, tuple[Any, Any]]:
    """Stop with one line unless ``cfg`` may continue the run in ``run_dir``: a finished run is
    never resumed (its outputs would be overwritten), and a setting that changes the result must
    equal the checkpoint's unless ``resume.allow_changes`` names it. Returns the allowed changes."""
    finished = run_dir / FINISHED
    if finished.is_file():
        try:
            steps = json.loads(finished.read_text()).get("steps")
        except (OSError, ValueError, AttributeError):
            steps = None
        raise CheckpointError(
            f"resume={run_dir}: that run is finished ({FINISHED}{f', {steps} steps' if steps is not None else ''}) "
            f"and garden never overwrites a finished run's outputs; start a new run (weights={run_dir / 'model'} "
            "starts from its trained model)")
    manifest = identity_of(run_dir)
    saved = (manifest or {}).get("config")
    if saved is None:  # written before checkpoints recorded their config
        return {}
    changes = changed_settings(saved, result_config(cfg))
    permitted = list(cfg.resume.allow_changes or [])
    refused = {k: v for k, v in changes.items() if not allowed(k, permitted)}
    if refused:
        listed = ", ".join(f"{k}={json.dumps(old)} (now {json.dumps(new)})" for k, (old, new) in refused.items())
        raise CheckpointError(
            f"resume={run_dir}: the checkpoint was made with {listed}, and that changes what the run computes; "
            f"resume with the run's own settings, or accept the change with "
            f"resume.allow_changes=[{','.join(refused)}]")
    return changes


def identity_of(run_dir: Path) -> dict[str, Any] | None:
    """The newest readable manifest of a run dir (its model, task, layout and config)."""
    for folder in good_names(run_dir / CHECKPOINTS):
        try:
            return json.loads((folder / MANIFEST).read_text())
        except (OSError, ValueError):
            continue
    return None


def wants_resume(value: Any) -> bool:
    return value is not None and str(value).strip().lower() not in OFF


def resume_dir(value: Any, model: str, task: str, outputs: Path = Path("outputs")) -> Path:
    """The run directory ``resume=VALUE`` continues: ``true`` is the unfinished run of ``model``
    and ``task`` under ``outputs/`` checkpointed most recently; anything else is a run directory,
    checked to be a run of the same model and task."""
    value = str(value).strip()
    if value.lower() in LATEST:
        runs, finished = [], []
        for manifest in outputs.glob(f"**/{CHECKPOINTS}/step-*/{MANIFEST}"):
            run = manifest.parent.parent.parent
            found = identity_of(run)
            if found and found.get("model") == model and found.get("task") == task:
                (finished if (run / FINISHED).is_file() else runs).append((manifest.stat().st_mtime, run))
        if not runs:
            done = f" (the latest, {max(finished)[1]}, is finished)" if finished else ""
            raise CheckpointError(f"resume={value}: no unfinished run of model '{model}' (task {task}) with a "
                                  f"checkpoint under {outputs.resolve()}{done}; start it without resume, or pass "
                                  "resume=RUN_DIR")
        return max(runs)[1].resolve()
    run = Path(value).expanduser()
    if not run.is_dir():
        raise CheckpointError(f"resume={value}: no such run directory")
    found = identity_of(run)
    if found is None:
        raise CheckpointError(f"resume={value}: {run} has no checkpoint (a run writes them every "
                              "trainer.checkpoint_every=N steps, and when stopped with Ctrl-C or SIGTERM)")
    if (found.get("model"), found.get("task")) != (model, task):
        raise CheckpointError(f"resume={value} is a run of model '{found.get('model')}' (task {found.get('task')}), "
                              f"not of model '{model}' (task {task}); pass a run of '{model}', or resume=true "
                              "for its latest one")
    return run.resolve()


def known_model(name: str) -> str:
    """``name`` once the registry knows it; an ``hf:`` model by its name without a revision (the
    name its runs record: the commit a run used is checked on resume, whatever named it)."""
    return name.partition("@")[0] if name.startswith(HF) else registry.get(name).name


def override_value(overrides: list[str], key: str) -> str | None:
    """The value ``key=VALUE`` sets among ``overrides`` (the last one wins, quotes removed)."""
    found = None
    for o in overrides:
        name, sep, value = o.partition("=")
        if sep and name == key:
            found = value.strip().strip("'\"")
    return found


def resume_overrides(overrides: list[str]) -> list[str]:
    """``overrides`` with ``resume=`` resolved to a run directory and Hydra's run dir pinned to it,
    so the resumed run writes where the stopped one did. ``resume=true`` with
    ``hydra.run.dir=DIR`` continues the run in DIR."""
    picked = choices(overrides)
    value = picked.get("resume.run")
    if not wants_resume(value):
        return overrides
    pinned = override_value(overrides, "hydra.run.dir")
    if pinned and value.strip().lower() in LATEST:
        value = pinned
    folder = resume_dir(value, known_model(model_name(picked)), picked["task"])
    kept = [o for o in overrides if not o.startswith(("resume.run=", "hydra.run.dir="))]
    return [*kept, f"resume.run='{folder}'", f"hydra.run.dir='{folder}'"]
