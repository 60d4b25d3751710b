"""The poll-capped SuperNode wrapper: Flower's SuperNode loop with its sleeps capped."""

import sys
import time
import warnings

import pytest

from fedcare.flower import flwr_internals, supernode
from fedcare.flower.flwr_internals import CappedSleep, UnverifiedFlowerWarning


class _Clock:
    def __init__(self):
        self.slept = []
        self.marker = "real module attribute"

    def sleep(self, seconds):
        self.slept.append(seconds)


@pytest.fixture
def loop(monkeypatch):
    """Flower's real SuperNode loop module, its ``time`` global restored after the test."""
    import flwr.supernode.start_client_internal as module

    monkeypatch.setattr(module, "time", time)
    return module


@pytest.fixture
def fake_supernode(monkeypatch):
    """Stand in for the ``flower-supernode`` console script; record the argv it is given."""
    calls = []
    monkeypatch.setattr(sys, "argv", list(sys.argv))  # main() sets it
    monkeypatch.setattr(
        supernode, "console_script", lambda name: lambda: calls.append((name, list(sys.argv)))
    )
    return calls


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


def test_main_caps_flowers_loop_then_runs_the_flower_supernode_script(loop, fake_supernode):
    supernode.main(["--poll-s", "0.25", "--", "--insecure", "--superlink", "127.0.0.1:1"])
    assert isinstance(loop.time, CappedSleep) and loop.time.cap_s == 0.25
    assert loop.time.monotonic() > 0
    assert fake_supernode == [
        ("flower-supernode", ["flower-supernode", "--insecure", "--superlink", "127.0.0.1:1"])
    ]


def test_on_an_unverified_flwr_main_runs_the_stock_supernode_with_one_warning(
    loop, fake_supernode, monkeypatch
):
    monkeypatch.setattr(flwr_internals, "installed_flwr_version", lambda: "1.99.0")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        supernode.main(["--poll-s", "0.25", "--", "--insecure"])
    assert loop.time is time  # Flower's own waits
    assert fake_supernode == [("flower-supernode", ["flower-supernode", "--insecure"])]
    (warning,) = [w for w in caught if issubclass(w.category, UnverifiedFlowerWarning)]
    assert "flwr 1.99.0" in str(warning.message) and "1.42.0" in str(warning.message)
    assert len(caught) == 1


def test_the_flower_supernode_console_script_is_flowers():
    run = supernode.console_script("flower-supernode")
    assert callable(run) and run.__module__.startswith("flwr.")
    with pytest.raises(LookupError, match="no-such-script"):
        supernode.console_script("no-such-script")


def test_poll_must_be_positive(fake_supernode):
    with pytest.raises(SystemExit):
        supernode.main(["--poll-s", "0", "--"])
    assert fake_supernode == []
