"""Kafka's ``sasl.jaas.config`` values: one JAAS login module entry, as Kafka's JaasConfig parses them.

    org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret" user_bob="b";

An entry is ``<login module class> <control flag> (<key>=<value>)* ;``; values are bare words or double-quoted
strings (``\\"`` and ``\\\\`` escapes). Kafka allows exactly one entry in a ``sasl.jaas.config`` value. On the
broker the value is read per listener and mechanism: ``listener.name.<listener>.<mechanism>.sasl.jaas.config``
(listener and mechanism in lower case, e.g. ``listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config``).

PlainLoginModule's server side takes its users from ``user_<name>="<password>"`` options (Kafka's
PlainServerCallbackHandler); OAuthBearerLoginModule's unsecured validator reads ``unsecuredValidator*`` options.
Passwords parsed here are never logged.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

CONTROL_FLAGS = ("required", "requisite", "sufficient", "optional")
_TOKEN = re.compile(r'\s*(?:(?P<q>"(?:[^"\\]|\\.)*")|(?P<eq>=)|(?P<semi>;)|(?P<word>[^\s=;"]+))', re.S)


class JaasError(ValueError):
    """A malformed ``sasl.jaas.config`` value (the message never quotes option values: they may be secrets)."""


@dataclass(frozen=True)
class JaasEntry:
    login_module: str
    flag: str
    options: dict[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:   # options may hold passwords
        return f"JaasEntry({self.login_module!r}, {self.flag!r}, options={sorted(self.options)})"


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise JaasError(f"sasl.jaas.config: unexpected character at position {pos}")
        pos = m.end()
        if m["q"] is not None:
            out.append(("value", re.sub(r"\\(.)", r"\1", m["q"][1:-1])))
        elif m["eq"]:
            out.append(("=", "="))
        elif m["semi"]:
            out.append((";", ";"))
        elif m["word"] is not None:
            out.append(("word", m["word"]))
    return out


def parse_jaas_config(text: str) -> JaasEntry:
    """Parse one JAAS entry; raises JaasError naming what is wrong (never the values)."""
    toks = _tokens(text)
    if len(toks) < 3 or toks[0][0] != "word" or toks[1][0] != "word":
        raise JaasError("sasl.jaas.config: expected '<LoginModule> <flag> key=value ... ;'")
    module, flag = toks[0][1], toks[1][1].lower()
    if flag not in CONTROL_FLAGS:
        raise JaasError(f"sasl.jaas.config: invalid control flag {toks[1][1]!r} "
                        f"(one of {', '.join(CONTROL_FLAGS)})")
    options: dict[str, str] = {}
    i = 2
    while i < len(toks) and toks[i][0] != ";":
        if i + 2 >= len(toks) or toks[i][0] != "word" or toks[i + 1][0] != "=" or \
                toks[i + 2][0] not in ("word", "value"):
            raise JaasError(f"sasl.jaas.config: expected key=value after {module} {flag}")
        options[toks[i][1]] = toks[i + 2][1]
        i += 3
    if i >= len(toks):
        raise JaasError("sasl.jaas.config: the entry must end with ';'")
    if i + 1 != len(toks):
        raise JaasError("sasl.jaas.config: must contain exactly one login module entry")
    return JaasEntry(module, flag, options)


def plain_users(entry: JaasEntry) -> dict[str, str]:
    """PlainLoginModule's ``user_<name>="<password>"`` options: name -> password."""
    return {k[5:]: v for k, v in entry.options.items() if k.startswith("user_") and len(k) > 5}
