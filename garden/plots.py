"""Pictures of a run, a stage plan and a sweep, drawn with matplotlib from plain data.

Every function takes lists and dicts (a run's ``history.jsonl`` records, a plan's summary, a
sweep's summary) and returns a matplotlib ``Figure``; :func:`save` writes it as a PNG, whole or
not at all. Figures are made with the object API and the Agg canvas, never ``pyplot``: drawing
changes no global backend, works without a display, and leaves a notebook's inline plots alone.

    >>> fig = stage_costs(stage_plan.summary())               # doctest: +SKIP
    >>> save(fig, Path("outputs/run/plots/stages.png"))       # doctest: +SKIP

Bars are drawn in :data:`BAR` and the costliest one in :data:`BOTTLENECK`, solid colours that
tests find again in the PNG to count the bars.
"""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any, Sequence

from garden.compat import strip_prefix
from garden.files import write_atomic

#: the fill of an ordinary bar, and of the bottleneck's (RGB hex)
BAR = "#4c72b0"
BOTTLENECK = "#c44e52"
LINE = "#4c72b0"
SECOND = "#dd8452"


def figure(rows: int = 1, *, width: float = 6.4, height: float = 3.6):
    """A Figure with ``rows`` stacked axes sharing x, on the Agg canvas (no pyplot, no display)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height * rows if rows > 1 else height), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, 1, sharex=True, squeeze=False)[:, 0]
    return fig, list(axes)


def save(fig: Any, path: Path) -> Path:
    """``fig`` as a PNG at ``path`` (folders made), written atomically."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, buffer.getvalue())
    return path


def training_curves(records: Sequence[dict[str, Any]], title: str = "") -> Any:
    """Loss, learning rate and throughput per step, from a run's training records."""
    steps = [r for r in records if "loss" in r or "lr" in r]
    panels = [("loss", "train loss"), ("lr", "learning rate"), ("samples_per_second", "samples / s")]
    panels = [(key, label) for key, label in panels if any(r.get(key) is not None for r in steps)]
    fig, axes = figure(max(1, len(panels)), height=2.2)
    for ax, (key, label) in zip(axes, panels):
        points = [(r["step"], r[key]) for r in steps if r.get(key) is not None]
        ax.plot([p[0] for p in points], [p[1] for p in points], color=LINE, linewidth=1.2)
        if key == "loss" and len(points) >= 8:  # a moving average shows the trend through the noise
            window = max(2, len(points) // 10)
            mean = [sum(p[1] for p in points[max(0, i - window + 1):i + 1]) / min(i + 1, window)
                    for i in range(len(points))]
            ax.plot([p[0] for p in points], mean, color=SECOND, linewidth=1.5, label=f"mean of {window}")
            ax.legend(loc="upper right", fontsize="small")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel("step")
    if title:
        axes[0].set_title(title)
    return fig


def eval_curves(records: Sequence[dict[str, Any]], title: str = "") -> Any | None:
    """Each eval metric against the step it was measured at; ``None`` when nothing was evaluated."""
    evals = [r for r in records if any(k.startswith("eval_") for k in r)]
    keys = sorted({k for r in evals for k, v in r.items() if k.startswith("eval_") and isinstance(v, (int, float))})
    if not keys:
        return None
    fig, axes = figure(len(keys), height=2.2)
    for ax, key in zip(axes, keys):
        points = [(r["step"], r[key]) for r in evals if isinstance(r.get(key), (int, float))]
        ax.plot([p[0] for p in points], [p[1] for p in points], color=LINE, marker="o", linewidth=1.2)
        ax.set_ylabel(strip_prefix(key, "eval_"))
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel("step")
    axes[0].set_title(title or "evaluation")
    return fig


def bars(values: Sequence[float], labels: Sequence[str], *, ylabel: str, title: str, ideal: float | None = None,
         note: str = "") -> Any:
    """One bar per value, the largest in :data:`BOTTLENECK` and named, an optional ideal line."""
    fig, (ax,) = figure()
    worst = max(range(len(values)), key=lambda i: values[i]) if values else None
    colours = [BOTTLENECK if i == worst else BAR for i in range(len(values))]
    ax.bar(range(len(values)), values, color=colours, width=0.7)
    ax.set_xticks(range(len(values)), labels, fontsize="small")
    if ideal is not None:
        ax.axhline(ideal, color="0.35", linestyle="--", linewidth=1, label="ideal (even split)")
        ax.legend(loc="lower right", fontsize="small")
    if worst is not None:
        ax.annotate("bottleneck", (worst, values[worst]), xytext=(0, 4), textcoords="offset points",
                    ha="center", va="bottom", fontsize="small", color="black")
        ax.set_ylim(0, values[worst] * 1.15 or 1)
    ax.set_ylabel(ylabel)
    ax.set_title(title + (f"\n{note}" if note else ""), fontsize="medium")
    return fig


def stage_costs(summary: dict[str, Any], title: str = "") -> Any:
    """A stage plan's cost per stage (``StagePlan.summary()``), the bottleneck marked, the even
    split as a dashed line."""
    stages = summary["stages"]
    shares = [s["cost_share"] * 100 for s in stages]
    labels = [f"stage {s['index']}\n{s['layers']} layer{'s' * (s['layers'] != 1)}" for s in stages]
    note = f"layers_per_ipu={summary['layers_per_ipu']} · bottleneck / ideal = {summary['bottleneck_ratio']:.3f}"
    return bars(shares, labels, ylabel="share of the cost (%)", title=title or "stage plan: cost per stage",
                ideal=100 / len(stages) if stages else None, note=note)


def stage_times(seconds: Sequence[float], title: str = "") -> Any:
    """The measured compute time of each pipeline stage over the run (forward and backward)."""
    labels = [f"stage {i}" for i in range(len(seconds))]
    total = sum(seconds)
    return bars(list(seconds), labels, ylabel="seconds busy", title=title or "measured time per stage",
                ideal=total / len(seconds) if seconds else None)


def confusion(matrix: Sequence[Sequence[int]], labels: Sequence[str], title: str = "") -> Any:
    """A confusion matrix: true labels down, predicted across, counts written in the cells."""
    n = len(matrix)
    size = min(10.0, max(4.0, 0.45 * n + 2))
    fig, (ax,) = figure(width=size, height=size)
    ax.imshow(matrix, cmap="Blues")
    names = [str(label) for label in labels] or [str(i) for i in range(n)]
    ax.set_xticks(range(n), names, rotation=90 if max(map(len, names), default=0) > 3 else 0, fontsize="small")
    ax.set_yticks(range(n), names, fontsize="small")
    ax.set_xlabel("predicted")
    ax.set_ylabel("true")
    peak = max((max(row) for row in matrix), default=0) or 1
    if n <= 20:
        for i, row in enumerate(matrix):
            for j, count in enumerate(row):
                if count:
                    ax.text(j, i, str(count), ha="center", va="center", fontsize="small" if n <= 12 else "x-small",
                            color="white" if count > peak / 2 else "black")
    right = sum(matrix[i][i] for i in range(n))
    total = sum(map(sum, matrix)) or 1
    ax.set_title(title or f"confusion matrix · {right}/{total} right ({right / total:.1%})", fontsize="medium")
    return fig


def sweep_comparison(summary: dict[str, Any], metric: str | None = None) -> Any | None:
    """One bar per finished sweep job: its final eval ``metric`` (the first one, by default),
    labelled with the values the sweep varied. ``None`` when no job has a metric."""
    done = [j for j in summary["jobs"] if j.get("eval")]
    if not done:
        return None
    metric = metric or sorted({k for j in done for k, v in j["eval"].items() if isinstance(v, (int, float))})[0]
    done = [j for j in done if isinstance(j["eval"].get(metric), (int, float))]
    fig, (ax,) = figure(width=max(6.4, 0.9 * len(done) + 2))
    values = [j["eval"][metric] for j in done]
    labels = ["\n".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in j["swept"].items()) or str(j["job"]) for j in done]
    best = max(range(len(values)), key=lambda i: values[i] if not math.isnan(values[i]) else -math.inf)
    ax.bar(range(len(values)), values, color=[BOTTLENECK if i == best else BAR for i in range(len(values))],
           width=0.7)
    for i, value in enumerate(values):
        ax.annotate(f"{value:.4g}", (i, value), xytext=(0, 3), textcoords="offset points", ha="center",
                    va="bottom", fontsize="small")
    ax.set_xticks(range(len(values)), labels, fontsize="small")
    ax.set_ylabel(f"eval {metric}")
    ax.set_title(f"sweep: final eval {metric} per job (highest in red)", fontsize="medium")
    ax.grid(axis="y", alpha=0.3)
    return fig
