"""Kafka 4.4's KRaft admin tools against one node: ``kafka-cluster unregister`` (UnregisterBroker),
``kafka-metadata-quorum describe --status / --replication`` (DescribeQuorum), ``remove-controller``
(RemoveRaftVoter) and ``add-controller`` (AddRaftVoter), with the same outcome on kafkalite and on Apache Kafka
4.4 (``KAFKALITE_COMPAT_BROKER=kafka``): the node is the quorum's one voter, which can neither be removed nor
joined by a controller that cannot be reached."""
from __future__ import annotations

import re
import socket
import subprocess
import uuid
from pathlib import Path

import pytest
from differential.wireconn import WireConn
from harness import reference
from harness.broker import BrokerProcess
from harness.cluster import wait

from kafkalite_storage.checkpoints import uuid_to_base64
from kafkalite_wire.messages import DescribeClusterRequest


@pytest.fixture(autouse=True)
def _kafka_tools() -> None:
    why = reference.missing()   # Kafka 4.4's tools come with the reference broker's jars
    if why:
        from conftest import missing

        missing(why)


def tool(main: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(reference.java_command(f"org.apache.kafka.tools.{main}", *args, heap="256m"),
                          capture_output=True, text=True, timeout=120)


def quorum(bs: str, *args: str) -> subprocess.CompletedProcess[str]:
    return tool("MetadataQuorumCommand", "--bootstrap-server", bs, *args)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_describe_quorum_one_voter(broker: BrokerProcess) -> None:
    status = quorum(broker.bootstrap, "describe", "--status")
    assert status.returncode == 0, status.stderr
    fields = dict(re.findall(r"^(\w+):\s+(.*)$", status.stdout, re.M))
    voters = re.findall(r'"id": (\d+)', fields["CurrentVoters"])
    assert voters == [fields["LeaderId"]] and fields["CurrentObservers"] == "[]"
    repl = quorum(broker.bootstrap, "describe", "--replication")
    assert repl.returncode == 0, repl.stderr
    rows = [line.split() for line in repl.stdout.strip().splitlines()[1:]]
    assert [(r[0], r[-1]) for r in rows] == [(fields["LeaderId"], "Leader")]


def test_unregister_unknown_broker(broker: BrokerProcess) -> None:
    p = tool("ClusterTool", "unregister", "--bootstrap-server", broker.bootstrap, "--id", "42")
    assert p.returncode == 1
    assert "BrokerIdNotRegisteredException: Broker ID 42 is not currently registered" in p.stderr


def test_remove_controller_not_a_voter(broker: BrokerProcess) -> None:
    other = uuid.uuid4()
    p = quorum(broker.bootstrap, "remove-controller", "--controller-id", "5",
               "--controller-directory-id", uuid_to_base64(other))
    assert p.returncode == 1
    assert re.search(r"VoterNotFoundException: Cannot remove voter ReplicaKey\(id=5, directoryId="
                     + re.escape(uuid_to_base64(other)) + r"\) from the set of voters \[ReplicaKey\(id=\d+, "
                     r"directoryId=[\w-]{22}\)\]", p.stderr), p.stderr
    bad = quorum(broker.bootstrap, "remove-controller", "--controller-id", "5",
                 "--controller-directory-id", "AAAAAAAAAAAAAAAAAAAAAA")
    assert bad.returncode == 1 and "Remove voter request didn't include a valid voter" in bad.stderr


def test_add_controller_that_cannot_be_reached(broker: BrokerProcess, tmp_path: Path) -> None:
    """The new controller's config names its listener under both names (Kafka's quorum listens on CONTROLLER,
    kafkalite's one voter on the client's listener, PLAINTEXT): the leader finds its endpoint, asks it for
    ApiVersions, and nothing answers there."""
    meta = tmp_path / "meta"
    meta.mkdir()
    directory = uuid.uuid4()
    (meta / "meta.properties").write_text(f"version=1\ncluster.id=whatever-cluster-id\nnode.id=7\n"
                                          f"directory.id={uuid_to_base64(directory)}\n")
    port, port2 = _free_port(), _free_port()
    config = tmp_path / "controller.properties"
    config.write_text("process.roles=controller\nnode.id=7\ncontroller.listener.names=CONTROLLER,PLAINTEXT\n"
                      f"listeners=CONTROLLER://127.0.0.1:{port},PLAINTEXT://127.0.0.1:{port2}\n"
                      f"metadata.log.dir={meta}\nlog.dirs={meta}\n")
    p = quorum(broker.bootstrap, "--command-config", str(config), "add-controller")
    assert p.returncode == 1, p.stdout
    assert ("TimeoutException: Aborted add voter operation for since API_VERSIONS returned an error "
            "BROKER_NOT_AVAILABLE") in p.stderr, p.stderr


def _brokers(bs: str) -> list[tuple[int, bool]]:
    with WireConn(bs) as c:
        r = c.request(DescribeClusterRequest(include_cluster_authorized_operations=False, include_fenced_brokers=True), 2)
    return sorted((b.broker_id, b.is_fenced) for b in r.brokers)


def test_unregister_a_stopped_broker_of_a_cluster(cluster_control) -> None:
    """Three brokers, one stopped: ``kafka-cluster unregister`` removes its registration (Kafka's controller
    keeps a stopped broker registered, fenced, until then); asked again, it is no longer registered. A running
    broker's address is the bootstrap (the stopped one refuses connections)."""
    cluster_control.stop_broker(3)
    host, port = cluster_control.addresses()[1]
    bs = f"{host}:{port}"
    # DescribeCluster v2 asking for fenced brokers too (KIP-1073): the stopped one, until it is unregistered
    wait(lambda: _brokers(bs) == [(1, False), (2, False), (3, True)], "broker 3 fenced")
    first = tool("ClusterTool", "unregister", "--bootstrap-server", bs, "--id", "3")
    assert first.returncode == 0, first.stderr
    assert "Broker 3 is no longer registered." in first.stdout
    again = tool("ClusterTool", "unregister", "--bootstrap-server", bs, "--id", "3")
    assert again.returncode == 1
    assert "BrokerIdNotRegisteredException: Broker ID 3 is not currently registered" in again.stderr
    assert _brokers(bs) == [(1, False), (2, False)]
    cluster_control.start_broker(3)
    wait(lambda: _brokers(bs) == [(1, False), (2, False), (3, False)], "broker 3 registered again")
