"""BrokerState builds the authorizer, client quotas, group configs and feature levels on first use, yet what is
saved on disk still applies from the first request, and a damaged ACL or quota file still fails the start with
its one-line cause (kafkalite/tests/e2e/test_lazy_start.py checks their modules are not imported at start)."""
from __future__ import annotations

from pathlib import Path

import pytest

from kafkalite.authz.authorizer import ACLS_FILE
from kafkalite.embedded import Broker, BrokerStartError
from kafkalite.metadata.quotas import QUOTAS_FILE, QuotaStore, entity_of
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import CreateTopicsRequest

ACLS_ON = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}


def test_a_saved_quota_applies_to_the_first_request(tmp_path: Path) -> None:
    """controller_mutation_rate 1/s over 2 windows: the first topic of the very first request overdraws the
    bucket, the second is refused (as in test_quotas, where the quota is set by a request first)."""
    QuotaStore(tmp_path).apply([(entity_of([("client-id", "raw")]), [("controller_mutation_rate", 1.0, False)])])
    C = CreateTopicsRequest
    with Broker(data_dir=tmp_path, overrides={"quota.window.num": "2"}) as b, RawClient(b.host, b.port) as c:
        resp = c.request(C(topics=[C.CreatableTopic(name=n, num_partitions=3, replication_factor=1)
                                   for n in ("m1", "m2")], timeout_ms=5000), 7)
    assert [(t.name, t.error_code) for t in resp.topics] == [("m1", 0), ("m2", ErrorCode.THROTTLING_QUOTA_EXCEEDED)]


@pytest.mark.parametrize(("name", "overrides", "cause"), [
    (QUOTAS_FILE, {}, "cannot read the client quota file"),
    (ACLS_FILE, ACLS_ON, "cannot read the ACL file"),
])
def test_a_damaged_saved_file_still_fails_the_start(tmp_path: Path, name: str, overrides: dict[str, str],
                                                    cause: str) -> None:
    (tmp_path / name).write_text("{garbage")
    with pytest.raises(BrokerStartError, match=cause):
        Broker(data_dir=tmp_path, overrides=overrides).start()
