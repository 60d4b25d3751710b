"""The poll-capped SuperNode wrapper: Flower's SuperNode loop with its sleeps capped."""

import time

import pytest

from fedcare_flower.supernode import CappedSleep, cap_supernode_waits


class _Clock:
    def __init__(self):
        self.slept = []
        self.marker = "real module attribute"

    def sleep(self, seconds):
        self.slept.append(seconds)


def test_sleeps_are_capped_and_other_attributes_pass_through():
    clock = _Clock()
    capped = CappedSleep(0.2, module=clock)
    capped.sleep(3)  # Flower's idle wait after an empty pull
    capped.sleep(0.5)  # its wait for a ClientApp reply
    capped.sleep(0.05)
    assert clock.slept == [0.2, 0.2, 0.05]
    assert capped.marker == "real module attribute"


def test_cap_must_be_positive():
    with pytest.raises(ValueError, match="cap_s"):
        CappedSleep(0)


def test_patch_reaches_flowers_supernode_loop(monkeypatch):
    import flwr.supernode.start_client_internal as loop

    monkeypatch.setattr(loop, "time", time)  # restored after the test
    cap_supernode_waits(0.25)
    assert isinstance(loop.time, CappedSleep) and loop.time.cap_s == 0.25
    assert loop.time.monotonic() > 0
