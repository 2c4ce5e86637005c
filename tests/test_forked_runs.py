"""garden's pytest plugin forks each test's ``python -m garden`` run from a server that imported
torch and transformers once: the run must come out as a fresh interpreter's would (same exit
status, lines, files and numbers), see the environment the test gave it, and fall back to a fresh
interpreter where a preloaded library would have read that environment while loading."""

from __future__ import annotations

import json
import os

import pytest

from garden import pytest_plugin
from garden.pytest_plugin import garden_cli, garden_process, garden_ranks, make_distribution

TINY = ("model=vit", "task=classify", "preset=smoke", "model.variant=tiny", "weights=random", "trainer.max_steps=3",
        "trainer.eval=false", "data.limit=16", "trainer.threads=1", "hydra.run.dir=run")


def both_ways(monkeypatch, tmp_path, *args, env=None):
    """The command run forked, then in a fresh interpreter (each in a folder of its own)."""
    (tmp_path / "forked").mkdir(), (tmp_path / "fresh").mkdir()
    forked = garden_cli(*args, cwd=tmp_path / "forked", env=env)
    monkeypatch.setenv("GARDEN_TEST_FRESH_PROCESS", "1")
    fresh = garden_cli(*args, cwd=tmp_path / "fresh", env=env)
    return forked, fresh


def test_a_forked_run_writes_what_a_fresh_interpreter_writes(monkeypatch, tmp_path):
    forked, fresh = both_ways(monkeypatch, tmp_path, *TINY)
    assert forked.returncode == fresh.returncode == 0, forked.output + fresh.output
    files = {p.relative_to(tmp_path / "forked") for p in (tmp_path / "forked").rglob("*")}
    assert files == {p.relative_to(tmp_path / "fresh") for p in (tmp_path / "fresh").rglob("*")}
    forked_metrics, fresh_metrics = (json.loads((tmp_path / way / "run" / "metrics.json").read_text())
                                     for way in ("forked", "fresh"))
    # the same seed, data and single thread: the same losses, not just close ones
    assert [h["train_loss"] for h in forked_metrics["history"]] == [h["train_loss"] for h in fresh_metrics["history"]]
    assert forked.stdout.splitlines()[0] == fresh.stdout.splitlines()[0]


def test_a_refused_run_exits_2_with_the_same_one_line(monkeypatch, tmp_path):
    forked, fresh = both_ways(monkeypatch, tmp_path, "model=vit", "task=classify", "data.batch_size=0")
    assert forked.returncode == fresh.returncode == 2
    assert forked.stderr == fresh.stderr and forked.stderr.count("\n") == 1, forked.stderr


@pytest.mark.slow
def test_a_started_run_answers_as_popen_does_forked_or_fresh(monkeypatch, tmp_path):
    """``garden_process``: stdout and stderr in one log, the exit status, ``-9`` when killed, a
    session of its own (``start_new_session=True``), whichever way it started."""
    import signal
    import time

    for way in ("forked", "fresh"):
        if way == "fresh":
            monkeypatch.setenv("GARDEN_TEST_FRESH_PROCESS", "1")
        refused = garden_process("model=vit", "task=classify", "data.batch_size=0", cwd=tmp_path,
                                 log=tmp_path / f"{way}-refused.log")
        assert refused.wait(timeout=300) == 2 and refused.poll() == 2
        assert "error: data.batch_size=0" in (tmp_path / f"{way}-refused.log").read_text(), way
        running = garden_process(*TINY[:-1], "trainer.max_steps=100000", f"hydra.run.dir={way}", cwd=tmp_path,
                                 log=tmp_path / f"{way}-running.log")
        try:
            deadline = time.monotonic() + 60
            while os.getsid(running.pid) != running.pid:
                assert time.monotonic() < deadline, f"{way}: no session of its own"
                time.sleep(0.01)
            assert running.poll() is None
        finally:
            running.send_signal(signal.SIGKILL)
        assert running.wait(timeout=60) == -signal.SIGKILL, way


def test_a_forked_run_sees_the_environment_its_test_gave_it(tmp_path):
    result = garden_cli("model=vit", "task=classify", cwd=tmp_path, env={"GARDEN_PLUGINS": "garden-bert"})
    assert result.returncode == 2
    assert "plugin garden-vit is not among GARDEN_PLUGINS=garden-bert" in result.stderr, result.stderr


@pytest.mark.parametrize("args, env, forks", [
    (("model=vit", "task=classify"), {}, True),
    (("model=vit", "task=classify"), {"GARDEN_PLUGINS": "garden-vit", "COLUMNS": "80"}, True),
    (("model=vit", "task=classify"), {"HF_HOME": "/elsewhere"}, False),  # huggingface_hub reads it on import
    (("model=vit", "task=classify"), {"PYTHONPATH": "/plugins"}, True),  # the child puts it on sys.path
    (("model=vit", "task=classify"), {"OMP_NUM_THREADS": "1"}, True),  # the child sets torch's threads
    (("model=vit", "task=classify"), {"OMP_NUM_THREADS": "1", "OMP_PROC_BIND": "true"}, False),
    (("model=vit", "task=classify"), {"OMP_NUM_THREADS": "four"}, False),  # no number: what torch makes of it
    (("model=vit", "task=classify"), {"PYTHONHASHSEED": "1"}, False),
    (("model=vit", "task=classify"), {"FAKE_POPTORCH_IPUS": "2"}, True),  # read by code the server has not loaded
    (("export", "--help"), {}, True),
    (("list",), {}, False),  # promised not to import torch: tests check it in a fresh interpreter
    (("registry", "check"), {}, False),
    (("registry", "measure", "vit"), {}, True),  # builds the model: torch either way
    ((), {}, False),
])
def test_only_runs_the_preloaded_libraries_cannot_tell_apart_fork(args, env, forks):
    full_env = {**os.environ, **pytest_plugin.BASE_ENV, **env}
    assert pytest_plugin._forks(args, full_env) is forks


def test_variables_a_preloaded_library_sets_itself_still_fork():
    """scikit-learn sets ``KMP_*`` as it loads, in the server and in any test process that imports
    it: their presence or absence is what a fresh interpreter would make of them too (the suite
    once ran every later test fresh after a test imported scikit-learn)."""
    pytest.importorskip("sklearn")
    if "KMP_INIT_AT_FORK" in pytest_plugin._STARTED_WITH:
        pytest.skip("pytest started with KMP_INIT_AT_FORK set")
    pytest_plugin._fork_server()
    server, set_by_preloads = pytest_plugin._server["env"], pytest_plugin._server["set_by_preloads"]
    assert "KMP_INIT_AT_FORK" in set_by_preloads
    env = {k: v for k, v in {**os.environ, **pytest_plugin.BASE_ENV}.items() if k not in set_by_preloads}
    assert pytest_plugin._forks(("model=vit",), env)
    assert pytest_plugin._forks(("model=vit",), {**env, **{k: server[k] for k in set_by_preloads}})
    assert not pytest_plugin._forks(("model=vit",), {**env, "KMP_INIT_AT_FORK": "TRUE"})  # one of its own


def test_a_python_path_that_holds_a_preloaded_module_needs_a_fresh_interpreter(tmp_path):
    (tmp_path / "plugin").mkdir(), (tmp_path / "stand_in" / "torch").mkdir(parents=True)
    (tmp_path / "plugin" / "garden_other.py").touch()
    env = {**os.environ, **pytest_plugin.BASE_ENV}
    assert pytest_plugin._forks(("model=vit",), {**env, "PYTHONPATH": str(tmp_path / "plugin")})
    assert not pytest_plugin._forks(("model=vit",), {**env, "PYTHONPATH": str(tmp_path / "stand_in")})


#: a plugin that reports, as the run ends, its threads and where PYTHONPATH's folder sits on sys.path
PROBE = """
import atexit, sys, torch

GARDEN_API_VERSION = "1.0"
atexit.register(lambda: print("threads", torch.get_num_threads(), "first", sys.path[1], "from", sys.argv[1:]))
"""


def test_a_forked_run_gets_its_python_path_and_threads_as_a_fresh_interpreter_does(monkeypatch, plugin_site, tmp_path):
    """The child puts PYTHONPATH's new folders after its working directory (a plugin there is
    found) and sets torch's threads from OMP_NUM_THREADS (the server has 2 on 2 cores)."""
    site, env = plugin_site
    make_distribution(site, "garden-probe", "garden_probe", PROBE)
    env = {**env, "OMP_NUM_THREADS": "1"}
    args = ("model=vit", "task=classify", "data.batch_size=0")  # refused once the plugins are loaded
    assert pytest_plugin._forks(args, {**os.environ, **pytest_plugin.BASE_ENV, **env})
    forked, fresh = both_ways(monkeypatch, tmp_path, *args, env=env)
    assert forked.returncode == fresh.returncode == 2, forked.output + fresh.output
    [line] = [ln for ln in forked.stdout.splitlines() if ln.startswith("threads")]
    assert line == f"threads 1 first {site} from {list(args)}"
    assert line in fresh.stdout.splitlines(), fresh.stdout


def test_a_python_path_with_start_up_code_needs_a_fresh_interpreter(tmp_path):
    (tmp_path / "sitecustomize.py").write_text("import sys\nsys.modules['soundfile'] = None  # hidden\n")
    assert not pytest_plugin._forks(("model=vit",), {**os.environ, **pytest_plugin.BASE_ENV,
                                                     "PYTHONPATH": str(tmp_path)})


def test_every_call_is_a_fresh_interpreter_when_asked(monkeypatch):
    monkeypatch.setenv("GARDEN_TEST_FRESH_PROCESS", "1")
    assert not pytest_plugin._forks(("model=vit",), {**os.environ, **pytest_plugin.BASE_ENV})


def test_forked_ranks_see_torchruns_variables_and_a_failing_rank_fails_the_run(tmp_path):
    result = garden_ranks(2, *TINY, "backend=pipeline", "ipu.ipus_per_replica=3", cwd=tmp_path)
    assert result.returncode == 2, result.output
    assert result.stderr.count("ipu.ipus_per_replica=3 stages but torchrun started 2 processes") == 2, result.stderr
