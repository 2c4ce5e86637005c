"""The run's data as batches: a seeded loader, and each replica's share of every global batch.

    >>> batches = loader(prepared.data.eval, prepared.data.collate, 8, shuffle=False, seed=0)  # doctest: +SKIP
    >>> next(iter(batches))["labels"].shape                                                   # doctest: +SKIP
    torch.Size([8])
"""

from __future__ import annotations

from typing import Any


def loader(dataset: Any, collate: Any, batch_size: int, *, shuffle: bool, seed: int, workers: int = 0):
    import torch
    from torch.utils.data import DataLoader

    generator = torch.Generator().manual_seed(seed)
    return DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, collate_fn=collate,
                      generator=generator, num_workers=workers, drop_last=False)


def shard_sizes(n: int, replicas: int, accumulation: int = 1) -> list[list[int]]:
    """How a global batch of ``n`` examples splits: ``sizes[replica][micro_step]``.

    The batch is cut in order into ``replicas x accumulation`` contiguous pieces whose sizes differ
    by at most one, replica 0 first; every example lands in exactly one piece, and a short last
    batch gives some pieces one example fewer (or none):

    >>> shard_sizes(8, 2, 2), shard_sizes(5, 2), shard_sizes(1, 2)
    ([[2, 2], [2, 2]], [[3], [2]], [[1], [0]])
    """
    base, extra = divmod(n, replicas * accumulation)
    flat = [base + (1 if i < extra else 0) for i in range(replicas * accumulation)]
    return [flat[r * accumulation:(r + 1) * accumulation] for r in range(replicas)]


class ShardedBatches:
    """A batch sampler: the global batches of ``base`` (a seeded ``BatchSampler``, the one a
    single process would use), each cut by :func:`shard_sizes` into this replica's
    ``accumulation`` micro-batches, yielded in order. An empty piece yields the batch's first
    index as a stand-in, which the trainer weighs zero. ``skip`` global batches are passed over
    on the next pass (resuming mid-epoch), without loading them.
    """

    def __init__(self, base: Any, *, replica: int = 0, replicas: int = 1, accumulation: int = 1):
        self.base, self.replica, self.replicas, self.accumulation = base, replica, replicas, accumulation
        self.skip = 0

    @property
    def global_batches(self) -> int:
        return len(self.base)

    def size_of(self, j: int) -> int:
        """The size of global batch ``j`` (the last one may be short)."""
        n, b = len(self.base.sampler), self.base.batch_size
        return min(b, n - j * b)

    def __len__(self) -> int:
        return (self.global_batches - self.skip) * self.accumulation

    def __iter__(self):
        skip, self.skip = self.skip, 0
        for j, indices in enumerate(self.base):
            if j < skip:
                continue
            sizes = shard_sizes(len(indices), self.replicas, self.accumulation)
            start = sum(sum(s) for s in sizes[:self.replica])
            for size in sizes[self.replica]:
                yield indices[start:start + size] or indices[:1]
                start += size


def sharded_loader(dataset: Any, collate: Any, batch_size: int, *, shuffle: bool, seed: int, workers: int = 0,
                   replica: int = 0, replicas: int = 1, accumulation: int = 1):
    """A DataLoader over this replica's share of each global batch, its :class:`ShardedBatches`
    and the seeded generator that orders the data.

    With one replica and no accumulation it yields what :func:`loader` yields, in the same order
    (the same seeded generator drives the same ``RandomSampler``).
    """
    import torch
    from torch.utils.data import BatchSampler, DataLoader, RandomSampler, SequentialSampler

    generator = torch.Generator().manual_seed(seed)
    order = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
    batches = ShardedBatches(BatchSampler(order, batch_size, drop_last=False), replica=replica,
                             replicas=replicas, accumulation=accumulation)
    return DataLoader(dataset, batch_sampler=batches, collate_fn=collate, generator=generator,
                      num_workers=workers), batches, generator
