"""Kafka security settings (services/kafka_security.py): what each environment gives the
clients, and the settings that cannot work, refused with the variable named."""

from __future__ import annotations

import ssl
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from services.kafka_security import KafkaSecurity, KafkaSecurityError
from services.stream.app import broker_credentials

P = "SCHEDSTREAM_KAFKA_"
SCHEDSTREAM = str(Path(sys.executable).parent / "schedstream")


def test_without_settings_the_clients_use_plaintext() -> None:
    security = KafkaSecurity.from_env({})
    assert security.client_options() == {"security_protocol": "PLAINTEXT"}
    assert broker_credentials(security) is None


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "scram-sha-512"])
def test_sasl_gives_aiokafka_and_faust_the_same_user_and_mechanism(mechanism: str) -> None:
    env = {f"{P}SECURITY_PROTOCOL": "SASL_PLAINTEXT", f"{P}SASL_MECHANISM": mechanism,
           f"{P}SASL_USERNAME": "alice", f"{P}SASL_PASSWORD": "s3cret"}  # fmt: skip
    security = KafkaSecurity.from_env(env)
    assert security.client_options() == {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": mechanism.upper(),
        "sasl_plain_username": "alice",
        "sasl_plain_password": "s3cret",
    }
    credentials = broker_credentials(security)
    assert (credentials.username, credentials.password) == ("alice", "s3cret")  # type: ignore[union-attr]
    assert credentials.mechanism.value == mechanism.upper()  # type: ignore[union-attr]
    assert credentials.protocol.value == "SASL_PLAINTEXT"  # type: ignore[union-attr]


def test_sasl_over_ssl_trusts_the_given_ca(tmp_path: Path) -> None:
    ca, key = tmp_path / "ca.pem", tmp_path / "ca.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=schedstream-test-ca",
         "-days", "1", "-keyout", str(key), "-out", str(ca)],
        check=True, capture_output=True,
    )  # fmt: skip
    env = {f"{P}SECURITY_PROTOCOL": "SASL_SSL", f"{P}SASL_MECHANISM": "SCRAM-SHA-512",
           f"{P}SASL_USERNAME": "alice", f"{P}SASL_PASSWORD": "s3cret", f"{P}SSL_CAFILE": str(ca)}  # fmt: skip
    security = KafkaSecurity.from_env(env)
    options = security.client_options()
    assert options["security_protocol"] == "SASL_SSL"
    assert isinstance(options["ssl_context"], ssl.SSLContext)
    assert options["ssl_context"].verify_mode == ssl.CERT_REQUIRED
    assert len(options["ssl_context"].get_ca_certs()) == 1
    assert broker_credentials(security).protocol.value == "SASL_SSL"  # type: ignore[union-attr]


@dataclass(frozen=True)
class Case:
    name: str
    env: dict[str, str]
    want_error: str


CASES = [
    Case("unknown protocol", {f"{P}SECURITY_PROTOCOL": "TLS"}, f"{P}SECURITY_PROTOCOL='TLS' is not one of"),
    Case(
        "unknown mechanism",
        {
            f"{P}SECURITY_PROTOCOL": "SASL_PLAINTEXT",
            f"{P}SASL_MECHANISM": "GSSAPI",
            f"{P}SASL_USERNAME": "a",
            f"{P}SASL_PASSWORD": "b",
        },
        f"{P}SASL_MECHANISM='GSSAPI' is not one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512",
    ),
    Case(
        "sasl without a password",
        {f"{P}SECURITY_PROTOCOL": "SASL_SSL", f"{P}SASL_USERNAME": "alice"},
        f"needs {P}SASL_USERNAME and {P}SASL_PASSWORD",
    ),
    Case("missing ca file", {f"{P}SECURITY_PROTOCOL": "SSL", f"{P}SSL_CAFILE": "/nowhere/ca.pem"}, "no such file"),
    Case(
        "certificate without its key",
        {f"{P}SECURITY_PROTOCOL": "SSL", f"{P}SSL_CERTFILE": __file__},
        f"{P}SSL_CERTFILE and {P}SSL_KEYFILE go together",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_setting_that_cannot_work_is_refused_by_name(case: Case) -> None:
    security = KafkaSecurity.from_env(case.env)
    with pytest.raises(KafkaSecurityError, match=case.want_error.replace("(", r"\(")):
        security.check()


def test_a_bad_setting_is_a_one_line_usage_error_of_the_commands_that_use_kafka(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    events.write_text("")
    env = {"PATH": "/usr/bin:/bin", f"{P}SECURITY_PROTOCOL": "SASL_SSL", f"{P}SASL_USERNAME": "alice"}
    run = subprocess.run([SCHEDSTREAM, "produce", str(events)], env=env, capture_output=True, text=True, check=False)
    assert run.returncode == 2
    assert f"needs {P}SASL_USERNAME and {P}SASL_PASSWORD" in run.stderr
    assert "Traceback" not in run.stderr
