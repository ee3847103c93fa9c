"""The KRaft controller APIs a Kafka 4.x broker forwards (``kafkalite/handlers/kraft_control.py``), over the wire,
with the answers Kafka 4.4 gave the same requests (one node formatted ``--standalone``; the harness's three-node
cluster): UnregisterBroker 64, UnregisterController 94, AddRaftVoter 80, RemoveRaftVoter 81."""
from __future__ import annotations

import json
import socket
import uuid
from pathlib import Path

import pytest

from kafkalite.cluster import Cluster
from kafkalite.embedded import Broker
from kafkalite.metadata.features import FEATURES_FILE
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_storage.checkpoints import uuid_to_base64
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import (
    AddRaftVoterRequest,
    ApiVersionsRequest,
    DescribeClusterRequest,
    DescribeQuorumRequest,
    MetadataRequest,
    RemoveRaftVoterRequest,
    UnregisterBrokerRequest,
    UnregisterControllerRequest,
)

STANDARD = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}


def unregister_broker(c: RawClient, broker_id: int) -> tuple[int, str | None]:
    r = c.request(UnregisterBrokerRequest(broker_id=broker_id), 0)
    return r.error_code, r.error_message


def test_advertised_as_kafka_44() -> None:
    with Broker(emulate_kafka="4.4") as b, RawClient(b.host, b.port) as c:
        keys = {k.api_key: (k.min_version, k.max_version) for k in c.request(
            ApiVersionsRequest(client_software_name="t", client_software_version="1"), 4).api_keys}
    assert keys[64] == (0, 0) and keys[94] == (0, 0) and keys[81] == (0, 0) and keys[80] == (0, 1)


def quorum(c: RawClient) -> tuple[str, int, uuid.UUID]:
    """(cluster id, the voter's id, its directory id) as Metadata and DescribeQuorum report them."""
    cid = c.request(MetadataRequest(topics=[]), 12).cluster_id
    Q = DescribeQuorumRequest
    dq = c.request(Q(topics=[Q.TopicData(topic_name="__cluster_metadata", partitions=[Q.PartitionData(
        partition_index=0)])]), 2)
    (voter,) = dq.topics[0].partitions[0].current_voters
    return cid, voter.replica_id, voter.replica_directory_id


def test_remove_raft_voter_one_voter() -> None:
    """Kafka 4.4, one node formatted --standalone: the only voter cannot go, an unknown one is not found."""
    with Broker() as b, RawClient(b.host, b.port) as c:
        cid, me, mine = quorum(c)

        def remove(cluster_id: str | None, voter_id: int, directory_id: uuid.UUID) -> tuple[int, str | None]:
            r = c.request(RemoveRaftVoterRequest(cluster_id=cluster_id, voter_id=voter_id,
                                                 voter_directory_id=directory_id), 0)
            return r.error_code, r.error_message

        voters = f"[ReplicaKey(id={me}, directoryId={uuid_to_base64(mine)})]"
        assert remove(cid, me, mine) == (ErrorCode.VOTER_NOT_FOUND, f"Cannot remove voter ReplicaKey(id={me}, "
                                         f"directoryId={uuid_to_base64(mine)}) from the set of voters {voters}")
        other = uuid.UUID("d54fe05f-c46d-4e94-9a6a-bf7a8b9d1a6e")
        assert remove(None, 5, other) == (ErrorCode.VOTER_NOT_FOUND, "Cannot remove voter ReplicaKey(id=5, "
                                          f"directoryId=1U_gX8RtTpSaar96i50abg) from the set of voters {voters}")
        assert remove(cid, me, other)[0] == ErrorCode.VOTER_NOT_FOUND   # the directory id must match too
        for bad in ("xx", ""):
            assert remove(bad, me, mine) == (ErrorCode.INCONSISTENT_CLUSTER_ID,
                                             f'The given id "{bad}" doesn\'t match the cluster id "{cid}"')
        for vid, d in ((me, uuid.UUID(int=0)), (-3, other)):
            assert remove(cid, vid, d) == (ErrorCode.INVALID_REQUEST, "Remove voter request didn't include a valid voter")


def unregister_controller(c: RawClient, controller_id: int) -> tuple[int, str | None]:
    r = c.request(UnregisterControllerRequest(controller_id=controller_id), 0)
    return r.error_code, r.error_message


def test_unregister_controller_one_node(tmp_path: Path) -> None:
    with Broker(data_dir=tmp_path) as b, RawClient(b.host, b.port) as c:
        assert unregister_controller(c, 1) == (ErrorCode.INVALID_REQUEST,
                                               "Controller cannot unregister itself while it is active.")
        for cid in (2, 99, -1):
            assert unregister_controller(c, cid) == (ErrorCode.CONTROLLER_ID_NOT_REGISTERED,
                                                     f"Controller ID {cid} is not currently registered.")
    # below metadata.version 4.4-IV2 (33) Kafka's controller cannot unregister controllers (a level UpdateFeatures
    # cannot downgrade to: kafkalite's saved levels, as a cluster formatted at 4.4-IV1 would have it)
    (tmp_path / FEATURES_FILE).write_text(json.dumps({"epoch": 1, "levels": {"metadata.version": 32}}))
    with Broker(data_dir=tmp_path) as b, RawClient(b.host, b.port) as c:
        assert unregister_controller(c, 2) == (
            ErrorCode.UNSUPPORTED_VERSION, "The current MetadataVersion is too old to support controller unregistration.")
        assert unregister_controller(c, 1)[0] == ErrorCode.INVALID_REQUEST   # checked first, as Kafka
        assert c.request(UnregisterControllerRequest(controller_id=3), 0).error_code == ErrorCode.UNSUPPORTED_VERSION


def test_unregister_broker_one_node() -> None:
    with Broker() as b, RawClient(b.host, b.port) as c:
        for bid in (2, 99, -1):
            assert unregister_broker(c, bid) == (ErrorCode.BROKER_ID_NOT_REGISTERED,
                                                 f"Broker ID {bid} is not currently registered")
        # the running broker: NONE as Kafka, and it stays registered (kafkalite's note: it re-registers at once)
        assert unregister_broker(c, 1) == (0, "")
        md = c.request(MetadataRequest(topics=[]), 12)
        assert [x.node_id for x in md.brokers] == [1]
        assert unregister_broker(c, 1) == (0, "")


def test_unregister_broker_needs_cluster_alter(tmp_path: Path) -> None:
    denied = (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
    with Broker(data_dir=tmp_path, overrides=STANDARD) as b, RawClient(b.host, b.port) as c:
        assert unregister_broker(c, 7) == denied
        assert unregister_controller(c, 1) == denied
        r = c.request(RemoveRaftVoterRequest(cluster_id="x", voter_id=1, voter_directory_id=uuid.uuid4()), 0)
        assert (r.error_code, r.error_message) == denied
        r = c.request(AddRaftVoterRequest(cluster_id="x", timeout_ms=1000, voter_id=2, voter_directory_id=uuid.uuid4(),
                                          listeners=[]), 0)
        assert (r.error_code, r.error_message) == denied
    with Broker(data_dir=tmp_path, overrides={**STANDARD, "super.users": "User:ANONYMOUS"}) as b, \
            RawClient(b.host, b.port) as c:
        assert unregister_broker(c, 7)[0] == ErrorCode.BROKER_ID_NOT_REGISTERED


@pytest.fixture
def cluster():
    with Cluster(brokers=3) as c:
        yield c


def _fenced(c: RawClient) -> list[tuple[int, bool]]:
    r = c.request(DescribeClusterRequest(include_cluster_authorized_operations=False, include_fenced_brokers=True), 2)
    return [(x.broker_id, x.is_fenced) for x in r.brokers]


def test_unregister_stopped_broker_in_cluster(cluster: Cluster) -> None:
    cluster.sync.stop_broker(3)
    host, port = cluster.addresses()[1]
    with RawClient(host, port) as c:
        assert _fenced(c) == [(1, False), (2, False), (3, True)]   # stopped: still registered, fenced
        assert unregister_broker(c, 3) == (0, "")
        assert _fenced(c) == [(1, False), (2, False)]
        assert unregister_broker(c, 3) == (ErrorCode.BROKER_ID_NOT_REGISTERED,
                                           "Broker ID 3 is not currently registered")
    with RawClient(*cluster.addresses()[2]) as c:   # every broker of the cluster sees it alike
        assert unregister_broker(c, 3)[0] == ErrorCode.BROKER_ID_NOT_REGISTERED
        assert unregister_broker(c, 42) == (ErrorCode.BROKER_ID_NOT_REGISTERED,
                                            "Broker ID 42 is not currently registered")
    cluster.sync.start_broker(3)   # a broker that starts registers again
    with RawClient(host, port) as c:
        assert _fenced(c) == [(1, False), (2, False), (3, False)]


def test_unregister_stopped_controller_in_cluster(cluster: Cluster) -> None:
    cluster.sync.stop_broker(3)
    with RawClient(*cluster.addresses()[2]) as c:
        active = c.request(DescribeClusterRequest(include_cluster_authorized_operations=False), 1).controller_id
        assert active == 1
        assert unregister_controller(c, 1) == (ErrorCode.INVALID_REQUEST,
                                               "Controller cannot unregister itself while it is active.")
        assert unregister_controller(c, 99)[0] == ErrorCode.CONTROLLER_ID_NOT_REGISTERED
        assert unregister_controller(c, 3) == (0, "")
        assert unregister_controller(c, 3) == (ErrorCode.CONTROLLER_ID_NOT_REGISTERED,
                                               "Controller ID 3 is not currently registered.")
        assert unregister_controller(c, 2) == (0, "")   # running: NONE, and it registers again (as Kafka's)
        assert unregister_controller(c, 2) == (0, "")
    cluster.sync.start_broker(3)
    with RawClient(*cluster.addresses()[1]) as c:
        assert unregister_controller(c, 3) == (0, "")   # registered again when it started


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_add_raft_voter() -> None:
    """Kafka 4.4's answers, one node formatted --standalone (its default listener: CONTROLLER there, the
    listener DescribeQuorum lists here)."""
    L = AddRaftVoterRequest.Listener
    with Broker() as b, Broker(emulate_kafka="2.8") as old, RawClient(b.host, b.port) as c:
        cid, me, mine = quorum(c)
        new = uuid.UUID("d54fe05f-c46d-4e94-9a6a-bf7a8b9d1a6e")
        new_key = "ReplicaKey(id=7, directoryId=1U_gX8RtTpSaar96i50abg)"

        def add(listeners: list[tuple[str, str, int]], voter_id: int = 7, directory_id: uuid.UUID = new,
                cluster_id: str | None = cid, version: int = 1) -> tuple[int, str | None]:
            r = c.request(AddRaftVoterRequest(
                cluster_id=cluster_id, timeout_ms=30000, voter_id=voter_id, voter_directory_id=directory_id,
                listeners=[L(name=n, host=h, port=p) for n, h, p in listeners], ack_when_committed=True), version)
            return r.error_code, r.error_message

        assert add([("PLAINTEXT", "127.0.0.1", 1)], cluster_id="xx") == (
            ErrorCode.INCONSISTENT_CLUSTER_ID, f'The given id "xx" doesn\'t match the cluster id "{cid}"')
        for vid, d in ((7, uuid.UUID(int=0)), (-1, new), (me, uuid.UUID(int=0))):
            assert add([("PLAINTEXT", "127.0.0.1", 1)], vid, d) == (
                ErrorCode.INVALID_REQUEST, "Add voter request didn't include a valid voter")
        assert add([]) == (ErrorCode.INVALID_REQUEST, "Add voter request didn't include the endpoint "
                           "(Endpoints(endpoints={})) for the default listener ListenerName(PLAINTEXT)")
        # names normalised to upper case, listed in java.util.HashMap's order (checked with Java 17): by hash
        # bucket (X before PLAINTEXTS whichever came first), X and CONTROLLER share one (insertion order)
        for listeners, shown in (
                ([("plaintexts", "h", 1), ("x", "localhost", 2)], "X)=localhost/<unresolved>:2, ListenerName(PLAINTEXTS)=h"),
                ([("x", "localhost", 2), ("CONTROLLER", "h", 1)], "X)=localhost/<unresolved>:2, ListenerName(CONTROLLER)=h"),
                ([("CONTROLLER", "h", 1), ("x", "localhost", 2)], "CONTROLLER)=h/<unresolved>:1, ListenerName(X)=localhost")):
            shown = f"ListenerName({shown}" + ("/<unresolved>:1" if shown.endswith("=h") else "/<unresolved>:2")
            assert add(listeners) == (ErrorCode.INVALID_REQUEST, "Add voter request didn't include the endpoint "
                                      f"(Endpoints(endpoints={{{shown}}})) for the default listener ListenerName(PLAINTEXT)")
        assert add([("PLAINTEXT", "127.0.0.1", 1)], me, mine) == (
            ErrorCode.DUPLICATE_VOTER, f"The voter id for ReplicaKey(id={me}, directoryId={uuid_to_base64(mine)}) "
            f"is already part of the set of voters [ReplicaKey(id={me}, directoryId={uuid_to_base64(mine)})].")
        for version in (0, 1):
            assert add([("plaintext", "127.0.0.1", _free_port())], version=version) == (
                ErrorCode.REQUEST_TIMED_OUT,
                "Aborted add voter operation for since API_VERSIONS returned an error BROKER_NOT_AVAILABLE")
        # a node that answers: a Kafka 2.8 one has no kraft.version; a 4.4 one supports it but has not fetched
        # the metadata log (nothing can fetch kafkalite's), so it lags behind and is not added
        assert add([("PLAINTEXT", old.host, old.port)]) == (
            ErrorCode.INVALID_REQUEST, f"Aborted add voter operation for {new_key} since the kraft.version range "
                                       "(min: 0, max: 0) doesn't support the finalized version 1")
        assert add([("PLAINTEXT", b.host, b.port)]) == (
            ErrorCode.REQUEST_TIMED_OUT, f"Aborted add voter operation for {new_key} since it is lagging behind")
        assert quorum(c) == (cid, me, mine)   # still the one voter


def test_voter_changes_need_kraft_version_1(tmp_path: Path) -> None:
    """A static quorum (kraft.version 0, as the harness's three-node Kafka cluster is formatted): Kafka 4.4's
    answers there, with the level kafkalite reports in ApiVersions."""
    (tmp_path / FEATURES_FILE).write_text(json.dumps({"epoch": 1, "levels": {"kraft.version": 0}}))
    with Broker(data_dir=tmp_path) as b, RawClient(b.host, b.port) as c:
        finalized = {f.name: f.max_version_level for f in c.request(
            ApiVersionsRequest(client_software_name="t", client_software_version="1"), 4).finalized_features}
        assert "kraft.version" not in finalized   # level 0: not listed, as Kafka lists it
        cid, _me, _mine = quorum(c)
        r = c.request(RemoveRaftVoterRequest(cluster_id=cid, voter_id=9, voter_directory_id=uuid.uuid4()), 0)
        assert (r.error_code, r.error_message) == (
            ErrorCode.UNSUPPORTED_VERSION, "Cluster doesn't support removing voter because the kraft.version feature is 0")
        r = c.request(AddRaftVoterRequest(cluster_id=cid, timeout_ms=3000, voter_id=7, voter_directory_id=uuid.uuid4(),
                                          listeners=[AddRaftVoterRequest.Listener(name="PLAINTEXT", host="127.0.0.1",
                                                                                  port=1)], ack_when_committed=True), 1)
        assert (r.error_code, r.error_message) == (
            ErrorCode.UNSUPPORTED_VERSION, "Cluster doesn't support adding voter because the kraft.version feature is 0")
