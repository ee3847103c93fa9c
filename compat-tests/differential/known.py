"""Differences between kafkalite and Apache Kafka 4.4 that are understood, each with its reason.

An entry is (case pattern, line pattern, reason): a differing line of a case whose name matches the first
pattern (``re.fullmatch``) and whose text matches the second (``re.search``) is explained by the reason.
``explain`` returns the reasons that apply and the lines no entry covers; the differential test fails on such
lines, so a new difference (or one that changed shape) is never absorbed silently. Entries marked FIX are
kafkalite bugs listed for fixing: remove the entry with the fix.
"""

from __future__ import annotations

import re

_CFG = r"(results|topics)\[[^\]]*\]\.configs"
# settings the reference broker's server.properties writes (harness/reference.py): STATIC_BROKER_CONFIG (4)
# there, DEFAULT_CONFIG (5) on a kafkalite started without a properties file
_HARNESS_SET = (r"(advertised\.listeners|listeners|log\.dirs|node\.id|broker\.id|process\.roles|"
                r"controller\.[a-z.]+|inter\.broker\.listener\.name|listener\.security\.protocol\.map|"
                r"offsets\.topic\.replication\.factor|transaction\.state\.log\.[a-z.]+|"
                r"share\.coordinator\.state\.topic\.[a-z.]+|group\.initial\.rebalance\.delay\.ms|"
                r"num\.network\.threads|num\.io\.threads)")

KNOWN: list[tuple[str, str, str]] = [
    # ApiVersions (the default profile, and --emulate-kafka 4.4)
    ("api_versions", r"^api_keys\[api_key=(\d+)\]\.min_version: 0 != [12]$",
     "the default profile (3.9+4.4) still serves the versions Kafka 4.0 removed (KIP-896) and the share group "
     "APIs' early-access v0, for older clients; `--emulate-kafka 4.4` advertises Kafka 4.4's minimums"),
    ("api_versions.*", r"^finalized_features_epoch",
     "the finalized features' epoch is the metadata offset that set them: a per-cluster value"),
    # groups
    ("share_group_heartbeat_join", r"^assignment\.topic_partitions: 1 items != 0 items$",
     "Kafka assigns a share partition only once its share-partition state is initialised: the first heartbeat "
     "starts InitializeShareGroupState with the share coordinator and answers with an empty assignment, a later "
     "one bumps the epoch and assigns. kafkalite's share state is local and initialised in the same step, so "
     "the first heartbeat already carries the assignment (clients take it from whichever heartbeat has it)"),
    ("share_fetch_not_a_member", r"^responses: 0 items != 1 items$",
     "a fetch that finds no records: Kafka lists a share partition with empty records once its state is "
     "initialised (asynchronously after the first heartbeat, so the answer depends on timing: this case is "
     "identical in most runs); kafkalite lists only partitions with records, an error or an acknowledgement "
     "result (clients treat both alike)"),
    # the metadata quorum
    ("describe_quorum", r"\.(high_watermark|log_end_offset): 0 != \d+$",
     "kafkalite keeps no KRaft metadata log (its metadata is a local store): the quorum's offsets are 0; "
     "Kafka's grow every 500 ms with no-op records"),
    ("describe_quorum", r"^nodes\[node_id=\d+\]\.listeners: only (kafkalite has name PLAINTEXT|Kafka has name "
     r"CONTROLLER)$",
     "kafkalite has no controller listener (no KRaft quorum to reach): its one node lists the listener it "
     "serves on"),
    # broker configs
    ("describe_configs_broker.*", r"\[name=" + _HARNESS_SET + r"\]\.(config_source|synonyms|value)",
     "set in the reference broker's server.properties (harness/reference.py), default on kafkalite"),
    ("describe_configs_broker", _CFG + r": only kafkalite has name (kafkalite\.[a-z.]+(, |$| \())+",
     "kafkalite's own settings (kafkalite.*): DescribeConfigs lists them with Kafka's"),
    ("describe_configs_broker", r"\[name=(queued\.max\.request\.bytes|sasl\.enabled\.mechanisms|"
     r"ssl\.(key|trust)store\.type)\]\.(value|synonyms)",
     "kafkalite's own defaults, documented in its config table: request memory is bounded "
     "(queued.max.request.bytes 256 MiB, Kafka: unbounded), no GSSAPI (sasl.enabled.mechanisms PLAIN and SCRAM), "
     "PEM key stores (no JKS)"),
]

# a note printed under a case in the report
CASE_NOTES: dict[str, str] = {
    "describe_configs_broker": "kafkalite lists Kafka 4.4's broker config table as the real broker describes it "
    "(names, types, defaults, read-only flags: `kafkalite/config/kafka_releases/kafka_4_4.py`, captured by "
    "`tools/capture_kafka.py`) with kafkalite's own values where it has its own.",
}


def explain(case: str, version: int, lines: list[str]) -> tuple[str, list[str]]:
    reasons: list[str] = []
    unexplained: list[str] = []
    for line in lines:
        for case_pat, line_pat, reason in KNOWN:
            if re.fullmatch(case_pat, case) and re.search(line_pat, line):
                if reason not in reasons:
                    reasons.append(reason)
                break
        else:
            unexplained.append(line)
    return " | ".join(reasons), unexplained
