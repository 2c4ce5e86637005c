"""``python -m garden notebook model=NAME task=TASK [variant=V]``: a tutorial notebook per entry.

A notebook reads top to bottom: install, the registry entry (variants, parameters, FLOPs, pinned
revision, declared results), the stage plan with a bar chart of per-stage cost, a short
fine-tune with a live progress bar, its loss curve and plots, predictions shown the way the
domain shows them (images with predicted and true labels, an audio player with the transcript,
text with its prediction, a graph's metrics) and the commands that run the same on several
processes and on IPUs. Its code is garden's Python API (``garden.run``, ``garden.history``,
``garden.predictor``, ``garden.plan``), never a shell escape.

The cell tagged ``parameters`` (papermill's convention) holds what a test changes to run it
small: ``preset``, ``variant``, ``max_steps`` and extra ``overrides``. The built-in entries'
notebooks live in ``notebooks/`` (written by :func:`write_builtin`, checked by a test)::

    >>> notebook(registry.get("vit"), "classify")["cells"][0]["source"][:9]     # doctest: +SKIP
    '# vit for'
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from garden import __version__, registry
from garden.entries import ModelEntry
from garden.errors import ConfigError
from garden.files import write_atomic
from garden.serve import notebook_path

#: where the built-in entries' notebooks live, relative to the repository root
FOLDER = "notebooks"


def filename(model: str, task: str) -> str:
    return Path(notebook_path(model, task)).name


def markdown(text: str) -> dict[str, Any]:
    import nbformat

    return nbformat.v4.new_markdown_cell(text.strip())


def code(text: str, tags: tuple[str, ...] = ()) -> dict[str, Any]:
    import nbformat

    cell = nbformat.v4.new_code_cell(text.strip())
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def install_line(entry: ModelEntry) -> str:
    packages = [f"garden=={__version__}"]
    if entry.plugin and entry.plugin != "garden":
        packages.append(f"{entry.plugin}=={entry.plugin_version}" if entry.plugin_version else entry.plugin)
    return "pip install " + " ".join(f'"{p}"' for p in packages)


def show_predictions(entry: ModelEntry, task: str) -> str:
    """The cell that shows predictions as the domain shows them."""
    if entry.domain == "gnn":
        return '''
from IPython.display import HTML, display

# a graph's predictions are its held-out nodes, edges or molecules: its metrics say how they went
rows = "".join(f"<tr><td>{name}</td><td>{value:.4f}</td></tr>" for name, value in result["eval"].items())
display(HTML(f"<table><tr><th>held-out metric</th><th>value</th></tr>{rows}</table>"))
'''
    if entry.domain == "vision":
        return '''
import matplotlib.pyplot as plt

predict = garden.predictor(MODEL, TASK, variant=variant, weights=result["output_dir"] + "/model",
                           overrides=overrides)
rows = predict()[:8]  # the held-out split; predict([PIL.Image, "photos/*.png", ...]) takes your own
fig, axes = plt.subplots(1, len(rows), figsize=(1.6 * len(rows), 2.2), squeeze=False)
for ax, row, example in zip(axes[0], rows, predict.data.eval):
    pixels = example["pixel_values"].permute(1, 2, 0)
    pixels = (pixels - pixels.min()) / (pixels.max() - pixels.min() + 1e-8)
    ax.imshow(pixels.numpy())
    ax.axis("off")
    right = row["prediction"] == row.get("label")
    ax.set_title(f"{row['prediction']}\\n(true {row.get('label')})", color="green" if right else "red", fontsize=9)
plt.show()
'''
    if entry.domain == "speech":
        shown = "transcript" if task == "asr" else "prediction"
        return f'''
from IPython.display import Audio, display

predict = garden.predictor(MODEL, TASK, variant=variant, weights=result["output_dir"] + "/model",
                           overrides=overrides)
rows = predict()[:3]  # the held-out split; predict([waveform, (waveform, rate), "clip.wav"]) takes your own
for row, example in zip(rows, predict.data.eval):
    display(Audio(example["input_values"].numpy(), rate=predict.cfg.data.sample_rate))
    print("{shown}:", repr(row["prediction"]), "| expected:", repr(row.get("reference", row.get("label"))))
'''
    return '''
import html

from IPython.display import HTML, display

predict = garden.predictor(MODEL, TASK, variant=variant, weights=result["output_dir"] + "/model",
                           overrides=overrides)
rows = predict()[:5]  # the held-out split; predict(["your own text", ...]) takes your own


def cell(value):
    return html.escape(value if isinstance(value, str) else json.dumps(value, default=str)[:300])


table = "".join(
    f"<tr><td>{cell(row.get('prompt', row.get('input')))}</td><td><mark>{cell(row['prediction'])}</mark></td>"
    f"<td>{cell(row.get('reference', row.get('label', '')))}</td></tr>" for row in rows)
display(HTML(f"<table><tr><th>input</th><th>prediction</th><th>expected</th></tr>{table}</table>"))
'''


def notebook(entry: ModelEntry, task: str, variant: str | None = None) -> dict[str, Any]:
    """The tutorial notebook for ``entry`` on ``task`` (``variant``: the one it fine-tunes by default)."""
    import nbformat

    registry.check_task(entry, task)
    chosen = entry.variant(variant or "default")
    layouts = sorted(entry.layouts.items())
    stages = layouts[0][0] if layouts else 2
    papers = f"\n\nPaper: [{entry.paper}]({entry.paper_url or ''})" if entry.paper else ""
    cells = [
        markdown(f"""
# {entry.name} for {task}

{entry.description}. This notebook fine-tunes **{entry.name}** on garden's `{task}` data, draws the
run, and predicts with the result, all through garden's Python API (`garden.run`, `garden.history`,
`garden.predictor`, `garden.plan`).{papers}
"""),
        markdown(f"""
## Install

```sh
{install_line(entry)}
```

Offline, from a clone of the repository: `make venv` installs the same versions.
"""),
        code(f"""
# Parameters (papermill's convention: a test sets these to run the notebook small)
variant = {chosen.name!r}   # a variant of {entry.name}: {", ".join(v.name for v in entry.variants)}
preset = "smoke"   # "smoke": tiny data and a short run; "none": the recipe as configured
max_steps = 40
overrides = []     # more Hydra overrides, e.g. ["trainer.lr=3e-4"]
""", tags=("parameters",)),
        code(f"""
%matplotlib inline
import json

import garden
from garden import plots
from IPython.display import Image, display

MODEL, TASK = {entry.name!r}, {task!r}
entry = garden.get_entry(MODEL)
print(entry.name, "·", entry.domain, "·", entry.description)
for v in entry.variants:
    pinned = f"{{v.hub_id}}@{{v.revision[:7]}}" if v.hub_id else "random init (no Hub weights)"
    size = f"{{v.params / 1e6:.1f}}M params" if v.params else "params unknown"
    flops = f"{{v.flops / 1e9:.2f}} GFLOPs on {{v.flops_input}}" if v.flops else ""
    print(f"  {{v.name:<10}} {{size:<18}} {{flops:<36}} {{pinned}}")
for declared in entry.results:
    print("declared result:", declared)
"""),
        markdown(f"""
## The stage plan

garden cuts the model into pipeline stages (Optimum Graphcore's `layers_per_ipu`); the planner
balances the cost per stage. The red bar is the bottleneck, the dashed line an even split.
"""),
        code(f"""
# the published layout's {stages} stages fit the default variant; a smaller one is planned in 2
stages = {stages} if variant == {entry.default_variant.name!r} else 2
plan = garden.plan([f"model={{MODEL}}", f"task={{TASK}}", f"model.variant={{variant}}",
                    f"ipu.ipus_per_replica={{stages}}", "ipu.cost=params"])
print("layers_per_ipu =", plan["layers_per_ipu"], "· bottleneck / ideal =", round(plan["bottleneck_ratio"], 3))
plots.stage_costs(plan)
"""),
        markdown("""
## Fine-tune

A short run on the entry's default data, with a live progress bar. Everything it writes lands in
its run folder: `metrics.json`, `history.jsonl` (per step), `plots/`, and the trained `model/`.
"""),
        code("""
result = garden.run([f"model={MODEL}", f"task={TASK}", f"preset={preset}", f"model.variant={variant}",
                     f"trainer.max_steps={max_steps}", *overrides])
print("run folder:", result["output_dir"])
print("held-out metrics:", json.dumps(result["eval"], indent=1))
"""),
        markdown("""
## The loss curve

`garden.history(run_folder)` is the run's metrics, one record per step (and one per evaluation);
the run drew its own plots from it.
"""),
        code("""
history = garden.history(result["output_dir"])
steps = [r for r in history if "loss" in r]
print(len(steps), "steps; first loss", round(steps[0]["loss"], 4), "· last", round(steps[-1]["loss"], 4))
plots.training_curves(history, f"{MODEL} · {TASK}")
"""),
        code("""
from pathlib import Path

for picture in sorted((Path(result["output_dir"]) / "plots").glob("*.png")):
    if picture.name != "training.png":
        print(picture.name)
        display(Image(filename=str(picture)))
"""),
        markdown("## Predictions"),
        code(show_predictions(entry, task)),
        markdown(f"""
## The same, elsewhere

```sh
python -m garden model={entry.name} task={task} model.variant={chosen.name}                  # this machine
torchrun --nproc-per-node {stages} -m garden model={entry.name} task={task} backend=pipeline \\
    ipu.ipus_per_replica={stages}                                                    # {stages} stages, {stages} processes
python -m garden model={entry.name} task={task} backend=ipu ipu.ipus_per_replica={stages}   # IPUs (Poplar SDK)
python -m garden model={entry.name} task={task} logger=tensorboard   # then: tensorboard --logdir outputs
```
"""),
    ]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.metadata["garden"] = {"model": entry.name, "task": task, "variant": chosen.name}
    for i, cell in enumerate(nb.cells):  # stable ids: a regenerated notebook is byte-identical
        cell["id"] = f"{entry.name}-{task}-{i}".replace("_", "-")
    return nb


def text(nb: dict[str, Any]) -> str:
    """A notebook as nbformat writes it (outputs stripped, stable key order)."""
    import nbformat

    return nbformat.writes(nbformat.from_dict(nb)) + "\n"


def write(model: str, task: str | None, variant: str | None, out: Path | None) -> Path:
    """Write ``model``'s notebook for ``task`` (its first task by default) to ``out`` (a file or
    folder; default ``./MODEL-TASK.ipynb``); ``model`` may be ``hf:<repo-id>[@<revision>]`` or
    ``hf:<folder>``, as in a run."""
    from garden.runs.prepared import entry_of

    entry = entry_of(model)
    task = task or entry.tasks[0]
    target = Path(out) if out else Path(filename(entry.name, task))
    if target.is_dir():
        target = target / filename(entry.name, task)
    write_atomic(target, text(notebook(entry, task, variant)))
    return target


def builtin_entries() -> list[tuple[ModelEntry, str]]:
    """(entry, task) for every model × task of the plugins that ship with garden."""
    listing = Path(__file__).resolve().parents[1] / "registry.json"  # the built-ins, in a clone
    ours = {m["name"] for m in json.loads(listing.read_text())["models"]} if listing.is_file() else None
    return [(e, t) for e in registry.list_models() if ours is None or e.name in ours for t in e.tasks]


def write_builtin(folder: Path) -> list[Path]:
    """Every built-in model × task's notebook into ``folder``; the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    return [write(e.name, t, None, folder / filename(e.name, t)) for e, t in builtin_entries()]


def cmd_notebook(argv: list[str]) -> int:
    """``notebook model=NAME [task=TASK] [variant=V] [--out PATH]`` or ``notebook --builtin [--out DIR]``."""
    settings, out, builtin = {}, None, False
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--out" and args:
            out = Path(args.pop(0))
        elif arg.startswith("--out="):
            out = Path(arg.partition("=")[2])
        elif arg == "--builtin":
            builtin = True
        elif "=" in arg and arg.partition("=")[0] in ("model", "task", "variant"):
            key, _, value = arg.partition("=")
            settings[key] = value
        else:
            raise ConfigError(f"notebook: unknown argument '{arg}'; usage: python -m garden notebook model=NAME "
                              "[task=TASK] [variant=V] [--out PATH], or notebook --builtin [--out DIR]")
    if builtin:
        written = write_builtin(out or Path(FOLDER))
        print(f"wrote {len(written)} notebooks to {out or FOLDER}/")
        return 0
    if "model" not in settings:
        raise ConfigError("notebook needs model=NAME (and task=TASK unless its first task will do)")
    target = write(settings["model"], settings.get("task"), settings.get("variant"), out)
    print(f"wrote {target}")
    return 0
