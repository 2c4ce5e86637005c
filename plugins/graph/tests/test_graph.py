"""The garden-graph distribution: Cluster-GCN, TGN and SchNet as a plugin of its own.

It builds as a wheel by itself, the core reaches it only through its entry point, each model
trains from the command line on offline data and beats its untrained self, reloads for infer
with readable predictions, its stage blocks compute its forward, and bad graph, event and
molecule data stop with one line naming the file and the fix; TGN's and SchNet's recipes
reproduce their declared results to 4 decimals.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from garden.pytest_plugin import garden_cli, run_dir

#: the graph plugin's source folder (plugins/graph)
PLUGIN = Path(__file__).resolve().parents[1]

MODELS = {
    "cluster_gcn": "node-classify",
    "tgn": "link-predict",
    "schnet": "graph-regress",
}


@pytest.fixture(scope="module")
def smoke_runs(tmp_path_factory):
    """One `python -m garden model=M task=T preset=smoke` per model, shared by the tests that read its outputs."""
    runs = {}
    for model, task in MODELS.items():
        where = tmp_path_factory.mktemp(model)
        result = garden_cli(f"model={model}", f"task={task}", "preset=smoke", cwd=where)
        runs[model] = (where, result)
    return runs


def test_the_plugin_builds_a_wheel_on_its_own_with_its_configs_and_entry_point(tmp_path):
    source = tmp_path / "src"  # a copy, so the in-tree build leaves nothing in the repository
    shutil.copytree(PLUGIN, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp_path)], check=True, capture_output=True)
    [wheel] = tmp_path.glob("garden_graph-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "garden_graph/conf/model/tgn.yaml" in names and "garden_graph/conf/task/node-classify.yaml" in names
    [entry_points] = [n for n in names if n.endswith("entry_points.txt")]
    assert "graph = garden_graph.plugin" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_the_core_finds_the_models_only_through_the_entry_point(cli):
    listed = cli("list", "--json")
    blocked = cli("list", "--json", env={"GARDEN_DISABLE_PLUGINS": "garden-graph"})
    assert listed.returncode == 0 and blocked.returncode == 0, listed.output + blocked.output
    names = {e["name"]: e for e in json.loads(listed.stdout)}
    assert {e["name"] for e in json.loads(blocked.stdout)} == set(names) - set(MODELS)
    assert "warning" not in blocked.stderr
    for model, task in MODELS.items():
        entry = names[model]
        assert entry["domain"] == "gnn" and entry["tasks"] == [task] and entry["plugin"] == "garden-graph"
        assert [v["name"] for v in entry["variants"]] == ["tiny", "base"] and all(v["params"] for v in entry["variants"])
        assert entry["paper_url"].startswith("https://arxiv.org/abs/") and entry["license"] == "mit"


def test_discovery_and_the_task_modules_do_not_import_torch():
    code = ("import sys, garden_graph.plugin, garden_graph.nodes, garden_graph.events, garden_graph.molecules; "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("model", MODELS)
def test_a_smoke_run_trains_evaluates_and_saves_a_reloadable_model(smoke_runs, model):
    where, result = smoke_runs[model]
    assert result.returncode == 0, result.output
    out = run_dir(where)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["steps"] == 20 and metrics["variant"] == "tiny" and metrics["history"]
    assert (out / "model" / "config.json").exists() and (out / "model" / "model.safetensors").exists()


@pytest.mark.parametrize("model, shown", [
    ("cluster_gcn", ["node ", "block "]),
    ("tgn", ["observed", "sampled negative", "t="]),
    ("schnet", ["zero-point energy (kcal/mol)"]),
])
def test_infer_with_the_saved_model_prints_readable_predictions(smoke_runs, model, shown, cli, tmp_path):
    folder = run_dir(smoke_runs[model][0]) / "model"
    result = cli(f"model={model}", f"task={MODELS[model]}", "mode=infer", f"weights={folder}", "data.eval_limit=4")
    assert result.returncode == 0, result.output
    assert all(s in result.stdout for s in shown), result.stdout
    rows = [json.loads(r) for r in next(tmp_path.glob("outputs/*/*/predictions.jsonl")).read_text().splitlines()]
    assert rows and all(r["input"] and r["predictions"] for r in rows)
    if model == "schnet":
        from ase.collections import g2

        assert all(r["input"] in g2.names for r in rows)


@pytest.mark.parametrize("model, overrides", [
    ("cluster_gcn", []),
    ("tgn", ["data.limit=6000", "data.eval_limit=500", "data.batch_size=100", "trainer.max_steps=60"]),
    ("schnet", ["data.limit=null", "data.eval_limit=null", "trainer.max_steps=30"]),
])
def test_training_beats_the_untrained_model_on_the_default_data(model, overrides, tmp_path):
    import garden

    common = [f"model={model}", f"task={MODELS[model]}", "preset=smoke", "trainer.eval=false", *overrides]
    trained = garden.run(common, output_dir=tmp_path / "trained")
    untrained = garden.run([*common, "trainer.max_steps=0"], output_dir=tmp_path / "untrained")
    assert untrained["steps"] == 0 and trained["steps"] > 0
    if model == "schnet":
        assert trained["eval"]["mae"] < 0.8 * untrained["eval"]["mae"]
    elif model == "tgn":
        assert trained["eval"]["average_precision"] > untrained["eval"]["average_precision"] + 0.05
        assert trained["eval"]["roc_auc"] > 0.55
    else:
        assert trained["eval"]["accuracy"] > untrained["eval"]["accuracy"] + 0.2


def prepared(model: str, *overrides: str):
    from garden.config import compose
    from garden.runs import prepare

    return prepare(compose([f"model={model}", f"task={MODELS[model]}", "preset=smoke", *overrides]))


@pytest.mark.parametrize("model", MODELS)
def test_the_stage_blocks_cover_every_parameter_and_compute_the_forward(model):
    import torch

    from garden.partition.stages import check_coverage, run_blocks

    p = prepared(model)
    net = p.family.build(p.spec)
    if model == "tgn":  # give the memory and the neighbour table something to hold
        net.train()
        p.task.forward(net, p.data.collate(list(p.data.train)))
    net.eval()
    blocks = p.family.stage_blocks(net, p.task.name)
    check_coverage(net, blocks)
    assert [b.kind for b in blocks] == ["embedding", *["layer"] * (len(blocks) - 2), "head"]
    batch = p.data.collate(list(p.data.eval)[:8])
    with torch.no_grad():
        assert torch.allclose(run_blocks(net, blocks, *p.task.inputs(batch)), p.task.forward(net, batch))


def test_tgn_training_steps_write_events_into_the_memory_and_eval_only_reads_it():
    import torch

    p = prepared("tgn")
    net = p.family.build(p.spec)
    batch = p.data.collate(list(p.data.train)[:16])
    net.train()
    p.task.forward(net, batch)
    assert (net.neighbours.neighbours[batch["src"]] >= 0).any(dim=1).all()
    net.eval()
    state = {k: v.clone() for k, v in net.state_dict().items()}
    eval_batch = p.data.collate(list(p.data.eval))
    with torch.inference_mode():
        first, second = p.task.forward(net, eval_batch), p.task.forward(net, eval_batch)
    assert torch.equal(first, second)
    assert all(torch.equal(v, state[k]) for k, v in net.state_dict().items())
    assert net.memory.memory.abs().sum() > 0  # leaving training flushed the pending messages


def one_line_error(model: str, *overrides: str) -> str:
    from garden.errors import DataError

    with pytest.raises(DataError) as caught:
        prepared(model, *overrides)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_an_edge_past_the_node_count_names_the_file_the_row_and_the_node_count(tmp_path):
    import numpy as np

    np.save(tmp_path / "features.npy", np.eye(4, dtype=np.float32))
    (tmp_path / "labels.txt").write_text("0\n1\n0\n1\n")
    (tmp_path / "edges.csv").write_text("0,1\n1,2\n2,7\n")
    message = one_line_error("cluster_gcn", f"data.path={tmp_path}")
    assert f"{tmp_path / 'edges.csv'} edge row 2 (2, 7)" in message and "4 nodes" in message


def test_a_graph_folder_trains_and_a_saved_pyg_data_file_loads(tmp_path):
    import numpy as np
    import torch
    from torch_geometric.data import Data

    from garden_graph.nodes import graph_folder

    np.savetxt(tmp_path / "features.txt", np.eye(6))
    (tmp_path / "labels.csv").write_text("0\n1\n0\n1\n0\n1\n")
    (tmp_path / "edges.txt").write_text("0 1\n1 2\n2 3\n3 4\n4 5\n")
    graph = graph_folder(str(tmp_path))
    assert graph.x.shape == (6, 6) and graph.edge_index.shape == (2, 10) and graph.labels == ("0", "1")
    torch.save(Data(x=torch.eye(3), edge_index=torch.tensor([[0, 1], [1, 2]]), y=torch.tensor([0, 1, 1])),
               tmp_path / "g.pt")
    assert graph_folder(str(tmp_path / "g.pt")).edge_index.shape == (2, 4)


def test_a_molecule_with_an_unknown_element_names_the_molecule_and_the_element(tmp_path):
    molecules = [{"name": "water", "z": ["O", "H", "H"], "pos": [[0, 0, 0], [0.96, 0, 0], [-0.24, 0.93, 0]], "y": 13.3},
                 {"name": "mystery", "z": ["C", "Xx"], "pos": [[0, 0, 0], [1.2, 0, 0]], "y": 1.0}]
    (tmp_path / "mols.json").write_text(json.dumps(molecules))
    message = one_line_error("schnet", f"data.path={tmp_path / 'mols.json'}")
    assert "molecule 'mystery' has unknown element 'Xx'" in message


JODIE = "user_id,item_id,timestamp,state_label,f1,f2\n0,0,10,0,0.1,0.2\n1,1,30,0,0.3,0.1\n0,1,20,0,0.5,0.5\n1,0,40,0,0.2,0.2\n"


def test_events_out_of_time_order_are_sorted_with_a_visible_note(tmp_path, capsys):
    from garden_graph.events import jodie

    (tmp_path / "wiki.csv").write_text(JODIE)
    stream = jodie(str(tmp_path / "wiki.csv"), strict=False)
    assert stream.t.tolist() == [10, 20, 30, 40] and stream.num_nodes == 4 and stream.msg.shape == (4, 2)
    assert "data row 3 (t=20) comes before row 2 (t=30)" in capsys.readouterr().err


def test_events_out_of_time_order_are_refused_when_strict_order_is_set(tmp_path):
    (tmp_path / "wiki.csv").write_text(JODIE)
    message = one_line_error("tgn", f"data.path={tmp_path / 'wiki.csv'}", "+data.options.strict_order=true")
    assert f"{tmp_path / 'wiki.csv'} data row 3 (t=20) comes before row 2 (t=30)" in message


def test_bad_data_exits_with_one_line_from_the_command_line(cli, tmp_path):
    (tmp_path / "mols.json").write_text(json.dumps([{"name": "ghost", "z": [0], "pos": [[0, 0, 0]], "y": 0.0}]))
    result = cli("model=schnet", "task=graph-regress", f"data.path={tmp_path / 'mols.json'}")
    assert result.returncode == 2, result.output
    assert "molecule 'ghost' has unknown element 0" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("model, task", [("tgn", "link-predict"), ("schnet", "graph-regress")])
def test_the_declared_result_reproduces_to_4_decimals(model, task, tmp_path):
    """The recipe behind the registry's result (results.json) gives the same metrics here."""
    from garden.testing import rerun_declared_result

    rerun_declared_result(model, task, tmp_path)
