"""Every family's stage layout runs for real as a 2-stage pipeline and gives the local run's
numbers: the same update of every weight by a training step (relative to its size,
tests/equivalence.py), the same eval loss.

The two ranks are forked with torchrun's variables into a real gloo process group
(:func:`garden.pytest_plugin.garden_ranks`), without torchrun's launcher and the imports of a
fresh interpreter per rank; tests/test_pipeline.py runs the same backend under torchrun itself.

Dropout is switched off (``+model.options.dropout=0``) so both runs draw no random masks; a family
that has none refuses the option and runs as it is.

The rows are the installed models, one task each (:func:`installed.one_row_each`); a plugin's own
tests add what its family needs beyond one step (TGN's state over several, plugins/graph/tests).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from garden.pytest_plugin import garden_ranks

from conftest import garden_cli
from equivalence import SGD_STEPS, Run, assert_same_steps, initial, read_run
from installed import one_row_each

#: real ranks in a process group (deselect with -m 'not distributed')
pytestmark = pytest.mark.distributed


def without_dropout(steps: tuple[str, ...], where: Path) -> tuple[tuple[str, ...], Run]:
    """``steps`` with every dropout rate at 0 and the weights they start from (the same command, no
    step); for a family with no dropout, which refuses the option naming it, ``steps`` as they are."""
    off = (*steps, "+model.options.dropout=0")
    (where / "initial").mkdir()
    first = garden_cli(*off, "backend=local", "trainer.max_steps=0", cwd=where / "initial")
    if first.returncode == 2 and "dropout" in first.stderr:
        return steps, initial(steps, where / "initial-as-it-is")
    assert first.returncode == 0, first.output
    return off, read_run(where / "initial")


def local_and_piped(steps: tuple[str, ...], where: Path, *piped_args: str) -> tuple[Run, Run, Run]:
    """The weights before, after the local steps and after the same steps as a 2-stage pipeline."""
    steps, before = without_dropout(steps, where)
    (where / "local").mkdir(), (where / "piped").mkdir()
    local = garden_cli(*steps, cwd=where / "local")
    assert local.returncode == 0, local.output
    piped = garden_ranks(2, *steps, "backend=pipeline", *piped_args, cwd=where / "piped")
    assert piped.returncode == 0, piped.stdout[-3000:] + piped.stderr[-3000:]
    return before, read_run(where / "local"), read_run(where / "piped")


@pytest.mark.parametrize("model, task", one_row_each())
def test_a_two_stage_pipeline_step_equals_the_local_step(model, task, tmp_path):
    step = (f"model={model}", f"task={task}", "preset=smoke", "weights=random", "trainer.max_steps=1", *SGD_STEPS,
            "trainer.lr=0.1", "trainer.eval=false", "data.batch_size=4", "data.eval_limit=8", "trainer.threads=1")
    before, local, piped = local_and_piped(step, tmp_path, "ipu.micro_batches=2")
    assert piped.metrics["backend"] == "pipeline"
    assert_same_steps(before, local, piped)


def installed(model: str) -> bool:
    from garden.registry import entries

    return model in entries()


def test_tgn_pipelines_with_its_memory_on_one_stage_and_matches_local_steps(tmp_path):
    """Three steps, so later steps read the memory and neighbours the earlier ones wrote: the
    state lives on the first stage and the padded neighbourhood crosses to the second."""
    if not installed("tgn"):
        pytest.skip("tgn is not installed")
    steps = ("model=tgn", "task=link-predict", "preset=smoke", "weights=random", "trainer.max_steps=3", *SGD_STEPS,
             "trainer.lr=0.01", "trainer.eval=false", "data.batch_size=16", "data.limit=48", "data.eval_limit=32",
             "trainer.threads=1", "+model.options.dropout=0", "+model.options.layers=2")
    before, local, piped = local_and_piped(steps, tmp_path)
    assert piped.metrics["backend"] == "pipeline"
    assert local.weights["neighbours.neighbours"].ge(0).sum() > 0, "the steps wrote events into the state"
    assert_same_steps(before, local, piped)  # the neighbour table's empty slots hold -inf times
    assert piped.metrics["eval"]["average_precision"] == pytest.approx(local.metrics["eval"]["average_precision"], abs=1e-6)
