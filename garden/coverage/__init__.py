"""How many of transformers' architectures garden runs with no plugin, measured per task.

``python -m garden coverage`` (``make coverage``) takes every model type of transformers' Auto
mappings for garden's tasks, shrinks its default config by generic rules (:mod:`.shrink`), and
runs the checks of :mod:`.checks` on it (build, a training step, inference, save and reload, a
2-stage plan, a 2-stage ``torch.distributed.pipelining`` forward and SGD step equal to local,
the same through the poptorch stand-in). Two worker processes (:mod:`.worker`) go through the
(task, architecture) cases; a case that runs past ``--timeout`` seconds is stopped and recorded,
and a fresh pair goes on with the next.

Results accumulate as JSON lines (``coverage-results.jsonl`` by default; a rerun skips the
architectures it holds, so a long run can be done in pieces), and :mod:`.report` turns them into
``coverage.json`` (with the garden, torch and transformers versions) and ``docs/coverage.md``::

    python -m garden coverage --tasks asr,audio-classify --timeout 300
    python -m garden coverage --report            # only rewrite coverage.json and docs/coverage.md
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from garden.coverage.checks import TASKS, head_of
from garden.coverage.report import DOC, SUMMARY, latest, write_report
from garden.errors import ConfigError

RESULTS = Path("coverage-results.jsonl")


def architectures(row: str) -> list[str]:
    """Every model type of the Auto mapping behind a coverage row (a task; ``image-classify``)."""
    from garden.families.auto import mapping

    return sorted(mapping(head_of(row)[1].mapping))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_pair(cases: list[tuple[str, str]], results: Path, timeout: float) -> None:
    """Check each ``(task, type)`` case with a fresh pair of workers until all have a record; a
    case that runs past ``timeout`` seconds, or whose workers die, gets a record saying so."""
    current = results.with_name(results.name + ".current")
    pending = list(cases)
    earlier = len(read(results))  # records of an earlier run (``--again``) do not count as done
    while pending:
        port = free_port()
        env = {**os.environ, "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
               "GARDEN_COVERAGE_TIMEOUT": str(timeout), "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
        current.unlink(missing_ok=True)
        workers = [subprocess.Popen([sys.executable, "-m", "garden.coverage.worker", str(results),
                                     *(f"{task}:{model_type}" for task, model_type in pending)],
                                    env={**env, "RANK": str(rank)}, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True, start_new_session=True)
                   for rank in (0, 1)]
        stuck = None
        while any(w.poll() is None for w in workers):
            time.sleep(2)
            marked = marker(current)[0]
            if len(marked) == 3 and time.time() - float(marked[2]) > timeout:
                stuck = marked
                for w in workers:
                    try:
                        os.killpg(w.pid, signal.SIGKILL)
                    except ProcessLookupError:  # it had ended on its own meanwhile
                        pass
        errors = [w.stderr.read() if w.stderr else "" for w in workers]
        done = {(r["task"], r["type"]) for r in read(results)[earlier:]}
        found, so_far = marker(current)
        marked = stuck or found
        blamed = tuple(marked[0].split(":", 1)) if marked else None
        if blamed and blamed not in done:
            task, model_type = blamed
            why = (f"stopped after {timeout:.0f} s in the {marked[1]} check" if stuck else
                   f"the workers died in the {marked[1]} check: {last_line(errors)}")
            append(results, {"type": model_type, "task": task, "checks": {**so_far, marked[1]: (False, why)},
                             "seconds": None})
            done.add(blamed)
        left = [case for case in pending if case not in done]
        if left == pending:  # nothing progressed and nothing to blame: give up on these
            for task, model_type in left:
                append(results, {"type": model_type, "task": task, "seconds": None,
                                 "checks": {"build": (False, f"the workers did not start: {last_line(errors)}")}})
            return
        pending = left


def marker(current: Path) -> tuple[list[str], dict]:
    """What the workers' marker file says: ``[case, check, since]`` and the checks done so far."""
    try:
        lines = current.read_text().splitlines()
    except OSError:
        return [], {}
    try:
        so_far = json.loads(lines[1]) if len(lines) > 1 else {}
    except ValueError:
        so_far = {}
    return (lines[0].split() if lines else []), so_far


def last_line(texts: list[str]) -> str:
    lines = [ln.strip() for text in texts for ln in text.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "no message"


def read(results: Path) -> list[dict]:
    if not results.exists():
        return []
    return [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines() if line.strip()]


def append(results: Path, record: dict) -> None:
    with open(results, "a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n")


def main(argv: list[str]) -> int:
    """``python -m garden coverage [--tasks T,...] [--types A,...] [--timeout S] [--results PATH]
    [--again] [--report]``: check what has no record yet, then write the report."""
    p = argparse.ArgumentParser(prog="python -m garden coverage")
    p.add_argument("--tasks", default=",".join(TASKS), help=f"comma-separated, of: {', '.join(TASKS)}")
    p.add_argument("--types", default="", help="only these model types (comma-separated)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds one check may take (default 300)")
    p.add_argument("--results", default=str(RESULTS), help="the raw JSON lines (default coverage-results.jsonl)")
    p.add_argument("--again", action="store_true", help="check again the architectures already recorded")
    p.add_argument("--report", action="store_true", help="only write coverage.json and docs/coverage.md")
    p.add_argument("--summary", default=str(SUMMARY))
    p.add_argument("--doc", default=str(DOC))
    args = p.parse_args(argv)
    tasks = [t for t in args.tasks.split(",") if t]
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        raise ConfigError(f"--tasks {unknown[0]} is not one of: {', '.join(TASKS)}")
    results = Path(args.results)
    if not args.report:
        wanted = {t for t in args.types.split(",") if t}
        done = set() if args.again else {(r["task"], r["type"]) for r in latest(read(results))}
        cases = [(task, t) for task in tasks for t in architectures(task)
                 if (not wanted or t in wanted) and (task, t) not in done]
        if cases:
            print(f"coverage: checking {len(cases)} architecture x task cases", flush=True)
            run_pair(cases, results, args.timeout)
    counts = write_report(read(results), {t: architectures(t) for t in TASKS}, Path(args.summary), Path(args.doc))
    for task, row in counts.items():
        print(f"{task}: {row}")
    return 0
