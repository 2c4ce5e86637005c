"""backend=ipu, run through a recording double of poptorch (tests/fake_poptorch): the stage plan
becomes BeginBlock annotations, the ``ipu`` group becomes poptorch.Options as optimum-graphcore
builds them, and one training step through the double moves the weights exactly as a local step."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

FAKE = ROOT / "tests" / "fake_poptorch"
# as in test_pipeline: lr=1e-3 keeps a 1e-5 tolerance on the weights meaningful after one AdamW step
ONE_STEP = ("model=vit", "task=classify", "preset=smoke", "weights=random", "trainer.max_steps=1",
            "trainer.lr=0.001", "trainer.warmup_steps=0", "trainer.eval=false", "data.batch_size=8")
INFER = ("model=vit", "task=classify", "mode=infer", "model.variant=tiny", "weights=random",
         "data.limit=16", "data.eval_limit=16", "infer.precision=fp32")


def with_fake(log: Path) -> dict:
    return {"PYTHONPATH": os.pathsep.join([str(FAKE), os.environ.get("PYTHONPATH", "")]),
            "FAKE_POPTORCH_LOG": str(log)}


def start(where: Path, *args: str, env: dict | None = None) -> subprocess.Popen:
    """``python -m garden ARGS`` in ``where``, started now and awaited by :func:`finish`."""
    where.mkdir(parents=True, exist_ok=True)
    full = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200", "TRANSFORMERS_VERBOSITY": "error",
            "OMP_NUM_THREADS": "1", **(env or {})}
    return subprocess.Popen([sys.executable, "-m", "garden", *args], cwd=where, env=full, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finish(proc: subprocess.Popen) -> tuple[int, str]:
    out, err = proc.communicate(timeout=300)
    return proc.returncode, out + err


def run_folder(where: Path) -> Path:
    [metrics] = where.glob("outputs/*/*/metrics.json")
    return metrics.parent


def calls(log: list[dict], name: str, options: int | None = None) -> list[dict]:
    return [e for e in log if e["call"] == name and (options is None or e.get("options") == options)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every subprocess this module needs, started together (each is mostly Python start-up)."""
    base = tmp_path_factory.mktemp("ipu")
    cache = base / "cache"
    procs = {
        "local": start(base / "local", *ONE_STEP, "backend=local"),
        "ipu": start(base / "ipu", *ONE_STEP, "backend=ipu", "ipu.layers_per_ipu=[-1,-1]",
                     "ipu.recompute_checkpoint_every_layer=true", "ipu.matmul_proportion=[0.1,0.3]",
                     f"ipu.executable_cache_dir={cache}", env=with_fake(base / "ipu.json")),
        "infer_auto_fake": start(base / "infer_fake", *INFER, "backend=auto", "ipu.layers_per_ipu=[1,1,1,1]",
                                 env=with_fake(base / "infer.json")),
        "infer_auto_plain": start(base / "infer_plain", *INFER, "backend=auto"),
        "missing": start(base / "missing", *ONE_STEP, "backend=ipu"),
    }
    results = {name: finish(proc) for name, proc in procs.items()}
    return base, results


def log_of(base: Path, name: str) -> list[dict]:
    return json.loads((base / name).read_text())


def test_backend_ipu_without_poptorch_exits_2_saying_how_to_get_it(runs):
    _, results = runs
    code, output = results["missing"]
    assert code == 2, output
    [line] = [ln for ln in output.splitlines() if "poptorch" in ln]
    assert "Poplar SDK" in line and "backend=local" in line


def test_backend_auto_runs_locally_without_poptorch_and_on_ipus_with_it(runs):
    base, results = runs
    for name in ("infer_auto_plain", "infer_auto_fake"):
        assert results[name][0] == 0, results[name][1]
    assert json.loads((run_folder(base / "infer_plain") / "metrics.json").read_text())["backend"] == "local"
    assert json.loads((run_folder(base / "infer_fake") / "metrics.json").read_text())["backend"] == "ipu"


def test_a_training_step_on_the_ipu_double_equals_the_local_one(runs):
    from safetensors.torch import load_file

    base, results = runs
    for name in ("local", "ipu"):
        assert results[name][0] == 0, results[name][1]
    local, ipu = run_folder(base / "local"), run_folder(base / "ipu")
    local_weights, ipu_weights = load_file(local / "model" / "model.safetensors"), load_file(ipu / "model" / "model.safetensors")
    assert ipu_weights.keys() == local_weights.keys()
    for name, tensor in local_weights.items():
        assert (ipu_weights[name] - tensor).abs().max().item() < 1e-5, name
    local_metrics = json.loads((local / "metrics.json").read_text())
    metrics = json.loads((ipu / "metrics.json").read_text())
    assert metrics["backend"] == "ipu" and metrics["steps"] == 1
    assert abs(metrics["eval"]["loss"] - local_metrics["eval"]["loss"]) < 1e-5
    assert metrics["eval"]["accuracy"] == local_metrics["eval"]["accuracy"]


def test_training_places_blocks_by_the_plan_and_sets_optimums_options(runs):
    from garden.cli.plan import plan_run

    base, _ = runs
    log = log_of(base, "ipu.json")
    _, plan = plan_run(["model=vit", "task=classify", "preset=smoke", "ipu.layers_per_ipu=[-1,-1]"])
    expected = [ipu for ipu, n in enumerate(plan.plan.layers_per_ipu) for _ in range(n)]

    [train] = calls(log, "trainingModel")
    assert calls(log, "inferenceModel")  # the final evaluation runs an inference model
    blocks = calls(log, "BeginBlock")[: len(plan.blocks)]  # placed before the training model
    assert blocks[0] == {"call": "BeginBlock", "user_id": "embeddings", "ipu_id": 0, "module": "ViTEmbeddings"}
    assert [b["ipu_id"] for b in blocks if b["user_id"].startswith("layer.")] == expected
    assert blocks[-1]["user_id"] == "head" and blocks[-1]["ipu_id"] == len(plan.plan.stages) - 1

    options = train["options"]
    assert calls(log, "Options.deviceIterations", options)[0]["args"] == [1]
    assert calls(log, "Options.replicationFactor", options)[0]["args"] == [1]
    assert calls(log, "Options.Training.gradientAccumulation", options)[0]["args"] == [1]
    assert calls(log, "Options.setAvailableMemoryProportion", options)[0]["args"] == [{"IPU0": 0.1, "IPU1": 0.3}]
    assert calls(log, "Options.setExecutionStrategy", options)[0]["args"] == [
        {"strategy": "PipelinedExecution", "args": ["AutoStage.AutoIncrement"]}]
    assert calls(log, "Options.enableExecutableCaching", options)[0]["args"] == [str(base / "cache")]
    [adamw] = calls(log, "optim.AdamW")
    assert adamw["lr"] == 0.001 and adamw["max_grad_norm"] == 1.0  # trainer.lr and trainer.grad_clip

    traced = [e for e in log[log.index(calls(log, "compile")[0]):] if e["call"] in ("stage", "recomputationCheckpoint")]
    traced = traced[: traced.index(next(e for e in traced if e.get("user_id") == "head")) + 1]
    assert sum(e["call"] == "recomputationCheckpoint" for e in traced) == len(expected)  # one per layer
    assert [e["ipu_id"] for e in traced if e["call"] == "stage"] == sorted(e["ipu_id"] for e in traced if e["call"] == "stage")


def test_inference_uses_an_inference_model_sharded_by_the_inference_plan(runs):
    base, results = runs
    log = log_of(base, "infer.json")
    assert not calls(log, "trainingModel")
    [infer] = calls(log, "inferenceModel")
    options = infer["options"]
    assert calls(log, "Options.setExecutionStrategy", options)[0]["args"] == [
        {"strategy": "ShardedExecution", "args": ["AutoStage.AutoIncrement"]}]
    assert calls(log, "Options.outputMode", options)[0]["args"] == ["OutputMode.All"]
    assert not calls(log, "Options.Training.gradientAccumulation", options)
    assert not calls(log, "Options.enableExecutableCaching", options)
    assert not calls(log, "recomputationCheckpoint")
    assert [b["ipu_id"] for b in calls(log, "BeginBlock") if b["user_id"].startswith("layer.")] == [0, 1, 2, 3]
    assert calls(log, "detachFromDevice")  # close() gives the IPUs back
    rows = (run_folder(base / "infer_fake") / "predictions.jsonl").read_text().splitlines()
    assert len(rows) == 16


# --- the option translation, as specifications ------------------------------------------------------

@pytest.fixture
def poptorch(monkeypatch):
    """The double, imported in this process and forgotten afterwards (so backend=auto stays local)."""
    monkeypatch.syspath_prepend(str(FAKE))
    module = importlib.import_module("poptorch")
    yield module
    for name in [n for n in sys.modules if n == "poptorch" or n.startswith("poptorch.")]:
        del sys.modules[name]


def options_of(poptorch, config, training, seed=0) -> dict[str, list]:
    from garden.backends.ipu import poptorch_options

    opts = poptorch_options(config, training, seed, poptorch=poptorch)
    return {e["call"].removeprefix("Options."): e["args"] for e in poptorch.LOG if e.get("options") == opts.id
            and e["call"] != "Options"}


def test_one_matmul_proportion_is_given_to_every_ipu(poptorch):
    from garden.partition.ipu_config import IPUConfig

    got = options_of(poptorch, IPUConfig(layers_per_ipu=[2, 2, 2], matmul_proportion=0.3), training=True)
    assert got["setAvailableMemoryProportion"] == [{"IPU0": 0.3, "IPU1": 0.3, "IPU2": 0.3}]


def test_a_list_of_matmul_proportions_gives_each_ipu_its_own(poptorch):
    from garden.partition.ipu_config import IPUConfig

    got = options_of(poptorch, IPUConfig(layers_per_ipu=[1, 3], matmul_proportion=[0.1, 0.25]), training=True)
    assert got["setAvailableMemoryProportion"] == [{"IPU0": 0.1, "IPU1": 0.25}]


def test_training_pipelines_accumulates_by_the_mean_and_returns_the_configured_output(poptorch):
    from garden.partition.ipu_config import IPUConfig

    config = IPUConfig(layers_per_ipu=[2, 2], gradient_accumulation_steps=8, device_iterations=2,
                       replication_factor=4, output_mode="all")
    got = options_of(poptorch, config, training=True)
    assert got["deviceIterations"] == [2] and got["replicationFactor"] == [4]
    assert got["Training.gradientAccumulation"] == [8]
    assert got["Training.accumulationAndReplicationReductionType"] == ["ReductionType.Mean"]
    assert got["setExecutionStrategy"] == [{"strategy": "PipelinedExecution", "args": ["AutoStage.AutoIncrement"]}]
    assert got["outputMode"] == ["OutputMode.All"]
    assert got["Precision.enableStochasticRounding"] == [True]


def test_inference_shards_uses_the_inference_values_and_returns_every_output(poptorch):
    from garden.partition.ipu_config import IPUConfig

    config = IPUConfig(layers_per_ipu=[2, 2], gradient_accumulation_steps=8, device_iterations=2,
                       inference_layers_per_ipu=[4], inference_device_iterations=16,
                       inference_replication_factor=2, matmul_proportion=[0.1, 0.2],
                       inference_matmul_proportion=0.5)
    got = options_of(poptorch, config, training=False)
    assert got["deviceIterations"] == [16] and got["replicationFactor"] == [2]
    assert "Training.gradientAccumulation" not in got
    assert got["setExecutionStrategy"] == [{"strategy": "ShardedExecution", "args": ["AutoStage.AutoIncrement"]}]
    assert got["outputMode"] == ["OutputMode.All"]
    assert got["setAvailableMemoryProportion"] == [{"IPU0": 0.5}]


def test_the_executable_cache_is_enabled_only_when_a_folder_is_set(poptorch):
    from garden.partition.ipu_config import IPUConfig

    assert "enableExecutableCaching" not in options_of(poptorch, IPUConfig(), training=True)
    got = options_of(poptorch, IPUConfig(executable_cache_dir="/tmp/exe"), training=True)
    assert got["enableExecutableCaching"] == ["/tmp/exe"]


def test_the_ipu_configs_seed_wins_over_the_runs(poptorch):
    from garden.partition.ipu_config import IPUConfig

    assert options_of(poptorch, IPUConfig(), training=True, seed=3)["randomSeed"] == [3]
    assert options_of(poptorch, IPUConfig(seed=42), training=True, seed=3)["randomSeed"] == [42]


def test_half_partials_follow_enable_half_partials(poptorch):
    from garden.partition.ipu_config import IPUConfig

    assert options_of(poptorch, IPUConfig(), training=True)["Precision.setPartialsType"] == ["torch.float16"]
    assert "Precision.setPartialsType" not in options_of(poptorch, IPUConfig(enable_half_partials=False), training=True)


def test_proportions_that_do_not_match_the_inference_ipus_name_the_key(poptorch):
    from garden.errors import ConfigError
    from garden.partition.ipu_config import IPUConfig

    config = IPUConfig(layers_per_ipu=[2, 2], matmul_proportion=[0.1, 0.2], inference_layers_per_ipu=[1, 1, 2])
    with pytest.raises(ConfigError, match=r"ipu.matmul_proportion=\[0.1, 0.2\] has 2 entries .* 3 IPUs"):
        options_of(poptorch, config, training=False)


def test_the_doubles_training_model_accumulates_clips_and_steps_like_torch(poptorch):
    """The double itself: 2 device iterations x 2 accumulated micro-batches = two AdamW updates,
    each on the mean gradient of its two micro-batches, clipped to max_grad_norm."""
    import torch

    torch.manual_seed(0)
    net, twin = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    twin.load_state_dict(net.state_dict())
    x, y = torch.randn(8, 3), torch.randn(8, 2)

    class WithLoss(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = net

        def forward(self, x, y):
            out = self.net(x)
            return out, poptorch.identity_loss(torch.nn.functional.mse_loss(out, y), reduction="none")

    opts = poptorch.Options().deviceIterations(2)
    opts.Training.gradientAccumulation(2)
    model = poptorch.trainingModel(WithLoss(), opts, poptorch.optim.AdamW(net.parameters(), lr=0.1, max_grad_norm=0.5))
    model(x, y)
    reference = torch.optim.AdamW(twin.parameters(), lr=0.1)
    for half in (slice(0, 4), slice(4, 8)):
        torch.nn.functional.mse_loss(twin(x[half]), y[half]).backward()  # mean over the 4 = mean of 2 halves
        torch.nn.utils.clip_grad_norm_(twin.parameters(), 0.5)
        reference.step()
        reference.zero_grad()
    for a, b in zip(net.parameters(), twin.parameters()):
        assert torch.allclose(a, b, atol=1e-6)
        assert a.grad is None  # the host never holds the device's gradients
