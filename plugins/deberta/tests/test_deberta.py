"""The DeBERTa plugin's own tests (``pytest plugins/deberta/tests``; ``make test`` runs them too):
asking for a task DeBERTa lacks (mlm) lists the tasks it has in one line, and its recipe reproduces
its declared result. What every encoder family
does alike (training, stage blocks, smoke runs, Hub-format folders) is in garden's
tests/test_nlp_encoders.py."""

from __future__ import annotations

import pytest


def test_a_task_the_model_lacks_lists_its_tasks(cli):
    result = cli("model=deberta", "task=mlm", "weights=random")
    assert result.returncode == 2
    assert "model 'deberta' has no task 'mlm' (task=mlm); its tasks are: classify, qa" in result.stderr


@pytest.mark.slow
def test_the_declared_result_reproduces_to_4_decimals(tmp_path):
    """The recipe behind the registry's result (results.json) gives the same metrics here."""
    from garden.testing import rerun_declared_result

    rerun_declared_result("deberta", "classify", tmp_path)
