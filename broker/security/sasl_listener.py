"""What a SASL_PLAINTEXT or SASL_SSL listener accepts, from Kafka's settings (each
also in the per-listener form `listener.name.<listener>.<setting>`):

- `sasl.enabled.mechanisms` (Kafka's default GSSAPI): PLAIN, SCRAM-SHA-256 and
  SCRAM-SHA-512 are served; any other mechanism stops the broker with the reason.
- PLAIN needs a JAAS config (see jaas.py) whose PlainLoginModule lists the users
  (`user_<name>="<password>"`). SCRAM users come from the credentials the admin
  APIs store (credentials.py); a JAAS config for them is optional.
- `sasl.server.max.receive.size` (524288): a larger frame before authentication
  closes the connection.
- `connection.failed.authentication.delay.ms` (100): a refused authentication
  closes the connection this long after its answer, as Kafka does (the client
  reads the answer before the close, and cannot retry at full speed).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from odradek.broker.security.credentials import CredentialStore
from odradek.broker.security.delegation_tokens import TokenStore
from odradek.broker.security.jaas import JaasError, jaas_config_for, parse_jaas_config, plain_users
from odradek.broker.security.sasl import PLAIN, Exchange, PlainExchange, ScramExchange
from odradek.broker.security.scram import MECHANISMS
from odradek.broker.settings.config import BrokerConfig
from odradek.broker.settings.listeners import ListenError

SUPPORTED_MECHANISMS = (PLAIN, *MECHANISMS)
DEFAULT_MECHANISMS = "GSSAPI"
DEFAULT_MAX_RECEIVE_SIZE = 524288
DEFAULT_FAILURE_CLOSE_DELAY_MS = 100


class SaslConfigError(ListenError):
    """A SASL listener whose settings cannot be served; the message names the setting."""


@dataclass(frozen=True)
class SaslListener:
    name: str
    mechanisms: tuple[str, ...]  # enabled, as configured
    plain_users: Mapping[str, str]
    max_receive_size: int
    failure_close_delay_ms: int = DEFAULT_FAILURE_CLOSE_DELAY_MS

    def new_exchange(
        self, mechanism: str, credentials: CredentialStore, tokens: TokenStore
    ) -> Exchange:
        """The exchange for an enabled mechanism."""
        if mechanism == PLAIN:
            return PlainExchange(self.plain_users)
        return ScramExchange(
            MECHANISMS[mechanism],
            lambda user: credentials.get(user, mechanism),
            token_login=lambda token_id: tokens.login(token_id, mechanism, int(time.time() * 1000)),
        )


def sasl_listener(config: BrokerConfig, listener: str) -> SaslListener:
    """The SASL settings of a listener; raises SaslConfigError naming the setting."""
    setting = f"listener.name.{listener.lower()}.sasl.enabled.mechanisms"
    if setting not in config.raw:
        setting = "sasl.enabled.mechanisms"
    enabled = config.listener_setting(listener, "sasl.enabled.mechanisms")
    names = (DEFAULT_MECHANISMS if enabled is None else enabled).split(",")
    mechanisms = tuple(dict.fromkeys(n.strip() for n in names if n.strip()))
    if not mechanisms:
        raise SaslConfigError(f"{setting}: no SASL mechanism enabled for listener {listener}")
    unsupported = [m for m in mechanisms if m not in SUPPORTED_MECHANISMS]
    if unsupported:
        raise SaslConfigError(
            f"{setting}: listener {listener} enables {', '.join(unsupported)}; Odradek serves "
            f"{', '.join(SUPPORTED_MECHANISMS)}"
        )
    users: dict[str, str] = {}
    for mechanism in mechanisms:
        found = jaas_config_for(config.raw, listener, mechanism)
        if found is None:
            if mechanism == PLAIN:
                raise SaslConfigError(
                    f"listener.name.{listener.lower()}.plain.sasl.jaas.config: listener "
                    f"{listener} enables PLAIN but no JAAS config names its users"
                )
            continue
        name, text = found
        try:
            modules = parse_jaas_config(text)
        except JaasError as exc:
            raise SaslConfigError(f"{name}: {exc}") from None
        if mechanism == PLAIN:
            users = plain_users(modules)
    max_receive_size = _whole_number(
        config, listener, "sasl.server.max.receive.size", DEFAULT_MAX_RECEIVE_SIZE, minimum=1
    )
    delay_ms = _whole_number(
        config,
        listener,
        "connection.failed.authentication.delay.ms",
        DEFAULT_FAILURE_CLOSE_DELAY_MS,
        minimum=0,
    )
    return SaslListener(listener, mechanisms, users, max_receive_size, delay_ms)


def _whole_number(
    config: BrokerConfig, listener: str, setting: str, default: int, minimum: int
) -> int:
    text = config.listener_setting(listener, setting)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        raise SaslConfigError(f"{setting}={text!r}: expected a whole number") from None
    if value < minimum:
        raise SaslConfigError(f"{setting}={text}: must be at least {minimum}")
    return value
