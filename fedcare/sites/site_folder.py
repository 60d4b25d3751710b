"""A hospital's site folder: its prepared data, its node key and, after Stage 1, ``w*``.

Layout (folder ``0700``; every file ``0600`` but the public key and the card, ``0644``)::

    SITE_DIR/site.json          name, dataset, objectives, split seed, schema digest, counts
    SITE_DIR/federation.json    the schema the site was prepared for
    SITE_DIR/definition.yaml    the site's own dataset definition (a dataset defined by a file:
                                the federation's, with the site's private columns and column
                                map; never sent)
    SITE_DIR/site-card.json     what the site sends the coordinator: name, objectives, schema
                                digest and public key (nothing about any patient)
    SITE_DIR/data/              the site's encoded splits and encoders
                                (:mod:`fedcare_core.data.client_store`)
    SITE_DIR/keys/node.key      the SuperNode's private key (never leaves the site)
    SITE_DIR/keys/node.pub      its public key (the coordinator registers it)
    SITE_DIR/stage1/            ``w*`` and the Stage 1 trace, as the coordinator broadcast them

:func:`create_site_folder` writes the folder whole or not at all (a temporary sibling, renamed).
Nothing in it identifies a patient beyond what the site's own file holds: the encoded rows carry
no identifier, and the notes hold counts only.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedcare.flower.federated_rounds import ReceivedShape, rounds_of_algorithm
from fedcare.flower.received_model import STAGE1_ARRAYS, STAGE1_DOC
from fedcare.flower.tls import PUBLIC_MODE, make_node_keys, write_file
from fedcare.sites.site_files import (
    SITE_FORMAT,
    SiteCard,
    read_site_info,
    read_stage1_doc,
)
from fedcare_core.config import ModelConfig
from fedcare_core.data.client_store import FILE_MODE, load_client_data
from fedcare_core.data.client_store import save_client_data as save_data
from fedcare_core.data.clients import SPLITS, ClientData
from fedcare_core.errors import ConfigError
from fedcare_core.files.private import keep_out_of_git
from fedcare_core.sites.schema import FederationSchema, read_schema
from fedcare_core.stage1.loop import Stage1Result

_SITE_FILE = "site.json"
_SCHEMA_FILE = "federation.json"
CARD_FILE = "site-card.json"
#: The site's own dataset definition (its private columns and column map).
DEFINITION_FILE = "definition.yaml"
DATA_DIR = "data"
_KEYS_DIR = "keys"
_STAGE1_DIR = "stage1"
#: What a site's commands read in its folder (an output elsewhere in it replaces nothing).
READ_ENTRIES = (
    _SITE_FILE, _SCHEMA_FILE, CARD_FILE, DEFINITION_FILE, DATA_DIR, _KEYS_DIR, _STAGE1_DIR,
    "policy.yaml", "audit.jsonl", "approvals", ".join",
)  # fmt: skip


@dataclass(frozen=True)
class SiteFolder:
    """Paths and contents of one site folder."""

    root: Path

    @classmethod
    def open(cls, path: str | Path) -> SiteFolder:
        """An existing site folder whose ``site.json`` and card agree, or a :class:`ConfigError`.

        Raises
        ------
        ConfigError
            Naming what is missing (or of the wrong kind), the file and field at fault in
            ``site.json`` or the card, or the field in which they disagree.
        """
        root = Path(path).expanduser().absolute()  # the node's processes run elsewhere
        wanted = {_SITE_FILE: True, _SCHEMA_FILE: True, CARD_FILE: True, DATA_DIR: False}
        for name, is_file in {**wanted, _KEYS_DIR: False}.items():
            found = (root / name).is_file() if is_file else (root / name).is_dir()
            if not found:
                what = f"{name} is not a {'file' if is_file else 'folder'}"
                raise ConfigError(
                    f"--site {root}: not a site folder "
                    f"({what if (root / name).exists() else 'no ' + name}); prepare one with "
                    "`fedcare site prepare`"
                )
        site = cls(root)
        site.check_card(site.card(), site.info())
        return site

    def check_card(self, card: SiteCard, info: dict[str, Any]) -> None:
        """Refuse a card that names another site, schema or objectives than ``site.json``."""
        mine = (info["name"], tuple(info["objectives"]), info["schema_digest"])
        for field, theirs, own in zip(
            ("name", "objectives", "schema_digest"),
            (card.name, card.objectives, card.schema_digest),
            mine,
            strict=True,
        ):
            if theirs != own:
                raise ConfigError(
                    f"site card {self.root / CARD_FILE}: field {field!r} differs from "
                    f"{self.root / _SITE_FILE}'s; prepare the site again (`fedcare site prepare`)"
                )

    @property
    def data_dir(self) -> Path:
        """The prepared data (what the site's node reads)."""
        return self.root / DATA_DIR

    @property
    def private_key(self) -> Path:
        """The node's private key."""
        return self.root / _KEYS_DIR / "node.key"

    @property
    def stage1_dir(self) -> Path:
        """Where the broadcast ``w*`` is kept."""
        return self.root / _STAGE1_DIR

    def info(self) -> dict[str, Any]:
        """``site.json``, every field checked (:func:`.site_files.read_site_info`)."""
        return read_site_info(self.root / _SITE_FILE)

    @property
    def name(self) -> str:
        """The site's name."""
        return str(self.info()["name"])

    def card(self) -> SiteCard:
        """The site's card."""
        return SiteCard.read(self.root / CARD_FILE)

    def schema(self) -> FederationSchema:
        """The schema the site was prepared for (its digest is ``site.json``'s).

        Raises
        ------
        ConfigError
            For a schema file that cannot be read, or one edited since the site was prepared.
        """
        schema = read_schema(self.root / _SCHEMA_FILE)
        if schema.digest() != self.info()["schema_digest"]:
            raise ConfigError(
                f"federation schema {self.root / _SCHEMA_FILE}: its digest differs from "
                f"{self.root / _SITE_FILE}'s field 'schema_digest' (the file was changed after "
                "the site was prepared); prepare the site again"
            )
        return schema

    def client(self) -> ClientData:
        """The site's prepared data (with its own definition, where it has one)."""
        client = load_client_data(self.data_dir)
        definition = self.root / DEFINITION_FILE
        if not definition.is_file():
            return client
        return dataclasses.replace(client, definition=definition.read_text())

    def has_final_model(self) -> bool:
        """Whether the coordinator's ``w*`` has arrived."""
        return (self.stage1_dir / STAGE1_DOC).exists()


def create_site_folder(
    out: Path,
    client: ClientData,
    schema: FederationSchema,
    *,
    name: str,
    seed: int,
    source_sha256: str,
) -> SiteFolder:
    """Write a new site folder at ``out`` (absent or an empty folder), whole or not at all.

    Raises
    ------
    ConfigError
        If ``out`` exists and is not an empty folder.
    """
    check_new_folder(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))  # 0700
    try:
        keys = make_node_keys(tmp / _KEYS_DIR, "node")
        save_data(client, tmp / DATA_DIR)
        info = {
            "format": SITE_FORMAT,
            "name": name,
            "dataset": schema.dataset,
            "objectives": list(client.objectives),
            "split_seed": seed,
            "schema_digest": schema.digest(),
            "rows": {split: client.split(split).n for split in SPLITS},
            "source_sha256": source_sha256,
            "prepared_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        _write_json(tmp / _SITE_FILE, info, FILE_MODE)
        _write_json(tmp / _SCHEMA_FILE, schema.to_dict(), FILE_MODE)
        if client.definition is not None:  # the site's own: its private columns, its map
            (tmp / DEFINITION_FILE).write_text(client.definition)
            (tmp / DEFINITION_FILE).chmod(FILE_MODE)
        card = SiteCard(
            name, client.objectives, schema.digest(), keys.public_key.read_text().strip()
        )
        _write_json(tmp / CARD_FILE, card.to_dict(), PUBLIC_MODE)
        if out.exists():
            out.rmdir()
        os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    keep_out_of_git(
        out, "the site folder (encoded patient rows, the node's private key)", folder=True
    )
    return SiteFolder(out)


def rotate_key(site: SiteFolder) -> SiteCard:
    """Replace the site's node key pair and rewrite its card with the new public key.

    From then on the site joins with the new key, so it is refused until the coordinator has
    unregistered the old key (``fedcare federation unregister``) and registered the new card.
    The old card is read (and checked) first, and the new pair and card are made beside the
    old ones before any replaces them: a site whose card cannot be read keeps its key.
    """
    old = SiteFolder.open(site.root).card()
    tmp = Path(tempfile.mkdtemp(prefix=".rotate.", dir=site.root))
    try:
        keys = make_node_keys(tmp, "node")
        public = keys.public_key.read_text().strip()
        card = SiteCard(old.name, old.objectives, old.schema_digest, public)
        _write_json(tmp / CARD_FILE, card.to_dict(), PUBLIC_MODE)
        os.replace(keys.private_key, site.root / _KEYS_DIR / "node.key")
        os.replace(keys.public_key, site.root / _KEYS_DIR / "node.pub")
        os.replace(tmp / CARD_FILE, site.root / CARD_FILE)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return card


def check_new_folder(out: Path, what: str = "--out") -> None:
    """Refuse an ``out`` that exists and is not an empty folder (before any work)."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"{what} {out} exists and is not an empty folder; give a new path")


def _write_json(path: Path, doc: Any, mode: int) -> None:
    write_file(path, (json.dumps(doc, indent=1) + "\n").encode(), mode)


@dataclass(frozen=True)
class _ReceivedStage1:
    """The broadcast Stage 1 as the site kept it: ``w*`` and the site's client id and seed."""

    result: Stage1Result
    client_id: int
    seed: int
    schema_digest: str
    run_name: str
    planned_rounds: int
    clients: int


def read_final_model(site: SiteFolder, model: ModelConfig) -> _ReceivedStage1:
    """The ``w*`` the coordinator broadcast to ``site``, every field and array checked.

    Raises
    ------
    ConfigError
        If none has arrived yet; or naming the file and field (or array) at fault: another
        format, a wrong type or range, objectives the schema lacks, out of its head order or
        without the site's own, another encoded width or schema, arrays of another shape or
        holding NaN or infinite values. The message says how to get a fresh copy.
    """
    doc_path = site.stage1_dir / STAGE1_DOC
    if not doc_path.exists():
        raise ConfigError(
            f"--site {site.root}: no Stage 1 model yet; it arrives at the end of the "
            "coordinator's `fedcare federation run` while `fedcare site join` runs"
        )
    try:
        return _read_final_model(site, doc_path, model)
    except ConfigError as exc:
        raise ConfigError(
            f"{exc}; it is sent again at the end of the coordinator's next `fedcare federation run`"
        ) from None


def _read_final_model(site: SiteFolder, doc_path: Path, model: ModelConfig) -> _ReceivedStage1:
    schema, info = site.schema(), site.info()
    doc = read_stage1_doc(doc_path)
    where = f"the Stage 1 model's document {doc_path}"
    digest = info["schema_digest"]
    if doc.schema_digest != digest:
        raise ConfigError(
            f"{where}: field 'schema_digest': the model was computed for schema "
            f"{doc.schema_digest[:12]}…, this site was prepared for {digest[:12]}…"
        )
    in_order = tuple(o for o in schema.objective_names if o in doc.objectives)
    lacking = [o for o in info["objectives"] if o not in doc.objectives]
    if doc.objectives != in_order or lacking:
        raise ConfigError(
            f"{where}: field 'objectives' must be objectives of the schema in its order "
            f"({', '.join(schema.objective_names)}) including the site's own "
            f"({', '.join(info['objectives'])}), got {', '.join(doc.objectives)}"
        )
    if doc.common_width != schema.common_width():
        raise ConfigError(
            f"{where}: field 'common_width' must be the schema's encoded width "
            f"{schema.common_width()}, got {doc.common_width}"
        )
    kinds = {o.name: o.kind for o in schema.objectives}
    received = ReceivedShape(doc.objectives, kinds, doc.common_width, model)
    rounds = rounds_of_algorithm(schema.config.algorithm)
    arrays, layout = rounds.read_final_model(site.stage1_dir / STAGE1_ARRAYS, received)
    result = Stage1Result(
        params=arrays["params"],
        buffers=arrays["buffers"],
        rounds=doc.rounds,
        converged=doc.converged,
        objectives=doc.objectives,
        layout=layout,
    )
    return _ReceivedStage1(
        result, doc.client_id, doc.seed, digest, doc.run_name, doc.planned_rounds, doc.clients
    )
