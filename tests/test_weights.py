"""Weights end to end: runs that start from the Hub (a local Hub-compatible server), the one-line
load summary, strict shapes, plugins' checkpoint key renames, and trained folders going back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import garden_cli, make_distribution
from hubserver import HubServer

TINY = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
            image_size=32, patch_size=8)


def save_tiny_vit(folder: Path, num_labels: int = 10, **changes) -> Path:
    from transformers import ViTConfig, ViTForImageClassification

    config = ViTConfig(**{**TINY, **changes}, num_labels=num_labels)
    ViTForImageClassification(config).save_pretrained(folder)
    return folder


def hub_env(server: HubServer, home: Path, **extra) -> dict:
    return {"HF_ENDPOINT": server.url, "HF_HOME": str(home), "HF_HUB_OFFLINE": "0", "HF_HUB_DISABLE_XET": "1",
            "HF_HUB_DISABLE_PROGRESS_BARS": "1", **extra}


@pytest.fixture
def server():
    with HubServer() as running:
        yield running


def test_a_run_starts_from_a_pinned_hub_checkpoint_and_then_works_offline(server, tmp_path):
    sha = server.add_repo("org/tiny-vit", save_tiny_vit(tmp_path / "ckpt"))
    run = ("model=vit", "task=classify", "preset=smoke", "trainer.max_steps=2", f"weights=hub:org/tiny-vit@{sha}")
    first = garden_cli(*run, cwd=tmp_path, env=hub_env(server, tmp_path / "hf"))
    assert first.returncode == 0, first.output
    assert f"hub org/tiny-vit@{sha[:7]}" in first.stdout + first.stderr
    assert "newly initialised head" not in first.output  # 10 digit classes = the checkpoint's 10 labels
    server.stop()
    again = garden_cli(*run, cwd=tmp_path, env=hub_env(server, tmp_path / "hf", HF_HUB_OFFLINE="1"))
    assert again.returncode == 0, again.output


def test_a_new_head_is_reported_in_one_summary_line(tmp_path):
    folder = save_tiny_vit(tmp_path / "ckpt", num_labels=5)
    result = garden_cli("model=vit", "task=classify", "preset=smoke", "trainer.max_steps=1", f"weights={folder}",
                        cwd=tmp_path)
    assert result.returncode == 0, result.output
    [line] = [ln for ln in result.stderr.splitlines() if ln.startswith("weights: loaded")]
    assert "newly initialised head: classifier.bias, classifier.weight" in line


def test_a_shape_mismatch_outside_the_head_names_the_parameter_and_both_shapes(tmp_path):
    import garden
    from garden.errors import WeightsError

    folder = save_tiny_vit(tmp_path / "ckpt")
    config = json.loads((folder / "config.json").read_text())
    save_tiny_vit(tmp_path / "other", intermediate_size=48)
    (tmp_path / "other" / "config.json").write_text(json.dumps(config))  # config says 64, tensors are 48
    with pytest.raises(WeightsError, match=r"parameter vit\.\S+ has shape \((48,|48, 32|32, 48)\) in the checkpoint "
                                           r"but \((64,|64, 32|32, 64)\) in the model \(and 5 more\)"):
        garden.load_model("vit", task="classify", weights=str(tmp_path / "other"))


def test_a_plugin_renames_checkpoint_keys_it_knows(tmp_path, plugin_site):
    from safetensors.torch import load_file, save_file

    folder = save_tiny_vit(tmp_path / "ckpt")
    tensors = load_file(folder / "model.safetensors")
    tensors["legacy.cls"] = tensors.pop("vit.embeddings.cls_token")
    save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    site, _ = plugin_site
    make_distribution(site, "garden-vit-legacy", "garden_vit_legacy", '''
        from garden.hookspecs import hookimpl
        GARDEN_API_VERSION = "1.0"

        @hookimpl
        def garden_checkpoint_keys(model, keys):
            if model == "vit" and "legacy.cls" in keys:
                return {"legacy.cls": "vit.embeddings.cls_token"}
    ''')
    from garden import load_model, plugins

    def summary(extra_env: dict) -> str:
        """The load summary with the plugin installed, discovered afresh in this process."""
        with pytest.MonkeyPatch.context() as patch:
            patch.syspath_prepend(str(site))
            for name, value in extra_env.items():
                patch.setenv(name, value)
            plugins.discover.cache_clear()
            try:
                return load_model("vit", task="classify", weights=str(folder)).garden_load_summary
            finally:
                plugins.discover.cache_clear()  # the next test finds what is installed

    with_plugin = summary({})
    assert with_plugin.startswith("loaded ") and "missing" not in with_plugin and "unused" not in with_plugin
    without = summary({"GARDEN_DISABLE_PLUGINS": "garden-vit-legacy"})
    assert "missing (random init): vit.embeddings.cls_token" in without and "unused from checkpoint: legacy.cls" in without


def test_a_trained_folder_is_hub_ready_and_pushes_in_one_commit(server, tmp_path):
    from garden.partition.ipu_config import read_ipu_config

    result = garden_cli("model=vit", "task=classify", "preset=smoke", "weights=random", "trainer.max_steps=2",
                        cwd=tmp_path)
    assert result.returncode == 0, result.output
    [run_dir] = [p.parent for p in tmp_path.glob("outputs/*/*/metrics.json")]
    model = run_dir / "model"
    assert {"config.json", "model.safetensors", "preprocessor_config.json", "ipu_config.json", "README.md"} <= \
        {p.name for p in model.iterdir()}
    card = (model / "README.md").read_text()
    assert "python -m garden model=vit task=classify preset=smoke weights.source=random trainer.max_steps=2" in card
    assert "| accuracy |" in card
    assert read_ipu_config(model).layers_per_ipu == [-1]
    pushed = garden_cli("push", str(run_dir), "me/tiny-digits", cwd=tmp_path, env=hub_env(server, tmp_path / "hf"))
    assert pushed.returncode == 0, pushed.output
    sha, files = server.files_at("me/tiny-digits", "main")
    assert files["model.safetensors"] == (model / "model.safetensors").read_bytes()
    assert set(files) == {p.name for p in model.iterdir()}


def test_pushing_a_folder_without_a_model_says_what_to_pass(tmp_path):
    result = garden_cli("push", str(tmp_path), "me/nothing", cwd=tmp_path)
    assert result.returncode == 2 and "holds no model folder" in result.stderr
