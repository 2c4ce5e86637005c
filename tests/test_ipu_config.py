"""Optimum Graphcore's ipu_config.json: read as-is, written so optimum reads it back, optimum's fallbacks."""

import json
import os

import pytest

from garden.errors import ConfigError
from garden.partition import ipu_config as ipu_config_module
from garden.partition.ipu_config import (
    IPUConfig,
    inference_layout,
    ipu_config_from_dict,
    read_ipu_config,
    training_layout,
    write_ipu_config,
)

#: The keyword arguments of optimum.graphcore.IPUConfig.__init__ (optimum-graphcore main branch).
OPTIMUM_FIELDS = {
    "replication_factor", "inference_replication_factor", "gradient_accumulation_steps", "layers_per_ipu",
    "inference_layers_per_ipu", "ipus_per_replica", "inference_ipus_per_replica", "optimizer_state_offchip",
    "replicated_tensor_sharding", "matmul_proportion", "inference_matmul_proportion", "enable_half_partials",
    "embedding_serialization_factor", "inference_embedding_serialization_factor",
    "serialized_embedding_splits_per_ipu", "inference_serialized_embedding_splits_per_ipu",
    "projection_serialization_factor", "inference_projection_serialization_factor",
    "serialized_projection_splits_per_ipu", "inference_serialized_projection_splits_per_ipu",
    "recompute_checkpoint_every_layer", "device_iterations", "inference_device_iterations", "output_mode", "seed",
    "auto_loss_scaling", "executable_cache_dir", "explicit_ir_inference", "parallelize_kwargs",
    "inference_parallelize_kwargs",
}  # fmt: skip

#: A Graphcore Hub file in the shape of Graphcore/bert-base-uncased's ipu_config.json.
GRAPHCORE_BERT_BASE = {
    "device_iterations": 1,
    "embedding_serialization_factor": 2,
    "enable_half_first_order_momentum": True,
    "enable_half_partials": True,
    "executable_cache_dir": "./exe_cache",
    "gradient_accumulation_steps": 512,
    "inference_device_iterations": 4,
    "inference_replication_factor": 4,
    "ipus_per_replica": 4,
    "layers_per_ipu": [0, 4, 4, 4],
    "matmul_proportion": [0.1, 0.15, 0.15, 0.15],
    "optimizer_state_offchip": False,
    "optimum_version": "1.0.0",
    "output_mode": "final",
    "recompute_checkpoint_every_layer": True,
    "replicated_tensor_sharding": True,
    "replication_factor": 4,
    "seed": 42,
}


def write_json(folder, data):
    path = folder / "ipu_config.json"
    path.write_text(json.dumps(data, indent=2))
    return path


def test_defaults_are_optimums():
    cfg = IPUConfig()
    assert cfg.layers_per_ipu == [-1] and cfg.ipus_per_replica == 1
    assert (cfg.matmul_proportion, cfg.output_mode, cfg.executable_cache_dir) == (0.2, "final", "")
    assert (cfg.replication_factor, cfg.gradient_accumulation_steps, cfg.device_iterations) == (1, 1, 1)
    assert cfg.enable_half_partials is True and cfg.recompute_checkpoint_every_layer is False
    assert IPUConfig(layers_per_ipu=[3, -1, -1]).ipus_per_replica == 3


def test_every_field_written_is_one_optimum_knows():
    assert set(IPUConfig().to_dict()) <= OPTIMUM_FIELDS
    assert set(ipu_config_module._FIELD_TYPES) == set(ipu_config_module._FIELD_NAMES)


def test_a_graphcore_hub_file_reads_verbatim(tmp_path):
    cfg = read_ipu_config(write_json(tmp_path, GRAPHCORE_BERT_BASE))
    assert cfg.layers_per_ipu == [0, 4, 4, 4] and cfg.ipus_per_replica == 4
    assert cfg.matmul_proportion == [0.1, 0.15, 0.15, 0.15]
    assert cfg.embedding_serialization_factor == 2
    assert (cfg.gradient_accumulation_steps, cfg.replication_factor, cfg.seed) == (512, 4, 42)
    assert (cfg.optimizer_state_offchip, cfg.replicated_tensor_sharding) == (False, True)
    assert cfg.extra == {"enable_half_first_order_momentum": True, "optimum_version": "1.0.0"}


def test_every_optimum_field_is_applied_or_ignored_with_a_reason():
    applied = set(ipu_config_module._FIELD_NAMES)
    ignored = set(ipu_config_module.IGNORED_FIELDS)
    assert not applied & ignored
    assert OPTIMUM_FIELDS <= applied | ignored
    assert all(len(why) > 10 for why in ipu_config_module.IGNORED_FIELDS.values())


def test_an_ignored_field_is_named_only_when_it_asks_for_something():
    named = ipu_config_module.ignored_fields(ipu_config_from_dict(
        {"projection_serialization_factor": 4, "explicit_ir_inference": False, "parallelize_kwargs": {},
         "enable_half_first_order_momentum": True}))
    assert set(named) == {"projection_serialization_factor", "enable_half_first_order_momentum"}


def test_a_folder_reads_like_its_ipu_config_json(tmp_path):
    write_json(tmp_path, GRAPHCORE_BERT_BASE)
    assert read_ipu_config(tmp_path) == read_ipu_config(tmp_path / "ipu_config.json")


def test_round_trip_keeps_every_field_including_unknown_ones(tmp_path):
    cfg = read_ipu_config(write_json(tmp_path, GRAPHCORE_BERT_BASE))
    written = write_ipu_config(cfg, tmp_path / "out")
    assert written == tmp_path / "out" / "ipu_config.json"
    data = json.loads(written.read_text())
    assert GRAPHCORE_BERT_BASE.items() <= data.items()
    assert read_ipu_config(written) == cfg


def test_written_file_is_formatted_like_optimums_to_json_file(tmp_path):
    written = write_ipu_config(IPUConfig(layers_per_ipu=[6, 6]), tmp_path / "cfg.json")
    text = written.read_text()
    data = json.loads(text)
    assert text == json.dumps(data, indent=2, sort_keys=True) + "\n"
    assert data["ipus_per_replica"] == 2 and data["inference_layers_per_ipu"] is None


def test_write_replaces_atomically_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    write_ipu_config(IPUConfig(layers_per_ipu=[6, 6]), tmp_path)
    before = (tmp_path / "ipu_config.json").read_text()

    def crash(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        write_ipu_config(IPUConfig(layers_per_ipu=[4, 4, 4]), tmp_path)
    assert (tmp_path / "ipu_config.json").read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["ipu_config.json"]


def test_garden_never_writes_a_file_optimum_would_refuse(tmp_path):
    with pytest.raises(ConfigError, match="matmul_proportion"):
        write_ipu_config(IPUConfig(layers_per_ipu=[6, 6], matmul_proportion=[0.1]), tmp_path)
    assert not (tmp_path / "ipu_config.json").exists()


@pytest.mark.parametrize(
    "field, value, expected",
    [
        ("replication_factor", "4", "an integer >= 1"),
        ("gradient_accumulation_steps", 0, "an integer >= 1"),
        ("device_iterations", True, "an integer >= 1"),
        ("layers_per_ipu", [4, "4"], "a non-empty list of layer counts"),
        ("layers_per_ipu", [4, -2], "a non-empty list of layer counts"),
        ("matmul_proportion", "0.2", "a number >= 0"),
        ("recompute_checkpoint_every_layer", "yes", "true or false"),
        ("output_mode", "last", "one of"),
        ("seed", 4.2, "an integer or null"),
    ],
)
def test_wrong_types_name_the_field_and_the_file(tmp_path, field, value, expected):
    path = write_json(tmp_path, {"layers_per_ipu": [-1], field: value})
    with pytest.raises(ConfigError) as err:
        read_ipu_config(path)
    message = str(err.value)
    assert str(path) in message and field in message and expected in message and "\n" not in message


@pytest.mark.parametrize(
    "data, message",
    [
        ({"layers_per_ipu": [6, 6], "ipus_per_replica": 4}, r"layers_per_ipu=\[6, 6\] has 2 entries but ipus_per_re"),
        ({"layers_per_ipu": [6, 6], "inference_ipus_per_replica": 1}, r"inference_layers_per_ipu=\[6, 6\] has 2"),
        ({"layers_per_ipu": [6, 6], "matmul_proportion": [0.1]}, r"matmul_proportion=\[0.1\] needs one entry per IPU"),
        ({"layers_per_ipu": [6, 6], "inference_matmul_proportion": [0.1]}, r"inference_matmul_proportion"),
        ({"embedding_serialization_factor": 2, "serialized_embedding_splits_per_ipu": [1, 1]}, "only one of"),
    ],
)
def test_fields_that_contradict_each_other_are_refused_as_optimum_does(data, message):
    with pytest.raises(ConfigError, match=message):
        ipu_config_from_dict(data, source="conf/ipu/bert.json")


def test_serialized_embedding_splits_leave_the_factor_unset(tmp_path):
    cfg = ipu_config_from_dict({"layers_per_ipu": [-1, -1], "serialized_embedding_splits_per_ipu": [1, 1]})
    assert cfg.embedding_serialization_factor is None
    assert json.loads(write_ipu_config(cfg, tmp_path).read_text())["embedding_serialization_factor"] is None


@pytest.mark.parametrize(
    "text, message", [("{", "is not valid JSON"), ("[1, 2]", "must hold a JSON object, got list")]
)
def test_a_file_that_is_not_a_json_object_is_a_config_error(tmp_path, text, message):
    (tmp_path / "ipu_config.json").write_text(text)
    with pytest.raises(ConfigError, match=message):
        read_ipu_config(tmp_path)


def test_a_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="no IPU config at"):
        read_ipu_config(tmp_path)


def test_inference_layout_falls_back_to_the_training_values():
    cfg = IPUConfig(layers_per_ipu=[0, 4, 4, 4])
    assert training_layout(cfg) == inference_layout(cfg) == ([0, 4, 4, 4], 4)


def test_inference_layout_counts_its_own_list():
    cfg = IPUConfig(layers_per_ipu=[0, 4, 4, 4], inference_layers_per_ipu=[6, 6])
    assert inference_layout(cfg) == ([6, 6], 2)


def test_a_wildcard_list_keeps_an_explicit_ipus_per_replica_for_inference():
    cfg = IPUConfig(layers_per_ipu=[-1], ipus_per_replica=4)
    assert training_layout(cfg) == inference_layout(cfg) == ([-1], 4)


def test_explicit_inference_ipus_win():
    cfg = IPUConfig(layers_per_ipu=[-1, -1, -1, -1], inference_ipus_per_replica=2, inference_layers_per_ipu=[-1])
    assert inference_layout(cfg) == ([-1], 2)


def test_one_ipu_holds_every_layer_whatever_the_list_says():
    cfg = IPUConfig(layers_per_ipu=[-1, -1, -1, -1], inference_ipus_per_replica=1)
    assert inference_layout(cfg) == ([-1], 1)
    assert training_layout(IPUConfig(layers_per_ipu=[5], ipus_per_replica=1)) == ([-1], 1)
