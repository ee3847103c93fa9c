"""``kafkalite certs DIR``: a development CA, a broker certificate and a client certificate, as PEM.

So TLS and mTLS take one command::

    kafkalite certs ./certs
    kafkalite serve --config ./certs/server.properties

Written (keys mode 0600):

- ``ca.pem`` / ``ca-key.pem``: a self-signed CA (``CN=kafkalite dev CA``), the trust store of both sides;
- ``broker.pem``: the broker's private key, certificate and the CA (``ssl.keystore.location`` of a PEM key
  store), for ``localhost``, ``127.0.0.1``, ``::1`` and any ``--host``; also ``broker-cert.pem`` /
  ``broker-key.pem``;
- ``client.pem`` (key + certificate + CA, Java's PEM key store), ``client-cert.pem``, ``client-key.pem``:
  a client certificate for mTLS, subject ``CN=kafkalite-client,O=kafkalite dev`` (the broker's principal
  ``User:CN=kafkalite-client,O=kafkalite dev`` with the DEFAULT mapping rule);
- ``server.properties``: an SSL listener on 9093 (client certificates requested) and an mTLS listener on
  9094 (required) next to PLAINTEXT 9092;
- ``client-ssl.properties`` / ``client-mtls.properties``: Java client settings; ``clients.txt``: the same for
  librdkafka (confluent-kafka, kcat), kafka-python, aiokafka and kafkajs.

Uses the ``cryptography`` package (the ``tls`` extra; tools/bootstrap.sh
installs it) rather than the ``openssl`` command: it is portable (macOS's LibreSSL and Windows lack the same
flags), needs no temporary config files for subjectAltName, and is a pure-Python API the tests can call.
The broker itself needs only the standard library's ``ssl``. Keys are EC P-256 (small, fast handshakes;
every client supports them). These are development certificates: the CA key sits next to them.
"""
from __future__ import annotations

import argparse
import datetime
import ipaddress
import os
import sys
from pathlib import Path

CA_NAME = "kafkalite dev CA"
CLIENT_SUBJECT = "CN=kafkalite-client,O=kafkalite dev"


def _key() -> object:
    from cryptography.hazmat.primitives.asymmetric import ec

    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: object) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,  # type: ignore[attr-defined]
                             serialization.NoEncryption())


def _cert(subject: object, key: object, issuer: object, issuer_key: object, days: int, *, ca: bool,
          sans: list[object] | None = None, usage: object = None) -> object:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes

    now = datetime.datetime.now(datetime.UTC)
    b = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer)
         .public_key(key.public_key()).serial_number(x509.random_serial_number())  # type: ignore[attr-defined]
         .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=days))
         .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ca:
        b = b.add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                          content_commitment=False, key_encipherment=False,
                                          data_encipherment=False, key_agreement=False, encipher_only=False,
                                          decipher_only=False), critical=True)
    else:
        b = b.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)  # type: ignore[list-item]
    if sans:
        b = b.add_extension(x509.SubjectAlternativeName(sans), critical=False)  # type: ignore[arg-type]
    return b.sign(issuer_key, hashes.SHA256())  # type: ignore[arg-type]


def _pem_cert(cert: object) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return cert.public_bytes(serialization.Encoding.PEM)  # type: ignore[attr-defined]


def _write(path: Path, data: bytes, secret: bool = False) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if secret else 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def write_certs(out: Path, hosts: list[str] | None = None, days: int = 825) -> dict[str, Path]:
    """Write the CA, broker and client material into ``out``; returns name -> path."""
    from cryptography import x509
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    out.mkdir(parents=True, exist_ok=True)
    ca_key = _key()
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, CA_NAME)])
    ca = _cert(ca_name, ca_key, ca_name, ca_key, days, ca=True)
    names = ["localhost", "127.0.0.1", "::1", *(hosts or [])]
    sans: list[object] = []
    for n in dict.fromkeys(names):
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(n)))
        except ValueError:
            sans.append(x509.DNSName(n))
    broker_key = _key()
    broker = _cert(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0] if not hosts else hosts[0]),
                              x509.NameAttribute(NameOID.ORGANIZATION_NAME, "kafkalite dev")]),
                   broker_key, ca_name, ca_key, days, ca=False, sans=sans, usage=ExtendedKeyUsageOID.SERVER_AUTH)
    client_key = _key()
    client = _cert(x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "kafkalite dev"),
                              x509.NameAttribute(NameOID.COMMON_NAME, "kafkalite-client")]),
                   client_key, ca_name, ca_key, days, ca=False, usage=ExtendedKeyUsageOID.CLIENT_AUTH)
    p = {name: out / name for name in ("ca.pem", "ca-key.pem", "broker.pem", "broker-cert.pem", "broker-key.pem",
                                       "client.pem", "client-cert.pem", "client-key.pem", "server.properties",
                                       "client-ssl.properties", "client-mtls.properties", "clients.txt")}
    _write(p["ca.pem"], _pem_cert(ca))
    _write(p["ca-key.pem"], _pem_key(ca_key), secret=True)
    _write(p["broker-cert.pem"], _pem_cert(broker) + _pem_cert(ca))
    _write(p["broker-key.pem"], _pem_key(broker_key), secret=True)
    _write(p["broker.pem"], _pem_key(broker_key) + _pem_cert(broker) + _pem_cert(ca), secret=True)
    _write(p["client-cert.pem"], _pem_cert(client) + _pem_cert(ca))
    _write(p["client-key.pem"], _pem_key(client_key), secret=True)
    _write(p["client.pem"], _pem_key(client_key) + _pem_cert(client) + _pem_cert(ca), secret=True)
    d = out.resolve()
    _write(p["server.properties"], f"""# kafkalite serve --config {d / 'server.properties'}
listeners=PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093,MTLS://127.0.0.1:9094
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL
ssl.keystore.type=PEM
ssl.keystore.location={d / 'broker.pem'}
ssl.truststore.type=PEM
ssl.truststore.location={d / 'ca.pem'}
ssl.client.auth=requested
listener.name.mtls.ssl.client.auth=required
""".encode())
    common = f"""ssl.truststore.type=PEM
ssl.truststore.location={d / 'ca.pem'}
"""
    _write(p["client-ssl.properties"], f"# bootstrap.servers=localhost:9093\nsecurity.protocol=SSL\n{common}".encode())
    _write(p["client-mtls.properties"], f"""# bootstrap.servers=localhost:9094
security.protocol=SSL
{common}ssl.keystore.type=PEM
ssl.keystore.location={d / 'client.pem'}
""".encode())
    _write(p["clients.txt"], f"""SSL on localhost:9093 (add the client lines for mTLS on localhost:9094)

Java (kafka-clients):   --command-config {d / 'client-ssl.properties'}  /  {d / 'client-mtls.properties'}
librdkafka (confluent-kafka, kcat -X):
    security.protocol=SSL  ssl.ca.location={d / 'ca.pem'}
    ssl.certificate.location={d / 'client-cert.pem'}  ssl.key.location={d / 'client-key.pem'}
kafka-python / aiokafka:
    security_protocol="SSL", ssl_cafile="{d / 'ca.pem'}",
    ssl_certfile="{d / 'client-cert.pem'}", ssl_keyfile="{d / 'client-key.pem'}"
    (aiokafka: ssl_context=aiokafka.helpers.create_ssl_context(cafile=..., certfile=..., keyfile=...))
kafkajs:
    ssl: {{ ca: [fs.readFileSync('{d / 'ca.pem'}')], cert: fs.readFileSync('{d / 'client-cert.pem'}'),
           key: fs.readFileSync('{d / 'client-key.pem'}') }}
""".encode())
    return p


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", help="output directory (created)")
    parser.add_argument("--host", action="append", default=[],
                        help="another name or IP address for the broker certificate (repeatable)")
    parser.add_argument("--days", type=int, default=825, help="validity in days (default 825)")
    parser.add_argument("--force", action="store_true", help="overwrite existing files")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kafkalite certs", description="write a dev CA, a broker certificate "
                                     "and a client certificate (PEM) plus ready-to-use properties")
    configure(parser)
    return run(parser.parse_args(argv))


def run(args: argparse.Namespace) -> int:
    out = Path(args.dir)
    if (out / "ca.pem").exists() and not args.force:
        sys.stderr.write(f"kafkalite: error: {out / 'ca.pem'} exists (use --force to overwrite)\n")
        return 2
    try:
        import cryptography  # noqa: F401
    except ImportError:
        sys.stderr.write(f"kafkalite: error: `kafkalite certs` needs the cryptography package, which "
                         f"{sys.executable} does not have: in a kafkalite checkout run `tools/bootstrap.sh venv`, "
                         f"or install it into this Python: {sys.executable} -m pip install 'cryptography>=41'\n")
        return 1
    paths = write_certs(out, args.host, args.days)
    sys.stdout.write(f"wrote {', '.join(sorted(p.name for p in paths.values()))} to {out}\n"
                     f"run:  kafkalite serve --config {paths['server.properties']}\n")
    return 0
