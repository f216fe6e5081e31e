"""The second stage refuses its misuse before anything runs, and a simulated world lays its
ranks and groups out as the aclnn sample does. Nothing here needs the kernel: a refused run queues
nothing, and a launch missing a rank never starts."""

from __future__ import annotations

import numpy as np
import pytest
from _support.mc2 import mc2_request
from _support.mc2_host import call

from pypto_build import mc2


def _executor(
    stream: mc2.SimStream, ep: int = 4, bias_rank: int | None = None
) -> tuple[int, mc2.Executor]:
    """The aclnn sample's first stage (tp 2) for ``stream``'s rank and groups."""
    group_ep, group_tp = stream.group_ep, stream.group_tp
    return call(mc2_request(ep, group_ep=group_ep, group_tp=group_tp, bias_rank=bias_rank))


def test_the_world_lays_ranks_out_with_tp_groups_contiguous() -> None:
    world = mc2.SimWorld(4, 2)
    assert world.size == 8 and len(world.streams) == 8
    stream = world.stream(3)
    assert (stream.ep_index, stream.tp_index) == (1, 1)  # rank = ep_index * tp + tp_index
    assert stream.ep_ranks == (1, 3, 5, 7) and stream.tp_ranks == (2, 3)
    assert (stream.group_ep, stream.group_tp) == ("ep1", "tp1")
    assert {s.group_ep for s in world.streams} == {"ep0", "ep1"}
    assert {s.group_tp for s in world.streams} == {"tp0", "tp1", "tp2", "tp3"}
    with pytest.raises(IndexError, match="rank 8 is outside this world of 8 ranks"):
        world.stream(8)


@pytest.mark.parametrize(
    ("ep", "tp", "message"),
    [(0, 2, "at least 1"), (32, 4, "at most 64 ranks")],
)
def test_a_world_the_simulator_cannot_run_is_refused(ep: int, tp: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        mc2.SimWorld(ep, tp)


def test_a_workspace_smaller_than_the_first_stage_said_is_refused() -> None:
    stream = mc2.SimWorld(4, 2).stream(0)
    size, executor = _executor(stream)
    with pytest.raises(mc2.RunError, match=f"workspace_size {size - 1} is smaller than the {size}"):
        mc2.run(np.empty(size, np.uint8), size - 1, executor, stream)
    with pytest.raises(mc2.RunError, match=f"workspace holds {size - 2} bytes, fewer than"):
        mc2.run(np.empty(size - 2, np.uint8), size, executor, stream)
    with pytest.raises(mc2.RunError, match="workspace is None"):
        mc2.run(None, size, executor, stream)
    with pytest.raises(mc2.RunError, match="writable, contiguous"):
        mc2.run(bytes(size), size, executor, stream)
    with pytest.raises(mc2.RunError, match="writable, contiguous"):
        mc2.run(np.empty(2 * size, np.uint8)[::2], size, executor, stream)
    with pytest.raises(mc2.RunError, match="must be a buffer"):
        mc2.run(size, size, executor, stream)  # type: ignore[arg-type]
    # A refused run queued nothing and did not use the executor up.
    mc2.run(np.empty(size, np.float32), size, executor, stream)  # any buffer of enough bytes


def test_a_stream_of_another_world_is_refused() -> None:
    size, executor = _executor(mc2.SimWorld(4, 2).stream(0))
    for world, shape in (
        (mc2.SimWorld(2, 2), "4 ranks (ep 2 x tp 2)"),
        (mc2.SimWorld(2, 4), "8 ranks (ep 2 x tp 4)"),
    ):
        with pytest.raises(mc2.RunError) as info:
            mc2.run(np.empty(size, np.uint8), size, executor, world.stream(0))
        assert str(info.value) == (
            f"the stream is rank 0 of a world of {shape}; the executor was made for "
            "ep_world_size 4 x tp_world_size 2 = 8 ranks: run it on a stream of SimWorld(4, 2)"
        )
    with pytest.raises(mc2.RunError, match="must be a simulated rank's stream"):
        mc2.run(np.empty(size, np.uint8), size, executor, object())  # type: ignore[arg-type]
    with pytest.raises(mc2.RunError, match="must be what get_workspace_size returned"):
        mc2.run(np.empty(size, np.uint8), size, None, mc2.SimWorld(4, 2).stream(0))  # type: ignore[arg-type]


def test_the_executor_must_name_the_ranks_groups() -> None:
    world = mc2.SimWorld(4, 2)
    size, executor = _executor(world.stream(0))
    with pytest.raises(mc2.RunError) as info:
        mc2.run(np.empty(size, np.uint8), size, executor, world.stream(3))
    assert str(info.value) == (
        "group_ep 'ep0' is not rank 3's EP group 'ep1' (ranks 1, 3, 5, 7): pass the names of the "
        "rank's groups, stream.group_ep and stream.group_tp"
    )


def test_an_executor_runs_once_unless_repeatable() -> None:
    world = mc2.SimWorld(4, 2)
    stream = world.stream(0)
    size, executor = _executor(stream)
    mc2.run(np.empty(size, np.uint8), size, executor, stream)
    with pytest.raises(
        mc2.RunError, match="this executor already ran: an aclnn executor runs once"
    ):
        mc2.run(np.empty(size, np.uint8), size, executor, stream)
    with pytest.raises(mc2.RunError, match="set_repeatable\\(\\) after the executor ran"):
        executor.set_repeatable()

    size, repeatable = _executor(stream)
    repeatable.set_repeatable()
    other = mc2.SimWorld(4, 2).stream(0)
    mc2.run(np.empty(size, np.uint8), size, repeatable, other)
    # Repeatable, but rank 0 has already queued its part of the launch still being filled.
    with pytest.raises(mc2.RunError) as info:
        mc2.run(np.empty(size, np.uint8), size, repeatable, other)
    assert str(info.value) == (
        "rank 0 already launched the op and the ranks 1, 2, 3, 4, 5, 6, 7 have not: a "
        "collective launch takes one run per rank"
    )


def test_synchronize_names_the_ranks_that_never_launched() -> None:
    world = mc2.SimWorld(2, 2, timeout=0.05)
    for rank in (0, 2):
        stream = world.stream(rank)
        size, executor = _executor(stream, ep=2)
        mc2.run(np.empty(size, np.uint8), size, executor, stream)
    with pytest.raises(mc2.RunError) as info:
        world.stream(2).synchronize()
    assert str(info.value) == (
        "rank 2: ranks 1, 3 of 4 did not launch the op within 0.05 s; a collective op runs once "
        "every rank has called run() (on hardware the launched ranks would hang)"
    )
    world.stream(1).synchronize()  # nothing queued on rank 1: nothing to wait for


def test_every_rank_of_a_launch_must_run_one_configuration() -> None:
    world = mc2.SimWorld(2, 2)
    for stream in world.streams:
        bias = 2 if stream.rank == 3 else None
        size, executor = _executor(stream, ep=2, bias_rank=bias)
        mc2.run(np.empty(size, np.uint8), size, executor, stream)
    for stream in world.streams:
        with pytest.raises(mc2.RunError, match="rank 3's executor is for another configuration"):
            stream.synchronize()
