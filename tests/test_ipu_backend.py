"""backend=ipu, run through a recording double of poptorch (tests/fake_poptorch): the stage plan
becomes BeginBlock annotations, the ``ipu`` group becomes poptorch.Options as optimum-graphcore
builds them, and one training step through the double (two accumulated micro-batches, averaged on
the device) updates the weights exactly as a local step (tests/equivalence.py)."""

from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path

import pytest

from garden.registry import entries

from conftest import ROOT, garden_cli
from equivalence import SGD_STEPS, assert_same_steps, mutation_env, read_run, step_mismatches

FAKE = ROOT / "tests" / "fake_poptorch"
#: the module's runs (a dozen) are set up by its first test
pytestmark = pytest.mark.timeout(1800)
ONE_STEP = ("model=vit", "task=classify", "preset=smoke", "weights=random", "trainer.max_steps=1", *SGD_STEPS,
            "trainer.lr=0.1", "trainer.eval=false", "data.batch_size=8")
#: 2 IPUs pipeline training over 3 stages (2 forward, 1 backward): poptorch needs >= 3 micro-batches
ON_IPUS = ("backend=ipu", "ipu.layers_per_ipu=[-1,-1]", "ipu.gradient_accumulation_steps=4")
INFER = ("model=vit", "task=classify", "mode=infer", "model.variant=tiny", "weights=random",
         "data.limit=16", "data.eval_limit=16", "infer.precision=fp32")


def installed_torch() -> str:
    from importlib.metadata import version

    return version("torch")


def with_fake(log: Path, env: dict | None = None, *, torch: str | None = None, ipus: int = 0) -> dict:
    """``env`` with the stand-in on its PYTHONPATH, logging to ``log``, built for ``torch`` (the
    installed one unless given) on a machine with ``ipus`` IPUs."""
    env = env or {}
    path = env.get("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    return {**env, "PYTHONPATH": os.pathsep.join([str(FAKE), path]), "FAKE_POPTORCH_LOG": str(log),
            "FAKE_POPTORCH_TORCH": torch or installed_torch(), "FAKE_POPTORCH_IPUS": str(ipus)}


#: the bug: garden asks poptorch to sum the micro-batches' gradients instead of averaging them
SUMMED = """
    import sys
    from garden.backends import ipu

    options = ipu.poptorch_options

    def summed(config, training, seed=None, *, poptorch=None):
        opts = options(config, training, seed, poptorch=poptorch)
        if training:
            print("MUTATION: gradients summed", file=sys.stderr, flush=True)
            opts.Training.accumulationAndReplicationReductionType(poptorch.ReductionType.Sum)
        return opts

    ipu.poptorch_options = summed
"""


def run(where: Path, *args: str, env: dict | None = None) -> tuple[int, str]:
    """``python -m garden ARGS`` in ``where``: its exit status and output."""
    where.mkdir(parents=True, exist_ok=True)
    result = garden_cli(*args, cwd=where, env={"OMP_NUM_THREADS": "1", **(env or {})}, timeout=900)
    return result.returncode, result.output


def run_folder(where: Path) -> Path:
    [metrics] = where.glob("outputs/*/*/metrics.json")
    return metrics.parent


def calls(log: list[dict], name: str, options: int | None = None) -> list[dict]:
    return [e for e in log if e["call"] == name and (options is None or e.get("options") == options)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every run this module needs."""
    base = tmp_path_factory.mktemp("ipu")
    cache = base / "cache"
    specs = {
        "initial": (base / "initial", (*ONE_STEP, "backend=local", "trainer.max_steps=0"), None),
        "local": (base / "local", (*ONE_STEP, "backend=local"), None),
        "ipu": (base / "ipu", (*ONE_STEP, *ON_IPUS, "ipu.recompute_checkpoint_every_layer=true",
                                "ipu.matmul_proportion=[0.1,0.3]", f"ipu.executable_cache_dir={cache}"),
                with_fake(base / "ipu.json")),
        "summed": (base / "summed", (*ONE_STEP, *ON_IPUS),
                   with_fake(base / "summed.json", mutation_env(base / "site", SUMMED))),
        "infer_auto_fake": (base / "infer_fake", (*INFER, "backend=auto", "ipu.layers_per_ipu=[1,1,1,1]"),
                            with_fake(base / "infer.json", ipus=4)),
        "infer_auto_plain": (base / "infer_plain", (*INFER, "backend=auto"), None),
        "infer_auto_no_ipus": (base / "infer_no_ipus", (*INFER, "backend=auto"), with_fake(base / "no_ipus.json")),
        "missing": (base / "missing", (*ONE_STEP, "backend=ipu"), None),
        "other_torch": (base / "other_torch", (*ONE_STEP, "backend=ipu"), with_fake(base / "other.json",
                                                                                   torch=other_torch())),
        "text": (base / "text", ("model=bert", "task=classify", "preset=smoke", "weights=random", "backend=ipu",
                                 "ipu.layers_per_ipu=[-1,-1]", "ipu.gradient_accumulation_steps=4",
                                 "data.batch_size=4", "trainer.max_steps=3", "data.limit=24", "data.eval_limit=8"),
                 with_fake(base / "text.json")),
        **({"graph": (base / "graph", ("model=cluster_gcn", "task=node-classify", "preset=smoke", "backend=ipu"),
                      with_fake(base / "graph.json"))} if "cluster_gcn" in entries() else {}),  # not on the SDK's stack
        "shallow": (base / "shallow", (*ONE_STEP, "backend=ipu", "ipu.layers_per_ipu=[-1,-1]",
                                       "ipu.gradient_accumulation_steps=2"), with_fake(base / "shallow.json")),
    }
    return base, {name: run(where, *args, env=env) for name, (where, args, env) in specs.items()}


def log_of(base: Path, name: str) -> list[dict]:
    return json.loads((base / name).read_text())


def test_backend_ipu_without_poptorch_exits_2_saying_how_to_get_it(runs):
    _, results = runs
    code, output = results["missing"]
    assert code == 2, output
    [line] = [ln for ln in output.splitlines() if "poptorch" in ln]
    assert "Poplar SDK" in line and "backend=local" in line


def other_torch() -> str:
    """A torch the installed one is not: poptorch 3.4's 2.0.1, or on the SDK's own stack an older one."""
    import torch

    return "1.13.1" if torch.__version__.startswith("2.0.1") else "2.0.1"


def test_poptorch_built_for_another_torch_is_one_line_and_exit_2(runs):
    """poptorch asserts its torch at import; garden says so in one line instead of a traceback."""
    code, output = runs[1]["other_torch"]
    assert code == 2, output
    [line] = [ln for ln in output.splitlines() if "poptorch" in ln]
    assert f"torch=={other_torch()}" in line and "constraints-sdk.txt" in line and "Traceback" not in output


def test_too_few_accumulation_steps_for_the_pipeline_is_one_line_and_exit_2(runs):
    """2 IPUs train over 3 pipeline stages; 2 micro-batches cannot fill them (poptorch's rule)."""
    code, output = runs[1]["shallow"]
    assert code == 2, output
    [line] = [ln for ln in output.splitlines() if "gradient_accumulation_steps" in ln]
    assert "3 pipeline stages" in line and "ipu.gradient_accumulation_steps=3" in line


def test_text_batches_keep_one_shape_so_poptorch_runs_them(runs):
    """poptorch refuses a shape it was not compiled for; text padded to each batch's longest
    sequence changes shape from batch to batch, so backend=ipu pads to the data's longest."""
    base, results = runs
    code, output = results["text"]
    assert code == 0, output
    log = log_of(base, "text.json")
    assert len(calls(log, "compile")) == 2  # one training and one inference program, each compiled once
    assert json.loads((run_folder(base / "text") / "metrics.json").read_text())["steps"] == 3


def test_fixed_shapes_pad_each_key_with_its_own_value():
    import torch

    from garden.backends.ipu import FixedShapes

    def collate(examples):
        width = max(len(e) for e in examples)
        return {"input_ids": torch.tensor([e + [7] * (width - len(e)) for e in examples]),
                "labels": torch.tensor([e + [-100] * (width - len(e)) for e in examples]),
                "pixel_values": torch.zeros(len(examples), 3)}

    collate.pads = {"input_ids": 7}
    fixed = FixedShapes(collate, [[[1, 2, 3, 4, 5], [1]], [[2, 2]]], chunk=1)
    batch = fixed([[1, 2]])
    assert batch["input_ids"].tolist() == [[1, 2, 7, 7, 7]] and batch["labels"].tolist() == [[1, 2, -100, -100, -100]]
    assert batch["pixel_values"].shape == (1, 3)


def test_graph_models_refuse_ipus_with_the_reason(runs):
    """PopTorch Geometric compiles fixed-size batches on the PyG it pins; garden_graph says so."""
    if "graph" not in runs[1]:
        pytest.skip("the graph plugin is not installed (make venv-sdk leaves it out)")
    code, output = runs[1]["graph"]
    assert code == 2, output
    [line] = [ln for ln in output.splitlines() if "backend=ipu" in ln]
    assert "PopTorch Geometric" in line and "backend=local" in line


def test_backend_auto_picks_ipus_only_when_poptorch_imports_and_ipus_are_there(runs):
    base, results = runs
    for name in ("infer_auto_plain", "infer_auto_fake", "infer_auto_no_ipus"):
        assert results[name][0] == 0, results[name][1]
    assert json.loads((run_folder(base / "infer_plain") / "metrics.json").read_text())["backend"] == "local"
    assert json.loads((run_folder(base / "infer_no_ipus") / "metrics.json").read_text())["backend"] == "local"
    assert json.loads((run_folder(base / "infer_fake") / "metrics.json").read_text())["backend"] == "ipu"


def test_a_training_step_on_the_ipu_double_equals_the_local_one(runs):
    base, results = runs
    for name in ("initial", "local", "ipu"):
        assert results[name][0] == 0, results[name][1]
    ipu = read_run(run_folder(base / "ipu"))
    assert ipu.metrics["backend"] == "ipu" and ipu.metrics["steps"] == 1
    assert ipu.metrics["batch"]["gradient_accumulation_steps"] == 4
    assert_same_steps(read_run(run_folder(base / "initial")), read_run(run_folder(base / "local")), ipu)


def test_the_step_comparison_catches_ipu_gradients_summed_instead_of_averaged(runs):
    base, results = runs
    assert results["summed"][0] == 0, results["summed"][1]
    assert "MUTATION: gradients summed" in results["summed"][1]
    before, local = read_run(run_folder(base / "initial")), read_run(run_folder(base / "local"))
    summed = read_run(run_folder(base / "summed"))
    problems = step_mismatches(before, local, summed)
    assert len(problems) > len(before.weights) / 2, problems  # twice the gradient: (nearly) every update is off
    with pytest.raises(AssertionError, match="the steps differ"):
        assert_same_steps(before, local, summed)


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
    assert calls(log, "Options.Training.gradientAccumulation", options)[0]["args"] == [4]
    assert calls(log, "Options.setAvailableMemoryProportion", options)[0]["args"] == [{"IPU0": 0.1, "IPU1": 0.3}]
    assert calls(log, "Options.setExecutionStrategy", options)[0]["args"] == [
        {"strategy": "PipelinedExecution", "args": ["AutoStage.AutoIncrement"]}]
    assert calls(log, "Options.enableExecutableCaching", options)[0]["args"] == [str(base / "cache")]
    [sgd] = calls(log, "optim.SGD")  # trainer.optimizer, trainer.lr, trainer.weight_decay, trainer.grad_clip=null
    assert sgd == {"call": "optim.SGD", "lr": 0.1, "momentum": 0.9, "weight_decay": 0.0, "max_grad_norm": float("inf")}

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
    monkeypatch.setenv("FAKE_POPTORCH_TORCH", installed_torch())
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


def test_training_proportions_for_other_ipus_fall_back_to_0_2_for_inference(poptorch):
    """optimum's IPUConfig: a matmul_proportion list of another length than the inference IPUs
    gives inference its default, 0.2, on every IPU."""
    from garden.partition.ipu_config import IPUConfig

    config = IPUConfig(layers_per_ipu=[2, 2], matmul_proportion=[0.1, 0.3], inference_layers_per_ipu=[1, 1, 2])
    got = options_of(poptorch, config, training=False)
    assert got["setAvailableMemoryProportion"] == [{"IPU0": 0.2, "IPU1": 0.2, "IPU2": 0.2}]


def test_the_device_takes_the_trainers_optimizer_and_clipping(poptorch):
    import torch

    from garden.backends.ipu import device_optimizer
    from garden.errors import BackendError

    params = [torch.nn.Parameter(torch.zeros(2))]
    adamw = device_optimizer(torch.optim.AdamW(params, lr=3e-4, weight_decay=0.01), params, 1.0, poptorch)
    assert type(adamw) is poptorch.optim.AdamW and adamw.max_grad_norm == 1.0
    assert {k: adamw.param_groups[0][k] for k in ("lr", "weight_decay", "betas")} == {
        "lr": 3e-4, "weight_decay": 0.01, "betas": (0.9, 0.999)}
    sgd = device_optimizer(torch.optim.SGD(params, lr=0.1, momentum=0.9), params, None, poptorch)
    assert type(sgd) is poptorch.optim.SGD and sgd.max_grad_norm == float("inf")
    assert {k: sgd.param_groups[0][k] for k in ("lr", "momentum", "weight_decay")} == {
        "lr": 0.1, "momentum": 0.9, "weight_decay": 0}
    with pytest.raises(BackendError, match="no poptorch optimizer for Adagrad; set trainer.optimizer=adamw"):
        device_optimizer(torch.optim.Adagrad(params), params, None, poptorch)


def twin_linears():
    import torch

    torch.manual_seed(0)
    net, twin = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    twin.load_state_dict(net.state_dict())
    return net, twin, torch.randn(8, 3), torch.randn(8, 2)


def with_loss(net, poptorch):
    """``net`` with an MSE loss marked for poptorch, as garden's step module marks the task's."""
    import torch

    class WithLoss(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = net

        def forward(self, x, y):
            out = self.net(x)
            return out, poptorch.identity_loss(torch.nn.functional.mse_loss(out, y), reduction="none")

    return WithLoss()


# The double and torch do the same few fp32 operations on O(1) values in another order (a mean of
# two micro-batch means against one mean of four): they differ by ~1e-7, where a loss at the wrong
# scale (x2, or summed over micro-batches) moves a weight by ~lr x its gradient, 1e-2 or more.
CLOSE = {"rtol": 1e-5, "atol": 1e-6}


def test_the_doubles_training_model_averages_its_micro_batches_and_steps_like_torch(poptorch):
    """2 device iterations x 2 accumulated micro-batches = two SGD updates, each on the mean
    gradient of its two micro-batches (ReductionType.Mean). Plain SGD and no clipping: each update
    is lr x the gradient, so a gradient at another scale shows."""
    import torch

    net, twin, x, y = twin_linears()
    opts = poptorch.Options().deviceIterations(2)
    opts.Training.gradientAccumulation(2)
    model = poptorch.trainingModel(with_loss(net, poptorch), opts, poptorch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9))
    model(x, y)
    model.copyWeightsToHost()  # the device's weights; the host's are stale until copied
    reference = torch.optim.SGD(twin.parameters(), lr=0.1, momentum=0.9)
    for half in (slice(0, 4), slice(4, 8)):
        torch.nn.functional.mse_loss(twin(x[half]), y[half]).backward()  # mean over the 4 = mean of 2 halves
        reference.step()
        reference.zero_grad()
    for a, b in zip(net.parameters(), twin.parameters()):
        torch.testing.assert_close(a, b, **CLOSE)
        assert a.grad is None  # the host never holds the device's gradients


def test_the_doubles_max_grad_norm_clips_the_averaged_gradient(poptorch):
    """One update whose mean gradient is clipped to half its norm: the step is lr x max_grad_norm
    long, in the unclipped gradient's direction (as torch's clip_grad_norm_ of the whole step)."""
    import torch

    net, twin, x, y = twin_linears()
    torch.nn.functional.mse_loss(twin(x), y).backward()
    norm = torch.nn.utils.clip_grad_norm_(twin.parameters(), float("inf"))  # the total norm, on torch 2.0.1 too
    torch.nn.utils.clip_grad_norm_(twin.parameters(), norm / 2)
    torch.optim.SGD(twin.parameters(), lr=0.1).step()

    opts = poptorch.Options()
    opts.Training.gradientAccumulation(2)
    optimizer = poptorch.optim.SGD(net.parameters(), lr=0.1, max_grad_norm=float(norm / 2))
    model = poptorch.trainingModel(with_loss(net, poptorch), opts, optimizer)
    model(x, y)
    model.copyWeightsToHost()
    for a, b in zip(net.parameters(), twin.parameters()):
        torch.testing.assert_close(a, b, **CLOSE)
