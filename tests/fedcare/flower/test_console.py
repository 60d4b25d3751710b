"""Flower's console lines in a FedCARE process: warnings only unless asked, no colour in a file."""

from __future__ import annotations

import io
import logging

import pytest
from flwr.common.logger import FLOWER_LOGGER, ConsoleHandler

from fedcare.flower.console import FLOWER_LOG_LEVEL_ENV, flower_console, requested_level


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def console():
    """A Flower console handler of its own (a file-like stream), removed afterwards."""
    stream = io.StringIO()
    handler = ConsoleHandler(stream=stream)
    handler.setLevel(logging.INFO)
    FLOWER_LOGGER.addHandler(handler)
    yield handler, stream
    FLOWER_LOGGER.removeHandler(handler)


@pytest.mark.parametrize(
    ("value", "level"),
    [(None, logging.WARNING), ("info", logging.INFO), (" DEBUG ", logging.DEBUG),
     ("loud", logging.WARNING), ("", logging.WARNING)],
)  # fmt: skip
def test_the_level_is_flowers_variable_else_warning(value, level):
    environ = {} if value is None else {FLOWER_LOG_LEVEL_ENV: value}
    assert requested_level(environ) == level


def test_a_run_shows_only_flowers_warnings_without_colour_in_a_file(console, monkeypatch):
    monkeypatch.delenv(FLOWER_LOG_LEVEL_ENV, raising=False)
    handler, stream = console
    with flower_console():
        FLOWER_LOGGER.info("[ROUND 1/100]")
        FLOWER_LOGGER.warning("a client left")
    text = stream.getvalue()
    assert "ROUND" not in text and "a client left" in text and "\x1b[" not in text
    assert handler.level == logging.INFO and handler.colored  # as it was, after the run
    FLOWER_LOGGER.info("[ROUND 2/100]")
    assert "ROUND 2" in stream.getvalue()


def test_flowers_variable_brings_the_lines_back_coloured_on_a_terminal_only(console, monkeypatch):
    monkeypatch.setenv(FLOWER_LOG_LEVEL_ENV, "INFO")
    handler, stream = console
    with flower_console():
        FLOWER_LOGGER.info("[ROUND 1/100]")
    assert "[ROUND 1/100]" in stream.getvalue() and "\x1b[" not in stream.getvalue()
    handler.setStream(_Terminal())
    with flower_console():
        assert handler.colored
        FLOWER_LOGGER.info("[ROUND 2/100]")
    assert "\x1b[" in handler.stream.getvalue()
