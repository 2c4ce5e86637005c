"""garden.hub against the real huggingface_hub client, talking to tests/hubserver.py.

Every resolution that may reach the Hub runs in a fresh interpreter: huggingface_hub reads
HF_ENDPOINT, HF_HOME and HF_HUB_OFFLINE once, when imported, so each case needs its own process
to point it at this server, a temporary cache, or offline mode.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from garden.entries import ModelEntry, Variant
from garden.errors import WeightsError
from garden.hub import parse_hub_source, resolve_weights
from hubserver import HubServer

ROOT = Path(__file__).resolve().parents[1]

# Runs one garden.hub call in a clean interpreter; prints its result, or its WeightsError, as JSON.
DRIVER = """
import json, sys
from pathlib import Path
from garden import hub
from garden.entries import Variant
from garden.errors import WeightsError

call = json.loads(sys.argv[1])
try:
    if "push" in call:
        result = {"url": hub.push(Path(call["push"]), call["repo_id"])}
    else:
        variant = Variant(**call["variant"]) if call.get("variant") else None
        found = hub.resolve_weights(call["source"], variant, allow_pickle=call.get("allow_pickle", False),
                                    for_training=call.get("for_training", True))
        result = {"folder": found.folder and str(found.folder), "origin": found.origin}
except WeightsError as error:
    result = {"error": str(error)}
print(json.dumps(result))
"""


class Client:
    """garden.hub as a fresh process would run it, against ``endpoint`` with cache ``hf_home``."""

    def __init__(self, endpoint: str, hf_home: Path):
        self.endpoint, self.hf_home = endpoint, hf_home

    def __call__(self, source: str | None = None, *, offline: bool = False, **call) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING", "TRANSFORMERS_"))}
        env.update(
            HF_ENDPOINT=self.endpoint,
            HF_HOME=str(self.hf_home),
            HF_HUB_OFFLINE="1" if offline else "0",
            HF_HUB_DISABLE_TELEMETRY="1",
            HF_HUB_DISABLE_XET="1",
            HF_HUB_DISABLE_PROGRESS_BARS="1",
            PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        )
        if source is not None:
            call["source"] = source
        done = subprocess.run(
            [sys.executable, "-c", DRIVER, json.dumps(call)], env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def tiny_vit(tmp_path_factory) -> Path:
    """A real (tiny) transformers checkpoint: config.json + model.safetensors."""
    from transformers import ViTConfig, ViTForImageClassification

    cfg = ViTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                    image_size=32, patch_size=8)
    folder = tmp_path_factory.mktemp("tiny-vit")
    ViTForImageClassification(cfg).save_pretrained(folder)
    return folder


@pytest.fixture
def server():
    with HubServer() as running:
        yield running


@pytest.fixture
def client(server, tmp_path) -> Client:
    return Client(server.url, tmp_path / "hf-home")


def checkpoint_copy(tiny_vit: Path, where: Path, **config_changes) -> Path:
    """A copy of the tiny checkpoint, its config.json changed so each copy is a distinct commit."""
    shutil.copytree(tiny_vit, where)
    config = json.loads((where / "config.json").read_text())
    (where / "config.json").write_text(json.dumps({**config, **config_changes}))
    return where


def test_hub_source_without_revision_downloads_main_and_records_its_commit(server, client, tiny_vit):
    sha = server.add_repo("org/tiny-vit", tiny_vit)
    found = client("hub:org/tiny-vit")
    assert found["origin"] == f"hub org/tiny-vit@{sha[:7]}"
    folder = Path(found["folder"])
    assert folder.name == sha
    assert (folder / "model.safetensors").read_bytes() == (tiny_vit / "model.safetensors").read_bytes()
    assert (folder / "config.json").is_file()


def test_pinned_revision_downloads_that_commit_even_after_main_moves_on(server, client, tiny_vit, tmp_path):
    old = server.add_repo("org/tiny-vit", checkpoint_copy(tiny_vit, tmp_path / "v1", release=1))
    server.add_repo("org/tiny-vit", checkpoint_copy(tiny_vit, tmp_path / "v2", release=2))
    by_source = client(f"hub:org/tiny-vit@{old}")
    by_variant = client("hub", variant={"name": "tiny", "hub_id": "org/tiny-vit", "revision": old})
    assert by_source == by_variant
    assert json.loads((Path(by_source["folder"]) / "config.json").read_text())["release"] == 1


def test_cached_pinned_commit_is_used_without_asking_the_hub(server, client, tiny_vit):
    sha = server.add_repo("org/tiny-vit", tiny_vit)
    downloaded = client(f"hub:org/tiny-vit@{sha}")
    server.requests.clear()
    assert client(f"hub:org/tiny-vit@{sha}") == downloaded
    assert server.requests == []


def test_cached_checkpoint_is_served_when_offline_or_the_hub_is_down(server, client, tiny_vit):
    sha = server.add_repo("org/tiny-vit", tiny_vit)
    downloaded = client("hub:org/tiny-vit")
    server.stop()
    assert client("hub:org/tiny-vit", offline=True) == downloaded  # main, through the cached ref
    assert client(f"hub:org/tiny-vit@{sha}", offline=True) == downloaded
    assert client("hub:org/tiny-vit") == downloaded


def test_a_branch_follows_the_hub_when_it_answers(server, client, tiny_vit, tmp_path):
    server.add_repo("org/tiny-vit", checkpoint_copy(tiny_vit, tmp_path / "v1", release=1))
    first = client("hub:org/tiny-vit")
    newer = server.add_repo("org/tiny-vit", checkpoint_copy(tiny_vit, tmp_path / "v2", release=2))
    second = client("hub:org/tiny-vit")
    assert second["origin"] == f"hub org/tiny-vit@{newer[:7]}" != first["origin"]


def test_four_processes_fetching_the_same_pinned_weights_at_once_get_identical_complete_files(server, client,
                                                                                              tiny_vit):
    from concurrent.futures import ThreadPoolExecutor

    sha = server.add_repo("org/tiny-vit", tiny_vit)
    server.trickle_s = 1.0  # each file arrives over a second, so the four downloads overlap
    with ThreadPoolExecutor(4) as pool:
        found = list(pool.map(lambda _: client(f"hub:org/tiny-vit@{sha}"), range(4)))
    assert all(f == found[0] for f in found), found
    folder = Path(found[0]["folder"])
    for name in ("model.safetensors", "config.json"):
        assert (folder / name).read_bytes() == (tiny_vit / name).read_bytes()
    cache = client.hf_home / "hub" / "models--org--tiny-vit"
    assert not list(cache.rglob("*.incomplete")), "no download left half-written"
    downloads = [r for r in server.requests if r.startswith("GET") and r.endswith("/model.safetensors")]
    assert 1 <= len(downloads) <= 4, downloads  # huggingface_hub's lock lets the others reuse the first


def test_unknown_repo_is_named_with_how_to_fix_it(server, client):
    error = client("hub:org/no-such-model")["error"]
    assert "no model repo org/no-such-model" in error and "check the name" in error


def test_unknown_revision_is_named(server, client, tiny_vit):
    server.add_repo("org/tiny-vit", tiny_vit)
    error = client("hub:org/tiny-vit@v9.9")["error"]
    assert "org/tiny-vit has no revision 'v9.9'" in error


def test_file_the_hub_lists_but_cannot_serve_is_named(server, client, tiny_vit):
    server.add_repo("org/tiny-vit", tiny_vit)
    server.lose_blob("org/tiny-vit", "model.safetensors")
    error = client("hub:org/tiny-vit")["error"]
    assert "lists model.safetensors but the Hub cannot serve it" in error


def test_truncated_safetensors_on_the_hub_is_named_with_its_path(server, client, tiny_vit, tmp_path):
    broken = checkpoint_copy(tiny_vit, tmp_path / "broken")
    weights = broken / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    server.add_repo("org/tiny-vit", broken)
    error = client("hub:org/tiny-vit")["error"]
    assert "/model.safetensors is not a valid safetensors file" in error and "re-download" in error
    assert "\n" not in error


def test_corrupted_cached_file_is_re_downloaded_once_the_named_blob_is_deleted(server, client, tiny_vit):
    sha = server.add_repo("org/tiny-vit", tiny_vit)
    folder = Path(client(f"hub:org/tiny-vit@{sha}")["folder"])
    blob = (folder / "model.safetensors").resolve()
    blob.write_bytes(blob.read_bytes()[:100])
    error = client(f"hub:org/tiny-vit@{sha}")["error"]
    assert f"delete {blob} and run again" in error
    blob.unlink()
    assert client(f"hub:org/tiny-vit@{sha}")["folder"] == str(folder)
    assert blob.read_bytes() == (tiny_vit / "model.safetensors").read_bytes()


def test_unreachable_hub_with_nothing_cached_fails_within_seconds(server, client):
    server.stop()
    started = time.monotonic()
    error = client("hub:org/tiny-vit@" + "a" * 40)["error"]  # a commit hash: the client would retry ~20 s
    assert time.monotonic() - started < 8
    assert f"is not cached and the Hub at {server.url} is unreachable" in error


def test_offline_mode_with_nothing_cached_says_so(client):
    error = client("hub:org/tiny-vit", offline=True)["error"]
    assert "HF_HUB_OFFLINE=1 forbids downloading it" in error and "weights=random" in error


def test_auto_never_trains_a_pretrained_variant_from_random_init_when_its_checkpoint_is_out_of_reach(
        server, client):
    server.stop()
    variant = {"name": "base", "hub_id": "org/tiny-vit", "revision": "b" * 40}
    refused = client("auto", variant=variant)["error"]
    assert refused.startswith("weights=auto: org/tiny-vit@bbbbbbb is not cached and the Hub at")
    for fix in ("model.variant=tiny", "preset=smoke", "weights=random", f"hf download org/tiny-vit --revision {'b' * 40}"):
        assert fix in refused
    offline = client("auto", variant=variant, offline=True)["error"]
    assert "HF_HUB_OFFLINE=1 forbids downloading it" in offline and "unset HF_HUB_OFFLINE" in offline
    evaluating = client("auto", variant=variant, for_training=False)["error"]
    assert "evaluating untrained weights measures nothing" in evaluating and "weights=random" in evaluating
    assert client("auto", variant={"name": "tiny"}) == {"folder": None, "origin": "random"}


def test_auto_uses_the_variants_pinned_checkpoint_when_reachable(server, client, tiny_vit):
    sha = server.add_repo("org/tiny-vit", tiny_vit)
    found = client("auto", variant={"name": "base", "hub_id": "org/tiny-vit", "revision": sha})
    assert found["origin"] == f"hub org/tiny-vit@{sha[:7]}"


def test_pickle_only_repo_is_refused_unless_allow_pickle(server, client, tiny_vit, tmp_path):
    import torch
    from safetensors.torch import load_file

    pickled = tmp_path / "pickled"
    pickled.mkdir()
    shutil.copy(tiny_vit / "config.json", pickled)
    torch.save(load_file(tiny_vit / "model.safetensors"), pickled / "pytorch_model.bin")
    server.add_repo("org/old-vit", pickled)
    refused = client("hub:org/old-vit")["error"]
    assert "org/old-vit@main has only pickle weights (pytorch_model.bin)" in refused
    assert "weights.allow_pickle=true" in refused
    accepted = client("hub:org/old-vit", allow_pickle=True)
    assert (Path(accepted["folder"]) / "pytorch_model.bin").is_file()


def test_push_creates_the_repo_in_one_commit_that_downloads_back_identical(server, client, tiny_vit):
    url = client(push=str(tiny_vit), repo_id="me/pushed")["url"]
    sha = url.rsplit("/", 1)[-1]
    assert url == f"{server.url}/me/pushed/commit/{sha}"
    assert server.repos["me/pushed"].refs["main"] == sha and len(server.repos["me/pushed"].commits) == 2
    folder = Path(client(f"hub:me/pushed@{sha}")["folder"])
    for name in ("config.json", "model.safetensors"):
        assert (folder / name).read_bytes() == (tiny_vit / name).read_bytes()


def test_hub_source_names_repo_and_optional_revision():
    assert parse_hub_source("hub:org/name") == ("org/name", "main")
    assert parse_hub_source("hub:org/name@3f49326") == ("org/name", "3f49326")
    assert parse_hub_source("hub:org/name@refs/pr/1") == ("org/name", "refs/pr/1")
    with pytest.raises(WeightsError, match="does not name a Hub repo"):
        parse_hub_source("hub:org/has space")


def test_local_folder_is_used_in_place(tiny_vit):
    found = resolve_weights(str(tiny_vit), None)
    assert found.folder == tiny_vit.resolve() and found.origin == f"local {tiny_vit.resolve()}"


def test_local_folder_without_config_or_weights_is_refused(tiny_vit, tmp_path):
    (tmp_path / "no-config").mkdir()
    shutil.copy(tiny_vit / "model.safetensors", tmp_path / "no-config")
    with pytest.raises(WeightsError, match="has no config.json"):
        resolve_weights(str(tmp_path / "no-config"), None)
    (tmp_path / "no-weights").mkdir()
    shutil.copy(tiny_vit / "config.json", tmp_path / "no-weights")
    with pytest.raises(WeightsError, match="has no weights"):
        resolve_weights(str(tmp_path / "no-weights"), None)


def test_local_folder_with_only_pickle_weights_needs_allow_pickle(tiny_vit, tmp_path):
    (tmp_path / "pytorch_model.bin").write_bytes(b"not loaded here")
    shutil.copy(tiny_vit / "config.json", tmp_path)
    with pytest.raises(WeightsError, match=r"has only pickle weights \(pytorch_model.bin\).*allow_pickle=true"):
        resolve_weights(str(tmp_path), None)
    assert resolve_weights(str(tmp_path), None, allow_pickle=True).folder == tmp_path.resolve()


def test_local_truncated_safetensors_is_named(tiny_vit, tmp_path):
    shutil.copy(tiny_vit / "config.json", tmp_path)
    (tmp_path / "model.safetensors").write_bytes((tiny_vit / "model.safetensors").read_bytes()[:500])
    with pytest.raises(WeightsError, match="model.safetensors is not a valid safetensors file.*re-save"):
        resolve_weights(str(tmp_path), None)


def test_missing_folder_that_looks_like_a_repo_id_suggests_the_hub_source():
    with pytest.raises(WeightsError, match="weights=hub:google/vit-base"):
        resolve_weights("google/vit-base", None)


def test_random_and_auto_without_a_checkpoint_need_no_weights():
    assert resolve_weights("random", None).folder is None
    tiny = Variant("tiny", config={"hidden_size": 32})
    assert resolve_weights("auto", tiny) == resolve_weights("random", tiny)


def test_a_variant_must_pin_a_full_commit_for_hub_and_auto():
    """registry build refuses such a plugin, so this is what a user of one meets: the error names
    the plugin to report it to and the source that runs anyway."""
    unpinned = Variant("base", hub_id="org/tiny-vit")
    prefix = Variant("base", hub_id="org/tiny-vit", revision="3f49326")
    for source in ("hub", "auto"):
        with pytest.raises(WeightsError, match="without a pinned revision.*weights=hub:org/tiny-vit@COMMIT"):
            resolve_weights(source, unpinned)
        with pytest.raises(WeightsError, match="'3f49326', not a full 40-character commit hash"):
            resolve_weights(source, prefix)
    toy = ModelEntry(name="toy", family="toy", domain="vision", description="a toy", tasks=("classify",),
                     builder="nowhere:Toy", variants=(prefix,), plugin="garden-toy")
    with pytest.raises(WeightsError) as raised:
        resolve_weights("auto", prefix, entry=toy)
    assert str(raised.value) == (
        "model 'toy' variant 'base' pins org/tiny-vit to '3f49326', not a full 40-character commit hash; "
        "choose a commit yourself with weights=hub:org/tiny-vit@COMMIT (or hub:org/tiny-vit for its main "
        "branch), and ask the author of plugin garden-toy to pin one"
    )
    with pytest.raises(WeightsError, match="has no Hub checkpoint"):
        resolve_weights("hub", Variant("tiny"))
