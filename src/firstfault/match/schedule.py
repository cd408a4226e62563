"""How the work of a scan is cut for the worker processes: pieces that shrink toward the end.

    sizes = shares(total, workers, minimum)        # 1 GiB, 2 workers: 256, 192, 144, 108, ... MB
    groups = groups_by_share(file_sizes, workers)  # consecutive files, each group up to a share

Workers take the next piece when they finish one, so the run ends when the last piece handed out
ends: with pieces of one size, one worker idles for up to a whole piece while the other finishes
(a 1 GiB console cut in 16 equal parts: a tenth of a second of one core). Each piece here is
what is left divided by twice the number of workers, as in guided self-scheduling (Polychronopoulos
and Kuck, IEEE Trans. Computers 36(12), 1987, which divides by the workers alone; twice leaves
room for pieces that cost more than their size says): pieces shrink geometrically and the last
ones are small, so the workers finish within a small piece of each other, while the first pieces
stay large (few pieces: few hand-overs and merges).
"""
from __future__ import annotations

from collections.abc import Iterator


def shares(total: int, workers: int, minimum: int = 1) -> Iterator[int]:
    """The sizes of the pieces to cut `total` into, in the order they are handed out: each at
    least `minimum` (unless `total` is smaller), adding up to `total`."""
    left = total
    while left > 0:
        piece = _share(left, workers, minimum)
        if left - piece < minimum:
            piece = left  # no smaller piece after it
        yield piece
        left -= piece


def groups_by_share(sizes: list[int], workers: int, minimum: int = 1) -> list[list[int]]:
    """Consecutive indices of `sizes` gathered into groups of up to one share each (an item
    larger than its share is a group of its own)."""
    groups: list[list[int]] = []
    left = sum(sizes)  # what the groups not closed yet hold
    current: list[int] = []
    filled = 0  # what `current` holds
    for index, size in enumerate(sizes):
        if current and filled + size > _share(left, workers, minimum):
            groups.append(current)
            left, current, filled = left - filled, [], 0
        current.append(index)
        filled += size
        if filled >= _share(left, workers, minimum):
            groups.append(current)
            left, current, filled = left - filled, [], 0
    if current:
        groups.append(current)
    return groups


def _share(left: int, workers: int, minimum: int) -> int:
    return max(minimum, -(-left // (2 * max(1, workers))))
