"""The node-config keys that name a node's own files (never sent: see ``site_errors``)."""

from __future__ import annotations

__all__ = ["DATA_PATH_KEY", "SITE_PATH_KEY", "STAGE1_PATH_KEY"]

#: Node-config key naming the client's data folder (``flower-supernode --node-config``).
DATA_PATH_KEY = "data-path"
#: Node-config key of a site's folder where the broadcast ``w*`` is kept (a site folder only).
STAGE1_PATH_KEY = "stage1-path"
#: Node-config key of a site's folder: its policy decides on each run (absent: no policy).
SITE_PATH_KEY = "site-path"
