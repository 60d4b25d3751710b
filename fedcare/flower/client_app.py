"""The FedCARE ClientApp: a thin adapter around :func:`fedcare_core.stage1.loop.client_update`.

A client process knows only where its own data is (a folder or a one-file image, see
:mod:`fedcare_core.data.client_store`; in a deployment an anonymous memory file of the runner's,
:func:`fedcare.flower.workspace.memory_handover`); everything else (objectives, model and Stage 1
configuration, seed, round, ``w^t``) arrives in the message, so the app holds no state between
messages and gives the same update whichever process runs it.

``app`` (this module's ClientApp) is the one SuperNodes load: it reads the folder from the
SuperNode's node config key ``data-path``. The simulation builds its own app with
:func:`build_client_app` and a locator keyed by Flower's ``partition-id``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path

from flwr.app import Context, Message, RecordDict
from flwr.clientapp import ClientApp

from fedcare.flower.audit import audited
from fedcare.flower.messages import (
    PROTOCOL,
    PROTOCOL_VERSION,
    ProtocolError,
    decode_train_instruction,
    encode_client_update,
    encode_identity,
)
from fedcare.flower.node_paths import DATA_PATH_KEY, SITE_PATH_KEY, STAGE1_PATH_KEY
from fedcare.flower.site_errors import guarded
from fedcare.flower.site_messages import (
    FINAL_MODEL_ACTION,
    SiteIdentity,
    add_refusal,
    add_site_identity,
    assigned_client_id,
    decode_final_model,
    encode_stored,
    run_terms,
)
from fedcare_core.config import Stage1Config
from fedcare_core.data.client_store import load_client_data
from fedcare_core.data.clients import ClientData
from fedcare_core.sites.policy import Refusal, terms_of

LOGGER = logging.getLogger(__name__)

#: Node-config keys of a node serving a named site (``fedcare site join``, and the loopback
#: deployment's nodes): its name and its schema's digest.
SITE_NAME_KEY = "site-name"
SCHEMA_DIGEST_KEY = "schema-digest"
#: Flower's node-config key for a simulated node's index.
_PARTITION_ID_KEY = "partition-id"

DataLocator = Callable[[Context], Path]

# A long-lived process (a Ray actor in simulation) serves many messages: load each folder once.
_CACHE: dict[str, ClientData] = {}


def node_config_data_path(context: Context) -> Path:
    """The data folder named by the SuperNode's ``data-path`` node config."""
    try:
        return Path(str(context.node_config[DATA_PATH_KEY]))
    except KeyError:
        raise ValueError(
            f"SuperNode started without --node-config {DATA_PATH_KEY}=<client folder>"
        ) from None


def _partition_data_path(data_dir: str, context: Context) -> Path:
    """Simulation: ``<data_dir>/client-<partition-id>``."""
    return Path(data_dir) / client_folder_name(int(context.node_config[_PARTITION_ID_KEY]))


def client_folder_name(client_id: int) -> str:
    """Folder name of client ``client_id``'s data."""
    return f"client-{client_id}"


def _memory_data_path(paths: tuple[str, ...], context: Context) -> Path:
    """Simulation with the memory handover: the partition's ``/proc/<pid>/fd/<n>``."""
    return Path(paths[int(context.node_config[_PARTITION_ID_KEY])])


def simulation_locator(data_dir: str | Path, data_paths: Sequence[str] = ()) -> DataLocator:
    """A picklable locator for simulated nodes (Ray ships it to its actors).

    With ``data_paths`` (the workspace's memory files, by client id) each node reads its
    client's memory file; otherwise its folder under ``data_dir``.
    """
    if data_paths:
        return partial(_memory_data_path, tuple(data_paths))
    return partial(_partition_data_path, str(data_dir))


def data_key(path: str | Path) -> str:
    """The cache key of a data path: absolute, symlinks not followed.

    A memory file's ``/proc/<pid>/fd/<n>`` is a link to a name no file system holds
    (``/memfd:... (deleted)``): it must be opened as given, never resolved.
    """
    return str(Path(path).absolute())


def cached_client(locate: DataLocator, context: Context) -> ClientData:
    """The node's client data, loaded once per process (see :func:`preload`)."""
    key = data_key(locate(context))
    if key not in _CACHE:
        _CACHE[key] = load_client_data(key)
    return _CACHE[key]


def preload(data_path: str | Path) -> None:
    """Load a client's data into this process's cache (a warm parent before forking)."""
    key = data_key(data_path)
    _CACHE[key] = load_client_data(key)


def _node_site(context: Context) -> SiteIdentity | None:
    """The site this node serves, from its node config (None: a node without a site name)."""
    config = context.node_config
    if SITE_NAME_KEY not in config:
        return None
    return SiteIdentity(str(config[SITE_NAME_KEY]), str(config.get(SCHEMA_DIGEST_KEY, "")))


def assigned(client: ClientData, content: RecordDict) -> ClientData:
    """``client`` under the client id the server's message assigns (if it assigns one)."""
    client_id = assigned_client_id(content)
    if client_id is None or client_id == client.client_id:
        return client
    return replace(client, client_id=client_id)


def handle_query(locate: DataLocator, msg: Message, context: Context) -> Message:
    """Handshake: say which client (and which site) this node serves; nothing about its data.

    A site's node (its folder in the node config) decides on the run's terms by its policy
    first, and says so in its reply when it refuses (:func:`_site_decision`).
    """
    if msg.content.config_records["config"][PROTOCOL] != PROTOCOL_VERSION:
        raise ProtocolError("server speaks another FedCARE protocol version")
    client = cached_client(locate, context)
    content = add_site_identity(encode_identity(client.client_id), _node_site(context))
    refusal = _site_decision(msg, context)
    return Message(content if refusal is None else add_refusal(content, refusal), reply_to=msg)


def _site_decision(msg: Message, context: Context) -> Refusal | None:
    """The site's policy on the handshake's run terms; the decision kept in its audit log.

    A policy file that cannot be read refuses the run: the coordinator is told the rule and a
    short reason; why (the file and the key) goes to the site's log and audit log only.
    """
    from fedcare.flower.audit import AUDIT_PATH_KEY
    from fedcare.flower.site_rules import site_decision
    from fedcare_core.files.json_lines import append_line

    folder = context.node_config.get(SITE_PATH_KEY)
    terms = run_terms(msg.content)
    if not folder or terms is None:
        return None
    decision = site_decision(Path(str(folder)), terms)
    refusal = decision.refusal
    if decision.detail is not None:
        LOGGER.error("run %r refused: %s", terms.run_name, decision.detail)
    audit = context.node_config.get(AUDIT_PATH_KEY)
    if audit:
        line = {"time": time.time(), "run_id": context.run_id, "run_name": terms.run_name,
                "terms_sha256": terms.digest(), "decision": "joined" if refusal is None else
                "refused", "rule": None if refusal is None else refusal.rule}  # fmt: skip
        if decision.detail is not None:
            line["detail"] = decision.detail  # the site's own log: the file and the key
        append_line(Path(str(audit)), line)
    return refusal


def check_instruction_terms(
    context: Context, stage1: Stage1Config, objectives: tuple[str, ...]
) -> None:
    """Refuse a training instruction whose terms the site's policy refuses.

    Defence in depth: a coordinator cannot skip the handshake's check. A refusal is kept in
    the site's audit log (the rule and, for an unreadable policy, why: the file and the key).

    Raises
    ------
    ProtocolError
        Naming the rule and its short reason (an unreadable policy's file and key are
        logged here, not sent).
    """
    from fedcare.flower.audit import AUDIT_PATH_KEY
    from fedcare.flower.site_rules import site_decision
    from fedcare_core.files.json_lines import append_line

    folder = context.node_config.get(SITE_PATH_KEY)
    if not folder:
        return
    terms = terms_of(stage1, run_name="", algorithm="fedcare", objectives=objectives)
    decision = site_decision(Path(str(folder)), terms)
    refusal = decision.refusal
    if decision.detail is not None:
        LOGGER.error("training instruction refused: %s", decision.detail)
    audit = context.node_config.get(AUDIT_PATH_KEY)
    if refusal is not None and audit:
        line = {"time": time.time(), "run_id": context.run_id, "kind": "train",
                "refused_by": refusal.rule, "detail": decision.detail}  # fmt: skip
        append_line(Path(str(audit)), line)
    if refusal is not None:
        raise ProtocolError(
            f"the site's policy refuses this run ({refusal.rule}): {refusal.reason}"
        )


def handle_final_model(msg: Message, context: Context) -> Message:
    """The end of Stage 1: keep the broadcast ``w*`` in the site's folder, if it has one."""
    from fedcare.flower.received_model import store_final_model

    final = decode_final_model(msg.content)
    site = _node_site(context)
    if site is not None and site.schema_digest != final.schema_digest:
        raise ProtocolError("the final model was computed for another federation schema")
    path = context.node_config.get(STAGE1_PATH_KEY)
    if path:
        store_final_model(Path(str(path)), final)
    return Message(encode_stored(bool(path)), reply_to=msg)


def _handle_train(locate: DataLocator, msg: Message, context: Context) -> Message:
    """One round's ``train`` message, answered by the rounds it belongs to."""
    from fedcare.flower.federated_rounds import rounds_of_message

    return rounds_of_message(msg.content).train(locate, msg, context)


def _handle_evaluate(locate: DataLocator, msg: Message, context: Context) -> Message:
    """One round's ``evaluate`` message, answered by the rounds it belongs to."""
    from fedcare.flower.federated_rounds import rounds_of_message

    return rounds_of_message(msg.content).evaluate(locate, msg, context)


def stage1_train(locate: DataLocator, msg: Message, context: Context) -> Message:
    """One round of Algorithm 1: τ local steps per objective from ``w^t``, every Δ_{k,s}.

    With a union layout in the instruction (FMGDA/FSMGDA) on the client's union vectors,
    embedded here from its own features.
    """
    import torch

    from fedcare.flower.union_view import union_view
    from fedcare_core.nn.models import MultiObjectiveModel
    from fedcare_core.stage1.loop import client_update

    instr = decode_train_instruction(msg.content)
    check_instruction_terms(context, instr.stage1, instr.objectives)
    client = assigned(cached_client(locate, context), msg.content)
    if instr.union_layout is not None:
        client = union_view(client, data_key(locate(context)), instr.union_layout)
    width = client.train.x_common.shape[1]
    if width != instr.common_width:
        raise ProtocolError(
            f"client {client.client_id} encodes {width} common columns, "
            f"the server's model expects {instr.common_width}"
        )
    torch.use_deterministic_algorithms(True)
    model = MultiObjectiveModel(instr.common_width, instr.objectives, instr.model)
    update = client_update(
        model,
        instr.params,
        instr.buffers,
        client,
        instr.kinds,
        instr.stage1,
        seed=instr.seed,
        round_idx=instr.server_round,
    )
    return Message(encode_client_update(update, instr.objectives), reply_to=msg)


def build_client_app(locate: DataLocator) -> ClientApp:
    """A ClientApp whose data folder is found by ``locate(context)``.

    Every handler is :func:`~fedcare.flower.site_errors.guarded`: a failure reaches the server
    as its type and text without any local path.
    """
    client_app = ClientApp()
    client_app.query()(audited(guarded(partial(handle_query, locate))))
    client_app.query(FINAL_MODEL_ACTION)(audited(guarded(handle_final_model)))
    client_app.train()(audited(guarded(partial(_handle_train, locate))))
    client_app.evaluate()(audited(guarded(partial(_handle_evaluate, locate))))
    return client_app


app = build_client_app(node_config_data_path)
