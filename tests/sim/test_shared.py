"""Shared memory of the simulator and the messages that carry it by reference: what crosses to a
worker process is the memory itself, not copies, and memory is reused only when nothing can see
it any more."""

from __future__ import annotations

import gc
import socket
from collections.abc import Iterator

import numpy as np
import pytest

from pypto_build.chip_build.sim import shared


@pytest.fixture
def channel() -> Iterator[tuple[socket.socket, socket.socket]]:
    left, right = socket.socketpair()
    with left, right:
        yield left, right


def test_views_of_a_segment_cross_by_reference(
    channel: tuple[socket.socket, socket.socket],
) -> None:
    segment = shared.Segment.allocate(1 << 20)
    window = segment.array((256, 1024), np.float32)
    window[...] = 3.0
    left, right = channel
    shared.send(left, {"window": window, "rows": window[::2, 8:]}, returned=True)
    got = shared.receive(right)
    # One process here, so the receiver maps the memory it already has: the same segment.
    assert shared.segment_of(got["window"]) is segment
    np.testing.assert_array_equal(got["rows"], window[::2, 8:])
    got["window"][0, 0] = 7.0
    assert window[0, 0] == 7.0


def test_other_large_arrays_are_copied_once_small_ones_go_in_band(
    channel: tuple[socket.socket, socket.socket],
) -> None:
    large = np.arange(1 << 16, dtype=np.int64)
    small = np.ones(3)
    left, right = channel
    shared.send(left, (large, large, small), returned=True)
    first, second, got_small = shared.receive(right)
    np.testing.assert_array_equal(first, large)
    assert first is second  # one array sent twice arrives as one
    assert shared.segment_of(first) is not None and not np.shares_memory(first, large)
    assert shared.segment_of(got_small) is None
    np.testing.assert_array_equal(got_small, small)


def test_a_closed_channel_ends_receiving(channel: tuple[socket.socket, socket.socket]) -> None:
    left, right = channel
    left.close()
    with pytest.raises(EOFError, match="closed"):
        shared.receive(right)


def test_a_segment_nothing_views_is_reused_and_zeroed_when_asked() -> None:
    size = 3 << 16
    segment = shared.Segment.allocate(size)
    inode = segment.inode
    segment.array((size,), np.uint8)[...] = 9
    del segment
    gc.collect()
    reused = shared.Segment.allocate(size)
    assert reused.inode == inode
    assert not reused.array((size,), np.uint8).any()
    # A segment still viewed is never handed out again.
    view = reused.array((size,), np.uint8)
    del reused
    assert shared.Segment.allocate(size).inode != inode
    assert shared.segment_of(view) is not None


def test_memory_given_to_another_process_is_never_refilled(
    channel: tuple[socket.socket, socket.socket],
) -> None:
    size = 5 << 16
    segment = shared.Segment.allocate(size)
    inode = segment.inode
    left, right = channel
    shared.send(left, segment.array((size,), np.uint8), returned=False)
    shared.receive(right)
    del segment
    gc.collect()
    assert shared.Segment.allocate(size).inode != inode


def test_a_copy_sent_in_a_request_is_not_reused_while_the_sender_holds_it(
    channel: tuple[socket.socket, socket.socket],
) -> None:
    # A large array outside shared memory is copied into a segment only the message names:
    # the receiver (another process) reads it until it replies, so the sender keeps what
    # send returns, and a new allocation of that size must not take it meanwhile.
    size = 3 << 16
    left, _ = channel
    carried = shared.send(left, np.ones(size, dtype=np.uint8), returned=True)
    [segment] = carried
    inode = segment.inode
    del segment
    gc.collect()
    assert shared.Segment.allocate(size).inode != inode
    carried.clear()


def test_evenly_spaced_views_of_a_segment_stack_without_a_copy() -> None:
    segment = shared.Segment.allocate(4 * 4096)
    views = [segment.array((8, 16), np.int32, rank * 4096) for rank in range(4)]
    for rank, view in enumerate(views):
        view[...] = rank
    stacked = shared.stack(views)
    assert stacked.shape == (4, 8, 16) and shared.segment_of(stacked) is segment
    assert [int(stacked[rank].max()) for rank in range(4)] == [0, 1, 2, 3]
    # Anything else is stacked as NumPy stacks it: a copy.
    mixed = shared.stack([views[0], views[1][:, ::-1]])
    assert shared.segment_of(mixed) is None


def test_a_view_must_lie_inside_its_segment() -> None:
    segment = shared.Segment.allocate(4096)
    with pytest.raises(ValueError, match="does not fit in a 4096-byte segment"):
        segment.array((1025,), np.float32)


def test_zero_writes_zeros_over_exactly_the_bytes_asked_for() -> None:
    segment = shared.Segment.allocate(4096, zeroed=False)
    data = segment.array((4096,), np.uint8)
    data[...] = 9
    segment.zero(100, 1000)
    assert not data[100:1100].any()
    assert (data[:100] == 9).all() and (data[1100:] == 9).all()
    segment.zero(4096, 0)  # nothing, at the very end
    with pytest.raises(ValueError, match="do not fit in a 4096-byte segment"):
        segment.zero(4000, 97)
