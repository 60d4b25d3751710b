"""Nothing of a site's local paths crosses the boundary: its failures leave as short reasons."""

from __future__ import annotations

import pytest
from flwr.app import Error, Message

from fedcare.flower.site_errors import (
    MAX_REASON,
    PATH_PLACEHOLDER,
    SiteError,
    error_text,
    guarded,
    public_reason,
    redact_paths,
)
from tests.fedcare.flower.conftest import LoopbackGrid, node_context


class FlowerGrid(LoopbackGrid):
    """A loopback grid whose ClientApp failures become Flower's error replies.

    A SuperNode's runtime sends ``Error(2, "<class 'X'>:<'text'>")`` for a ClientApp that
    raised (``flwr.supernode.runtime.run_clientapp``); the plain loopback grid lets it raise.
    """

    def push_messages(self, messages):
        ids = []
        for msg in messages:
            node = msg.metadata.dst_node_id
            app, ctx = self.apps.get(node, (None, None))
            if app is None or self.fail(node, msg) is not None:
                ids += super().push_messages([msg])
                continue
            self.apps[node] = (self._raising(app), ctx)
            try:
                ids += super().push_messages([msg])
            finally:
                self.apps[node] = (app, ctx)
        return ids

    @staticmethod
    def _raising(app):
        def run(msg, ctx):
            try:
                return app(msg, ctx)
            except Exception as ex:
                reason = str(type(ex)) + ":<'" + str(ex) + "'>"
                return Message(Error(code=2, reason=reason), reply_to=msg)

        return run


@pytest.mark.parametrize(
    "text",
    [
        "site policy /srv/hospital/north/policy.yaml: not readable YAML (ScannerError)",
        "cannot open '/tmp/x/data/arrays.npz'",
        "no such file: ~/sites/north/site.json",
        "see ../north/policy.yaml, line 3",
        "the memory file /proc/123/fd/7 (deleted)",
    ],
)
def test_any_absolute_home_or_dot_relative_path_is_taken_out(text):
    out = redact_paths(text)
    assert "/" not in out.replace(PATH_PLACEHOLDER, "") and PATH_PLACEHOLDER in out


def test_the_nodes_own_paths_go_in_the_form_it_was_given_them_and_names_stay():
    local = ["north", "rel/sites/south/data"]
    text = "site 'north': north/policy.yaml and rel/sites/south/data/arrays.npz are broken"
    out = redact_paths(text, local)
    assert out == (f"site 'north': {PATH_PLACEHOLDER} and {PATH_PLACEHOLDER} are broken"), out
    plain = "1/2 of the rounds; and/or ε ≤ 3"
    assert redact_paths(plain, local) == plain


def test_a_public_reason_names_the_type_is_one_line_and_short():
    reason = public_reason(ValueError("bad\n" + "x" * 1000 + " /etc/site/key"))
    assert reason.startswith("ValueError: bad ") and "\n" not in reason
    assert len(reason) <= MAX_REASON


def test_a_guarded_handler_fails_with_its_reason_and_no_local_path(tmp_path, caplog):
    folder = tmp_path / "north"

    def handler(msg, context):
        raise FileNotFoundError(f"{folder}/data/arrays.npz: no such file")

    ctx = node_context(1, {"site-path": str(folder), "data-path": str(folder / "data")})
    with pytest.raises(SiteError) as raised:
        guarded(handler)(None, ctx)
    assert str(tmp_path) not in str(raised.value)
    assert str(raised.value).startswith("FileNotFoundError: ")
    assert str(folder) in caplog.text  # the site's own log keeps it whole


def test_the_coordinator_reads_the_text_of_flowers_error_reason_without_paths():
    wrapped = "<class 'fedcare.flower.site_errors.SiteError'>:<'ProtocolError: refused'>"
    assert error_text(Error(2, wrapped)) == "ProtocolError: refused"
    old_node = "<class 'ValueError'>:<'site policy /srv/north/policy.yaml: bad'>"
    assert error_text(Error(2, old_node)) == f"ValueError: site policy {PATH_PLACEHOLDER}: bad"
    assert error_text(Error(5, "Node Unavailable")) == "Node Unavailable"
