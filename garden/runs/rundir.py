"""A run directory belongs to one run, and to one process at a time.

Runs are started in parallel all the time (a ``for`` loop of ``python -m garden ... &``, a job
array, two terminals), so:

- a new run's default folder (``outputs/DATE/HH-MM-SS-xxxxxx``, and a sweep's
  ``multirun/DATE/HH-MM-SS-xxxxxx``) ends in a random suffix drawn per process
  (:func:`garden.config.unique_suffix`, the ``${garden_unique:}`` resolver of
  ``conf/config.yaml``), so two runs started in the same second get two folders;
- :func:`claim` takes an advisory lock (``flock``) on ``RUN_DIR/.garden.lock`` before the run
  writes anything and holds it while the run lasts. The kernel drops it when the process ends,
  however it ends (a SIGKILLed run can be resumed at once). A second process on the same folder
  stops with one line naming the holder (pid, host, start time);
- a folder that already holds a run (``metrics.json``, ``model/``, ``checkpoints/``,
  ``predictions.jsonl``) is only ever continued by ``resume=``, never reused by a new run.

Under torchrun the processes of one job share one folder; only global rank 0 (``RANK``) locks it.

    >>> held = claim(Path("outputs/2026-12-01/03-31-53-4f2a9c"), resuming=False)   # doctest: +SKIP
"""

from __future__ import annotations

import datetime
import errno
import json
import os
import shutil
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from garden.config import unique_suffix
from garden.console import console
from garden.errors import GardenError

LOCK = ".garden.lock"
#: what a run leaves in its folder; any of them means the folder holds a run
RUN_FILES = ("metrics.json", "predictions.jsonl", "model", "checkpoints")
SWEEP_SUMMARY = "summary.json"


class RunDirError(GardenError):
    """A run directory that belongs to another run or another process."""


def new_run_dir(root: Path = Path("outputs")) -> Path:
    """``outputs/DATE/HH-MM-SS-xxxxxx``, the folder a run gets when none is given."""
    now = datetime.datetime.now()
    return root / now.strftime("%Y-%m-%d") / f"{now:%H-%M-%S}-{unique_suffix()}"


def owns_run_dirs() -> bool:
    """Whether this process locks the run directory: the only one, or global rank 0 of a torchrun job."""
    return int(os.environ.get("RANK", "0") or 0) == 0


def run_files(run_dir: Path) -> list[str]:
    """What in ``run_dir`` shows that a run already wrote there (empty for a fresh folder)."""
    found = []
    for name in RUN_FILES:
        path = run_dir / name
        if path.is_file() or (path.is_dir() and any(path.iterdir())):
            found.append(f"{name}/" if path.is_dir() else name)
    return found


@dataclass
class Claim:
    """The lock on one run directory, held from :func:`claim` until :meth:`release` or the process ends."""

    run_dir: Path
    fd: int | None
    checked: bool = False  #: a resume of this run has been checked against its checkpoint

    def release(self) -> None:
        _held.pop(self.run_dir, None)
        if self.fd is not None:
            os.close(self.fd)  # closing the last descriptor drops the flock
            self.fd = None


_held: dict[Path, Claim] = {}


def claim(run_dir: Path, *, resuming: bool, key: str = "hydra.run.dir") -> Claim | None:
    """Lock ``run_dir`` for this run, or stop with one line.

    Refuses a folder another process holds (naming it), and a folder that already holds a run
    unless ``resuming`` it (``key`` is the setting that named the folder, for the message).
    Returns the claim (the same one when this process already holds it), or ``None`` on a
    torchrun rank other than 0, which writes into rank 0's folder under rank 0's lock.
    """
    run_dir = Path(run_dir).resolve()
    if run_dir in _held:
        return _held[run_dir]
    if not owns_run_dirs():
        return None
    run_dir.mkdir(parents=True, exist_ok=True)
    fd: int | None = os.open(run_dir / LOCK, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except (BlockingIOError, PermissionError):
        holder = read_holder(fd)
        os.close(fd)
        fix = (f"wait for it to end (or stop it: kill {holder.get('pid')}), then resume={run_dir}" if resuming
               else "run again without " + key + "=, or give a new folder")
        raise RunDirError(f"{run_dir} is in use by {describe(holder)}; {fix}") from None
    except (ImportError, OSError) as err:  # no fcntl (Windows), or a file system without locks
        if isinstance(err, OSError) and err.errno not in (errno.ENOLCK, errno.ENOSYS, errno.EOPNOTSUPP,
                                                          errno.EINVAL):
            os.close(fd)
            raise
        console.print(f"[yellow]note:[/] cannot lock {run_dir / LOCK} ({err}); another process using this "
                      "folder at the same time would not be noticed (docs/scaling.md: concurrent runs)")
    held = Claim(run_dir, fd)
    if not resuming:
        found = run_files(run_dir)
        if found:
            held.release()
            raise RunDirError(f"{key}={run_dir} already holds a run ({', '.join(found)}); a new run never "
                              f"reuses one: give a new folder, or continue that run with resume={run_dir}")
    if fd is not None:
        write_holder(fd)
    _held[run_dir] = held
    return held


def holds_only_setup(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds nothing but what is written before a run starts: Hydra's
    ``.hydra/`` and log, and the lock."""
    return all(p.name in (".hydra", LOCK) or p.suffix == ".log" for p in run_dir.iterdir())


def remove_unstarted(run_dir: Path) -> None:
    """Remove the folder of a run that stopped before it started (a refused weight source, a
    bad setting only the model could tell), so failed commands leave no empty run folders
    behind; a folder holding anything else is left as it is, and so is its date folder unless
    this leaves it empty."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir() or not holds_only_setup(run_dir):
        return
    shutil.rmtree(run_dir, ignore_errors=True)
    try:
        run_dir.parent.rmdir()  # a date folder left empty
    except OSError:
        pass


def write_holder(fd: int) -> None:
    """Who holds the lock, for the message a second process prints."""
    record = {"pid": os.getpid(), "host": socket.gethostname(),
              "started": datetime.datetime.now().astimezone().isoformat(timespec="seconds")}
    os.ftruncate(fd, 0)
    os.pwrite(fd, (json.dumps(record) + "\n").encode(), 0)


def read_holder(fd: int) -> dict:
    """The holder's record; the holder writes it just after locking, so an empty file is read again."""
    for _ in range(20):
        try:
            text = os.pread(fd, 4096, 0).decode(errors="replace")
            if text.strip():
                return json.loads(text)
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    return {}


def describe(holder: dict) -> str:
    if not holder:
        return "another process (it has not said which yet)"
    return f"pid {holder.get('pid')} on host {holder.get('host')} (started {holder.get('started')})"


def check_new_sweep(sweep_dir: Path) -> None:
    """A sweep given ``hydra.sweep.dir`` starts in a folder that holds no earlier sweep's jobs."""
    sweep_dir = Path(sweep_dir)
    if not sweep_dir.is_dir():
        return
    jobs = sorted(p.name for p in sweep_dir.iterdir() if p.is_dir() and p.name.isdigit() and run_files(p))
    if jobs or (sweep_dir / SWEEP_SUMMARY).is_file():
        what = f"jobs {', '.join(jobs)}" if jobs else SWEEP_SUMMARY
        raise RunDirError(f"hydra.sweep.dir={sweep_dir} already holds a sweep ({what}); a new sweep never "
                          "reuses one: give a new folder")
