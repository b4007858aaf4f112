"""RunOptions' own checks, in process."""

from __future__ import annotations

from datetime import timedelta

import pytest

from ratchet.errors import InvalidOptionsError
from ratchet.wire import RunOptions


def test_a_short_turn_timeout_is_fine_with_the_default_heartbeat_timeout():
    """The default heartbeat timeout (10 s) yields to a turn_timeout of 10 s or less:
    the turn is noticed dead at its turn_timeout (code that set 10 s on 0.1.0, when
    the default was 3 s, keeps working)."""
    RunOptions(turn_timeout=timedelta(seconds=10)).check()
    with pytest.raises(InvalidOptionsError, match="shorter than turn_timeout"):
        RunOptions(
            turn_timeout=timedelta(seconds=10), heartbeat_timeout=timedelta(seconds=10)
        ).check()


def test_no_heartbeat_timeout_is_accepted_with_any_turn_timeout_and_round_trips():
    """``None``: no heartbeat timeout (the peers' price); a dead worker's turn waits
    for its turn_timeout, whatever it is (it was refused: not a timedelta)."""
    options = RunOptions(heartbeat_timeout=None, turn_timeout=timedelta(seconds=5))
    options.check()
    assert RunOptions.model_validate_json(options.model_dump_json()).heartbeat_timeout is None


@pytest.mark.parametrize("queue", [" ", "\t"])
def test_a_blank_task_queue_is_refused_where_it_is_written(queue: str):
    """No worker polls a queue named " ": the run would wait for ever."""
    with pytest.raises(InvalidOptionsError, match="task_queue=.*must name a queue"):
        RunOptions(task_queue=queue)
