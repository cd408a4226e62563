"""How scan work is cut for the workers: pieces that add up to the whole and shrink toward the
end, so that the pieces handed out last are small (the workers finish together)."""
from __future__ import annotations

import pytest

from firstfault.match import split
from firstfault.match.schedule import groups_by_share, shares

MiB = 1 << 20


@pytest.mark.parametrize("total, workers, minimum", [(1024, 2, 2), (257, 2, 2), (12, 2, 2), (5, 4, 2), (1, 2, 2),
                                                     (1000, 8, 1), (3, 1, 1)])
def test_shares_add_up_shrink_and_keep_the_minimum(total, workers, minimum):
    pieces = list(shares(total, workers, minimum))
    assert sum(pieces) == total
    assert all(piece >= min(minimum, total) for piece in pieces)
    assert all(later <= earlier for earlier, later in zip(pieces, pieces[1:-1]))  # they shrink
    if len(pieces) >= 2:  # the last takes up what is left: never a piece under the minimum after it
        assert pieces[-1] < pieces[-2] + minimum


def test_a_big_file_gives_large_first_pieces_and_small_last_ones():
    pieces = list(shares(256, 2, 2))  # 1 GiB in 4 MiB blocks
    assert pieces[0] == 64  # a quarter of the file: few pieces
    assert pieces[-1] <= 4 and pieces[-2] <= 4  # the last ones handed out: a block or two
    assert len(pieces) < 20


def test_nothing_to_share_gives_no_piece():
    assert list(shares(0, 2, 2)) == []


def test_groups_are_consecutive_cover_everything_and_shrink():
    sizes = [3 * MiB] * 64
    groups = groups_by_share(sizes, 2)
    assert [index for group in groups for index in group] == list(range(64))
    lengths = [len(group) for group in groups]
    assert lengths[0] == 16 and lengths[-1] == 1  # a quarter first, single files last
    assert lengths == sorted(lengths, reverse=True)


def test_an_item_larger_than_its_share_is_a_group_of_its_own():
    assert groups_by_share([100, 1, 1, 1, 1], 2) == [[0], [1], [2], [3], [4]]
    assert groups_by_share([1, 1, 1, 1, 100], 2) == [[0, 1, 2, 3], [4]]  # not lumped with the small ones
    assert groups_by_share([], 2) == []


def test_a_file_is_cut_in_shrinking_parts_at_block_multiples_and_the_last_part_is_not_tiny():
    block = 4 * MiB
    size = 1024 * MiB + 12345
    cuts = split.cut_offsets(size, 2, block)
    assert cuts == sorted(set(cuts)) and all(cut % block == 0 and 0 < cut < size for cut in cuts)
    sizes = [later - earlier for earlier, later in zip([0, *cuts], [*cuts, size])]
    assert sizes[0] >= 256 * MiB
    assert size - cuts[-1] > block  # the last part's worker has a block before the last (the tails)
    assert all(later <= earlier for earlier, later in zip(sizes, sizes[1:-1]))
