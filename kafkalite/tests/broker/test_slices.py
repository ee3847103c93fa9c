"""Handlers that walk client-chosen lists do it in slices (kafkalite.runtime.slices): other clients are answered while a
request of hundreds of thousands of partitions is being handled."""
from __future__ import annotations

import select
from collections.abc import Callable

import pytest
import trio
import trio.testing

from kafkalite.runtime.slices import Slices
from kafkalite.server import connection
from kafkalite.tests.broker.test_protocol import metadata
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_wire.messages import ApiVersionsRequest, DescribeLogDirsRequest

Raw = Callable[[], RawClient]
N = 300_000


def test_slices_yield_only_when_the_slice_is_used_up() -> None:
    work = Slices(slice_s=0.0)
    assert [work.due() for _ in range(128)] == [False] * 127 + [True]
    work = Slices(slice_s=3600.0)
    assert not any(work.due() for _ in range(10_000))
    work = Slices(slice_s=0.0, every=16)   # items that may open files: the clock is read more often
    assert [work.due() for _ in range(32)] == ([False] * 15 + [True]) * 2
    with pytest.raises(ValueError):
        Slices(every=10)

    async def main() -> None:
        with trio.testing.assert_checkpoints():
            await Slices().pause()

    trio.run(main)


def test_others_are_answered_while_a_huge_request_is_handled(raw: Raw, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connection, "OFFLOAD_BYTES", 1 << 40)
    """DescribeLogDirs naming one partition 300,000 times: a walk of a second or so. Another client doing round trips meanwhile gets many of them answered (one per slice at least);
    were the walk done in one go, the first would wait for its end. Decoding and encoding stay on the loop here
    (connection.OFFLOAD_BYTES raised), so the round trips counted are those the handler's slices let through."""
    setup = raw()
    metadata(setup, "slices")
    big = raw()
    big.sock.settimeout(120)
    body = DescribeLogDirsRequest(topics=[DescribeLogDirsRequest.DescribableLogDirTopic(
        topic="slices", partitions=[0] * N)])
    cid = big.send(body, 4)
    small = raw()
    hello = ApiVersionsRequest(client_software_name="t", client_software_version="1")
    small.request(hello, 3)
    round_trips = 0
    while not select.select([big.sock], [], [], 0)[0]:
        small.request(hello, 3)
        round_trips += 1
    got_cid, resp = big.recv(DescribeLogDirsRequest.API_KEY, 4)
    assert got_cid == cid and len(resp.results[0].topics[0].partitions) == N
    # done in one go, the walk would let at most the first round trip through; on a loaded machine (the test's
    # client shares the GIL with the broker's thread) 9 were counted once where 10+ are usual: 3 tells them apart
    assert round_trips >= 3, f"only {round_trips} round trips answered while the request was handled"
