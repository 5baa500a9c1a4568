"""The plant's lockstep hold (vasimov_plant.lockstep.PeriodHold): a control period steps once the motor command
for its tick is in and, with camera_lockstep, once the camera took the period's last state, in either order."""

from __future__ import annotations

from vasimov_plant.lockstep import PeriodHold


def test_without_the_camera_the_answer_alone_releases_the_period():
    h = PeriodHold(camera=False)
    h.wait(tick=0, epoch=0, step=0, now=1.0)
    assert h.waiting and not h.release()
    assert not h.answer(1)  # not the awaited tick: ignored
    assert h.answer(0) and h.release()
    assert not h.release()  # once
    assert not h.waiting and not h.answer(0)  # nothing awaited until the next tick goes out


def test_with_the_camera_both_answers_are_needed_in_either_order():
    h = PeriodHold(camera=True)
    h.wait(tick=0, epoch=0, step=0, now=0.0)
    assert h.answer(0) and not h.release() and h.waiting  # the camera has not taken step 0 yet
    assert "camera" in h.describe()
    h.took(0, 0)
    assert h.release() and not h.waiting
    h.wait(tick=1, epoch=0, step=4, now=0.1)
    h.took(0, 4)  # the camera first
    assert not h.release() and "tick 1" in h.describe()
    assert h.answer(1) and h.release()


def test_an_older_or_other_life_camera_word_does_not_release():
    h = PeriodHold(camera=True)
    h.wait(tick=5, epoch=1, step=20, now=0.0)
    assert h.answer(5)
    h.took(0, 400)  # the previous life's step 400: not this life's step 20
    assert not h.release()
    h.took(1, 16)  # this life, an older state
    assert not h.release()
    h.took(1, 20)
    assert h.release()


def test_a_restart_starts_the_camera_count_again():
    h = PeriodHold(camera=True)
    h.took(0, 1000)
    h.wait(tick=0, epoch=1, step=0, now=0.0)  # the new life's tick 0 at step 0
    assert h.answer(0) and not h.release()
    h.took(1, 0)
    assert h.release()
