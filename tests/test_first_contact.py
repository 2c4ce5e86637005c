"""First contact (issue 18, parts 1 and 2): the commands a new user types first, on a laptop, on
and off line. Each row is one command as typed, checked for its exit status, its one line and
what it leaves on disk; most fail before torch loads, so they cost a second or two.

| command | exit | the line (a part that names the cause and the fix) | on disk afterwards |
|---|---|---|---|
| ``python -m garden`` | 2 | usage | nothing |
| ``registry serve --port 99999`` | 2 | 99999 is not a port number; give one from 1 to 65535 (0: any free port) | nothing |
| ``model=VIT task=classify`` | 2 | did you mean vit? | nothing |
| ``model=vit ...`` with ``GARDEN_DISABLE_PLUGINS=garden-vit`` | 2 | plugin garden-vit is disabled by GARDEN_DISABLE_PLUGINS | nothing |
| ``trainer.max_steps=-5``, ``data.batch_size=0``/``-3``, ``trainer.lr=-1``, ``data.limit=0``, ... | 2 | KEY=VALUE is out of range (what it means); give ... | nothing |
| ``plan model=vit ipu.cost=bogus`` | 2 | ipu.cost=bogus is not one of: flops, params, measured (before torch) | nothing |
| ``plan ... ipu.ipus_per_replica=100`` | 2 | leaves 94 automatic stages ... with nothing to run; use at most 6 IPUs | nothing |
| ``model=vit task=classify`` offline | 2 | weights=auto: ... not cached ...; unset HF_HUB_OFFLINE / hf download / model.variant=tiny / preset=smoke / weights=random | nothing |
| ``model=vit task=classify`` with the Hub serving the checkpoint | 0 | first line before torch; ``estimate:`` after 3 steps; an ETA | the run |
| a run that fails after Hydra made its folder | 2 | the cause | no run folder |
| ``model=bert weights=<a ViT folder>`` | 2 | holds a 'vit' model (ViTForImageClassification) ...; run it with model=vit | nothing |
| ``weights=<pytorch_model.bin folder> weights.allow_pickle=true`` | 0 | | the checkpoint's weights, loaded |
| a corrupt image / audio file / text line, training or inference | 2 | cannot read ... NAME; ... set data.skip_unreadable=true | nothing |
| the same with ``data.skip_unreadable=true`` | 0 | skipped N ... that could not be read | the run, without them |
| ``ipu.config_file`` with ``layers_per_ipuu`` | 2 | not a field of optimum-graphcore's IPUConfig (did you mean layers_per_ipu?) | nothing |
| ``registry serve`` with no registry.json | serves | the installed plugins' registry | nothing |
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import garden_cli

REFUSED = 2  # bad input is a usage error, as argparse and Hydra exit with

#: (command, environment, exit status, a piece of the one line printed)
MATRIX = [
    ((), {}, REFUSED, "usage: python -m garden COMMAND"),
    (("registry", "serve", "--port", "99999"), {}, REFUSED,
     "registry: argument --port: 99999 is not a port number; give one from 1 to 65535 (0: any free port)"),
    (("list", "--bogus"), {}, REFUSED, "unrecognized arguments: --bogus"),
    (("model=VIT", "task=classify"), {}, REFUSED, "unknown model 'VIT' (model=VIT); did you mean vit?"),
    (("model=vit", "task=classify"), {"GARDEN_DISABLE_PLUGINS": "garden-vit"}, REFUSED,
     "model 'vit' is unavailable: plugin garden-vit is disabled by GARDEN_DISABLE_PLUGINS=garden-vit"),
    (("model=SchNet", "task=graph-regress"), {"GARDEN_PLUGINS": "garden-vit"}, REFUSED,
     "model 'SchNet' is unavailable: plugin garden-graph is not among GARDEN_PLUGINS=garden-vit"),
    (("model=vit", "task=classify", "trainer.max_steps=-5"), {}, REFUSED,
     "trainer.max_steps=-5 is out of range (optimizer steps, 0 saves the initial model; null follows "
     "trainer.epochs); give a whole number of at least 0 (or null)"),
    (("model=vit", "task=classify", "data.batch_size=0"), {}, REFUSED,
     "data.batch_size=0 is out of range (examples per training step); give a whole number of at least 1"),
    (("model=vit", "task=classify", "data.batch_size=-3"), {}, REFUSED, "data.batch_size=-3 is out of range"),
    (("model=vit", "task=classify", "trainer.lr=-1"), {}, REFUSED,
     "trainer.lr=-1.0 is out of range (the learning rate); give a number above 0"),
    (("model=vit", "task=classify", "data.limit=0"), {}, REFUSED, "data.limit=0 is out of range"),
    (("model=vit", "task=classify", "data.eval_fraction=1.5"), {}, REFUSED,
     "data.eval_fraction=1.5 is out of range (the share of examples held out); give a number above 0 and below 1"),
    (("model=vit", "task=classify", "trainer.optimizer=adam"), {}, REFUSED,
     "trainer.optimizer=adam is not one of: adamw, sgd"),
    (("plan", "model=vit", "ipu.cost=bogus"), {}, REFUSED, "ipu.cost=bogus is not one of: flops, params, measured"),
    # the README's first command, offline: the base variant's weights are not cached
    (("model=vit", "task=classify"), {}, REFUSED,
     "weights=auto: google/vit-base-patch16-224@3f49326 is not cached and HF_HUB_OFFLINE=1 forbids downloading it"),
]


@pytest.mark.parametrize("command, env, status, line", MATRIX, ids=lambda v: " ".join(v) if isinstance(v, tuple) else None)
def test_a_refused_command_prints_one_line_exits_2_and_leaves_nothing(tmp_path, command, env, status, line):
    done = garden_cli(*command, cwd=tmp_path, env={"HF_HOME": str(tmp_path / "hf"), **env})
    assert done.returncode == status, done.output
    lines = done.stderr.strip().splitlines()
    if command:  # an error is one line; garden alone prints the usage
        assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert line in lines[0], done.stderr
    assert "Traceback" not in done.output
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == [], "a refused command wrote files"


def test_the_headline_command_offline_names_every_way_forward(tmp_path):
    """``python -m garden model=vit task=classify`` never trains ViT-base from random init."""
    done = garden_cli("model=vit", "task=classify", cwd=tmp_path, env={"HF_HOME": str(tmp_path / "hf")})
    for fix in ("unset HF_HUB_OFFLINE", "hf download google/vit-base-patch16-224 --revision 3f49326",
                "model.variant=tiny", "preset=smoke", "weights=random"):
        assert fix in done.stderr
    assert not (tmp_path / "outputs").exists() or not any((tmp_path / "outputs").iterdir())


def test_the_headline_command_with_its_weights_on_the_hub_fine_tunes_with_an_estimate_and_an_eta(tmp_path):
    """The same command where the Hub serves ViT-base's pinned checkpoint (tests/hubserver.py; a
    tiny ViT stands in for its 86 M parameters, under the pinned repo and commit)."""
    from garden import registry
    from hubserver import HubServer

    base = registry.get("vit").variant("base")
    with HubServer() as server:
        server.add_repo(base.hub_id, tiny_vit_folder(tmp_path / "checkpoint"), sha=base.revision)
        env = {"HF_ENDPOINT": server.url, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "0",
               "HF_HUB_DISABLE_XET": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
        done = garden_cli("model=vit", "task=classify", "trainer.max_steps=5", "data.limit=96", "data.eval_limit=16",
                          cwd=tmp_path, env=env)
    assert done.returncode == 0, done.output
    assert done.stdout.splitlines()[0] == (f"vit (base) · classify · train · weights hub {base.hub_id}@"
                                           f"{base.revision[:7]} · loading torch…")
    [estimate] = [ln for ln in done.stderr.splitlines() if ln.startswith("estimate: ")]
    assert estimate.startswith("estimate: 5 steps at ") and "of training, plus 1 evaluation of 16 examples" in estimate
    assert " eta " in done.stderr  # the progress bar's time left
    [metrics] = tmp_path.glob("outputs/*/*/metrics.json")
    recorded = json.loads(metrics.read_text())
    assert recorded["weights"] == f"hub {base.hub_id}@{base.revision[:7]}"
    assert recorded["estimate"]["after_steps"] == 3 and recorded["estimate"]["train_seconds"] > 0


def test_help_is_not_an_error():
    done = garden_cli("--help")
    assert done.returncode == 0 and done.stdout.startswith("usage: python -m garden")


def test_a_plan_with_more_ipus_than_the_model_has_blocks_is_refused(capsys):
    from garden.cli import main

    assert main(["plan", "model=vit", "model.variant=tiny", "ipu.ipus_per_replica=100", "ipu.cost=params"]) == REFUSED
    err = capsys.readouterr().err.strip()
    assert err == ("error: ipu.ipus_per_replica=100 leaves 94 automatic stages of model 'vit' with nothing to run "
                   "(it has 4 layers); use at most 6 IPUs")


def test_a_run_that_fails_before_it_starts_leaves_no_run_folder(tmp_path):
    """Refused after Hydra made the folder (a tiny variant has no weights to predict with)."""
    done = garden_cli("model=vit", "task=classify", "model.variant=tiny", "mode=infer", cwd=tmp_path)
    assert done.returncode == REFUSED
    assert "has no pretrained weights to predict with" in done.stderr.strip().splitlines()[-1]
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


#: on PYTHONPATH as sitecustomize: writes a marker to stdout when torch starts to import
TORCH_MARKER = """
import sys

class SayTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch":
            sys.stdout.write("<torch starts to import>\\n")
            sys.stdout.flush()
            sys.meta_path.remove(self)
        return None

sys.meta_path.insert(0, SayTorch())
"""


def test_the_first_line_comes_before_torch_loads(tmp_path):
    """What runs and from which weights is on screen before ``import torch``, which takes
    seconds on a laptop."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(TORCH_MARKER)
    done = garden_cli("model=vit", "task=classify", "model.variant=tiny", f"data.path={tmp_path / 'none'}",
                      cwd=tmp_path, env={"PYTHONPATH": str(site)})
    lines = done.stdout.splitlines()
    assert lines[:2] == ["vit (tiny) · classify · train · weights random · loading torch…",
                         "<torch starts to import>"], done.output
    assert done.returncode == REFUSED and len(done.stderr.strip().splitlines()) == 1, done.stderr


@pytest.mark.parametrize("settings, passes", [
    (("trainer.max_steps=2",), 1),  # max_steps ends the first epoch: its evaluation is the final one
    (("trainer.max_steps=3", "data.limit=16"), 2),  # 2 epochs of 2 steps: one evaluation after each
    (("trainer.max_steps=2", "trainer.eval=false"), 1),  # no per-epoch evaluation: the final one
])
def test_evaluation_runs_once_per_point_in_time(tmp_path, monkeypatch, settings, passes):
    import garden
    from garden.runs import loops

    calls = []

    def counted(*args, **kwargs):
        calls.append(1)
        return evaluate(*args, **kwargs)

    evaluate = loops.evaluate
    monkeypatch.setattr(loops, "evaluate", counted)
    metrics = garden.run(["model=vit", "task=classify", "preset=smoke", "data.limit=32", "data.eval_limit=8",
                          *settings], output_dir=tmp_path / "run")
    assert len(calls) == passes
    last = metrics["history"][-1]
    if "trainer.eval=false" not in settings:
        assert metrics["eval"] == {k.removeprefix("eval_"): v for k, v in last.items() if k.startswith("eval_")}


def tiny_vit_folder(folder: Path) -> Path:
    from transformers import ViTConfig, ViTForImageClassification

    config = ViTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                       image_size=32, patch_size=8, num_labels=10)
    ViTForImageClassification(config).save_pretrained(folder)
    return folder


def test_weights_of_another_model_say_which_model_the_folder_holds(tmp_path):
    from garden.config import compose
    from garden.errors import WeightsError
    from garden.runs.prepared import prepare

    folder = tiny_vit_folder(tmp_path / "vit-model")
    with pytest.raises(WeightsError) as refused:
        prepare(compose(["model=bert", "task=classify", "preset=smoke", f"weights={folder}"]))
    assert str(refused.value) == (
        f"weights={folder} holds a 'vit' model (ViTForImageClassification), not a 'bert' one as model=bert needs; "
        "run it with model=vit, or give model=bert a bert checkpoint")


def test_a_pickle_only_folder_loads_when_pickles_are_allowed(tmp_path):
    import torch
    from safetensors.torch import load_file

    import garden
    from garden.errors import WeightsError

    saved = tiny_vit_folder(tmp_path / "saved")
    pickled = tmp_path / "pickled"
    pickled.mkdir()
    (pickled / "config.json").write_text((saved / "config.json").read_text())
    state = load_file(saved / "model.safetensors")
    torch.save(state, pickled / "pytorch_model.bin")
    with pytest.raises(WeightsError, match="has only pickle weights"):
        garden.load_model("vit", "classify", variant="tiny", weights=str(pickled))
    from_pickle = garden.load_model("vit", "classify", variant="tiny", weights=str(pickled), allow_pickle=True)
    from_safetensors = garden.load_model("vit", "classify", variant="tiny", weights=str(saved))
    expected = from_safetensors.state_dict()
    for key, tensor in from_pickle.state_dict().items():  # random init would differ everywhere
        torch.testing.assert_close(tensor, expected[key], rtol=0, atol=0)  # the same bytes, loaded alike


def image_classes(root: Path, broken: str | None = None) -> Path:
    """Two class folders of 16x16 PNGs; ``broken`` names a file written as not-an-image."""
    from PIL import Image

    for label, colour in (("red", (255, 0, 0)), ("blue", (0, 0, 255))):
        (root / label).mkdir(parents=True, exist_ok=True)
        for i in range(4):
            Image.new("RGB", (16, 16), color=colour).save(root / label / f"{i}.png")
    if broken:
        (root / broken).write_bytes(b"\x89PNG\r\n\x1a\n but then nothing an image would hold")
    return root


def speech_folder(root: Path, broken: str) -> Path:
    import numpy as np
    import soundfile

    root.mkdir(parents=True, exist_ok=True)
    tone = np.sin(np.linspace(0, 440 * 2 * np.pi, 8000)).astype(np.float32) * 0.3
    names = ["go.wav", "stop.wav", "up.wav", broken]
    for name in names:
        soundfile.write(root / name, tone, 16000, subtype="PCM_16")
    (root / broken).write_bytes(b"RIFF not really a wave file")
    (root / "transcripts.csv").write_text("file,transcript\n" + "".join(f"{n},{n[:-4]}\n" for n in names))
    return root


def text_rows(path: Path) -> Path:
    good = "".join(json.dumps({"sentence": f"sentence {i}", "label": i % 2}) + "\n" for i in range(8))
    path.write_bytes(good.encode() + b"{\"sentence\": \"caf\xe9\", \"label\": 1}\n" + b"{not json}\n")
    return path


def read_for_training(*overrides: str):
    from garden.config import compose
    from garden.runs.prepared import prepare

    return prepare(compose(list(overrides)))


#: one corrupt input per kind: the overrides that read it in training, and the line that names it
UNREADABLE = {
    "image": (lambda tmp: ("model=vit", "task=classify", "preset=smoke",
                           f"data.path={image_classes(tmp / 'images', broken='red/9.png')}"),
              lambda tmp: f"cannot read image {tmp / 'images' / 'red' / '9.png'} (cannot identify image file",
              "1 image"),
    "audio": (lambda tmp: ("model=hubert", "task=audio-classify", "preset=smoke", "+data.options.label_column=transcript",
                           f"data.path={speech_folder(tmp / 'speech', 'broken.wav')}"),
              lambda tmp: f"cannot decode audio file {tmp / 'speech' / 'broken.wav'}", "1 audio file"),
    "text": (lambda tmp: ("model=bert", "task=classify", "preset=smoke", f"data.path={text_rows(tmp / 'rows.jsonl')}"),
             lambda tmp: f"{tmp / 'rows.jsonl'}: line 9 is not UTF-8 text (invalid continuation byte", "2 lines"),
}


@pytest.mark.parametrize("kind", UNREADABLE)
def test_an_unreadable_input_stops_training_naming_it_and_the_flag_that_skips(tmp_path, kind):
    from garden.errors import DataError

    overrides, names_it, _ = UNREADABLE[kind]
    with pytest.raises(DataError) as refused:
        read_for_training(*overrides(tmp_path))
    assert str(refused.value).startswith(names_it(tmp_path)), refused.value
    assert "set data.skip_unreadable=true to skip unreadable" in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize("kind", UNREADABLE)
def test_skip_unreadable_skips_with_a_count_and_one_warning(tmp_path, kind):
    overrides, _, count = UNREADABLE[kind]
    prepared = read_for_training(*overrides(tmp_path), "data.skip_unreadable=true")
    [warning] = [n for n in prepared.notes if n.startswith("skipped ")]
    assert warning.startswith(f"skipped {count} that could not be read (data.skip_unreadable=true): ")
    assert len(prepared.data.train) + len(prepared.data.eval) == {"image": 8, "audio": 3, "text": 8}[kind]


def test_inference_follows_the_same_policy_for_images_audio_and_text(tmp_path):
    from garden.errors import DataError, reading
    from garden.text import read_inputs

    prepared = read_for_training("model=vit", "task=classify", "preset=smoke", "data.limit=8", "data.eval_limit=8")
    folder = image_classes(tmp_path / "images", broken="blue/9.png")
    with pytest.raises(DataError, match=r"cannot read image .*blue/9\.png .*data\.skip_unreadable=true"):
        prepared.task.load_inputs(str(folder), prepared.preprocessor, prepared.data)
    with reading(skip=True) as policy:
        examples = prepared.task.load_inputs(str(folder), prepared.preprocessor, prepared.data)
    assert len(examples) == 8 and policy.warning().startswith("skipped 1 image that could not be read")

    lines = tmp_path / "in.txt"
    lines.write_bytes(b"first\n\xff\xfe second\nthird\n")
    with pytest.raises(DataError, match=r"in\.txt: line 2 is not UTF-8 text"):
        read_inputs(str(lines), "sentence")
    with reading(skip=True) as policy:
        assert [text for _, text in read_inputs(str(lines), "sentence")] == ["first", "third"]
    assert policy.warning().startswith("skipped 1 line that could not be read")

    speech = read_for_training("model=hubert", "task=audio-classify", "preset=smoke", "data.limit=8",
                               "data.eval_limit=8")
    audio = speech_folder(tmp_path / "speech", "broken.wav")
    with pytest.raises(DataError, match=r"cannot decode audio file .*broken\.wav"):
        speech.task.load_inputs(str(audio), speech.preprocessor, speech.data)
    with reading(skip=True) as policy:
        assert len(speech.task.load_inputs(str(audio), speech.preprocessor, speech.data)) == 3
    assert policy.warning().startswith("skipped 1 audio file that could not be read")


def test_a_corrupt_image_in_a_training_folder_is_one_line_from_the_command_line(tmp_path):
    data = image_classes(tmp_path / "data", broken="red/9.png")
    done = garden_cli("model=vit", "task=classify", "preset=smoke", f"data.path={data}", cwd=tmp_path)
    assert done.returncode == REFUSED, done.output
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"error: cannot read image {data / 'red' / '9.png'} (cannot identify image file")
    assert line.endswith("set data.skip_unreadable=true to skip unreadable images with a warning")
    assert not (tmp_path / "outputs").exists() or not any((tmp_path / "outputs").rglob("*.json"))


def test_registry_serve_without_a_registry_json_serves_the_installed_plugins(tmp_path):
    import threading
    import urllib.request

    from garden import registry
    from garden.serve import make_server

    server = make_server(tmp_path / "registry.json", port=0)  # outside a checkout: no registry.json
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/registry.json"
        served = json.load(urllib.request.urlopen(url))
    finally:
        server.shutdown()
        server.server_close()
    assert served == json.loads(registry.render(registry.registry_document()))
    assert "vit" in [m["name"] for m in served["models"]]


def test_an_ipu_config_file_with_a_misspelt_field_is_refused_naming_it(tmp_path):
    from garden.errors import ConfigError
    from garden.partition.ipu_config import IGNORED_FIELDS, read_ipu_config

    file = tmp_path / "ipu_config.json"
    file.write_text(json.dumps({"layers_per_ipuu": [3, 3, 3, 3], "ipus_per_replica": 4}))
    with pytest.raises(ConfigError) as refused:
        read_ipu_config(file)
    assert str(refused.value) == (
        f"{file}: 'layers_per_ipuu' is not a field of optimum-graphcore's IPUConfig (did you mean layers_per_ipu?); "
        "fix or remove it (docs/ipu.md lists the fields garden applies and those it ignores)")
    # fields optimum has and garden knowingly does not apply, and the versions optimum records, still read
    file.write_text(json.dumps({"layers_per_ipu": [6, 6], "optimum_version": "1.0.0",
                                **{name: None for name in IGNORED_FIELDS}}))
    assert read_ipu_config(file).layers_per_ipu == [6, 6]
