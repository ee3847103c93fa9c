"""A confluent-kafka ShareConsumer in its own process, for tests that SIGKILL a consumer.

    python share_worker.py BOOTSTRAP TOPIC GROUP COUNT

Polls (explicit acknowledgement mode) until it holds COUNT records, acknowledges nothing, prints one JSON line
``{"offsets": [...]}`` and then keeps the records acquired — sleeping, without polling — until it is killed
(or 120 s pass)."""
from __future__ import annotations

import json
import sys
import time


def main() -> None:
    from confluent_kafka import ShareConsumer

    bootstrap, topic, group, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                       "share.acknowledgement.mode": "explicit", "max.poll.records": count})
    c.subscribe([topic])
    held: list[int] = []
    deadline = time.monotonic() + 60
    while len(held) < count and time.monotonic() < deadline:
        for m in c.poll(1.0):
            if m.error() is None:
                held.append(m.offset())
        if held:
            break
    print(json.dumps({"offsets": held}), flush=True)
    time.sleep(120)


if __name__ == "__main__":
    main()
