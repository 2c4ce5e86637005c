"""garden's own exception types, and the one policy for inputs that cannot be read.

Every error a user can cause is one of these: the CLI prints ``str(err)`` as a single line and
exits non-zero, so messages name the bad value, where it came from, and what would fix it.
"""

from __future__ import annotations

import importlib
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterator


class GardenError(Exception):
    """Base class: a problem the user can fix, reported as one line."""


class UnknownModelError(GardenError):
    """A model name that no installed plugin registers."""


class UnknownTaskError(GardenError):
    """A task the chosen model does not support."""


class ConfigError(GardenError):
    """A configuration value that does not compose or validate."""


class PluginError(GardenError):
    """A plugin that failed to load, or two plugins that conflict."""


class DataError(GardenError):
    """Input data that is missing or malformed."""


class WeightsError(GardenError):
    """Weights that are missing, unreachable, corrupt or incompatible."""


class BackendError(GardenError):
    """A backend that cannot run here (no torchrun, no Poplar SDK, ...)."""


class MissingPackageError(ConfigError):
    """A package only some tasks need is not installed (the core does not depend on it)."""


def needs(module: str, package: str, what: str) -> Any:
    """Import ``module`` for ``what``, or stop in one line naming the package that provides it.

    The core depends on no task's libraries (audio I/O, text metrics, scikit-learn): the plugins
    whose tasks need them declare them, so a core-only install lists, searches and runs the rest.
    """
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingPackageError(f"{what} needs {package}, which is not installed; pip install {package} "
                                  f"(or install the plugin that uses it, which depends on it)") from None


class Unreadable:
    """The one policy for an input that cannot be read (a corrupt image, audio file or text
    line), in training and inference alike: the run stops at the first, naming it and the flag
    that skips; with ``data.skip_unreadable=true`` it skips each and warns once with the count.

    Readers call :func:`unreadable` for the policy in force, which a run sets around its reading
    with :func:`reading`, so the flag need not travel through every loader's signature.
    """

    def __init__(self, skip: bool = False) -> None:
        self.skip = skip
        self.skipped: dict[str, list[str]] = {}

    def found(self, problem: str, kind: str) -> None:
        """Stop with ``problem`` (one line naming the input), or record it as skipped."""
        if not self.skip:
            raise DataError(f"{problem}; fix or remove it, or set data.skip_unreadable=true to skip unreadable "
                            f"{kind}s with a warning")
        self.skipped.setdefault(kind, []).append(problem)

    def warning(self) -> str | None:
        """One line: how many inputs were skipped, and the first few."""
        problems = [p for found in self.skipped.values() for p in found]
        if not problems:
            return None
        counts = ", ".join(f"{len(found)} {kind}{'s' * (len(found) != 1)}" for kind, found in self.skipped.items())
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        return f"skipped {counts} that could not be read (data.skip_unreadable=true): {'; '.join(problems[:3])}{more}"


_policy: ContextVar[Unreadable] = ContextVar("garden_unreadable")


def unreadable() -> Unreadable:
    """The policy in force: the run's (:func:`reading`), else stop at the first unreadable input."""
    return _policy.get(None) or Unreadable()


@contextmanager
def reading(skip: bool) -> Iterator[Unreadable]:
    """Read inputs under ``data.skip_unreadable=skip``; yields the policy, whose :meth:`~Unreadable.warning`
    says afterwards what was skipped."""
    policy = Unreadable(skip)
    token = _policy.set(policy)
    try:
        yield policy
    finally:
        _policy.reset(token)
