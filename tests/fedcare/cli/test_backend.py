"""``fedcare run --backend``: choosing where Stage 1 runs (no Flower run is started here)."""

import pytest

from fedcare.cli.commands import build_parser as _parser
from fedcare.cli.main import build_stage1_runner
from fedcare_core.errors import ConfigError


def _args(*extra):
    return _parser().parse_args(["run", "--dataset", "diabetes130", *extra])


def test_the_cli_offers_exactly_the_registered_backends():
    from fedcare.cli.main import BACKENDS
    from fedcare_core.config.backends import backend_names

    assert BACKENDS == backend_names()
    run = _parser("run")._subparsers._group_actions[0].choices["run"]
    (action,) = [a for a in run._actions if a.dest == "backend"]
    assert tuple(action.choices) == backend_names()


def test_local_is_the_default_and_uses_the_in_process_runner():
    args = _args()
    assert args.backend == "local"
    assert build_stage1_runner(args) is None


def test_flower_backends_get_their_runner_and_timeouts():
    from fedcare.flower.deployment import DeploymentStage1Runner
    from fedcare.flower.simulation import SimulationStage1Runner

    sim = build_stage1_runner(_args("--backend", "flower-sim"))
    assert isinstance(sim, SimulationStage1Runner)
    dep = build_stage1_runner(
        _args("--backend", "flower-deployment", "--round-timeout", "30", "--startup-timeout", "9")
    )
    assert isinstance(dep, DeploymentStage1Runner)
    assert (dep.flower.round_timeout_s, dep.flower.startup_timeout_s) == (30.0, 9.0)
    assert dep.flower.keep_workdir is False
    assert (dep.flower.client_exec, dep.flower.node_poll_s) == ("warm", 0.5)
    assert dep.supernode_command()[1:3] == ["-m", "fedcare.flower.supernode"]
    stock = build_stage1_runner(_args("--backend", "flower-deployment", "--stock-supernodes"))
    assert (stock.flower.client_exec, stock.flower.node_poll_s) == ("subprocess", None)
    assert stock.supernode_command()[0].endswith("flower-supernode")


def test_unknown_or_invalid_backend_settings_are_rejected(capsys):
    with pytest.raises(SystemExit):
        _args("--backend", "grpc")
    assert "invalid choice" in capsys.readouterr().err
    with pytest.raises(ConfigError, match=r"--round-timeout must lie in \(0, 2,592,000\], got 0"):
        build_stage1_runner(_args("--backend", "flower-sim", "--round-timeout", "0"))
    from fedcare.flower.runners import make_stage1_runner

    with pytest.raises(ConfigError, match="unknown backend"):
        make_stage1_runner("flower-grpc")


def test_tls_is_the_default_and_insecure_or_node_auth_are_flags(capsys):
    dep = build_stage1_runner(_args("--backend", "flower-deployment"))
    assert (dep.flower.insecure, dep.flower.node_auth) == (False, False)
    assert capsys.readouterr().err == ""
    plain = build_stage1_runner(_args("--backend", "flower-deployment", "--insecure"))
    assert plain.flower.insecure is True
    assert "--insecure" in capsys.readouterr().err  # one warning line
    auth = build_stage1_runner(_args("--backend", "flower-deployment", "--node-auth"))
    assert auth.flower.node_auth is True and auth.flower.insecure is False
    with pytest.raises(ConfigError, match="TLS"):
        build_stage1_runner(_args("--backend", "flower-deployment", "--insecure", "--node-auth"))
