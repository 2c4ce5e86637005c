"""The step comparison every equivalence test uses (tests/equivalence.py), on made-up runs: it
passes rounding, and it reports a step at another scale, however slightly."""

from __future__ import annotations

import pytest
import torch

from equivalence import Run, assert_same_steps, scaled, step_mismatches


def runs() -> tuple[Run, Run]:
    """Weights before and after a step: tensors moving 1e-2, 1e-3 and 1e-4 per entry (the typical
    update is 1e-3), an attention key's bias whose gradient is zero in exact arithmetic (it moves
    by rounding only), and a memory with empty (-inf) slots, some filled by the step."""
    g = torch.Generator().manual_seed(0)
    before = {"layer.weight": torch.randn(64, 64, generator=g) * 0.02, "layer.bias": torch.zeros(64),
              "key.bias": torch.zeros(64), "norm.weight": torch.ones(64),
              "memory.times": torch.full((10,), float("-inf")), "position_ids": torch.arange(8)}
    after = {"layer.weight": before["layer.weight"] - torch.randn(64, 64, generator=g) * 1e-2,
             "layer.bias": -torch.randn(64, generator=g) * 1e-3, "key.bias": torch.randn(64, generator=g) * 1e-11,
             "norm.weight": 1 - torch.randn(64, generator=g) * 1e-4,
             "memory.times": torch.tensor([3.0, 5.0, *[float("-inf")] * 8]), "position_ids": torch.arange(8)}
    metrics = lambda loss: {"eval": {"loss": loss}}  # noqa: E731
    return Run(before, metrics(2.30)), Run(after, metrics(2.25))


def rounded_differently(run: Run, seed: int = 1) -> Run:
    """``run`` as another process would have it: every weight a few fp32 ulps away, and the zero
    gradient's rounding drawn anew."""
    g = torch.Generator().manual_seed(seed)
    weights = {}
    for name, w in run.weights.items():
        if w.is_floating_point() and name != "memory.times":
            w = w + w * torch.randn(w.shape, generator=g) * 4 * 2.0 ** -23
        weights[name] = w
    weights["key.bias"] = torch.randn(64, generator=g) * 1e-11
    return Run(weights, {"eval": {"loss": run.metrics["eval"]["loss"] * (1 + 1e-7)}})


def test_the_same_steps_rounded_another_way_pass():
    before, after = runs()
    assert step_mismatches(before, after, rounded_differently(after)) == []
    assert_same_steps(before, after, rounded_differently(after))


@pytest.mark.parametrize("factor", [2.0, 0.5])
def test_a_step_at_another_scale_is_reported_tensor_by_tensor(factor):
    before, after = runs()
    problems = step_mismatches(before, after, scaled(before, after, factor))
    assert [p.split(":")[0] for p in problems] == ["layer.bias", "layer.weight", "norm.weight"], problems
    with pytest.raises(AssertionError, match="the steps differ"):
        assert_same_steps(before, after, scaled(before, after, factor))


def test_a_step_1e_3_too_long_is_reported_where_the_weights_move_more_than_typically():
    before, after = runs()
    assert [p.split(":")[0] for p in step_mismatches(before, after, scaled(before, after, 1 + 1e-3))] == ["layer.weight"]


def test_a_moved_empty_slot_or_a_changed_count_is_reported():
    before, after = runs()
    other = Run({**after.weights, "memory.times": torch.tensor([3.0, float("-inf"), 5.0, *[float("-inf")] * 7]),
                 "position_ids": torch.arange(1, 9)}, after.metrics)
    problems = step_mismatches(before, after, other)
    assert problems == ["memory.times: non-finite entries differ", "position_ids: integer values differ"]


def test_a_different_eval_loss_is_reported_relative_to_the_steps_change():
    before, after = runs()
    other = Run(after.weights, {"eval": {"loss": 2.25 + 1e-3}})
    assert step_mismatches(before, after, other) == ["eval loss 2.251, expected 2.25 (the step moved it from 2.3)"]


def test_steps_too_small_for_the_weights_rounding_are_refused():
    before, after = runs()
    tiny = scaled(before, after, 1e-4)  # updates of ~1e-8 on weights of ~1: a few ulps
    with pytest.raises(AssertionError, match="too small to compare: raise trainer.lr"):
        assert_same_steps(before, tiny, tiny)
