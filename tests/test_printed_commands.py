"""Every command ``show`` and registry.json print works up to the weights, for every variant on the Hub.

registry.json gives each model one command per task (``python -m garden model=M task=T``, the
default variant); each other variant with Hub weights runs as that command plus
``model.variant=V``. For every one, a fresh interpreter composes the command's config as the CLI
does and resolves its weights as a run does, against tests/hubserver.py. The stand-in Hub holds a
tiny checkpoint under each pinned repo id and commit and nothing else (no ``main``), so a variant
with no pin, a short pin or a branch finds nothing, and a command that does not compose fails
before it looks. Nothing trains and nothing is loaded: the checkpoints are a config of the
family's model type and a one-tensor safetensors file, which is what resolution checks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import import_module
from pathlib import Path

import pytest

from hubserver import HubServer

ROOT = Path(__file__).resolve().parents[1]

# Composes each command and resolves its weights in one clean interpreter (huggingface_hub reads
# HF_ENDPOINT and HF_HOME when imported); prints what each resolved to, or its error, as JSON.
DRIVER = """
import json, shlex, sys
from garden import registry
from garden.config import compose
from garden.errors import GardenError
from garden.hub import resolve_weights

outcomes = {}
for command, name in json.loads(sys.argv[1]):
    entry = registry.get(name)
    try:
        cfg = compose(shlex.split(command)[3:])  # after "python -m garden"
        variant = entry.variant(cfg.model.variant)
        found = resolve_weights(cfg.weights.source, variant, allow_pickle=cfg.weights.allow_pickle,
                                for_training=cfg.mode == "train", entry=entry)
        outcomes[command] = {"folder": str(found.folder), "origin": found.origin}
    except GardenError as error:
        outcomes[command] = {"error": str(error)}
print(json.dumps(outcomes))
"""


def printed_commands(document: dict) -> list[tuple[str, str, dict]]:
    """``(command, model, variant record)`` for each model x task x variant with Hub weights: the
    printed command for the default variant, and for another, ``registry.run_command``'s form of it."""
    from garden import registry

    found = []
    for model in document["models"]:
        default = model["default"] or model["variants"][0]["name"]
        for task, command in model["commands"].items():
            for variant in model["variants"]:
                if variant["hub_id"] is None:
                    continue
                if variant["name"] != default:
                    command = registry.run_command(registry.get(model["name"]), task, variant["name"])
                found.append((command, model["name"], variant))
    return found


def tiny_checkpoint(model: dict, variant: dict) -> dict[str, bytes]:
    """config.json of the model's family (its model_type) and a one-tensor weights file in the
    variant's format: model.safetensors, or pytorch_model.bin for a pickle-only Hub repo."""
    import io

    import numpy as np
    import torch
    import transformers
    from safetensors.numpy import save

    module, _, attribute = model["builder"].partition(":")
    config_class = getattr(transformers, getattr(import_module(module), attribute)().config_class)
    files = {"config.json": json.dumps(config_class().to_dict()).encode()}
    if variant["weights_format"] == "pickle":
        buffer = io.BytesIO()
        torch.save({"marker": torch.zeros(1)}, buffer)
        files["pytorch_model.bin"] = buffer.getvalue()
    else:
        files["model.safetensors"] = save({"marker": np.zeros(1, dtype=np.float32)})
    return files


@pytest.fixture(scope="module")
def document() -> dict:
    return json.loads((ROOT / "registry.json").read_text())


def test_show_prints_the_commands_registry_json_carries(document):
    """The commands under test are the ones a user sees in ``show`` (and on the registry page)."""
    from garden import registry

    for model in document["models"]:
        assert registry.entry_record(registry.get(model["name"]))["commands"] == model["commands"]


def test_every_printed_command_composes_and_finds_its_pinned_weights(document, tmp_path):
    from garden import registry

    commands = printed_commands(document)
    on_the_hub = {(e.name, v.name) for e in registry.entries().values() for v in e.variants if v.hub_id}
    assert {(name, variant["name"]) for _, name, variant in commands} == on_the_hub
    models = {m["name"]: m for m in document["models"]}
    pinned = {(v["hub_id"], v["revision"]): (name, v) for _, name, v in commands if v["revision"]}
    with HubServer() as hub:
        for (repo_id, revision), (name, variant) in pinned.items():  # only the pinned commits exist here
            hub.commit(repo_id, tiny_checkpoint(models[name], variant), branch=None, sha=revision)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING", "TRANSFORMERS_"))}
        env.update(HF_ENDPOINT=hub.url, HF_HOME=str(tmp_path / "hf-home"), HF_HUB_DISABLE_TELEMETRY="1",
                   HF_HUB_DISABLE_XET="1", HF_HUB_DISABLE_PROGRESS_BARS="1")
        done = subprocess.run([sys.executable, "-c", DRIVER, json.dumps([(c, n) for c, n, _ in commands])],
                              env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    outcomes = json.loads(done.stdout.strip().splitlines()[-1])
    failed = [f"{command}: {outcomes[command]['error']}" for command, _, _ in commands if "error" in outcomes[command]]
    assert not failed, "\n".join(failed)
    for command, _, variant in commands:
        found = outcomes[command]
        assert found["origin"] == f"hub {variant['hub_id']}@{variant['revision'][:7]}", command
        assert Path(found["folder"]).name == variant["revision"], command
