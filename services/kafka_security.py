"""KafkaSecurity: how every Kafka client of ours (worker, produce, watch, apply, the topic
admin) authenticates and encrypts, from environment variables:

| variable | values |
|---|---|
| SCHEDSTREAM_KAFKA_SECURITY_PROTOCOL | PLAINTEXT (default), SSL, SASL_PLAINTEXT, SASL_SSL |
| SCHEDSTREAM_KAFKA_SASL_MECHANISM | PLAIN (default), SCRAM-SHA-256, SCRAM-SHA-512 |
| SCHEDSTREAM_KAFKA_SASL_USERNAME, SCHEDSTREAM_KAFKA_SASL_PASSWORD | the SASL user |
| SCHEDSTREAM_KAFKA_SSL_CAFILE | CA bundle to trust (default: the system's) |
| SCHEDSTREAM_KAFKA_SSL_CERTFILE, SCHEDSTREAM_KAFKA_SSL_KEYFILE | client certificate and key (mutual TLS) |
| SCHEDSTREAM_KAFKA_SSL_KEY_PASSWORD | the key's password, if it has one |

``client_options()`` gives the keyword arguments of aiokafka's clients, and
``services.stream.app`` turns the same settings into Faust's ``broker_credentials``.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
PREFIX = "SCHEDSTREAM_KAFKA_"


class KafkaSecurityError(ValueError):
    """A Kafka security setting that cannot be used, named with its variable."""


@dataclass(frozen=True, slots=True)
class KafkaSecurity:
    protocol: str = "PLAINTEXT"
    mechanism: str = "PLAIN"
    username: str = ""
    password: str = ""
    ca_file: str = ""
    cert_file: str = ""
    key_file: str = ""
    key_password: str = ""

    @property
    def uses_sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def uses_ssl(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> KafkaSecurity:
        def get(name: str, default: str = "") -> str:
            return env.get(PREFIX + name, default)

        return cls(
            protocol=get("SECURITY_PROTOCOL", "PLAINTEXT").upper(),
            mechanism=get("SASL_MECHANISM", "PLAIN").upper(),
            username=get("SASL_USERNAME"),
            password=get("SASL_PASSWORD"),
            ca_file=get("SSL_CAFILE"),
            cert_file=get("SSL_CERTFILE"),
            key_file=get("SSL_KEYFILE"),
            key_password=get("SSL_KEY_PASSWORD"),
        )

    def check(self) -> None:
        """Raise KafkaSecurityError, naming the variable, for settings that cannot work (checked
        by the commands that talk to Kafka, before they connect)."""
        if self.protocol not in PROTOCOLS:
            raise KafkaSecurityError(
                f"{PREFIX}SECURITY_PROTOCOL={self.protocol!r} is not one of {', '.join(PROTOCOLS)}"
            )
        if self.uses_sasl:
            if self.mechanism not in MECHANISMS:
                raise KafkaSecurityError(
                    f"{PREFIX}SASL_MECHANISM={self.mechanism!r} is not one of {', '.join(MECHANISMS)}"
                )
            if not self.username or not self.password:
                raise KafkaSecurityError(
                    f"{PREFIX}SECURITY_PROTOCOL={self.protocol} needs {PREFIX}SASL_USERNAME and {PREFIX}SASL_PASSWORD"
                )
        if self.uses_ssl:
            for name, path in (("SSL_CAFILE", self.ca_file), ("SSL_CERTFILE", self.cert_file),
                               ("SSL_KEYFILE", self.key_file)):  # fmt: skip
                if path and not Path(path).is_file():
                    raise KafkaSecurityError(f"{PREFIX}{name}={path!r}: no such file")
            if bool(self.cert_file) != bool(self.key_file):
                raise KafkaSecurityError(f"{PREFIX}SSL_CERTFILE and {PREFIX}SSL_KEYFILE go together")

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context of SSL and SASL_SSL: the CA bundle (or the system's) and the client certificate."""
        if not self.uses_ssl:
            return None
        context = ssl.create_default_context(cafile=self.ca_file or None)
        if self.cert_file:
            context.load_cert_chain(self.cert_file, self.key_file, self.key_password or None)
        return context

    def client_options(self) -> dict[str, Any]:
        """Keyword arguments for aiokafka's producer, consumer and admin client."""
        options: dict[str, Any] = {"security_protocol": self.protocol}
        if self.uses_ssl:
            options["ssl_context"] = self.ssl_context()
        if self.uses_sasl:
            options.update(
                sasl_mechanism=self.mechanism, sasl_plain_username=self.username, sasl_plain_password=self.password
            )
        return options


PLAINTEXT = KafkaSecurity()
"""No authentication, no encryption: the default."""


class _RefusedLogins(logging.Filter):
    """Keeps the refused-login errors aiokafka's client logs out of the log, and remembers them."""

    def __init__(self) -> None:
        super().__init__()
        self.errors: list[BaseException] = []

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        refused = [arg for arg in args if isinstance(arg, BaseException) and _is_refused_login(arg)]
        self.errors.extend(refused)
        return not refused


def _is_refused_login(error: BaseException) -> bool:
    from aiokafka.errors import (  # noqa: PLC0415 - aiokafka is loaded only by the commands that talk to Kafka
        AuthenticationFailedError,
        SaslAuthenticationFailed,
        UnsupportedSaslMechanismError,
    )

    return isinstance(error, AuthenticationFailedError | SaslAuthenticationFailed | UnsupportedSaslMechanismError)


@contextmanager
def refused_logins() -> Iterator[list[BaseException]]:
    """The logins the broker refused while the block ran. aiokafka only logs such a refusal and then
    gives up with a bare connection error; the caller names the credentials instead. Every other
    record of aiokafka's goes to the log as usual."""
    refusals = _RefusedLogins()
    logger = logging.getLogger("aiokafka")  # the logger of aiokafka's client module
    logger.addFilter(refusals)
    try:
        yield refusals.errors
    finally:
        logger.removeFilter(refusals)
