"""Tasks arrive through the same door as models: a plugin written in a temporary folder, with
nothing of it in garden, brings a new domain, a new task (its own data, loss and metric) and a
model for it, and ``python -m garden model=X task=Y preset=smoke`` trains it; ``tasks``,
``show``, ``list --domain`` and registry.json list them with their source plugin.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from conftest import garden_cli

PLUGIN = '''
"""A throwaway plugin: a new domain (tabular), a new task and a model for it."""
from garden.entries import ModelEntry, TaskEntry, Variant
from garden.hookspecs import hookimpl

GARDEN_API_VERSION = "1.0"


@hookimpl
def garden_models():
    return [ModelEntry(name="ridge", family="ridge", domain="tabular", description="a linear model of a table",
                       tasks=("tabular-regress",), builder="garden_tabular.family:Ridge",
                       variants=(Variant("tiny", params=9, config={"features": 8}),))]


@hookimpl
def garden_tasks():
    return [TaskEntry("tabular-regress", "tabular", "garden_tabular.task:TabularRegression",
                      "one number per row of a table; mean absolute error")]


@hookimpl
def garden_config_dir():
    return "pkg://garden_tabular.conf"
'''

FAMILY = '''
import json
from pathlib import Path

from garden.hookspecs import Block, ModelFamily


class Ridge(ModelFamily):
    def build(self, spec):
        import torch
        from safetensors.torch import load_model

        model = torch.nn.Linear(spec.variant.config["features"], 1)
        if spec.weights_dir is not None:
            load_model(model, str(Path(spec.weights_dir) / "model.safetensors"))
        return model

    def stage_blocks(self, model, task):
        return [Block("head", "head", ("weight", "bias"), lambda m, x: (m(x).squeeze(-1),))]

    def save(self, model, preprocessor, folder):
        from safetensors.torch import save_model

        folder.mkdir(parents=True, exist_ok=True)
        save_model(model, str(folder / "model.safetensors"))
        (folder / "config.json").write_text(json.dumps({"features": model.in_features}))
'''

TASK = '''
from garden.tasks.base import Task, TaskData, limit, split


def collate(rows):
    import torch

    return {"x": torch.stack([r[0] for r in rows]), "labels": torch.stack([r[1] for r in rows])}


class TabularRegression(Task):
    name = "tabular-regress"
    metric = "mae"
    greater_is_better = False

    def load(self, cfg, preprocessor):
        import torch

        generator = torch.Generator().manual_seed(cfg.seed)
        x = torch.randn(200, 8, generator=generator)
        y = x @ torch.arange(1.0, 9.0) / 8
        train, held_out = split(list(zip(x, y)), cfg.data.eval_fraction, cfg.seed)
        return TaskData(limit(train, cfg.data.limit), limit(held_out, cfg.data.eval_limit), collate,
                        source="200 generated rows")

    def inputs(self, batch):
        return (batch["x"],)

    def forward(self, model, batch):
        return model(batch["x"]).squeeze(-1)

    def loss(self, output, target):
        return ((output.float() - target) ** 2).mean()

    def evaluate(self, outputs, batches):
        import torch

        predicted, target = torch.cat(outputs).float(), torch.cat([b["labels"] for b in batches])
        return {"mae": (predicted - target).abs().mean().item(), "loss": self.loss(predicted, target).item()}

    def predict(self, output, batch, data, top_k):
        return [{"label": float(y), "predictions": [{"label": "y", "score": float(p)}]}
                for y, p in zip(batch["labels"], output)]
'''


def write_plugin(site: Path) -> None:
    """An installed distribution, by hand: the package, its configs and a ``.dist-info`` with the entry point."""
    package = site / "garden_tabular"
    for path, text in {
        "__init__.py": "", "plugin.py": PLUGIN, "family.py": FAMILY, "task.py": TASK,
        "conf/__init__.py": "", "conf/model/ridge.yaml": "name: ridge\nvariant: default\n",
        "conf/task/tabular-regress.yaml": "name: tabular-regress\n",
    }.items():
        (package / path).parent.mkdir(parents=True, exist_ok=True)
        (package / path).write_text(textwrap.dedent(text))
    info = site / "garden_tabular-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: garden-tabular\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[garden.plugins]\ntabular = garden_tabular.plugin\n")


@pytest.fixture
def tabular(plugin_site):
    site, env = plugin_site
    write_plugin(site)
    return env


def test_a_plugin_in_a_temporary_folder_brings_a_task_and_a_domain_that_train(tabular, tmp_path):
    result = garden_cli("model=ridge", "task=tabular-regress", "preset=smoke", cwd=tmp_path, env=tabular)
    assert result.returncode == 0, result.output
    [metrics] = tmp_path.glob("outputs/*/*/metrics.json")
    recorded = json.loads(metrics.read_text())
    assert recorded["task"] == "tabular-regress" and recorded["eval"]["mae"] >= 0
    assert (metrics.parent / "model" / "model.safetensors").exists()


def test_the_new_task_and_domain_are_listed_with_their_plugin(tabular, tmp_path):
    tasks = json.loads(garden_cli("tasks", "--json", env=tabular).stdout)
    [mine] = [t for t in tasks if t["name"] == "tabular-regress"]
    assert mine == {"name": "tabular-regress", "domain": "tabular", "plugin": "garden-tabular", "tied_head": False,
                    "builder": "garden_tabular.task:TabularRegression", "models": ["ridge"],
                    "description": "one number per row of a table; mean absolute error"}
    assert {t["plugin"] for t in tasks if t["name"] == "classify"} == {"garden"}  # garden's own, the same door
    assert [m["name"] for m in json.loads(garden_cli("list", "--domain", "tabular", "--json", env=tabular).stdout)] \
        == ["ridge"]
    assert "tabular-regress (from garden-tabular)" in garden_cli("show", "ridge", env=tabular).stdout
    path = tmp_path / "registry.json"
    assert garden_cli("registry", "build", "--path", str(path), env=tabular).returncode == 0
    assert garden_cli("registry", "check", "--path", str(path), env=tabular).returncode == 0
    document = json.loads(path.read_text())
    assert {"name": "tabular-regress", "domain": "tabular", "plugin": "garden-tabular"}.items() \
        <= next(t for t in document["tasks"] if t["name"] == "tabular-regress").items()


#: what only some tasks need; the core must run without any of it
TASK_LIBRARIES = ("sklearn", "soundfile", "scipy", "sacrebleu", "rouge_score")

HIDE = f'''
"""Hide the task libraries, as a core-only install lacks them: imports fail, probes find nothing."""
import importlib.util
import sys

HIDDEN = {TASK_LIBRARIES!r}


class Hidden:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


probe = importlib.util.find_spec
importlib.util.find_spec = lambda name, package=None: None if name.split(".")[0] in HIDDEN else probe(name, package)
sys.meta_path.insert(0, Hidden())
'''


def test_without_the_task_libraries_the_core_lists_and_runs_a_plugins_own_task(tabular, plugin_site, tmp_path):
    site, _ = plugin_site
    (site / "sitecustomize.py").write_text(HIDE)
    assert garden_cli("list", "--json", env=tabular).returncode == 0
    assert garden_cli("search", "regress", env=tabular).returncode == 0
    trained = garden_cli("model=ridge", "task=tabular-regress", "preset=smoke", cwd=tmp_path, env=tabular)
    assert trained.returncode == 0, trained.output
    # a task that needs a hidden library says which package, in one line
    audio = garden_cli("model=wav2vec2", "task=asr", "preset=smoke", "weights=random", cwd=tmp_path, env=tabular)
    assert audio.returncode != 0 and audio.stderr.strip().count("\n") == 0, audio.output
    assert "needs soundfile, which is not installed; pip install soundfile" in audio.stderr
