"""``coverage.json`` and ``docs/coverage.md``, written from the raw results alone (never by hand).

Per task: the architectures of transformers' Auto mapping; those listed apart and left out of
the denominator: the ones that need a package this machine cannot install (their build raises
transformers' "requires the X library"), the speech models transformers files under a text
task's mapping (their head reads audio, which the text task does not feed) and the image judges
it files under image classification (their head reads a text prompt beside the image); how many
train and infer (build, train and infer checks pass); how many pass the 2-stage pipeline
equivalence. An architecture not checked yet counts as not passing.
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Iterable

from garden.coverage.checks import CHECKS, TASKS
from garden.files import write_atomic

SUMMARY = Path("coverage.json")
DOC = Path("docs/coverage.md")
MARKS = {True: "✓", False: "✗", None: "–"}
TARGETS = {"train_infer": 0.9, "pipeline": 0.8}
MISSING_PACKAGE = re.compile(r"requires the (\S+) library")
READS_OTHER = re.compile(r"reads (audio|text) \((\w+)\)")


def latest(records: Iterable[dict]) -> list[dict]:
    """The last record of each (type, task)."""
    found: dict[tuple[str, str], dict] = {}
    for r in records:
        found[r["type"], r["task"]] = r
    return list(found.values())


def passed(record: dict, *checks: str) -> bool:
    return all(record["checks"].get(c, [None])[0] is True for c in checks)


def left_out(record: dict) -> str | None:
    """Why an architecture is listed apart (from its build's error), or None when it counts: the
    package it needs that is not installed, the audio its head reads in a text task, or the text
    prompt an image classifier's head reads."""
    status, detail = (record["checks"].get("build") or [None, ""])[:2]
    if status is not False:
        return None
    package, other = MISSING_PACKAGE.search(detail or ""), READS_OTHER.search(detail or "")
    return f"needs {package.group(1)}" if package else f"reads {other.group(1)}: {other.group(2)}" if other else None


def first_failure(record: dict) -> str:
    for check in CHECKS:
        status, detail = (record["checks"].get(check) or [None, ""])[:2]
        if status is False:
            return f"{check}: {detail}"
    return ""


def environment() -> dict[str, Any]:
    def installed(name: str) -> str | None:
        try:
            return version(name)
        except PackageNotFoundError:
            return None

    cpu = "unknown"
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                            cwd=Path(__file__).resolve().parents[2]).stdout.strip() or "unknown"
    return {"garden": installed("garden"), "torch": installed("torch"), "transformers": installed("transformers"),
            "python": platform.python_version(), "cpu": cpu, "cores": os.cpu_count(),
            "date": time.strftime("%Y-%m-%d"), "commit": commit}


def summarise(records: list[dict], mapping: dict[str, list[str]]) -> dict[str, dict[str, Any]]:
    counts = {}
    for task in TASKS:
        mine = {r["type"]: r for r in records if r["task"] == task}
        total = mapping[task]
        apart = {t: why for t in total if t in mine and (why := left_out(mine[t]))}
        counted = len(total) - len(apart)
        train = sum(passed(mine[t], "build", "train", "infer") for t in total if t in mine and t not in apart)
        piped = sum(passed(mine[t], "pipeline") for t in total if t in mine and t not in apart)
        counts[task] = {"architectures": len(total), "checked": sum(t in mine for t in total),
                        "left_out": apart, "counted": counted,
                        "train_infer": train, "train_infer_share": round(train / counted, 4) if counted else 0.0,
                        "pipeline": piped, "pipeline_share": round(piped / counted, 4) if counted else 0.0}
    return counts


def write_report(records: list[dict], mapping: dict[str, list[str]], summary: Path = SUMMARY,
                 doc: Path = DOC) -> dict[str, dict[str, Any]]:
    records = latest(records)
    counts = summarise(records, mapping)
    env = environment()
    document = {"environment": env, "targets": TARGETS, "tasks": counts,
                "results": sorted(records, key=lambda r: (TASKS.index(r["task"]), r["type"]))}
    write_atomic(summary, json.dumps(document, indent=1) + "\n")
    doc.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(doc, markdown(document, mapping))
    return {t: {k: v for k, v in c.items() if k != "left_out"} for t, c in counts.items()}


def markdown(document: dict, mapping: dict[str, list[str]]) -> str:
    env, counts = document["environment"], document["tasks"]
    by_task: dict[str, dict[str, dict]] = {}
    for r in document["results"]:
        by_task.setdefault(r["task"], {})[r["type"]] = r
    lines = [
        "# Coverage: transformers' architectures garden runs with no plugin",
        "",
        "Generated by `python -m garden coverage` (`make coverage`) from `coverage-results.jsonl`; do not edit.",
        f"garden {env['garden']}, torch {env['torch']}, transformers {env['transformers']}, Python {env['python']}; "
        f"{env['cpu']}, {env['cores']} cores; {env['date']}, commit {env['commit'][:10]}.",
        "",
        "Each architecture of the task's Auto mapping is built from its default config shrunk by generic",
        "rules (`garden/coverage/shrink.py`: 2 layers, width 32, 2 heads, ...) and checked",
        "(`garden/coverage/checks.py`): **build**, one **train** step, **infer**, save and **reload**",
        "with equal outputs, blocks found and a 2-stage **plan**, a 2-stage `torch.distributed.pipelining`",
        "forward equal to local and an SGD step equal to local's (**pipeline**, compared as",
        "`tests/equivalence.py` compares steps), and the same step through the poptorch stand-in (**ipu**).",
        "Left out of the denominator and listed apart: architectures that need a package this machine",
        "cannot install, and speech models transformers files under a text task's mapping (their head reads",
        "audio, which that task does not feed). One not checked yet counts as failing.",
        "",
        "| task | architectures | left out | checked | train + infer | pipeline (2 stages) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for task in TASKS:
        c = counts[task]
        lines.append(f"| {task} | {c['architectures']} | {len(c['left_out'])} | {c['checked']} | "
                     f"{c['train_infer']} ({c['train_infer_share']:.0%}) | {c['pipeline']} ({c['pipeline_share']:.0%}) |")
    lines += ["", f"Targets: train + infer {TARGETS['train_infer']:.0%}, pipeline {TARGETS['pipeline']:.0%} of each task.", ""]
    for task in TASKS:
        c = counts[task]
        lines += [f"## {task}", ""]
        if c["left_out"]:
            lines += ["Left out: " + ", ".join(f"{t} ({why})" for t, why in sorted(c["left_out"].items())), ""]
        lines += ["| architecture | " + " | ".join(CHECKS) + " | first failure |",
                  "|---|" + "---|" * len(CHECKS) + "---|"]
        for model_type in mapping[task]:
            record = by_task.get(task, {}).get(model_type)
            if record is None:
                lines.append(f"| {model_type} | " + " | ".join("·" for _ in CHECKS) + " | not checked yet |")
                continue
            marks = [MARKS[(record["checks"].get(check) or [None])[0]] for check in CHECKS]
            why = first_failure(record).replace("|", "\\|")
            lines.append(f"| {model_type} | " + " | ".join(marks) + f" | {why} |")
        lines.append("")
    return "\n".join(lines)
