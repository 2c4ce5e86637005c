"""The one stderr console a run talks on: the loops' progress bars and notes, and the notes a
backend has mid-step (``backend=ipu`` skipping a short batch), so a note prints above a live bar
instead of through it.

    >>> from garden.console import console
    >>> console.print("[yellow]note:[/] backend=ipu skips training batches smaller than 16")  # doctest: +SKIP
"""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

console = Console(stderr=True)


def progress(quiet: bool) -> Progress:
    """A progress bar on :data:`console` (``quiet``: drawn nowhere, on processes that do not write)."""
    return Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("{task.fields[info]}"), TimeElapsedColumn(),
        console=console, disable=quiet, transient=False,
    )
