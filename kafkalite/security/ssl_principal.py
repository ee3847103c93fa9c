"""The principal of a TLS client certificate, as Kafka derives it.

Kafka's DefaultKafkaPrincipalBuilder takes the certificate subject as Java's ``X500Principal.getName()``
prints it (RFC 2253: RDNs from last to first, joined by ``,``; keywords CN, C, L, ST, O, OU, STREET, DC,
UID; any other attribute as its dotted OID with ``#`` + the hex of its DER value; ``,=+<>#;"\\`` escaped
with a backslash, as are leading and trailing spaces) and maps it through ``ssl.principal.mapping.rules``
(SslPrincipalMapper): a comma-separated list of ``DEFAULT`` (the whole DN) and ``RULE:pattern/replacement/``
with an optional ``L``/``U`` (lower/upper case). The first rule whose pattern matches the *whole* DN gives
the name (Java's ``replaceAll`` with ``$n`` group references); no rule matching fails the connection.

The DN is read from the certificate's DER with the small parser below (no dependency).
"""
from __future__ import annotations

import re

_KEYWORDS = {
    "2.5.4.3": "CN", "2.5.4.6": "C", "2.5.4.7": "L", "2.5.4.8": "ST", "2.5.4.10": "O", "2.5.4.11": "OU",
    "2.5.4.9": "STREET", "0.9.2342.19200300.100.1.25": "DC", "0.9.2342.19200300.100.1.1": "UID",
}
_STRING_TAGS = {0x0C: "utf-8", 0x13: "latin-1", 0x16: "latin-1", 0x14: "latin-1", 0x1E: "utf-16-be",
                0x1C: "utf-32-be"}
_ESCAPEES = ',=+<>#;"\\'


class NoMatchingRule(Exception):
    pass


def _tlv(der: bytes, pos: int) -> tuple[int, int, int, int]:
    """(tag, start of value, end of value, end of element) of the DER element at ``pos``."""
    tag = der[pos]
    length = der[pos + 1]
    pos += 2
    if length & 0x80:
        n = length & 0x7F
        length = int.from_bytes(der[pos:pos + n], "big")
        pos += n
    return tag, pos, pos + length, pos + length


def _children(der: bytes, start: int, end: int) -> list[tuple[int, int, int, int]]:
    out = []
    pos = start
    while pos < end:
        t = _tlv(der, pos)
        out.append((t[0], pos, t[1], t[2]))   # tag, element start, value start, end
        pos = t[3]
    return out


def _oid(value: bytes) -> str:
    first = value[0]
    parts = [str(min(first // 40, 2)), str(first - 40 * min(first // 40, 2))]
    n = 0
    for b in value[1:]:
        n = (n << 7) | (b & 0x7F)
        if not b & 0x80:
            parts.append(str(n))
            n = 0
    return ".".join(parts)


def _escape(text: str) -> str:
    out = "".join("\\" + c if c in _ESCAPEES else c for c in text)
    if out.startswith(" "):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def subject_rfc2253(cert_der: bytes) -> str:
    """The subject of a DER certificate as Java's ``X500Principal.getName()`` (RFC 2253) prints it."""
    cert_v = _tlv(cert_der, 0)[1]
    tbs = _tlv(cert_der, cert_v)
    fields = _children(cert_der, tbs[1], tbs[2])
    if fields and fields[0][0] == 0xA0:      # [0] EXPLICIT version
        fields = fields[1:]
    subject = fields[4]                      # serial, signature, issuer, validity, subject
    rdns = []
    for rdn in _children(cert_der, subject[2], subject[3]):
        avas = []
        for ava in _children(cert_der, rdn[2], rdn[3]):
            oid_el, val_el = _children(cert_der, ava[2], ava[3])[:2]
            oid = _oid(cert_der[oid_el[2]:oid_el[3]])
            tag = val_el[0]
            keyword = _KEYWORDS.get(oid)
            if keyword is not None and tag in _STRING_TAGS:
                text = cert_der[val_el[2]:val_el[3]].decode(_STRING_TAGS[tag], "replace")
                avas.append(f"{keyword}={_escape(text)}")
            else:
                avas.append(f"{keyword or oid}=#{cert_der[val_el[1]:val_el[3]].hex()}")
        rdns.append("+".join(avas))
    return ",".join(reversed(rdns))


_RULE = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(,\s*|$)")
_PARSER = re.compile(_RULE)


class _Rule:
    def __init__(self, pattern: str | None = None, replacement: str = "", case: str = "") -> None:
        self.pattern = re.compile(pattern) if pattern is not None else None
        self.replacement = replacement
        self.case = case

    def _expand(self, m: re.Match[str]) -> str:
        """Java's Matcher.appendReplacement: ``\\x`` is x, ``$n`` a group (the longest valid number); a
        reference to a group that does not exist is literal text (Kafka's escapeLiteralBackReferences)."""
        out = []
        rep = self.replacement
        groups = m.re.groups
        i = 0
        while i < len(rep):
            c = rep[i]
            if c == "\\" and i + 1 < len(rep):
                out.append(rep[i + 1])
                i += 2
            elif c == "$" and i + 1 < len(rep) and rep[i + 1].isdigit():
                j = i + 1
                digits = rep[j]
                while j + 1 < len(rep) and rep[j + 1].isdigit() and int(digits + rep[j + 1]) <= groups:
                    j += 1
                    digits += rep[j]
                if int(digits) > groups or (digits.startswith("0") and len(digits) > 1):
                    out.append("$" + digits)
                else:
                    out.append(m.group(int(digits)) or "")
                i = j + 1
            else:
                out.append(c)
                i += 1
        return "".join(out)

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        if self.pattern.fullmatch(dn) is None:
            return None
        result = self.pattern.sub(self._expand, dn)
        return result.lower() if self.case == "L" else result.upper() if self.case == "U" else result


class SslPrincipalMapper:
    def __init__(self, rules: str = "DEFAULT") -> None:
        self.rules: list[_Rule] = []
        for m in _SPLITTER.finditer(rules.strip()):
            text = m.group(1)
            p = _PARSER.match(text)
            if p is None or p.end() != len(text):
                raise ValueError(f"Invalid rule: `{text}`")
            if p.group(1) is not None:
                self.rules.append(_Rule())
            elif p.group(2) is not None:
                try:
                    self.rules.append(_Rule(p.group(2), p.group(4), p.group(6) or ""))
                except re.error as exc:
                    raise ValueError(f"Invalid rule: `{text}`: {exc}") from None
            if m.end() == len(rules.strip()):
                break

    def name_of(self, dn: str) -> str:
        for rule in self.rules:
            name = rule.apply(dn)
            if name is not None:
                return name
        raise NoMatchingRule(f"No rules apply to {dn}")
