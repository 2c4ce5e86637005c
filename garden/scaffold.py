"""``python -m garden plugin new NAME``: a complete, publishable model plugin package.

The package wraps a small transformers family (ConvNeXt image classification, on garden's core
image task) so that it installs, passes ``python -m garden plugin check`` and its own tests, and
runs, before its author changes a line; then it is the author's to change. It holds a
``pyproject.toml`` with the ``garden.plugins`` entry point, the plugin module and its entry (a
tiny random variant and a Hub variant), the family with its stage layout, Hydra configs, tests
built on :mod:`garden.testing`, a README (test, build, publish) and a trusted-publishing workflow.

The files are plain templates under ``garden/templates/plugin`` (package data). ``{{key}}``
marks a value (double braces, because Python, YAML and TOML use single ones); path parts
``PACKAGE`` and ``MODEL`` become the import package and the model name::

    >>> new_plugin("convnext", Path("/tmp"))                       # doctest: +SKIP
    PosixPath('/tmp/garden-convnext')
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from garden import __version__
from garden.errors import ConfigError
from garden.hookspecs import API_VERSION
from garden.plugins import discover

NAME = re.compile(r"^[a-z][a-z0-9_-]*$")
TEMPLATE = "templates/plugin"
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
            model = model.removeprefix(prefix)
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


def templates() -> list[tuple[str, str]]:
    """Every template file as (relative path, text), from garden's package data."""
    root = resources.files("garden").joinpath(TEMPLATE)
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
        raise ConfigError(f"garden's plugin templates are missing ({TEMPLATE}); reinstall garden")
    return found


def target_path(template: str, names: Names) -> Path:
    parts = []
    for part in template.removesuffix(".tmpl").split("/"):
        part = RENAMES.get(part, part)
        part = part.replace("PACKAGE", names.package).replace("MODEL", names.model)
        parts.append(part)
    return Path(*parts)


def new_plugin(name: str, directory: Path | str = ".", *, force: bool = False) -> Path:
    """Write the package for plugin ``name`` into ``directory/garden-NAME``; returns that folder.

    Refuses a name an installed plugin already registers (the two would collide at discovery)
    and a non-empty target folder (unless ``force``).
    """
    names = Names.of(name)
    taken = discover().entries.get(names.model)
    if taken is not None:
        raise ConfigError(
            f"model '{names.model}' is already registered by plugin '{taken.plugin}'; choose another name"
        )
    root = Path(directory).expanduser() / names.dist
    if root.exists() and any(root.iterdir()) and not force:
        raise ConfigError(f"{root} already exists and is not empty; choose another --dir or remove it")
    mapping = values(names)
    for template, text in templates():
        path = root / target_path(template, names)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(text, mapping, template), encoding="utf-8")
    return root


def files(root: Path) -> list[str]:
    """The files under ``root``, relative, for the summary ``plugin new`` prints."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
