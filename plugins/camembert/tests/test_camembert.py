"""The CamemBERT plugin's own tests (``pytest plugins/camembert/tests``; ``make test`` runs them too):
a tiny CamemBERT trained without a checkpoint reads the Unigram tokenizer the plugin ships, trained
on garden's French sentences, and is sized to it: the saved config's vocabulary is the tokenizer's,
under the 1,000 tokens the recipe allows; its recipe reproduces its declared result. What every
encoder family does alike (training, stage blocks, smoke runs) is in garden's
tests/test_nlp_encoders.py."""

from __future__ import annotations

import pytest

SMALL = ("preset=smoke", "weights=random", "data.limit=32", "data.eval_limit=8", "data.batch_size=8",
         "trainer.max_steps=24", "trainer.eval=false", "trainer.threads=1", "data.max_length=128")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """CamemBERT's classifier trained for 24 steps (6 epochs of 4 batches) in this process."""
    import garden

    where = tmp_path_factory.mktemp("trained")
    return {("camembert", "classify"): (garden.run(["model=camembert", "task=classify", *SMALL],
                                                   output_dir=where / "camembert-classify"),
                                        where / "camembert-classify")}


def test_the_model_is_sized_to_the_trained_tokenizer(trained):
    from transformers import AutoConfig, AutoTokenizer

    folder = trained[("camembert", "classify")][1] / "model"
    assert AutoConfig.from_pretrained(folder).vocab_size == len(AutoTokenizer.from_pretrained(folder)) < 1000


@pytest.mark.slow
def test_the_declared_result_reproduces_to_4_decimals(tmp_path):
    """The recipe behind the registry's result (results.json) gives the same metrics here."""
    from garden.testing import rerun_declared_result

    rerun_declared_result("camembert", "classify", tmp_path)
