"""Writing files so that a reader, or a crash, never meets half of one.

The temporary files and folders behind an atomic write are created private (``mkstemp``: 0600,
``mkdtemp``: 0700); before they are renamed into place they get the permissions a plain
``open()`` or ``mkdir()`` would have given them under the process's umask (0644 and 0755 under
the usual 022), so colleagues on a shared file system can read a run.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def umask() -> int:
    """The process's umask (``os.umask`` can only be read by setting it, so it is set back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def plain_mode(*, folder: bool = False) -> int:
    """The mode ``open(path, "w")`` (or ``mkdir`` for a ``folder``) gives under this umask."""
    return (0o777 if folder else 0o666) & ~umask()


def make_plain(path: Path) -> None:
    """Give ``path``, a private temporary file or folder, a plain write's permissions."""
    os.chmod(path, plain_mode(folder=Path(path).is_dir()))


def staging_folder(beside: Path, prefix: str) -> Path:
    """A fresh folder next to ``beside`` (same file system, so it can be renamed onto it) with a
    plain ``mkdir``'s permissions, to fill and then rename into place whole."""
    folder = Path(tempfile.mkdtemp(dir=Path(beside).parent, prefix=prefix))
    make_plain(folder)
    return folder


def write_atomic(path: Path, text: str | bytes) -> None:
    """Write ``text`` (or bytes: a picture) to ``path`` so a reader sees the old file or the new one, never half.

    The text goes to a temporary file beside ``path``, is flushed to the disk, and replaces
    ``path`` in one rename; a failure leaves the old file as it was. Two writers at once each
    write their own temporary file, and the last rename wins whole.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, plain_mode())
        binary = isinstance(text, bytes)
        with os.fdopen(fd, "wb" if binary else "w", encoding=None if binary else "utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
