"""Finding plugins: entry points in the ``garden.plugins`` group, loaded through pluggy.

A plugin that fails (its import raises, a hook raises, its API version is wrong, it claims a
model another plugin already has) is set aside with one warning naming its distribution; the
others keep working. ``GARDEN_STRICT_PLUGINS=1`` turns any such failure into an error.

``GARDEN_PLUGINS=a,b`` loads only the named plugins, ``GARDEN_DISABLE_PLUGINS=a,b`` blocks
some; either matches a distribution name or an entry-point name.

garden's own tasks come from built-in plugins (:data:`BUILTIN`), modules registered through the
same hooks before any installed plugin, as pytest registers its own; they are always loaded.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import os
import sys
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, PackageNotFoundError, entry_points, version
from pathlib import Path
from typing import Any

import pluggy

from garden import hookspecs
from garden.entries import DOMAIN_NAME, ModelEntry, TaskEntry
from garden.errors import PluginError

GROUP = "garden.plugins"
#: garden's built-in plugins (entry-point-like name -> module), loaded first and never blocked
BUILTIN = {"tasks": "garden.tasks.plugin"}
#: the distribution built-in plugins belong to
CORE = "garden"


@dataclass
class PluginInfo:
    """What discovery learned about one installed plugin."""

    name: str
    distribution: str
    version: str
    api_version: str | None = None
    status: str = "loaded"  # loaded | failed | blocked
    error: str | None = None
    models: list[str] = field(default_factory=list)
    tasks: list[str] = field(default_factory=list)
    hooks: list[str] = field(default_factory=list)
    config_dir: str | None = None
    #: the entry point's module (``garden_vit.plugin``), read without importing it
    module: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def declared_models(self) -> set[str]:
        """The models a plugin that was not loaded would bring, as far as its files tell without
        running its code: its entry-point name and the ``model/*.yaml`` configs in its package."""
        import importlib.util

        names = {self.name.lower()}
        try:
            spec = importlib.util.find_spec((self.module or "").split(".")[0] or self.name)
        except (ImportError, ValueError):
            spec = None
        for folder in (spec.submodule_search_locations or []) if spec else []:
            names.update(p.stem.lower() for p in Path(folder).glob("**/model/*.yaml"))
        return names


@dataclass
class Discovery:
    """The result of discovery: plugins, the entries and tasks they contributed, and failures.

    ``tasks`` is keyed by ``(name, domain)`` (:attr:`TaskEntry.key`).
    """

    plugins: list[PluginInfo]
    entries: dict[str, ModelEntry]
    manager: pluggy.PluginManager
    tasks: dict[tuple[str, str], TaskEntry] = field(default_factory=dict)

    @property
    def hook(self) -> Any:
        """The loaded plugins' hooks, e.g. ``discover().hook.garden_checkpoint_keys(...)``."""
        return self.manager.hook

    @property
    def failures(self) -> list[PluginInfo]:
        return [p for p in self.plugins if p.status == "failed"]

    def blocked_models(self) -> dict[str, str]:
        """Model name (lower case) -> why it is not loaded, for the models of the plugins that
        ``GARDEN_PLUGINS`` or ``GARDEN_DISABLE_PLUGINS`` leave out."""
        return {m: _blocked_by(p) for p in self.plugins if p.status == "blocked" for m in p.declared_models()}

    @property
    def config_dirs(self) -> list[str]:
        return [p.config_dir for p in self.plugins if p.status == "loaded" and p.config_dir]


def _names(var: str) -> set[str] | None:
    value = os.environ.get(var, "").strip()
    return {n.strip() for n in value.split(",") if n.strip()} if value else None


def _blocked_by(info: PluginInfo) -> str:
    """Which setting leaves a plugin out, as a clause a message can end with."""
    disabled = _names("GARDEN_DISABLE_PLUGINS") or set()
    if {info.distribution, info.name} & disabled:
        return (f"plugin {info.distribution} is disabled by GARDEN_DISABLE_PLUGINS="
                f"{os.environ['GARDEN_DISABLE_PLUGINS'].strip()}; remove it from that list to use it")
    return (f"plugin {info.distribution} is not among GARDEN_PLUGINS={os.environ.get('GARDEN_PLUGINS', '').strip()}; "
            "add it to that list to use it")


def _strict() -> bool:
    return os.environ.get("GARDEN_STRICT_PLUGINS", "").lower() in ("1", "true", "yes")


def _distribution(ep: EntryPoint) -> tuple[str, str]:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return ep.name, "?"
    return dist.metadata["Name"], dist.version


def _core_version() -> str:
    try:
        return version(CORE)
    except PackageNotFoundError:  # a source tree that is not installed
        return "?"


def _check_api_version(module: Any, info: PluginInfo) -> None:
    declared = getattr(module, "GARDEN_API_VERSION", None)
    info.api_version = declared
    if declared is None:
        raise PluginError(
            f"plugin '{info.distribution}' does not declare GARDEN_API_VERSION; "
            f"add GARDEN_API_VERSION = \"{hookspecs.API_VERSION}\" to its plugin module"
        )
    if str(declared).split(".")[0] != hookspecs.API_VERSION.split(".")[0]:
        raise PluginError(
            f"plugin '{info.distribution}' {info.version} was written for garden plugin API "
            f"{declared}, this garden speaks {hookspecs.API_VERSION}; install a version of "
            f"'{info.distribution}' made for API {hookspecs.API_VERSION.split('.')[0]}.x "
            f"or a garden that speaks {declared}"
        )


def _check_domain(domain: Any, what: str, info: PluginInfo) -> None:
    if not isinstance(domain, str) or not DOMAIN_NAME.fullmatch(domain):
        raise PluginError(
            f"plugin '{info.distribution}': {what} has domain {domain!r}; a domain is a lower-case word "
            f"(letters, digits, '-'), e.g. vision or detection"
        )


def _validate_entry(entry: Any, info: PluginInfo) -> ModelEntry:
    if not isinstance(entry, ModelEntry):
        raise PluginError(
            f"plugin '{info.distribution}' returned {type(entry).__name__} from garden_models; "
            "expected garden.entries.ModelEntry"
        )
    _check_domain(entry.domain, f"model '{entry.name}'", info)
    if not entry.variants:
        raise PluginError(f"plugin '{info.distribution}': model '{entry.name}' has no variants")
    return entry


def _validate_task(task: Any, info: PluginInfo) -> TaskEntry:
    if not isinstance(task, TaskEntry):
        raise PluginError(
            f"plugin '{info.distribution}' returned {type(task).__name__} from garden_tasks; "
            "expected garden.entries.TaskEntry"
        )
    _check_domain(task.domain, f"task '{task.name}'", info)
    return task


def _load_one(pm: pluggy.PluginManager, module: Any, info: PluginInfo) -> tuple[list[ModelEntry], list[TaskEntry]]:
    """Check and register one imported plugin module, then ask its own hooks (and only its own,
    so discovery stays linear in the number of plugins)."""
    _check_api_version(module, info)
    hooks = {name: getattr(module, name) for name in dir(module)
             if pm.parse_hookimpl_opts(module, name) is not None}
    unknown = sorted(name for name in hooks if getattr(pm.hook, name, None) is None
                     or not pm.hook.__dict__[name].has_spec())
    if unknown:  # what pluggy's check_pending reports, for this plugin alone
        import difflib

        known = [n for n in dir(hookspecs.GardenSpec) if n.startswith("garden_")]
        close = difflib.get_close_matches(unknown[0], known, n=1)
        hint = f"did you mean {close[0]}?" if close else f"garden's hooks are {', '.join(known)}"
        raise PluginError(f"plugin '{info.distribution}': unknown hook '{unknown[0]}'; {hint}")
    pm.register(module, name=info.name)
    info.hooks = sorted(hooks)
    models = hooks["garden_models"]() if "garden_models" in hooks else []
    entries = [_validate_entry(e, info) for e in (models or [])]
    contributed = hooks["garden_tasks"]() if "garden_tasks" in hooks else []
    tasks = [_validate_task(t, info) for t in (contributed or [])]
    info.config_dir = hooks["garden_config_dir"]() if "garden_config_dir" in hooks else None
    return entries, tasks


@functools.lru_cache(maxsize=1)
def discover() -> Discovery:
    """Load the built-in plugins, then every installed one, once per process; see the module
    docstring for the rules."""
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs.GardenSpec)
    only, blocked = _names("GARDEN_PLUGINS"), _names("GARDEN_DISABLE_PLUGINS")
    found = [(CORE, _core_version(), name, lambda module=module: importlib.import_module(module), module)
             for name, module in BUILTIN.items()]
    seen: set[tuple[str, str]] = set()
    for dist, version, ep in sorted(((*_distribution(ep), ep) for ep in entry_points(group=GROUP)),
                                    key=lambda f: (f[0], f[2].name)):
        if (dist, ep.name) not in seen:  # the same distribution found twice on sys.path
            seen.add((dist, ep.name))
            found.append((dist, version, ep.name, ep.load, ep.value.split(":")[0]))
    discovery = Discovery(plugins=[], entries={}, manager=pm)
    for dist, version, name, load, module in found:
        info = PluginInfo(name=name, distribution=dist, version=version, module=module)
        discovery.plugins.append(info)
        builtin = dist == CORE and name in BUILTIN
        if not builtin and ((only is not None and not ({dist, name} & only)) or (blocked and {dist, name} & blocked)):
            info.status = "blocked"
            continue
        try:
            models, tasks = _load_one(pm, load(), info)
            _check_unique(discovery, models, tasks, dist)
        except Exception as err:  # a broken plugin must not take the others down
            if pm.get_plugin(info.name) is not None:
                pm.unregister(name=info.name)
            info.status, info.hooks = "failed", []
            message = str(err)
            if not isinstance(err, PluginError):
                message = f"plugin '{dist}' failed to load: {type(err).__name__}: {err}"
            info.error = message
            if _strict():
                raise PluginError(message + " (GARDEN_STRICT_PLUGINS=1)") from err
            print(f"warning: {message}", file=sys.stderr)
            continue
        for entry in models:
            discovery.entries[entry.name] = dataclasses.replace(entry, plugin=dist, plugin_version=version)
        for task in tasks:
            discovery.tasks[task.key] = dataclasses.replace(task, plugin=dist)
        info.models = [e.name for e in models]
        info.tasks = sorted({t.name for t in tasks})
    return discovery


def _check_unique(discovery: Discovery, models: list[ModelEntry], tasks: list[TaskEntry], dist: str) -> None:
    """A model name, or a task name for one domain, belongs to one plugin."""
    for entry in models:
        if entry.name in discovery.entries:
            raise PluginError(
                f"model '{entry.name}' is registered by both '{discovery.entries[entry.name].plugin}' "
                f"and '{dist}'; uninstall one, or block one with GARDEN_DISABLE_PLUGINS=NAME"
            )
    for task in tasks:
        if task.key in discovery.tasks:
            raise PluginError(
                f"task '{task.name}' for domain '{task.domain}' is registered by both "
                f"'{discovery.tasks[task.key].plugin}' and '{dist}'; uninstall one, or block one with "
                f"GARDEN_DISABLE_PLUGINS=NAME"
            )
