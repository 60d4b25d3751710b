"""``client_update`` must not write into the broadcast ``w^t`` it is given.

Stage 1 hands every client the same ``w^t``; if one client's local steps leaked into that array,
later clients (and the server's step) would start from a different model than Algorithm 1
says, and the in-process runner would disagree with any federated backend.
"""

import numpy as np

from fedcare_core.config import DataConfig, ModelConfig, Stage1Config
from fedcare_core.data.clients import build_federation
from fedcare_core.nn.param_vectors import get_buffers, get_params
from fedcare_core.stage1.loop import build_model, client_update
from tests.fedcare_core.synthetic import PARTITION, make_cohort


def test_client_update_leaves_the_broadcast_params_untouched():
    fed = build_federation(make_cohort(200), PARTITION, DataConfig(clients=2), seed=0)
    kinds = {o.name: o.kind for o in fed.objectives}
    model = build_model(fed.common_width, fed.objective_names, ModelConfig(), 0)
    params, buffers = get_params(model), get_buffers(model)
    p0, b0 = params.copy(), buffers.copy()
    client_update(
        model,
        params,
        buffers,
        fed.clients[0],
        kinds,
        Stage1Config(batch_size=32),
        seed=0,
        round_idx=1,
    )
    np.testing.assert_array_equal(params, p0)
    np.testing.assert_array_equal(buffers, b0)
