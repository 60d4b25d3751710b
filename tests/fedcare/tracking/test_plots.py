from fedcare.tracking import plots

PNG = b"\x89PNG\r\n\x1a\n"


def test_lambda_trajectory_png(tmp_path):
    rounds = [
        {"round": 1, "lambda": {"a": 0.3, "b": 0.7}, "d_sq_norm": 1.0},
        {"round": 2, "lambda": {"a": 0.5}, "d_sq_norm": 0.1},  # b missing this round
        {"round": 3, "lambda": {}, "d_sq_norm": None},  # nothing aggregated
    ]
    out = plots.lambda_trajectory(rounds, tmp_path / "sub" / "lambda.png")
    assert out.read_bytes()[:8] == PNG


def test_metrics_chart_png_with_undefined_values(tmp_path):
    objectives = {
        "readmission": {
            "metric": "auroc",
            "pooled": 0.61,
            "clients": [{"client": 0, "value": 0.6}, {"client": 1, "value": None}],
        },
        "los": {"metric": "mae_days", "pooled": None, "clients": []},
    }
    out = plots.metrics_chart(objectives, tmp_path / "metrics.png")
    assert out.read_bytes()[:8] == PNG


def test_empty_documents_still_draw(tmp_path):
    assert plots.lambda_trajectory([], tmp_path / "l.png").read_bytes()[:8] == PNG
    assert plots.metrics_chart({}, tmp_path / "m.png").read_bytes()[:8] == PNG
