"""The one stderr console a run talks on: the loops' progress bars and notes, and the notes a
backend has mid-step (``backend=ipu`` skipping a short batch), so a note prints above a live bar
instead of through it.

    >>> from garden.console import console
    >>> console.print("[yellow]note:[/] backend=ipu skips training batches smaller than 16")  # doctest: +SKIP
"""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

console = Console(stderr=True)


def progress(quiet: bool) -> Progress:
    """A progress bar on :data:`console` (``quiet``: drawn nowhere, on processes that do not write):
    elapsed time, then the time left at the recent pace (``eta``)."""
    return Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("{task.fields[info]}"), TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
        console=console, disable=quiet, transient=False,
    )


def duration(seconds: float) -> str:
    """``45296`` -> ``'12 h 34 min'``, ``190`` -> ``'3 min 10 s'``, ``600`` -> ``'10 min'``, ``8.4`` -> ``'8 s'``."""
    seconds = round(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min {seconds} s" if seconds else f"{minutes} min"
    return f"{seconds} s"
