"""The README's first command, ``make run``: the model and task in the Makefile's ``RUN_ARGS``
trained by their recipe learn (whatever model the Makefile names)."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT, garden_cli


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_readmes_make_run_learns_the_digits(tmp_path):
    """``make run``, the README's first command: the tiny ViT trained from scratch by its recipe
    (10 epochs over the digits, seed 0) classifies the held-out digits far above chance.

    Chance is 0.1 (ten digits, about as many of each). The recipe reached 0.894 where
    bench/results.py measured it (the registry's declared result) and 0.928 here on one thread;
    with ``trainer.lr=0`` (no learning) it stays at 0.070. 0.7 is seven times chance and leaves
    0.19 for another CPU's rounding to lead the 900 steps elsewhere, while a run that does not
    learn (a broken loss, labels detached from images, no optimizer step) cannot reach it.
    One thread: with two, torch's workers spin against other processes on a busy machine (over
    28 minutes here, against 2 on one thread).
    """
    [line] = [ln for ln in (ROOT / "Makefile").read_text().splitlines() if ln.startswith("RUN_ARGS ?=")]
    result = garden_cli(*line.split("?=", 1)[1].split(), cwd=tmp_path, env={"OMP_NUM_THREADS": "1"}, timeout=800)
    assert result.returncode == 0, result.output
    metrics = json.loads(next(tmp_path.glob("outputs/*/*/metrics.json")).read_text())
    assert (metrics["variant"], metrics["weights"], metrics["eval_examples"], metrics["steps"]) == ("tiny", "random", 359, 900)
    assert metrics["eval"]["accuracy"] > 0.7, metrics["eval"]
