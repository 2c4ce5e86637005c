"""What every benchmark shares: the machine line, interleaved timing and medians.

The machine these run on is often shared, so absolute times drift with other people's load.
Every benchmark therefore times garden and its baseline *interleaved* in the same process
(A, B, A, B, ...) and reports the median of each, and the ratio of medians; a burst of load
hits both sides alike. The load average is printed at the start and end of each run.

    >>> from common import interleave
    >>> times = interleave({"a": lambda: None, "b": lambda: None}, repeats=3)   # doctest: +SKIP
    >>> sorted(times)                                                           # doctest: +SKIP
    ['a', 'b']
"""

from __future__ import annotations

import contextlib
import os
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]


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
    return sorted({f for f in flags if f in ("amx_bf16", "amx_tile", "avx512_bf16", "avx512f", "avx2")})


def load() -> str:
    try:
        one, five, fifteen = os.getloadavg()
        return f"{one:.2f} {five:.2f} {fifteen:.2f}"
    except OSError:
        return "n/a"


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


def interleave(fns: dict[str, Callable[[], object]], repeats: int) -> dict[str, list[float]]:
    """Call each function once per round, rounds ``repeats`` times, returning the wall times.

    The order within a round rotates, so no side always runs right after a given other one.
    """
    names = list(fns)
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(repeats):
        order = names[r % len(names):] + names[: r % len(names)]
        for name in order:
            start = time.perf_counter()
            fns[name]()
            times[name].append(time.perf_counter() - start)
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
