"""SASL against the real broker (ops/local_kafka.py with a SASL_PLAINTEXT listener): `produce`
with each mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), a worker that reads and writes only
through the SASL listener and gives replay's decisions, and a wrong password refused."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ops.local_kafka import LocalKafka
from tests.conftest import WORK, _unavailable
from tests.e2e.test_worker import EXAMPLE, SCHEDSTREAM, Deployment, replay_lines

USER, PASSWORD = "alice", "alice-secret"


@pytest.fixture(scope="module")
def sasl_broker() -> Iterator[LocalKafka]:
    workdir = WORK / "kafka-sasl"
    shutil.rmtree(workdir, ignore_errors=True)
    broker = LocalKafka(workdir, sasl_users={USER: PASSWORD})
    try:
        broker.start()
    except Exception as exc:
        _unavailable("the Kafka broker with a SASL listener", exc)
    try:
        yield broker
    finally:
        broker.stop()


def sasl_env(mechanism: str, password: str = PASSWORD) -> dict[str, str]:
    return {
        "SCHEDSTREAM_KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
        "SCHEDSTREAM_KAFKA_SASL_MECHANISM": mechanism,
        "SCHEDSTREAM_KAFKA_SASL_USERNAME": USER,
        "SCHEDSTREAM_KAFKA_SASL_PASSWORD": password,
    }


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_produce_authenticates_with_each_mechanism(sasl_broker: LocalKafka, tmp_path: Path, mechanism: str) -> None:
    deployment = Deployment(sasl_broker.sasl_bootstrap, "sqlite://", tmp_path, **sasl_env(mechanism))
    produced = deployment.schedstream("produce", str(EXAMPLE))
    assert "produced 40 messages" in produced.stderr
    # Read back through the plaintext listener of the same broker: the messages are there.
    assert len(Deployment(sasl_broker.bootstrap, "sqlite://", tmp_path).topic(deployment.events_topic)) == 40


def test_a_worker_on_the_sasl_listener_gives_the_decisions_of_replay(sasl_broker: LocalKafka, tmp_path: Path) -> None:
    env = sasl_env("SCRAM-SHA-512")
    deployment = Deployment(sasl_broker.sasl_bootstrap, f"sqlite:///{tmp_path / 'worker.db'}", tmp_path, **env)
    deployment.schedstream("produce", str(EXAMPLE))
    deployment.run_worker_until_idle()
    plain = Deployment(sasl_broker.bootstrap, "sqlite://", tmp_path)
    assert plain.topic(deployment.decisions_topic) == replay_lines(EXAMPLE, tmp_path)


def test_a_wrong_password_is_refused(sasl_broker: LocalKafka, tmp_path: Path) -> None:
    deployment = Deployment(sasl_broker.sasl_bootstrap, "sqlite://", tmp_path, **sasl_env("SCRAM-SHA-256", "wrong"))
    run = subprocess.run(
        [SCHEDSTREAM, "produce", str(EXAMPLE)], env=deployment.env, capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip
    assert run.returncode == 1
    assert (
        run.stderr.startswith("schedstream produce: error: Kafka at 127.0.0.1:")
        and "refused the SCHEDSTREAM_KAFKA_SASL_* credentials" in run.stderr
    )
    assert run.stderr.count("\n") == 1, run.stderr
