"""A job's batches not yet dispatched (`Backlog`): the queue the scheduler's pool pulls from, lazily."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator

from cluster.actor_pool import Batch


class Backlog:
    """A job's batches not yet dispatched, produced lazily from `source` (a model's plan) as they are taken.

    `batches` and `requests` are how much the source will yield, counted up front (the scheduler's estimates
    need the amount of work, not the work); emptiness never trusts the count: one batch is peeked ahead.
    Retried batches go after the source's (as they always did: a crashed batch is not retried at once on a
    replica that may be crash-looping).
    """

    def __init__(self, source: Iterable[Batch], *, batches: int, requests: int) -> None:
        self._source: Iterator[Batch] = iter(source)
        self._next: Batch | None = None
        self._exhausted = False
        self._unplanned = batches  # batches still to come from the source, the peeked one included
        self.requests = requests  # requests the source yields in all (the job's initial queue)
        self._retries: deque[Batch] = deque()

    @classmethod
    def of(cls, batches: Iterable[Batch]) -> Backlog:
        """A backlog of batches already made (tests, the bench)."""
        made = list(batches)
        return cls(made, batches=len(made), requests=sum(b.size for b in made))

    def _peek(self) -> Batch | None:
        if self._next is None and not self._exhausted:
            self._next = next(self._source, None)
            if self._next is None:
                self._exhausted = True
                self._unplanned = 0
        return self._next

    def __bool__(self) -> bool:
        return bool(self._retries) or self._peek() is not None

    def __len__(self) -> int:
        """Batches left (an estimate while the source is not exhausted: its count up front)."""
        ahead = self._unplanned if not self._exhausted else int(self._next is not None)
        return max(ahead, int(self._next is not None)) + len(self._retries)

    def popleft(self) -> Batch:
        b = self._peek()
        if b is not None:
            self._next = None
            self._unplanned = max(0, self._unplanned - 1)
            return b
        if self._retries:
            return self._retries.popleft()
        raise IndexError("pop from an empty backlog")

    def append(self, batch: Batch) -> None:
        """Requeue a batch (a retry)."""
        self._retries.append(batch)
