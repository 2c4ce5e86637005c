"""``python -m garden plugin new NAME``: a complete, publishable model plugin package.

The package wraps a small transformers family (ConvNeXt image classification, on garden's core
image task) so that it installs, passes ``python -m garden plugin check`` and its own tests, and
runs, before its author changes a line; then it is the author's to change. It holds a
``pyproject.toml`` with the ``garden.plugins`` entry point, the plugin module and its entry (a
tiny random variant and a Hub variant), the family with its stage layout, Hydra configs, tests
built on :mod:`garden.testing`, a README (test, build, publish) and a trusted-publishing workflow.

``plugin new NAME --task TASK`` adds a task of the plugin's own, registered through the
``garden_tasks`` hook (``task.py``, ``conf/task/TASK.yaml``): image regression on the digits as
written, for the author to make theirs.

The files are plain templates under ``garden/templates/plugin`` (and ``garden/templates/task``
for ``--task``; package data). ``{{key}}`` marks a value (double braces, because Python, YAML and
TOML use single ones); path parts ``PACKAGE``, ``MODEL`` and ``TASK`` become the import package,
the model name and the task name::

    >>> new_plugin("convnext", Path("/tmp"), task="ink")          # doctest: +SKIP
    PosixPath('/tmp/garden-convnext')
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from garden import __version__
from garden.compat import package_files, resolve_name, strip_prefix
from garden.errors import ConfigError
from garden.hookspecs import API_VERSION
from garden.plugins import discover

NAME = re.compile(r"^[a-z][a-z0-9_-]*$")
TEMPLATE = "templates/plugin"
#: what ``--task`` adds
TASK_TEMPLATE = "templates/task"
#: the domain of the scaffold's model, and so of a task it brings
DOMAIN = "vision"
#: template path parts renamed on the way out (dot-names do not travel well as package data)
RENAMES = {"_github": ".github", "gitignore": ".gitignore"}


@dataclass(frozen=True)
class Names:
    """The names one plugin goes by: ``Names.of("my-net")`` -> model ``my-net``, distribution
    ``garden-my-net``, package ``garden_my_net``, family class ``MyNet``."""

    model: str
    dist: str
    package: str
    class_name: str

    @classmethod
    def of(cls, name: str) -> "Names":
        model = name.strip().lower()
        for prefix in ("garden-", "garden_"):
            model = strip_prefix(model, prefix)
        if not NAME.match(model):
            raise ConfigError(
                f"plugin name '{name}' is not a valid model name; use lower-case letters, digits, '-' "
                "and '_', starting with a letter (e.g. convnext or my-net)"
            )
        words = re.split(r"[-_]", model)
        return cls(model=model, dist=f"garden-{model}", package="garden_" + "_".join(words),
                   class_name="".join(w.capitalize() for w in words))


def garden_requirement() -> str:
    """The pin a plugin written today should carry: this garden's minor series while garden is
    0.x (``garden>=0.1,<0.2``), its major series after."""
    try:
        parts = [int(p) for p in re.findall(r"\d+", version("garden"))[:2]]
    except PackageNotFoundError:  # running from a source tree that is not installed
        parts = [int(p) for p in re.findall(r"\d+", __version__)[:2]]
    major, minor = (parts + [0, 0])[:2]
    if major == 0:
        return f"garden>={major}.{minor},<{major}.{minor + 1}"
    return f"garden>={major}.{minor},<{major + 1}"


def task_values(names: Names, task: str | None) -> dict[str, str]:
    """What ``--task`` changes in the templates: the entry's tasks, the hook, the head."""
    if task is None:
        return {"entry_imports": "ModelEntry, Variant", "tasks": '("classify",)', "task_hook": "",
                "task_config": "", "task_head": "", "task": "", "task_class": ""}
    task_class = "".join(w.capitalize() for w in re.split(r"[-_]", task))
    hook = (f'@hookimpl\ndef garden_tasks():\n    """The task this plugin brings: its name, the domain whose models run it, '
            f'its class."""\n    return [TaskEntry("{task}", "{DOMAIN}", "{names.package}.task:{task_class}",\n'
            f'                      "one number per image: the ink of a handwritten digit")]\n\n\n')
    return {"entry_imports": "ModelEntry, TaskEntry, Variant", "tasks": f'("classify", "{task}")', "task_hook": hook,
            "task_config": f", conf/task/{task}.yaml", "task_head": f'    heads = {{"classify": "ConvNextForImageClassification", "{task}": "ConvNextForImageClassification"}}\n',
            "task": task, "task_class": task_class}


def values(names: Names) -> dict[str, str]:
    return {
        "name": names.model,
        "dist": names.dist,
        "package": names.package,
        "class_name": names.class_name,
        "title": f"{names.class_name} (ConvNeXt)",
        "api_version": API_VERSION,
        "garden_requirement": garden_requirement(),
    }


def render(text: str, mapping: dict[str, str], where: str) -> str:
    for key, value in mapping.items():
        text = text.replace("{{" + key + "}}", value)
    left = re.search(r"\{\{\s*(\w+)\s*\}\}", text)
    if left:  # a template names a value scaffold does not know: a bug in garden, said plainly
        raise ConfigError(f"template {where} uses unknown value {{{{{left.group(1)}}}}}")
    return text


def templates(kind: str = TEMPLATE) -> list[tuple[str, str]]:
    """Every template file of ``kind`` as (relative path, text), from garden's package data."""
    root = package_files("garden").joinpath(kind)
    found: list[tuple[str, str]] = []

    def walk(node, prefix: str) -> None:
        for child in sorted(node.iterdir(), key=lambda c: c.name):
            if child.name == "__pycache__":
                continue
            path = f"{prefix}{child.name}"
            if child.is_dir():
                walk(child, path + "/")
            elif child.name.endswith(".tmpl"):
                found.append((path, child.read_text(encoding="utf-8")))

    walk(root, "")
    if not found:
        raise ConfigError(f"garden's plugin templates are missing ({kind}); reinstall garden")
    return found


def target_path(template: str, names: Names, task: str | None = None) -> Path:
    parts = []
    for part in (template[: -len(".tmpl")] if template.endswith(".tmpl") else template).split("/"):
        part = RENAMES.get(part, part)
        part = part.replace("PACKAGE", names.package).replace("MODEL", names.model).replace("TASK", task or "TASK")
        parts.append(part)
    return Path(*parts)


def new_plugin(name: str, directory: Path | str = ".", *, force: bool = False, task: str | None = None) -> Path:
    """Write the package for plugin ``name`` into ``directory/garden-NAME``, with a task of its own
    called ``task`` if given; returns that folder.

    Refuses a model or task name an installed plugin already registers (the two would collide at
    discovery) and a non-empty target folder (unless ``force``).
    """
    names = Names.of(name)
    taken = discover().entries.get(names.model)
    if taken is not None:
        raise ConfigError(
            f"model '{names.model}' is already registered by plugin '{taken.plugin}'; choose another name"
        )
    if task is not None and not NAME.match(task):
        raise ConfigError(f"task name '{task}' is not valid; use lower-case letters, digits, '-' and '_', "
                          f"starting with a letter (e.g. ink-regress)")
    registered = discover().tasks.get((task, DOMAIN)) if task else None
    if registered is not None:
        raise ConfigError(f"task '{task}' for {DOMAIN} models is already registered by plugin '{registered.plugin}'; "
                          f"choose another name, or leave out --task and list it in the model's tasks")
    root = Path(directory).expanduser() / names.dist
    if root.exists() and any(root.iterdir()) and not force:
        raise ConfigError(f"{root} already exists and is not empty; choose another --dir or remove it")
    mapping = {**values(names), **task_values(names, task)}
    chosen = templates() + (templates(TASK_TEMPLATE) if task else [])
    for template, text in chosen:
        path = root / target_path(template, names, task)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(text, mapping, template), encoding="utf-8")
    return root


def files(root: Path) -> list[str]:
    """The files under ``root``, relative, for the summary ``plugin new`` prints."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


# -- plugin new NAME --from hf:<repo-id>@<revision> ------------------------------------------------

HUB_TEMPLATE = "templates/hub_plugin"
#: files the two kinds of plugin share (the rest of the hub plugin's are its own)
SHARED = ("gitignore.tmpl", "_github/workflows/publish.yml.tmpl")


def hub_templates() -> list[tuple[str, str]]:
    return [t for t in templates() if t[0] in SHARED] + templates(HUB_TEMPLATE)


def measure_hub_model(source: str) -> dict:
    """What the scaffolded entry declares, measured: the architecture and tasks, the pinned
    commit, a tiny config (the repository's shrunk, its vocabulary kept) with its parameters and
    FLOPs, the repository's parameter count, and a planned layout for 4 IPUs (by FLOPs, on a
    random-init model of the real size, when it has under a billion parameters)."""
    import dataclasses
    import json

    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from garden.coverage.shrink import shrink
    from garden.families.auto import is_hf, probe_inputs, resolve
    from garden.hookspecs import BuildSpec
    from garden.partition.planner import plan_stages
    from garden.partition.profile import block_costs, profile_blocks

    if not is_hf(source):
        raise ConfigError(f"--from {source}: give a Hub model as hf:org/name@revision")
    entry, folder = resolve(source)
    variant = entry.variants[0]
    if variant.hub_id is None:
        raise ConfigError(f"--from {source}: a published plugin pins a Hub repository; give hf:org/name@revision")
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    keep = {k: v for k, v in config.items() if k == "vocab_size" or k.endswith("token_id")}
    tiny = {**config, **shrink(config), **keep, "model_type": entry.family}
    tiny = {k: v for k, v in tiny.items() if k not in ("architectures", "transformers_version", "_name_or_path",
                                                      "id2label", "label2id", "auto_map")}
    family = resolve_name(entry.builder)()
    task = entry.tasks[0]
    labels = ("a", "b") if task in ("classify", "token-classify", "audio-classify") else None
    spec = BuildSpec(entry=entry, variant=dataclasses.replace(variant, config=tiny), task=task, labels=labels)
    family.preprocessor(dataclasses.replace(spec, weights_dir=None))
    task_object = resolve_name(family.tasks[task])(family)
    torch.manual_seed(0)
    model = family.build(spec).eval()
    probe = probe_inputs(model, task_object, family.processor, batch=1)
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        task_object.forward(model, dict(zip(task_object.input_names, probe)))
    with torch.device("meta"):
        full = family.head(spec).from_config(family.config(dataclasses.replace(spec, variant=variant)))
    hub_params = sum(p.numel() for p in full.parameters())
    layouts = {}
    if hub_params < 1e9:
        real = family.build(dataclasses.replace(spec, variant=variant)).eval()
        real_probe = probe_inputs(real, task_object, family.processor, batch=1)
        blocks = family.stage_blocks(real, task)
        costs = block_costs(profile_blocks(real, blocks, real_probe), "flops")
        layers = sum(b.kind == "layer" for b in blocks)
        if layers >= 4:
            layouts[4] = tuple(plan_stages(costs, [-1] * 4, model=entry.name).layers_per_ipu)
    return {"entry": entry, "folder": folder, "tiny": tiny, "tiny_params": sum(p.numel() for p in model.parameters()),
            "tiny_flops": int(counter.get_total_flops()),
            "flops_input": ", ".join(f"{n} {'x'.join(str(d) for d in t.shape)}"
                                     for n, t in zip(task_object.input_names, probe)),
            "hub_params": hub_params, "layouts": layouts, "license": None}


def new_hub_plugin(name: str, source: str, directory: Path | str = ".", *, force: bool = False) -> Path:
    """``plugin new NAME --from hf:<repo-id>@<revision>``: a publishable plugin declaring a curated
    entry for a Hub model, pinned to the commit the revision names, with measured sizes, a
    planned layout, a recipe per task, the repository's tokenizer or processor files, and tests."""
    import shutil

    from garden.hub import SIDE_FILES

    names = Names.of(name)
    taken = discover().entries.get(names.model)
    if taken is not None:
        raise ConfigError(
            f"model '{names.model}' is already registered by plugin '{taken.plugin}'; choose another name")
    root = Path(directory).expanduser() / names.dist
    if root.exists() and any(root.iterdir()) and not force:
        raise ConfigError(f"{root} already exists and is not empty; choose another --dir or remove it")
    facts = measure_hub_model(source)
    entry, variant = facts["entry"], facts["entry"].variants[0]
    architecture = (variant.config.get("architectures") or [entry.family])[0]
    mapping = {
        **values(names), "title": f"{names.class_name} ({architecture})", "hub_id": variant.hub_id,
        "revision": variant.revision, "revision_short": variant.revision[:7], "architecture": architecture,
        "model_type": entry.family, "domain": entry.domain, "tasks": repr(tuple(entry.tasks)),
        "tasks_text": ", ".join(entry.tasks), "first_task": entry.tasks[0],
        "base_class": entry.builder.rpartition(":")[2], "tiny_config": repr(facts["tiny"]),
        "tiny_params": f"{facts['tiny_params']:_}", "tiny_flops": f"{facts['tiny_flops']:_}",
        "flops_input": facts["flops_input"], "hub_params": f"{facts['hub_params']:_}",
        "layouts": repr(facts["layouts"]), "license": repr(facts["license"]),
        "transformers_version": version("transformers"),
    }
    for template, text in hub_templates():
        for task in entry.tasks if "TASK" in template else [None]:
            path = root / target_path(template, names, task)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(render(text, {**mapping, "task": task or ""}, template), encoding="utf-8")
    assets = root / names.package / "assets"
    assets.mkdir(parents=True, exist_ok=True)
    from fnmatch import fnmatch

    for file in facts["folder"].iterdir():
        if file.is_file() and any(fnmatch(file.name, p) for p in SIDE_FILES):
            shutil.copyfile(file, assets / file.name)
    return root
