"""Differential tests: the same raw request frames (built with kafkalite's own codec) sent to kafkalite and to
Apache Kafka 4.4, the decoded responses compared field by field after normalising what legitimately differs.

- ``wireconn``: one socket, frames in and out, responses decoded into plain trees (dicts, lists, scalars);
- ``normalise``: the rules for what may differ (ids, timestamps, throttle times, host/port, free order);
- ``cases``: the request sequences, each run on a fresh topic of its own on both brokers;
- ``run``: start both brokers, run the cases, classify each (identical / identical after normalising /
  differs) and write ``compat-tests/DIFFERENTIAL.md`` (``make differential``).
"""
