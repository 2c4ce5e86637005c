"""garden on the Poplar SDK's stack (constraints-sdk.txt: Python 3.8, torch 2.0.1, transformers
4.29.2): the code an IPU run imports reads as Python 3.8 (vermin), and every seed transformer
family trains and evaluates on two pipelined IPUs through the poptorch stand-in.

``make test-sdk`` runs this module in .venv-sdk with ``GARDEN_SDK_SMOKE=1``; ``make test`` runs
the Python 3.8 check and leaves the family runs to it (they are the SDK venv's reason to exist).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

FAKE = ROOT / "tests" / "fake_poptorch"
#: the transformers families garden seeds, each with its first task
FAMILIES = [("vit", "classify"), ("bert", "classify"), ("roberta", "classify"), ("camembert", "classify"),
            ("deberta", "classify"), ("gpt2", "causal-lm"), ("bart", "summarize"), ("t5", "text2text"),
            ("wav2vec2", "asr"), ("hubert", "asr"), ("lxmert", "vqa")]


def sdk_sources() -> list[str]:
    """What an IPU run imports: the core, the transformers plugins, the stand-in (not garden_graph)."""
    plugins = sorted(str(p) for p in (ROOT / "plugins").glob("*/garden_*") if p.is_dir()
                     and p.name != "garden_graph" and not p.name.endswith(".egg-info"))
    return [str(ROOT / "garden"), *plugins, str(FAKE)]


def test_what_an_ipu_run_imports_reads_as_python_3_8():
    vermin = shutil.which("vermin", path=str(Path(sys.executable).parent)) or shutil.which("vermin")
    assert vermin, "vermin is a dev dependency (pyproject [dev], constraints.txt)"
    result = subprocess.run([vermin, "-t=3.8-", "--violations", "--no-tips", *sdk_sources()],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_python_3_8_check_can_fail(tmp_path):
    vermin = shutil.which("vermin", path=str(Path(sys.executable).parent)) or shutil.which("vermin")
    (tmp_path / "new.py").write_text('print("garden_bert".removeprefix("garden_"))\nimport zoneinfo\n')
    result = subprocess.run([vermin, "-t=3.8-", "--violations", "--no-tips", str(tmp_path)],
                            capture_output=True, text=True)
    assert result.returncode != 0 and "zoneinfo" in result.stdout


smoke = pytest.mark.skipif(os.environ.get("GARDEN_SDK_SMOKE") != "1",
                           reason="the family runs on the SDK's stack belong to make test-sdk (GARDEN_SDK_SMOKE=1)")


@smoke
@pytest.mark.slow
@pytest.mark.parametrize(("model", "task"), FAMILIES, ids=[m for m, _ in FAMILIES])
def test_each_seed_family_trains_on_two_pipelined_ipus(tmp_path, model, task):
    from importlib.metadata import version

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(FAKE), os.environ.get("PYTHONPATH", "")]),
           "FAKE_POPTORCH_TORCH": version("torch"), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1",
           "TRANSFORMERS_VERBOSITY": "error"}
    args = [f"model={model}", f"task={task}", "preset=smoke", "weights=random", "backend=ipu",
            "ipu.layers_per_ipu=[-1,-1]", "ipu.gradient_accumulation_steps=16", "data.batch_size=16",
            "data.eval_batch_size=4", "trainer.max_steps=2", "data.limit=16", "data.eval_limit=8",
            f"hydra.run.dir={tmp_path / 'run'}"]
    result = subprocess.run([sys.executable, "-m", "garden", *args], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["backend"] == "ipu" and metrics["steps"] == 2
