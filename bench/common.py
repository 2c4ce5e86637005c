"""What every benchmark shares: the machine record, interleaved timing, medians and raw results.

The machine these run on is often shared, so absolute times drift with other people's load.
Every benchmark therefore times garden and its baseline *interleaved* in the same process
(A, B, A, B, ...) and reports the median of each, and the ratio of medians; a burst of load
hits both sides alike. The load average is printed at the start and end of each run.

A full run writes its raw measurements to ``bench/results/<script>.json`` with the machine
record (:func:`machine_record`: CPU model and flags, cores, versions, date, git commit, load);
``bench/report.py`` renders docs/benchmarks.md's tables from those files with each script's own
``report(record)``, the same function that prints the script's summary.

    >>> from common import interleave
    >>> times = interleave({"a": lambda: None, "b": lambda: None}, repeats=3)   # doctest: +SKIP
    >>> sorted(times)                                                           # doctest: +SKIP
    ['a', 'b']
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import warnings
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Callable

from garden.files import write_atomic

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
#: the CPU features that decide which precision path is fast (bf16: AMX or AVX512-BF16; int8: VNNI)
FEATURES = ("amx_bf16", "amx_int8", "amx_tile", "avx512_bf16", "avx512_vnni", "avx_vnni", "avx512f", "avx2")


@contextlib.contextmanager
def silenced():
    """Quiet the library chatter (progress bars, warnings) around a timed or set-up call."""
    with open(os.devnull, "w") as null, contextlib.redirect_stdout(null), contextlib.redirect_stderr(null), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cpu_flags() -> list[str]:
    try:
        flags = Path("/proc/cpuinfo").read_text().split()
    except OSError:
        return []
    return sorted({f for f in flags if f in FEATURES})


def bf16_path(flags: list[str]) -> bool:
    """Whether a CPU with these flags multiplies bf16 in hardware (AMX or AVX512-BF16)."""
    return "amx_bf16" in flags or "avx512_bf16" in flags


def load() -> str:
    try:
        one, five, fifteen = os.getloadavg()
        return f"{one:.2f} {five:.2f} {fifteen:.2f}"
    except OSError:
        return "n/a"


def loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def git_commit() -> str:
    """HEAD's commit, with ``+changes`` when tracked files differ from it (the figures then come
    from code that is not exactly that commit)."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()

    commit = git("rev-parse", "HEAD") or "unknown"
    return commit + ("+changes" if git("status", "--porcelain", "--untracked-files=no") else "")


def machine_record(threads: int | None = None) -> dict[str, Any]:
    """The facts a figure depends on: CPU model and flags, cores, versions, threads, date, commit, load."""
    record: dict[str, Any] = {"cpu": cpu_model(), "flags": cpu_flags(), "cores": os.cpu_count(),
                              "python": platform.python_version()}
    for name in ("torch", "transformers", "onnxruntime", "openvino"):
        try:  # the installed versions, whether or not this script imported them
            record[name] = version(name)
        except PackageNotFoundError:
            pass
    torch = sys.modules.get("torch")
    if torch is not None:
        record["threads"] = threads if threads is not None else torch.get_num_threads()
    record.update(date=time.strftime("%Y-%m-%d %H:%M:%S"), commit=git_commit(), load_start=loadavg())
    return record


def machine_line(m: dict[str, Any]) -> str:
    """One line for docs: ``AMD EPYC · 2 cores · flags avx2 · torch 2.13.0 · ... · load 1.2-3.4``."""
    parts = [m["cpu"], f"{m['cores']} cores", f"flags {','.join(m['flags']) or '-'}",
             "bf16 path: " + ("yes" if bf16_path(m["flags"]) else "no (fp32 only is fast)")]
    parts += [f"{k} {m[k]}" for k in ("python", "torch", "transformers", "onnxruntime", "openvino") if k in m]
    if "threads" in m:
        parts.append(f"{m['threads']} threads")
    loads = [x[0] for x in (m.get("load_start"), m.get("load_end")) if x]
    if loads:
        parts.append("load avg (1 min) " + " → ".join(f"{x:.1f}" for x in loads))
    parts.append(f"{m['date'][:10]}, commit {m['commit'][:10]}{'+changes' if m['commit'].endswith('+changes') else ''}")
    return " · ".join(parts)


def add_save_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--save", metavar="PATH", default=None,
                        help="where the raw results go (default: bench/results/<script>.json for a full run; "
                             "a --quick run saves only when given a path)")
    parser.add_argument("--no-save", action="store_true", help="print only")


def save(name: str, record: dict[str, Any], args: argparse.Namespace) -> Path | None:
    """Write ``record`` (with the load at the end) where ``--save`` says, atomically; None if not saved."""
    record["machine"]["load_end"] = loadavg()
    if args.no_save or (getattr(args, "quick", False) and not args.save):
        return None
    path = Path(args.save) if args.save else RESULTS / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(record, indent=1) + "\n")
    print(f"raw results: {path}")
    return path


def machine(threads: int | None = None) -> str:
    """One line naming the machine, the Python/torch versions (if imported) and the load."""
    parts = [cpu_model(), f"{os.cpu_count()} cores", f"flags {','.join(cpu_flags()) or '-'}",
             f"python {platform.python_version()}"]
    torch = sys.modules.get("torch")
    if torch is not None:
        parts.append(f"torch {torch.__version__}")
        parts.append(f"threads {threads if threads is not None else torch.get_num_threads()}")
    transformers = sys.modules.get("transformers")
    if transformers is not None:
        parts.append(f"transformers {transformers.__version__}")
    parts.append(f"load avg {load()}")
    return " · ".join(parts)


def header(title: str, argv: list[str] | None = None, threads: int | None = None) -> None:
    print(f"# {title}")
    print(f"command: python {' '.join(argv if argv is not None else sys.argv)}")
    print(f"machine: {machine(threads)}")
    print(f"date: {time.strftime('%Y-%m-%d %H:%M:%S')}")
    sys.stdout.flush()


def interleave(fns: dict[str, Callable[[], object]], repeats: int, start: int = 0,
               settle: float = 0.2) -> dict[str, list[float]]:
    """Call each function once per round, rounds ``repeats`` times, returning the wall times.

    Each round takes its own order (a shuffle seeded by the round's number, ``start`` first), so
    no side always runs right after a given other one: a runtime whose threads keep spinning after
    a call (ONNX Runtime's, OpenVINO's) would otherwise always slow the same neighbour. Each call
    starts ``settle`` seconds after the one before it, untimed.
    """
    import random

    names = list(fns)
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(start, start + repeats):
        order = list(names)
        random.Random(r).shuffle(order)
        for name in order:
            time.sleep(settle)
            began = time.perf_counter()
            fns[name]()
            times[name].append(time.perf_counter() - began)
    return times


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def spread(xs: list[float]) -> str:
    """``median (min-max)`` in ms or s."""
    def fmt(x: float) -> str:
        return f"{x * 1e3:.0f} ms" if x < 1 else f"{x:.2f} s"

    return f"{fmt(median(xs))} ({fmt(min(xs))}-{fmt(max(xs))})"


def table(rows: list[list[str]], head: list[str]) -> str:
    """A GitHub-flavoured markdown table, so output pastes straight into docs/benchmarks.md."""
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    line = lambda r: "| " + " | ".join(str(x).ljust(w) for x, w in zip(r, widths)) + " |"  # noqa: E731
    return "\n".join([line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)])


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"
