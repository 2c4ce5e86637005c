"""The standard-library APIs newer than the Poplar SDK's Python 3.8 that garden uses, in one
place (torch-free; transformers' differences are ``garden.families.compat``'s), so the code an IPU
run imports reads the same on 3.8 and today's Python (``make check-py38`` runs vermin on it).

* :func:`package_files`: ``importlib.resources.files`` (Python 3.9+), else the package's folder.
* :func:`resolve_name`: ``pkgutil.resolve_name`` (3.9+), else ``module:attribute`` resolved here.
* :func:`strip_prefix`: ``str.removeprefix`` (3.9+).
"""

from __future__ import annotations

import importlib
from typing import Any


def package_files(package: str) -> Any:
    """The folder of ``package``'s data files, as ``importlib.resources.files(package)``."""
    try:
        from importlib.resources import files  # novermin (3.9+; the fallback serves 3.8)
    except ImportError:
        from pathlib import Path

        return Path(importlib.import_module(package).__file__).parent
    return files(package)


def resolve_name(name: str) -> Any:
    """The object ``name`` (``"package.module:attribute.attribute"``) names."""
    try:
        from pkgutil import resolve_name as resolve  # novermin (3.9+; the fallback serves 3.8)
    except ImportError:
        module, _, attributes = name.partition(":")
        found: Any = importlib.import_module(module)
        for attribute in attributes.split(".") if attributes else ():
            found = getattr(found, attribute)
        return found
    return resolve(name)


def strip_prefix(text: str, prefix: str) -> str:
    """``text`` without ``prefix`` at its start (``str.removeprefix``)."""
    return text[len(prefix):] if prefix and text.startswith(prefix) else text
