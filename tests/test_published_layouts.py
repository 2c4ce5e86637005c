"""Every ``layers_per_ipu`` a plugin's registry entry declares as published (``layouts``: Graphcore's
``ipu_config.json`` for the model, or optimum-graphcore's placement) reads unchanged and plans to
exactly its counts on the default variant and first task.

That holds when the family counts layers the way optimum-graphcore's pipelined model for it does
(:func:`garden.testing.plan_of_a_published_layout`); a plugin's own tests add the published
layouts of its other variants (BERT-large, RoBERTa-large). Families with none declared are listed
in docs/ipu.md.
"""

from __future__ import annotations

import pytest

from garden.testing import plan_of_a_published_layout


def declared() -> list[tuple[str, list[int]]]:
    from garden.registry import entries

    return [(name, list(layout)) for name, entry in sorted(entries().items()) for layout in entry.layouts.values()]


@pytest.mark.parametrize(("model", "layout"), declared(), ids=[f"{m}-{len(layout)}" for m, layout in declared()])
def test_a_declared_published_layout_plans_exactly(model, layout, tmp_path):
    assert plan_of_a_published_layout(layout, [f"model={model}"], tmp_path) == layout
