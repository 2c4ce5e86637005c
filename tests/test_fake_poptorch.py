"""The poptorch stand-in (tests/fake_poptorch) fails where poptorch 3.4.0 fails: one test per rule
of its ``RULES``, each of which the earlier stand-in (which ran the user's model on the host's
weights and accepted any shape, any number of losses and any IPU count) would have failed."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys

import pytest

from conftest import ROOT

FAKE = ROOT / "tests" / "fake_poptorch"


def installed_torch() -> str:
    from importlib.metadata import version

    return version("torch")


@pytest.fixture
def poptorch(monkeypatch):
    """The stand-in, built for the installed torch, imported here and forgotten afterwards."""
    monkeypatch.syspath_prepend(str(FAKE))
    monkeypatch.setenv("FAKE_POPTORCH_TORCH", installed_torch())
    module = importlib.import_module("poptorch")
    yield module
    for name in [n for n in sys.modules if n == "poptorch" or n.startswith("poptorch.")]:
        del sys.modules[name]


def linear_with_loss(poptorch, blocks=(0,), n_losses=1):
    """Linear layers in a row, layer i on IPU ``blocks[i]``, with ``n_losses`` independent losses."""
    import torch

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.layers = torch.nn.ModuleList(torch.nn.Linear(3, 3) for _ in blocks)
            for i, (layer, ipu) in enumerate(zip(self.layers, blocks)):
                poptorch.BeginBlock(layer, f"layer{i}", ipu_id=ipu)

        def forward(self, x, y):
            for layer in self.layers:
                x = layer(x)
            losses = [poptorch.identity_loss(((x - y) ** 2).mean() * (k + 1), reduction="none")
                      for k in range(n_losses)]
            return x, (losses[0] if losses else x.sum())

    return Net()


def batch(n=8):
    import torch

    torch.manual_seed(1)
    return torch.randn(n, 3), torch.randn(n, 3)


def train(poptorch, net, accumulation=1, replicas=1, auto_round=True, **options):
    import torch

    opts = poptorch.Options().replicationFactor(replicas).autoRoundNumIPUs(auto_round)
    opts.Training.gradientAccumulation(accumulation)
    return poptorch.trainingModel(net, opts, torch.optim.SGD(net.parameters(), lr=0.1))


# --- torch-version ---------------------------------------------------------------------------------

def test_importing_the_stand_in_under_another_torch_fails_as_poptorch_does():
    env = {k: v for k, v in os.environ.items() if k != "FAKE_POPTORCH_TORCH"}
    env.update(PYTHONPATH=str(FAKE), FAKE_POPTORCH_TORCH="1.13.1")
    result = subprocess.run([sys.executable, "-c", "import poptorch"], env=env, capture_output=True, text=True)
    assert result.returncode == 1
    assert "AssertionError: This version of PopTorch only works with torch==1.13.1" in result.stderr


# --- pipeline-depth --------------------------------------------------------------------------------

def test_a_two_ipu_pipeline_trains_only_with_three_accumulated_micro_batches(poptorch):
    """2 IPUs: 2 forward stages + 1 backward stage = 3; garden's old default of 1 is refused."""
    x, y = batch(6)
    with pytest.raises(poptorch.Error, match=r"gradientAccumulation must be greater than or equal to the number "
                                             r"of pipeline stages \(3\)"):
        train(poptorch, linear_with_loss(poptorch, blocks=(0, 1)), accumulation=2)(x, y)
    train(poptorch, linear_with_loss(poptorch, blocks=(0, 1)), accumulation=3)(x, y)


def test_a_block_that_returns_to_an_earlier_ipu_adds_a_stage(poptorch):
    """IPUs 0, 1, 0 (a tied head back on IPU 0): two switches, 3 forward stages, 5 in training."""
    x, y = batch(8)
    with pytest.raises(poptorch.Error, match=r"number of pipeline stages \(5\)"):
        train(poptorch, linear_with_loss(poptorch, blocks=(0, 1, 0)), accumulation=4)(x, y)


def test_one_ipu_needs_no_accumulation(poptorch):
    train(poptorch, linear_with_loss(poptorch, blocks=(0, 0)))(*batch(2))


# --- fixed-inputs ----------------------------------------------------------------------------------

def test_inputs_keep_the_shape_and_dtype_they_were_compiled_with(poptorch):
    """Text padded to each batch's longest sequence changes shape from batch to batch: refused."""
    import torch

    model = poptorch.inferenceModel(torch.nn.Linear(3, 3).eval())
    model(torch.zeros(4, 3))
    model(torch.ones(4, 3))
    with pytest.raises(poptorch.Error, match=r"Shape mismatch for argument 0: expected torch.Size\(\[4, 3\]\)"):
        model(torch.zeros(4, 5))
    with pytest.raises(poptorch.Error, match="Data type mismatch for argument 0"):
        model(torch.zeros(4, 3, dtype=torch.float64))


# --- one-loss --------------------------------------------------------------------------------------

def test_a_training_graph_has_exactly_one_loss(poptorch):
    x, y = batch(2)
    with pytest.raises(poptorch.Error, match="Multiple independent losses found in graph"):
        train(poptorch, linear_with_loss(poptorch, n_losses=2))(x, y)
    with pytest.raises(poptorch.Error, match="Couldn't find a loss in graph"):
        train(poptorch, linear_with_loss(poptorch, n_losses=0))(x, y)


def test_a_loss_computed_from_another_loss_is_one_loss(poptorch):
    import torch

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(3, 3)

        def forward(self, x, y):
            inner = poptorch.identity_loss(((self.linear(x) - y) ** 2).mean(), reduction="none")
            return x, poptorch.identity_loss(inner * 2, reduction="none")

    train(poptorch, Net())(*batch(2))


# --- copied-at-wrap --------------------------------------------------------------------------------

def test_options_are_frozen_once_a_model_is_wrapped(poptorch):
    import torch

    opts = poptorch.Options()
    model = poptorch.inferenceModel(torch.nn.Linear(3, 3), opts)
    with pytest.raises(AttributeError, match="Can't modify frozen Options"):
        opts.deviceIterations(4)
    with pytest.raises(AttributeError, match="Can't modify frozen Options"):
        opts.Training.gradientAccumulation(2)
    assert model.options is not opts and model.options.device_iterations == 1


def test_the_wrapped_model_keeps_the_mode_it_had_when_wrapped(poptorch):
    """poptorch wraps a shallow copy: ``model.eval()`` after ``trainingModel`` does not reach it."""
    import torch

    class Moody(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(3, 3)

        def forward(self, x, y):
            out = self.linear(x)
            loss = poptorch.identity_loss(((out - y) ** 2).mean(), reduction="none")
            return (torch.ones(()) if self.training else torch.zeros(())), loss

    net = Moody().train()
    model = train(poptorch, net)
    net.eval()
    flag, _ = model(*batch(2))
    assert float(flag) == 1.0


def test_a_module_is_wrapped_for_training_once(poptorch):
    net = linear_with_loss(poptorch)
    train(poptorch, net)
    with pytest.raises(RuntimeError, match="already been wrapped in 'poptorch.trainingModel'"):
        train(poptorch, net)


# --- device-weights and attached-copies ------------------------------------------------------------

def test_training_changes_the_device_weights_and_the_host_sees_them_only_after_a_copy(poptorch):
    import torch

    net = linear_with_loss(poptorch)
    before = net.layers[0].weight.detach().clone()
    model = train(poptorch, net)
    model(*batch(2))
    torch.testing.assert_close(net.layers[0].weight.detach(), before, rtol=0, atol=0)  # stale until copied
    model.copyWeightsToHost()
    assert not torch.equal(net.layers[0].weight.detach(), before)


def test_host_weights_written_after_compile_reach_the_device_only_when_copied(poptorch):
    import torch

    net = linear_with_loss(poptorch)
    model = poptorch.inferenceModel(net.eval())
    x, y = batch(2)
    first, _ = model(x, y)
    with torch.no_grad():
        net.layers[0].weight.zero_()
    again, _ = model(x, y)
    torch.testing.assert_close(again, first, rtol=0, atol=0)  # the device still has the old weights
    model.copyWeightsToDevice()
    changed, _ = model(x, y)
    assert not torch.equal(changed, first)


def test_detaching_a_training_model_brings_its_weights_home_and_an_inference_twin_follows(poptorch):
    import torch

    net = linear_with_loss(poptorch)
    trainer = train(poptorch, net)
    x, y = batch(2)
    trainer(x, y)
    trainer.detachFromDevice()
    trained = net.layers[0].weight.detach().clone()
    infer = poptorch.inferenceModel(net)
    out, _ = infer(x, y)
    torch.testing.assert_close(out, torch.nn.functional.linear(x, trained, net.layers[0].bias.detach()))
    infer.detachFromDevice()
    trainer(x, y)  # re-attaches, trains on
    out_after, _ = infer(x, y)  # re-attaches and refreshes from the training model
    assert not torch.equal(out_after, out)


def test_weights_are_copied_only_while_attached(poptorch):
    net = linear_with_loss(poptorch)
    model = train(poptorch, net)
    with pytest.raises(poptorch.Error, match="has not been compiled"):
        model.copyWeightsToHost()
    model(*batch(2))
    model.detachFromDevice()
    with pytest.raises(poptorch.Error, match="copyWeightsToHost needs the model attached"):
        model.copyWeightsToHost()


# --- ipu-count -------------------------------------------------------------------------------------

def test_ipus_are_reserved_in_powers_of_two_only_when_rounding_is_allowed(poptorch):
    x, y = batch(10)
    with pytest.raises(poptorch.Error, match="specifies the use of 3 IPUs, however PopTorch must reserve a minimum "
                                             "of 4"):
        train(poptorch, linear_with_loss(poptorch, blocks=(0, 1, 2)), accumulation=5, auto_round=False)(x, y)
    train(poptorch, linear_with_loss(poptorch, blocks=(0, 1, 2)), accumulation=5)(x, y)
    assert [e for e in poptorch.LOG if e["call"] == "ipus"][-1] == {
        "call": "ipus", "kind": "training", "used": 3, "reserved": 4, "pipeline_switches": 2}


def test_the_highest_ipu_id_sets_the_ipus_reserved_and_64_is_the_most(poptorch):
    x, y = batch(6)
    with pytest.raises(poptorch.Error, match="specifies the use of 3 IPUs"):  # IPU 1 unused but reserved
        train(poptorch, linear_with_loss(poptorch, blocks=(0, 2)), accumulation=3, auto_round=False)(x, y)
    x, y = batch(3 * 40)
    with pytest.raises(poptorch.Error, match=r"Too many IPUs requested \(80\)"):
        train(poptorch, linear_with_loss(poptorch, blocks=(0, 1)), accumulation=3, replicas=40)(x, y)
    with pytest.raises(poptorch.Error, match="ipu_id must be an IPU index"):
        linear_with_loss(poptorch, blocks=(0, -1))


def test_every_rule_names_its_poptorch_source(poptorch):
    assert set(poptorch.RULES) == {"torch-version", "pipeline-depth", "batch-split", "fixed-inputs", "one-loss",
                                   "copied-at-wrap", "device-weights", "attached-copies", "ipu-count"}
    assert all(".py" in source or ".cpp" in source for source in poptorch.RULES.values())
