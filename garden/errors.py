"""garden's own exception types.

Every error a user can cause is one of these: the CLI prints ``str(err)`` as a single line and
exits non-zero, so messages name the bad value, where it came from, and what would fix it.
"""


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
