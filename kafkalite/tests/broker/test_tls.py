"""TLS listeners (SSL, mTLS, SASL_SSL), the certificate principal and `kafkalite certs`."""
from __future__ import annotations

import logging
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

# cryptography: the tls extra, which tools/bootstrap.sh installs (a missing one fails, it does not skip)
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import NameOID

from kafkalite.cli import certs
from kafkalite.embedded import Broker
from kafkalite.security.ssl_principal import SslPrincipalMapper, subject_rfc2253
from kafkalite.tests.support import saslclient as sc
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_wire.messages import ApiVersionsRequest, FetchRequest, MetadataRequest, ProduceRequest

RULES = "RULE:^CN=([a-z-]+),O=kafkalite dev$/$1/U,DEFAULT"


@pytest.fixture(scope="module")
def material(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return certs.write_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def broker(material: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    b = Broker(data_dir=tmp_path_factory.mktemp("tls"), overrides={
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,MTLS://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,SASL_SSL:SASL_SSL",
        "ssl.keystore.location": str(material["broker.pem"]),
        "ssl.truststore.location": str(material["ca.pem"]),
        "listener.name.mtls.ssl.client.auth": "required",
        "listener.name.mtls.ssl.principal.mapping.rules": RULES,
        "listener.name.sasl_ssl.plain.sasl.jaas.config":
            'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="pw";',
        "kafkalite.ssl.handshake.timeout.ms": "500",
    }).start()
    try:
        yield b
    finally:
        b.stop()


def _tls(b: Broker, which: int, material: dict[str, Path], client_cert: bool = False) -> RawClient:
    host, port = b.addresses[which]
    c = RawClient(host, port, timeout=10)
    ctx = ssl.create_default_context(cafile=str(material["ca.pem"]))
    if client_cert:
        ctx.load_cert_chain(str(material["client-cert.pem"]), str(material["client-key.pem"]))
    c.sock = ctx.wrap_socket(c.sock, server_hostname="localhost")
    return c


def _produce_fetch(c: RawClient, value: bytes) -> bytes:
    """Produce one record batch (v2, uncompressed) and fetch it back; returns the fetched records bytes."""
    from kafkalite_storage.testing import encode_batch

    c.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="tls-t")],
                              allow_auto_topic_creation=True), 9)
    batch = encode_batch([value])
    r = c.request(ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
        name="tls-t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch)])]), 9)
    base = r.responses[0].partition_responses[0].base_offset
    f = c.request(FetchRequest(replica_id=-1, max_wait_ms=100, min_bytes=1, max_bytes=1 << 24, topics=[
        FetchRequest.FetchTopic(topic="tls-t", partitions=[FetchRequest.FetchPartition(
            partition=0, fetch_offset=base, partition_max_bytes=1 << 24)])]), 11)
    return bytes(f.responses[0].partitions[0].records)


def test_ssl_listener_never_serves_plaintext(broker: Broker) -> None:
    host, port = broker.addresses[1]
    with RawClient(host, port, timeout=10) as c:
        c.send(ApiVersionsRequest(), 0)
        assert c.recv_frame() is None      # a plaintext request to a TLS port: no Kafka answer, closed


def test_tls_round_trip_with_large_fetch(broker: Broker, material: dict[str, Path]) -> None:
    value = bytes(range(256)) * 1200          # ~300 KB: the response's file region is read and encrypted
    with _tls(broker, 1, material) as c:
        assert c.request(ApiVersionsRequest(), 0).error_code == 0
        assert value in _produce_fetch(c, value)


def test_mtls_requires_a_client_certificate_and_maps_its_subject(
        broker: Broker, material: dict[str, Path], caplog: pytest.LogCaptureFixture) -> None:
    # no certificate: TLS 1.3 reports the broker's alert on the first read
    with pytest.raises((ssl.SSLError, ConnectionError, AssertionError)), _tls(broker, 2, material) as c:
        c.request(ApiVersionsRequest(), 0)
    caplog.set_level(logging.DEBUG, logger="kafkalite.server.tls")
    with _tls(broker, 2, material, client_cert=True) as c:
        assert c.request(ApiVersionsRequest(), 0).error_code == 0
    assert any("-> User:KAFKALITE-CLIENT" in r.getMessage() for r in caplog.records)


def test_sasl_ssl_needs_tls_and_sasl(broker: Broker, material: dict[str, Path]) -> None:
    with _tls(broker, 3, material) as c:
        c.send(MetadataRequest(topics=[], allow_auto_topic_creation=False), 9)
        assert c.recv_frame() is None      # TLS alone is not enough
    with _tls(broker, 3, material) as c:
        assert sc.login_plain(c, "alice", "pw").error_code == 0
        assert c.request(MetadataRequest(topics=[], allow_auto_topic_creation=False), 9).brokers


def test_a_handshake_that_never_finishes_is_closed(broker: Broker) -> None:
    host, port = broker.addresses[1]
    with socket.create_connection((host, port), timeout=30) as s:
        s.sendall(b"\x16\x03\x01")             # the start of a ClientHello, then silence
        assert s.recv(100) == b""             # closed by kafkalite.ssl.handshake.timeout.ms (500 ms)


def test_subject_as_java_prints_it(material: dict[str, Path]) -> None:
    ca_key = serialization.load_pem_private_key(material["ca-key.pem"].read_bytes(), None)
    ca = x509.load_pem_x509_certificate(material["ca.pem"].read_bytes())
    name = x509.Name([x509.NameAttribute(NameOID.COUNTRY_NAME, "US"),
                      x509.NameAttribute(NameOID.ORGANIZATION_NAME, 'a,b+c"d'),
                      x509.NameAttribute(NameOID.EMAIL_ADDRESS, "x@y"),
                      x509.NameAttribute(NameOID.COMMON_NAME, " lead#trail ")])
    cert = certs._cert(name, certs._key(), ca.subject, ca_key, 1, ca=False,
                       usage=x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH)
    der = cert.public_bytes(serialization.Encoding.DER)  # type: ignore[attr-defined]
    assert subject_rfc2253(der) == ('CN=\\ lead\\#trail\\ ,1.2.840.113549.1.9.1=#1603784079,'
                                    'O=a\\,b\\+c\\"d,C=US')


def test_principal_mapping_rules_as_kafka() -> None:
    m = SslPrincipalMapper("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,"
                           "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,"
                           "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,DEFAULT")
    assert m.name_of("CN=Kafka,OU=ServiceUsers,O=Apache,L=US,ST=NY,C=US") == "Kafka"
    assert m.name_of("CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=x,ST=y,C=US") == "duke@javasoft"
    assert m.name_of("OU=JavaSoft,CN=Duke.Other,O=Sun") == "duke.other"
    assert m.name_of("OU=nothing") == "OU=nothing"
    assert SslPrincipalMapper("RULE:^CN=(.*)$/$1 $2/U").name_of("CN=a") == "A $2"   # no group 2: literal
    with pytest.raises(ValueError):
        SslPrincipalMapper("RULE:^CN=(.*)$/$1/X/junk,")
    from kafkalite.security.ssl_principal import NoMatchingRule

    with pytest.raises(NoMatchingRule):
        SslPrincipalMapper("RULE:^CN=(.*)$/$1/").name_of("O=x")


def test_certs_command_writes_usable_material(tmp_path: Path) -> None:
    from kafkalite.cli import main

    assert main(["certs", str(tmp_path / "c")]) == 0
    assert main(["certs", str(tmp_path / "c")]) == 2          # refuses to overwrite without --force
    c = tmp_path / "c"
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(c / "broker.pem"))                 # key + chain in one PEM, as ssl.keystore.location
    ctx.load_verify_locations(str(c / "ca.pem"))
    assert "ssl.keystore.location=" in (c / "server.properties").read_text()
    assert (c / "client-key.pem").stat().st_mode & 0o077 == 0
