"""Temporal link prediction over a stream of timestamped events, scored against sampled negatives.

An example is one event ``(src, dst, t, msg)`` with a negative destination drawn at load time
(seeded, among the destinations of the stream); a batch is sorted by time. The split is
chronological: eval is the last ``data.eval_fraction`` of the stream, ``data.limit`` keeps the
*latest* training events (those next to eval) and ``data.eval_limit`` the earliest eval ones.
Metrics: average precision and ROC-AUC of true over negative links.

Streams (see docs/graph_data.md):

- default: a generated stream of users and items with persistent tastes, repeat visits and
  bursty sessions (``data.options``: users, items, topics, events, msg_dim);
- ``data.path=FILE.csv``: JODIE's layout (wikipedia.csv, reddit.csv): a header, then
  ``user_id,item_id,timestamp,state_label,feature,...``; events out of time order are sorted
  with a note, or refused with ``data.options.strict_order=true``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from garden.errors import DataError
from garden.tasks.base import Task, TaskData, batches

STREAM = {"users": 500, "items": 500, "topics": 10, "events": 10_000, "msg_dim": 8}


@dataclass
class Stream:
    """Events in time order as numpy arrays (``t`` in whole seconds, as TGNMemory counts time);
    destinations are node ids ``users..users+items-1``."""

    src: Any
    dst: Any
    t: Any
    msg: Any
    num_nodes: int
    source: str


def generated(users: int, items: int, topics: int, events: int, msg_dim: int, seed: int) -> Stream:
    """Users with two favourite topics, who come back to recent items half the time, in bursts.

    Sessions start as a Poisson process (mean gap 60 s); a session is 1-8 events a few seconds
    apart. An event's message is its item's topic centre plus noise, as an edit or a post
    would carry its text features.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    item_topic = rng.integers(0, topics, items)
    by_topic = [np.flatnonzero(item_topic == k) for k in range(topics)]
    by_topic = [b if b.size else np.arange(items) for b in by_topic]
    tastes = np.stack([rng.choice(topics, 2, replace=False) for _ in range(users)])
    recent: list[list[int]] = [[] for _ in range(users)]
    centres = rng.normal(size=(topics, msg_dim))
    src, dst, t = [], [], []
    clock = 0.0
    while len(src) < events:
        clock += rng.exponential(60.0)
        user, now = int(rng.integers(users)), clock
        for _ in range(int(rng.integers(1, 9))):
            if recent[user] and rng.random() < 0.5:
                item = recent[user][int(rng.integers(len(recent[user])))]
            else:
                topic = tastes[user, int(rng.integers(2))] if rng.random() < 0.9 else int(rng.integers(topics))
                item = int(rng.choice(by_topic[topic]))
            recent[user] = (recent[user] + [item])[-5:]
            src.append(user), dst.append(users + item), t.append(now)
            now += rng.exponential(5.0)
    order = np.argsort(np.array(t), kind="stable")[:events]
    src, dst, t = np.array(src)[order], np.array(dst)[order], np.array(t)[order].astype(np.int64)
    msg = (centres[item_topic[dst - users]] + 0.5 * rng.normal(size=(len(src), msg_dim))).astype(np.float32)
    return Stream(src, dst, t, msg, users + items,
                  f"generated events ({users} users, {items} items, {len(src):,} events)")


def jodie(path: str, strict: bool) -> Stream:
    """A JODIE-format CSV; users and items become nodes ``0..U-1`` and ``U..U+I-1``."""
    import numpy as np

    file = Path(path).expanduser()
    if not file.is_file():
        raise DataError(f"data.path={path} does not exist; give a JODIE csv (user_id,item_id,timestamp,state_label,features...)")
    try:
        table = np.loadtxt(file, delimiter=",", skiprows=1, ndmin=2)
    except ValueError as err:
        raise DataError(f"data.path={path} is not a JODIE csv of numbers after its header ({err})") from None
    if table.shape[1] < 4:
        raise DataError(f"data.path={path} has {table.shape[1]} columns; JODIE rows are user_id,item_id,timestamp,state_label[,features]")
    t = table[:, 2]
    backwards = np.flatnonzero(np.diff(t) < 0)
    note = ""
    if backwards.size:
        row = int(backwards[0]) + 1
        where = f"{file} data row {row + 1} (t={t[row]:g}) comes before row {row} (t={t[row - 1]:g})"
        if strict:
            raise DataError(f"data.path: {where}; sort the events by time, or drop data.options.strict_order=true")
        print(f"note: {where}; {backwards.size} events out of time order, sorted by timestamp", file=sys.stderr)
        table = table[np.argsort(t, kind="stable")]
        note = f", {backwards.size} events re-sorted by time"
    users = int(table[:, 0].max()) + 1
    items = int(table[:, 1].max()) + 1
    msg = table[:, 4:] if table.shape[1] > 4 else np.zeros((len(table), 1))
    return Stream(table[:, 0].astype(np.int64), users + table[:, 1].astype(np.int64), table[:, 2].astype(np.int64),
                  msg.astype(np.float32), users + items, f"JODIE events {file} ({len(table):,}{note})")


def collate(examples: list[dict[str, Any]]) -> dict[str, Any]:
    import torch

    examples = sorted(examples, key=lambda e: e["t"])
    batch = {k: torch.tensor([e[k] for e in examples]) for k in ("src", "dst", "neg_dst")}
    batch["t"] = torch.tensor([e["t"] for e in examples], dtype=torch.long)
    batch["msg"] = torch.stack([torch.as_tensor(e["msg"]) for e in examples])
    batch["labels"] = torch.cat([torch.ones(len(examples)), torch.zeros(len(examples))])
    return batch


class LinkPrediction(Task):
    splittable = False
    name = "link-predict"
    metric = "average_precision"

    def load(self, cfg: Any, preprocessor: Any) -> TaskData:
        import numpy as np

        data = cfg.data
        options = dict(data.options)
        strict = bool(options.pop("strict_order", False))
        if data.path:
            stream = jodie(data.path, strict)
        else:
            unknown = sorted(set(options) - set(STREAM))
            if unknown:
                raise DataError(f"data.options has unknown key(s) {', '.join(unknown)}; the generated stream takes "
                                f"{', '.join(STREAM)}, strict_order")
            stream = generated(**{k: int(options.get(k, v)) for k, v in STREAM.items()}, seed=cfg.seed)
        destinations = np.unique(stream.dst)
        neg = np.random.default_rng(cfg.seed).choice(destinations, len(stream.src))
        events = [{"src": int(s), "dst": int(d), "neg_dst": int(n), "t": int(t), "msg": m}
                  for s, d, n, t, m in zip(stream.src, stream.dst, neg, stream.t, stream.msg)]
        if len(events) < 2:
            raise DataError(f"{stream.source} holds {len(events)} event(s); link prediction needs at least 2")
        n_eval = min(max(1, round(len(events) * data.eval_fraction)), len(events) - 1)
        train, held_out = events[:-n_eval], events[-n_eval:]
        return TaskData(
            train=train[-data.limit:] if data.limit else train,
            eval=held_out[: data.eval_limit] if data.eval_limit else held_out,
            collate=collate,
            info={"num_nodes": stream.num_nodes, "msg_dim": int(stream.msg.shape[1])},
            source=stream.source,
        )

    def inputs(self, batch: dict[str, Any]) -> tuple:
        return (batch["src"], batch["dst"], batch["neg_dst"], batch["t"], batch["msg"])

    def forward(self, model: Any, batch: dict[str, Any]) -> Any:
        return model(*self.inputs(batch))

    def loss(self, output: Any, target: Any) -> Any:
        import torch.nn.functional as F

        return F.binary_cross_entropy_with_logits(output.float(), target.float())

    def evaluate(self, outputs: list[Any], batches: list[dict[str, Any]]) -> dict[str, float]:
        import torch
        from sklearn.metrics import average_precision_score, roc_auc_score

        logits = torch.cat([o.float() for o in outputs])
        labels = torch.cat([b["labels"] for b in batches])
        scores = logits.sigmoid().numpy()
        return {
            "average_precision": float(average_precision_score(labels.numpy(), scores)),
            "roc_auc": float(roc_auc_score(labels.numpy(), scores)),
            "loss": self.loss(logits, labels).item(),
        }

    def baseline(self, data: TaskData) -> dict[str, Any]:
        """A constant score ranks nothing: its average precision is the share of true links."""
        import torch

        labels = torch.cat([b["labels"] for b in batches(data.eval, data.collate)])
        return self.baseline_of("one constant score for every candidate link (chance)", labels.mean().item())

    def predict(self, output: Any, batch: dict[str, Any], data: TaskData, top_k: int) -> list[dict]:
        scores = output.float().sigmoid().tolist()
        n = len(batch["src"])
        rows = []
        for i in range(n):
            src, dst, neg, t = (int(batch["src"][i]), int(batch["dst"][i]), int(batch["neg_dst"][i]), int(batch["t"][i]))
            rows.append({
                "input": f"({src}, {dst}, t={t})",
                "predictions": [{"label": f"{src}->{dst} observed", "score": round(scores[i], 6)},
                                {"label": f"{src}->{neg} sampled negative", "score": round(scores[n + i], 6)}],
            })
        return rows
