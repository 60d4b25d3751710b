"""A row the model cannot score, as MLflow's own scoring server answers it."""

from __future__ import annotations

import json

import pytest
from mlflow.pyfunc import scoring_server

from fedcare.tracking.pyfunc_model import ScoringRefused

LINE = "column 'race'; row 7: a category outside the column's documented values"


class Refusing:
    """A stand-in model whose predict refuses its rows as the FedCARE model does when served."""

    metadata = None

    def predict(self, data: object, params: object = None) -> None:
        raise ScoringRefused(LINE)


def test_the_server_answers_400_with_fedcares_line_and_no_row():
    body = {"dataframe_split": {"columns": ["race", "encounter_id"], "data": [["Martian", 4242]]}}
    with pytest.raises(ScoringRefused) as err:
        scoring_server.invocations(json.dumps(body), "application/json", Refusing(), None)
    reply = json.loads(err.value.serialize_as_json())
    assert err.value.get_http_status_code() == 400
    assert reply["message"] == LINE  # not "Failed to predict data '<the rows>'"
    assert "Martian" not in err.value.serialize_as_json() and "4242" not in str(err.value.message)
