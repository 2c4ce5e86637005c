"""A contract test kit for plugin authors: one call checks everything garden relies on.

In a plugin's own test suite::

    from garden.testing import assert_plugin_contract

    def test_my_plugin_keeps_the_garden_contract():
        assert_plugin_contract("garden-convnext")   # distribution, entry-point or model name

or, to look at each point (what ``python -m garden plugin check`` prints)::

    from garden.testing import check_plugin

    for result in check_plugin("convnext"):
        print(result.line())        # ✓ convnext/classify: configs compose (preset=smoke weights=random) ...

The checks are listed in :mod:`garden.contract`. They run on the *installed* plugin, exactly as
garden discovers it, so install the package (``pip install -e .``) before running its tests.

:func:`rerun_declared_result` reruns the recipe behind a declared result (``results.json``) and
checks its metrics to 4 decimals.

:func:`run_notebook` writes a model's tutorial notebook (``python -m garden notebook``) and runs
it top to bottom with nbclient, small (the smallest variant, two steps), failing on any cell's
error; it needs ``pip install 'garden[notebooks]'``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from garden.contract import CheckResult, check_plugin, failures

__all__ = ["CheckResult", "assert_plugin_contract", "check_plugin", "execute_notebook", "plan_of_a_published_layout",
           "rerun_declared_result", "run_notebook"]

#: the parameters a test runs a notebook with: the smallest variant, a few steps on a little data
SMALL_NOTEBOOK = ('variant = "smallest"\npreset = "smoke"\nmax_steps = 2\n'
                  'overrides = ["data.limit=16", "data.eval_limit=8", "data.batch_size=4"]')


def execute_notebook(path: Path, workdir: Path, parameters: str = SMALL_NOTEBOOK, timeout: int = 300,
                     kernel: Any = None) -> Any:
    """Run the notebook at ``path`` in ``workdir`` with nbclient, ``parameters`` injected after its
    cell tagged ``parameters`` (as papermill does); returns the executed notebook, its wall time
    in ``metadata.garden_seconds``. A cell's error raises nbclient's ``CellExecutionError``.

    Each notebook gets a kernel of its own, unless ``kernel`` (a started jupyter_client
    ``KernelManager``) is given: then it runs there after ``%reset -f`` and a change into
    ``workdir``, with no name left from the notebook before (its imports stay loaded, which is
    what a test suite running many notebooks saves)."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.reads(Path(path).read_text(encoding="utf-8"), as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
    injected = nbformat.v4.new_code_cell(parameters)
    injected.metadata["tags"] = ["injected-parameters"]
    nb.cells.insert(at + 1, injected)
    if kernel is not None:
        fresh = nbformat.v4.new_code_cell(f"%reset -f\nimport os\nos.chdir({str(Path(workdir).resolve())!r})\ndel os")
        fresh.metadata["tags"] = ["injected-reset"]
        nb.cells.insert(0, fresh)
    start = time.perf_counter()
    NotebookClient(nb, timeout=timeout, kernel_name="python3", km=kernel,
                   resources={"metadata": {"path": str(workdir)}}).execute()
    nb.metadata["garden_seconds"] = round(time.perf_counter() - start, 1)
    return nb


def run_notebook(model: str, task: str, workdir: Path, **kwargs: Any) -> Any:
    """Write ``model``'s notebook for ``task`` into ``workdir`` and run it (:func:`execute_notebook`)."""
    from garden.notebooks import write

    return execute_notebook(write(model, task, None, Path(workdir)), workdir, **kwargs)


def plan_of_a_published_layout(layout: list[int], overrides: list[str], folder: Path) -> list[int]:
    """The ``layers_per_ipu`` garden plans for ``overrides``' model from a published ``layout``:
    written as Graphcore publishes it (an ``ipu_config.json`` in ``folder``), read through
    ``ipu.config_file`` and planned by parameter count on the meta device. A family that counts
    its layers as optimum-graphcore does gets ``layout`` back."""
    import json

    from garden.runs.planned import plan_summary

    published = {"layers_per_ipu": list(layout), "ipus_per_replica": len(layout), "matmul_proportion": 0.2}
    (Path(folder) / "ipu_config.json").write_text(json.dumps(published))
    summary = plan_summary([*overrides, f"ipu.config_file={folder}", "ipu.cost=params", "data.limit=8",
                            "data.eval_limit=4"])
    return list(summary["layers_per_ipu"])


def rerun_declared_result(model: str, task: str, workdir: Path) -> dict:
    """Rerun the command of ``model``'s declared result for ``task`` (its plugin's ``results.json``,
    written by ``bench/results.py --write``) in ``workdir`` and assert that it gives the declared
    held-out metrics to 4 decimals; returns them. Skips, naming what differs, on a CPU model, a
    vector instruction set or a torch or transformers version other than the one it was measured
    with: floating point differs between instruction sets and kernels (the recipes run on one
    thread, so cores do not matter)."""
    import json
    import shlex

    import pytest

    from garden import get_entry
    from garden.declared import cpu_model, vector_isa, version
    from garden.pytest_plugin import garden_cli

    __tracebackhide__ = True
    [result] = [r for r in get_entry(model).results if r["task"] == task]
    here = {"cpu": cpu_model(), "isa": vector_isa(), "torch": version("torch"), "transformers": version("transformers")}
    differ = [f"{k} {v!r} here, {result['measured_with'].get(k)!r} declared" for k, v in here.items()
              if v != result["measured_with"].get(k)]
    if differ:
        pytest.skip(f"{model}/{task} was measured elsewhere ({'; '.join(differ)}); "
                    f"python bench/results.py {model} reruns it here")
    argv = shlex.split(result["command"])
    assert argv[:3] == ["python", "-m", "garden"], result["command"]
    run = garden_cli(*argv[3:], cwd=Path(workdir), timeout=600)
    assert run.returncode == 0, run.output
    [metrics] = Path(workdir).glob("outputs/*/*/metrics.json")
    measured = json.loads(metrics.read_text())["eval"]
    assert measured.keys() == result["metrics"].keys()
    assert measured == pytest.approx(result["metrics"], abs=1e-4), result["command"]
    return measured


def assert_plugin_contract(name: str, *, tasks: list[str] | None = None) -> list[CheckResult]:
    """Run :func:`check_plugin` and fail with one line per broken point; returns the results.

    ``tasks`` limits the per-task checks to those tasks (default: every task of every model).
    """
    __tracebackhide__ = True  # pytest shows the assertion, not this frame
    results = check_plugin(name, tasks=tasks)
    failed = failures(results)
    if failed:
        raise AssertionError(
            f"plugin '{name}' breaks the garden plugin contract:\n"
            + "\n".join(r.line() for r in failed)
            + "\n(all checks:)\n"
            + "\n".join(r.line() for r in results)
        )
    return results
