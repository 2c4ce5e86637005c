"""``plugin new`` writes a package a third party can publish: built as a wheel and installed into a
fresh virtual environment, garden lists it, ``plugin check`` passes, it runs, and its own tests pass.

The fresh environment is honest about what is installed in it: the plugin arrives only as its
wheel (``pip install --no-index --no-deps``), nothing of the scaffold's source folder is on its
path. garden and its dependencies (torch, transformers, Hydra) are made importable without a
reinstall by one ``.pth`` line, ``import site; site.addsitedir(<this venv's site-packages>)``,
which also runs that directory's own ``.pth`` files (garden's editable install). The venv is
made ``--without-pip`` and this interpreter's pip installs into it (``pip --python``), which
saves bootstrapping a second pip.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from conftest import Result, garden_cli

NAME = "demo"
DIST = "garden-demo"


def run(*args: str | Path, cwd: Path, timeout: float = 300) -> Result:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "COLUMNS": "200",
           "TRANSFORMERS_VERBOSITY": "error"}
    env.pop("PYTHONPATH", None)
    env.pop("PYTEST_ADDOPTS", None)  # the options of this suite's pytest, not the package's own
    proc = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    return Result(proc.returncode, proc.stdout, proc.stderr)


def ok(result: Result) -> Result:
    assert result.returncode == 0, result.output
    return result


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Scaffold with the CLI, build the wheel, install it into a fresh venv: (scaffold, wheel, python, work)."""
    tmp = tmp_path_factory.mktemp("scaffold")
    ok(run(sys.executable, "-m", "garden", "plugin", "new", NAME, "--dir", tmp, cwd=tmp))
    scaffold = tmp / DIST
    ok(run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
           "-w", tmp / "wheels", scaffold, cwd=tmp))
    (wheel,) = (tmp / "wheels").glob("*.whl")
    fresh = tmp / "fresh"
    ok(run(sys.executable, "-m", "venv", "--without-pip", fresh, cwd=tmp))
    python = fresh / "bin" / "python"
    purelib = Path(ok(run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=tmp))
                   .stdout.strip())
    ours = sysconfig.get_paths()["purelib"]
    (purelib / "_garden_project.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    ok(run(sys.executable, "-m", "pip", "--python", python, "install", "--no-index", "--no-deps", "-q", wheel,
           cwd=tmp))
    work = tmp / "work"  # runs start here, away from the scaffold's sources
    work.mkdir()
    return scaffold, wheel, python, work


def test_the_scaffold_is_a_complete_publishable_package(world):
    scaffold, *_ = world
    files = {str(p.relative_to(scaffold)) for p in scaffold.rglob("*") if p.is_file() and "build" not in p.parts
             and ".egg-info" not in str(p)}
    assert {"pyproject.toml", "README.md", "garden_demo/plugin.py", "garden_demo/family.py",
            "garden_demo/conf/model/demo.yaml", "garden_demo/conf/recipe/demo/classify.yaml",
            "tests/test_plugin.py", ".github/workflows/publish.yml"} <= files
    pyproject = (scaffold / "pyproject.toml").read_text()
    assert '[project.entry-points."garden.plugins"]\ndemo = "garden_demo.plugin"' in pyproject
    assert '"garden>=0.1,<0.2", "transformers>=4.50"' in pyproject
    plugin = (scaffold / "garden_demo" / "plugin.py").read_text()
    assert 'GARDEN_API_VERSION = "1.0"' in plugin and 'hub_id="facebook/convnext-tiny-224"' in plugin
    readme = (scaffold / "README.md").read_text()
    assert all(word in readme for word in ("plugin check garden-demo", "python -m build", "twine upload",
                                           "trusted publish"))
    assert "{{" not in "".join(p.read_text() for p in scaffold.rglob("*") if p.is_file() and p.suffix != ".whl"
                               and "build" not in p.parts and ".egg-info" not in str(p))


def test_the_wheel_carries_the_entry_point_and_the_configs(world):
    _, wheel, *_ = world
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        entry_points = z.read("garden_demo-0.1.0.dist-info/entry_points.txt").decode()
    assert {"garden_demo/conf/model/demo.yaml", "garden_demo/conf/recipe/demo/classify.yaml"} <= names
    assert "[garden.plugins]\ndemo = garden_demo.plugin" in entry_points


def test_the_installed_plugin_is_listed_from_the_wheel_not_the_sources(world):
    scaffold, _, python, work = world
    imported = ok(run(python, "-c", "import garden_demo; print(garden_demo.__file__)", cwd=work)).stdout
    assert str(python.parents[1]) in imported and str(scaffold) not in imported
    models = {m["name"]: m for m in json.loads(ok(run(python, "-m", "garden", "list", "--json", cwd=work)).stdout)}
    assert models[NAME]["plugin"] == DIST and models[NAME]["plugin_version"] == "0.1.0"
    assert "vit" in models  # the garden it joined still has its own models
    plugins = {p["distribution"]: p for p in json.loads(ok(run(python, "-m", "garden", "plugins", "--json",
                                                               cwd=work)).stdout)}
    assert plugins[DIST]["status"] == "loaded" and plugins[DIST]["api_version"] == "1.0"
    assert plugins[DIST]["models"] == [NAME]
    assert plugins[DIST]["hooks"] == ["garden_config_dir", "garden_models"]


def test_plugin_check_passes_every_point_of_the_contract(world):
    *_, python, work = world
    result = ok(run(python, "-m", "garden", "plugin", "check", DIST, cwd=work))
    lines = result.stdout.splitlines()
    assert not [ln for ln in lines if ln.startswith(("✗", "-"))], result.output
    for point in ("loads", "registry schema", "configs compose", "builds", "hold every parameter",
                  "compute the model's forward", "forward and backward", "2-stage plan", "saved and reloaded"):
        assert any(ln.startswith("✓") and point in ln for ln in lines), (point, result.stdout)
    assert lines[-1] == "9 passed, 0 failed, 0 skipped"


def test_a_smoke_run_of_the_new_model_trains_and_saves(world):
    *_, python, work = world
    result = ok(run(python, "-m", "garden", f"model={NAME}", "task=classify", "preset=smoke", "weights=random",
                    "trainer.max_steps=5", "hydra.run.dir=smoke", cwd=work))
    assert f"{NAME} · classify · train" in result.stdout
    assert (work / "smoke" / "model" / "config.json").exists()


def test_the_generated_package_passes_its_own_tests(world):
    scaffold, _, python, _ = world
    # -P: the scaffold folder must not shadow the installed wheel on sys.path
    result = run(python, "-P", "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=scaffold)
    assert result.returncode == 0, result.output
    assert "4 passed" in result.stdout  # with the notebook test `plugin new` scaffolds


def test_plugin_new_refuses_a_model_name_that_is_already_registered(tmp_path):
    from garden.errors import ConfigError
    from garden.scaffold import new_plugin

    with pytest.raises(ConfigError, match="model 'vit' is already registered by plugin 'garden-vit'"):
        new_plugin("vit", tmp_path)
    assert not list(tmp_path.iterdir())


def test_plugin_new_names_a_name_it_cannot_use_and_what_would_do(tmp_path):
    from garden.errors import ConfigError
    from garden.scaffold import Names, new_plugin

    with pytest.raises(ConfigError, match="plugin name 'My Net' is not a valid model name"):
        new_plugin("My Net", tmp_path)
    assert Names.of("garden-my-net") == Names("my-net", "garden-my-net", "garden_my_net", "MyNet")


def test_plugin_new_will_not_write_over_a_folder_in_use(tmp_path):
    from garden.errors import ConfigError
    from garden.scaffold import new_plugin

    (tmp_path / "garden-fresh").mkdir()
    (tmp_path / "garden-fresh" / "keep.txt").write_text("mine")
    with pytest.raises(ConfigError, match="already exists and is not empty"):
        new_plugin("fresh", tmp_path)


@pytest.mark.slow
def test_plugin_new_with_a_task_brings_its_own_task_that_keeps_the_contract_and_trains(tmp_path, plugin_site):
    from garden.scaffold import new_plugin

    root = new_plugin("inky", tmp_path, task="ink")
    assert {"garden_inky/task.py", "garden_inky/conf/task/ink.yaml"} <= {str(p.relative_to(root)) for p in
                                                                       root.rglob("*")}
    site, env = plugin_site
    info = site / "garden_inky-0.1.0.dist-info"  # installed by hand: the package on the path, its entry point
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: garden-inky\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text("[garden.plugins]\ninky = garden_inky.plugin\n")
    env = {"PYTHONPATH": os.pathsep.join([env["PYTHONPATH"], str(root)])}
    tasks = json.loads(garden_cli("tasks", "--json", env=env).stdout)
    assert {"name": "ink", "domain": "vision", "plugin": "garden-inky", "models": ["inky"]}.items() <= \
        next(t for t in tasks if t["name"] == "ink").items()
    checked = garden_cli("plugin", "check", "garden-inky", env=env)
    assert checked.returncode == 0 and "inky/ink: weights saved and reloaded" in checked.stdout, checked.output
    run = garden_cli("model=inky", "task=ink", "preset=smoke", "trainer.max_steps=3", "hydra.run.dir=run",
                     cwd=tmp_path, env=env)
    assert run.returncode == 0, run.output
    assert "mae" in json.loads((tmp_path / "run" / "metrics.json").read_text())["eval"]
