"""The recovery chain's protective fall against the limp fall of the hardware latch, in the closed loop through the
firmware core (vasimov_tools.fall_study): a forward knock-down puts the head on the floor only without the chain."""

from __future__ import annotations

import pytest

from vasimov_tools.fall_study import knockdown


@pytest.mark.parametrize("direction", ["front", "left"])
def test_a_knock_down_keeps_the_head_off_the_floor_only_with_the_chain(direction: str) -> None:
    limp = knockdown(direction, False, 0.0, 250.0, 0.0, 2.5, 0.15)
    protected = knockdown(direction, True, 0.0, 250.0, 0.0, 2.5, 0.15)
    assert limp["fell"] and protected["fell"]  # both were knocked down
    assert protected["phases"][0] == "FALLING" and not limp["phases"]
    assert limp["head_m_s"] > 0.5  # the limp robot's head hits the floor (4.2 m/s forward, 0.8 sideways)
    assert protected["head_m_s"] == 0.0  # the protective pose keeps it off
