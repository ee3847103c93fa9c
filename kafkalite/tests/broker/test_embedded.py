"""kafkalite.Broker (embedded) and the pytest fixtures built on it."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kafkalite.embedded import Broker
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_wire.messages import InitProducerIdRequest, MetadataRequest


def test_embedded_broker_temp_dir_lifecycle() -> None:
    b = Broker()
    b.start()
    data_dir = b.data_dir
    assert b.port > 0 and b.bootstrap_servers == f"127.0.0.1:{b.port}"
    assert data_dir.is_dir()
    b.stop()
    b.stop()   # idempotent
    assert not data_dir.exists()


def test_embedded_broker_persists_topics_and_writes_clean_marker(tmp_path: Path) -> None:
    with Broker(data_dir=tmp_path) as b, RawClient(b.host, b.port) as c:
        c.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="kept")]), 12)
        tid = c.request(MetadataRequest(topics=None), 12).topics[0].topic_id
    assert (tmp_path / ".kafka_cleanshutdown").exists()
    assert (tmp_path / "meta.properties").exists()
    with Broker(data_dir=tmp_path) as b, RawClient(b.host, b.port) as c:
        topics = c.request(MetadataRequest(topics=None), 12).topics
        assert [(t.name, t.topic_id) for t in topics] == [("kept", tid)]
        pid = c.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=-1), 2).producer_id
        assert pid >= 0
    assert tmp_path.exists()   # a caller-provided dir is kept


def test_pytest_fixtures(kafkalite_broker: Broker, kafkalite_broker_factory: Callable[..., Broker]) -> None:
    other = kafkalite_broker_factory(overrides={"num.partitions": "3"})
    assert other.port != kafkalite_broker.port
    def auto_created(c: RawClient, name: str) -> object:
        req = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name)])
        c.request(req, 12)             # creates it (answered UNKNOWN_TOPIC_OR_PARTITION, as Kafka answers)
        return c.request(req, 12).topics[0]

    with RawClient(other.host, other.port) as c:
        assert len(auto_created(c, "three").partitions) == 3
    with RawClient(kafkalite_broker.host, kafkalite_broker.port) as c:
        assert len(auto_created(c, "one").partitions) == 1


def test_two_listeners_each_advertise_their_own_address(tmp_path: Path) -> None:
    overrides = {
        "listeners": "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
        "advertised.listeners": "PLAINTEXT://public.example:9092,INTERNAL://127.0.0.1:0",
    }
    with Broker(data_dir=tmp_path, overrides=overrides) as b:
        (h1, p1), (h2, p2) = b.addresses
        with RawClient(h1, p1) as c:
            assert [(x.host, x.port) for x in c.request(MetadataRequest(topics=[]), 12).brokers] == [
                ("public.example", 9092)]
        with RawClient(h2, p2) as c:   # advertised port 0 means "the bound port"
            assert [(x.host, x.port) for x in c.request(MetadataRequest(topics=[]), 12).brokers] == [
                ("127.0.0.1", p2)]


def test_idle_connections_are_closed(tmp_path: Path) -> None:
    with Broker(data_dir=tmp_path, overrides={"connections.max.idle.ms": "200"}) as b, \
            RawClient(b.host, b.port) as c:
        assert c.request(MetadataRequest(topics=[]), 12).brokers
        assert c.is_closed_by_peer()


def test_embedded_broker_never_freezes_the_host_processs_heap(tmp_path: Path) -> None:
    """gc.freeze (which `kafkalite serve` uses after loading or creating many logs) would make the host's own
    objects permanent, cycles included: an embedded broker shares its host's process and must not do it."""
    import gc

    from kafkalite_wire.messages import CreateTopicsRequest

    frozen = gc.get_freeze_count()
    with Broker(data_dir=tmp_path) as b, RawClient(b.host, b.port) as c:
        r = c.request(CreateTopicsRequest(timeout_ms=5000, topics=[CreateTopicsRequest.CreatableTopic(
            name="many", num_partitions=150, replication_factor=1)]), 5)
        assert r.topics[0].error_code == 0
    with Broker(data_dir=tmp_path) as b:   # a clean restart registers the logs and loads them in the background
        pass
    assert gc.get_freeze_count() == frozen
