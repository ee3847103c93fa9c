#!/usr/bin/env python3
"""Moves modules of ``kafkalite/`` to their rooms and rewrites every reference to them. Idempotent.

The move table (``MOVES``, old dotted name -> new dotted name) is the record of the house reorganisation of
2026-11-27 (issue #23): which loose module went to which room. The script

1. ``git mv``-s each old file that still exists to its new place (history is kept), creating the room's
   ``__init__.py`` with a one-line docstring when the room is new;
2. rewrites every tracked text file, so code written against the old names (a branch started before the move)
   can be brought over by running it again:

   - ``from kafkalite.config import X`` / ``import kafkalite.server as s`` / ``kafkalite.connection.Connection``
     in code, strings and prose: a dotted name whose longest known prefix is an *old* module is renamed;
     one whose longest known prefix is a *new* module (``kafkalite.config.defs``) is left alone, which is what
     makes a second run change nothing even where an old name became a package (``kafkalite.config``);
   - ``from kafkalite import server`` -> ``from kafkalite.server import serve as server`` (and the same for any
     package: ``from kafkalite.coordinator import service``), splitting a multi-name import where needed;
   - file paths in prose (``kafkalite/config_defs.py`` -> ``kafkalite/config/defs.py``).

    python tools/move_modules.py            # move what is left, rewrite, list what changed
    python tools/move_modules.py --check    # change nothing; exit 1 (listing the files) if anything is left
"""
from __future__ import annotations

import argparse
import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: old module -> new module. A package's ``__init__`` moves as the package name (``kafkalite.replicas``).
MOVES: dict[str, str] = {
    # settings: names, types, defaults, validation, how DescribeConfigs shows them
    "kafkalite.config": "kafkalite.config.broker",
    "kafkalite.config_defs": "kafkalite.config.defs",
    "kafkalite.kafka_broker_configs": "kafkalite.config.kafka39",
    "kafkalite.topic_configs": "kafkalite.config.describe",
    "kafkalite.broker_describe": "kafkalite.config.broker_describe",
    "kafkalite.versions": "kafkalite.config.releases",
    "kafkalite.coordinator.share.reset": "kafkalite.config.share_reset",
    # what every broker of a cluster shares (Kafka's metadata log)
    "kafkalite.features": "kafkalite.metadata.features",
    "kafkalite.group_configs": "kafkalite.metadata.group_configs",
    "kafkalite.cluster.placement": "kafkalite.metadata.partitions",
    "kafkalite.quotas.store": "kafkalite.metadata.quotas",
    # process and event-loop hygiene
    "kafkalite.supervisor": "kafkalite.runtime.supervisor",
    "kafkalite.loopthread": "kafkalite.runtime.loopthread",
    "kafkalite.loopwatch": "kafkalite.runtime.loopwatch",
    "kafkalite.slices": "kafkalite.runtime.slices",
    "kafkalite.bulk": "kafkalite.runtime.gcpolicy",
    "kafkalite.malloc_tuning": "kafkalite.runtime.malloc",
    # the network: sockets, frames, dispatch, drain
    "kafkalite.server": "kafkalite.server.serve",
    "kafkalite.connection": "kafkalite.server.connection",
    "kafkalite.request_memory": "kafkalite.server.request_memory",
    "kafkalite.security.tls": "kafkalite.server.tls",
    # what the small HTTP servers share
    "kafkalite.httpserve": "kafkalite.httpd.server",
    # one file per Kafka API, and what they share
    "kafkalite.error_response": "kafkalite.handlers.error_response",
    "kafkalite.admin_limits": "kafkalite.handlers.limits",
    # this broker's own state
    "kafkalite.replicas": "kafkalite.state.placement",
    # groups and transactions
    "kafkalite.groupview": "kafkalite.coordinator.views",
    "kafkalite.coordinator.coordinator": "kafkalite.coordinator.classic.coordinator",
    "kafkalite.coordinator.group": "kafkalite.coordinator.classic.group",
    "kafkalite.coordinator.offsets": "kafkalite.coordinator.classic.offsets",
    "kafkalite.coordinator.loader": "kafkalite.coordinator.classic.loader",
    "kafkalite.coordinator.records": "kafkalite.coordinator.classic.records",
    "kafkalite.coordinator.service": "kafkalite.coordinator.classic.service",
    "kafkalite.coordinator.config": "kafkalite.coordinator.common.config",
    "kafkalite.coordinator.errors": "kafkalite.coordinator.common.errors",
    "kafkalite.coordinator.keys": "kafkalite.coordinator.common.keys",
    "kafkalite.coordinator.internal_topics": "kafkalite.coordinator.common.internal_topics",
    "kafkalite.coordinator.txn_coordinator": "kafkalite.coordinator.txn.coordinator",
    "kafkalite.coordinator.txn_records": "kafkalite.coordinator.txn.records",
    "kafkalite.coordinator.transactions": "kafkalite.coordinator.txn.service",
    "kafkalite.coordinator.consumer.classic": "kafkalite.coordinator.consumer.classic_members",
    # every `kafkalite <command>`
    "kafkalite.security.certs": "kafkalite.cli.certs",
    "kafkalite.faults.cli": "kafkalite.cli.fault",
    # merged into the leaf of the imports (StartupError, describe)
    "kafkalite.startup_errors": "kafkalite.errors",
    # the synchronous client on the project's codec
    "kafkalite.tools.wireclient": "kafkalite.client.wire",
    "kafkalite.tools.shareadmin": "kafkalite.client.shareadmin",
    # the tests, by tier (kafkalite/tests/conftest.py marks each test by its directory): unit (pure), broker
    # (an embedded broker over real sockets), clients (real client libraries in-process), e2e (subprocesses),
    # support (helpers that are not tests)
    "kafkalite.tests.test_admin_fuzz": "kafkalite.tests.broker.test_admin_fuzz",
    "kafkalite.tests.test_connection_quotas": "kafkalite.tests.broker.test_connection_quotas",
    "kafkalite.tests.test_producer_ids": "kafkalite.tests.broker.test_producer_ids",
    "kafkalite.tests.test_reserved_topic_names": "kafkalite.tests.broker.test_reserved_topic_names",
    "kafkalite.tests.test_slow_senders": "kafkalite.tests.broker.test_slow_senders",
    "kafkalite.tests.test_admin": "kafkalite.tests.broker.test_admin",
    "kafkalite.tests.test_admin_limits": "kafkalite.tests.broker.test_admin_limits",
    "kafkalite.tests.test_authz_admin_apis": "kafkalite.tests.broker.test_authz_admin_apis",
    "kafkalite.tests.test_authz_broker": "kafkalite.tests.broker.test_authz_broker",
    "kafkalite.tests.test_authz_share_apis": "kafkalite.tests.broker.test_authz_share_apis",
    "kafkalite.tests.test_broker_describe": "kafkalite.tests.broker.test_broker_describe",
    "kafkalite.tests.test_cluster": "kafkalite.tests.broker.test_cluster",
    "kafkalite.tests.test_config_defs": "kafkalite.tests.broker.test_config_defs",
    "kafkalite.tests.test_configs_protocol": "kafkalite.tests.broker.test_configs_protocol",
    "kafkalite.tests.test_connection_send": "kafkalite.tests.broker.test_connection_send",
    "kafkalite.tests.test_consumer_group_handlers": "kafkalite.tests.broker.test_consumer_group_handlers",
    "kafkalite.tests.test_control": "kafkalite.tests.broker.test_control",
    "kafkalite.tests.test_coordinator_containment": "kafkalite.tests.broker.test_coordinator_containment",
    "kafkalite.tests.test_coordinator_kafka_datadir": "kafkalite.tests.broker.test_coordinator_kafka_datadir",
    "kafkalite.tests.test_coordinator_keys": "kafkalite.tests.broker.test_coordinator_keys",
    "kafkalite.tests.test_coordinator_restart": "kafkalite.tests.broker.test_coordinator_restart",
    "kafkalite.tests.test_disk_faults_broker": "kafkalite.tests.broker.test_disk_faults_broker",
    "kafkalite.tests.test_embedded": "kafkalite.tests.broker.test_embedded",
    "kafkalite.tests.test_emulate_4x": "kafkalite.tests.broker.test_emulate_4x",
    "kafkalite.tests.test_error_response": "kafkalite.tests.broker.test_error_response",
    "kafkalite.tests.test_faults": "kafkalite.tests.broker.test_faults",
    "kafkalite.tests.test_features": "kafkalite.tests.broker.test_features",
    "kafkalite.tests.test_fuzz_findings": "kafkalite.tests.broker.test_fuzz_findings",
    "kafkalite.tests.test_group_configs": "kafkalite.tests.broker.test_group_configs",
    "kafkalite.tests.test_group_containment": "kafkalite.tests.broker.test_group_containment",
    "kafkalite.tests.test_group_handlers": "kafkalite.tests.broker.test_group_handlers",
    "kafkalite.tests.test_housekeeping": "kafkalite.tests.broker.test_housekeeping",
    "kafkalite.tests.test_internal_topics": "kafkalite.tests.broker.test_internal_topics",
    "kafkalite.tests.test_kafka_datadir": "kafkalite.tests.broker.test_kafka_datadir",
    "kafkalite.tests.test_lazy_state": "kafkalite.tests.broker.test_lazy_state",
    "kafkalite.tests.test_log_dirs_bounded": "kafkalite.tests.broker.test_log_dirs_bounded",
    "kafkalite.tests.test_loopthread": "kafkalite.tests.broker.test_loopthread",
    "kafkalite.tests.test_loopwatch": "kafkalite.tests.broker.test_loopwatch",
    "kafkalite.tests.test_metrics": "kafkalite.tests.broker.test_metrics",
    "kafkalite.tests.test_produce_fuzz": "kafkalite.tests.broker.test_produce_fuzz",
    "kafkalite.tests.test_protocol": "kafkalite.tests.broker.test_protocol",
    "kafkalite.tests.test_quotas": "kafkalite.tests.broker.test_quotas",
    "kafkalite.tests.test_replication_admin": "kafkalite.tests.broker.test_replication_admin",
    "kafkalite.tests.test_request_memory": "kafkalite.tests.broker.test_request_memory",
    "kafkalite.tests.test_retention_broker": "kafkalite.tests.broker.test_retention_broker",
    "kafkalite.tests.test_sasl": "kafkalite.tests.broker.test_sasl",
    "kafkalite.tests.test_share_cluster": "kafkalite.tests.broker.test_share_cluster",
    "kafkalite.tests.test_share_handlers": "kafkalite.tests.broker.test_share_handlers",
    "kafkalite.tests.test_share_membership": "kafkalite.tests.broker.test_share_membership",
    "kafkalite.tests.test_share_reset": "kafkalite.tests.broker.test_share_reset",
    "kafkalite.tests.test_slices": "kafkalite.tests.broker.test_slices",
    "kafkalite.tests.test_slices_requests": "kafkalite.tests.broker.test_slices_requests",
    "kafkalite.tests.test_supervisor": "kafkalite.tests.broker.test_supervisor",
    "kafkalite.tests.test_tls": "kafkalite.tests.broker.test_tls",
    "kafkalite.tests.test_transaction_handlers": "kafkalite.tests.broker.test_transaction_handlers",
    "kafkalite.tests.test_txn_offset_order": "kafkalite.tests.broker.test_txn_offset_order",
    "kafkalite.tests.test_update_features": "kafkalite.tests.broker.test_update_features",
    "kafkalite.tests.test_validation_produce": "kafkalite.tests.broker.test_validation_produce",
    "kafkalite.tests.test_registry_http": "kafkalite.tests.broker.test_registry_http",
    "kafkalite.tests.test_registry_avro": "kafkalite.tests.unit.test_registry_avro",
    "kafkalite.tests.test_registry_core": "kafkalite.tests.unit.test_registry_core",
    "kafkalite.tests.test_registry_jsonschema": "kafkalite.tests.unit.test_registry_jsonschema",
    "kafkalite.tests.test_registry_records": "kafkalite.tests.unit.test_registry_records",
    "kafkalite.tests.test_txn_offset_commit_validation": "kafkalite.tests.unit.test_txn_offset_commit_validation",
    "kafkalite.tests.test_cluster_shared_metadata": "kafkalite.tests.broker.test_cluster_shared_metadata",
    "kafkalite.tests.test_fail_loudly": "kafkalite.tests.broker.test_fail_loudly",
    "kafkalite.tests.test_docs_links": "kafkalite.tests.unit.test_docs_links",
    "kafkalite.tests.test_docs_reference": "kafkalite.tests.unit.test_docs_reference",
    "kafkalite.tests.test_clients_smoke": "kafkalite.tests.clients.test_clients_smoke",
    "kafkalite.tests.test_console_api": "kafkalite.tests.clients.test_console_api",
    "kafkalite.tests.test_console_browser": "kafkalite.tests.clients.test_console_browser",
    "kafkalite.tests.test_console_events": "kafkalite.tests.clients.test_console_events",
    "kafkalite.tests.test_group_topic_delete": "kafkalite.tests.clients.test_group_topic_delete",
    "kafkalite.tests.test_group_types_view": "kafkalite.tests.clients.test_group_types_view",
    "kafkalite.tests.test_spark_batch": "kafkalite.tests.clients.test_spark_batch",
    "kafkalite.tests.test_spark_eos_security": "kafkalite.tests.clients.test_spark_eos_security",
    "kafkalite.tests.test_spark_examples": "kafkalite.tests.clients.test_spark_examples",
    "kafkalite.tests.test_spark_options": "kafkalite.tests.unit.test_spark_options",
    "kafkalite.tests.test_spark_sink": "kafkalite.tests.clients.test_spark_sink",
    "kafkalite.tests.test_spark_stream": "kafkalite.tests.clients.test_spark_stream",
    "kafkalite.tests.test_tools_acls": "kafkalite.tests.clients.test_tools_acls",
    "kafkalite.tests.test_tools_common": "kafkalite.tests.clients.test_tools_common",
    "kafkalite.tests.test_tools_configs": "kafkalite.tests.clients.test_tools_configs",
    "kafkalite.tests.test_tools_groups": "kafkalite.tests.clients.test_tools_groups",
    "kafkalite.tests.test_tools_share_groups": "kafkalite.tests.clients.test_tools_share_groups",
    "kafkalite.tests.test_tools_topics": "kafkalite.tests.clients.test_tools_topics",
    "kafkalite.tests.spark_eos_crash": "kafkalite.tests.e2e.spark_eos_crash",
    "kafkalite.tests.test_cli": "kafkalite.tests.e2e.test_cli",
    "kafkalite.tests.test_fd_limit": "kafkalite.tests.e2e.test_fd_limit",
    "kafkalite.tests.test_fuzz_protocol": "kafkalite.tests.e2e.test_fuzz_protocol",
    "kafkalite.tests.test_install_wheel": "kafkalite.tests.e2e.test_install_wheel",
    "kafkalite.tests.test_lazy_start": "kafkalite.tests.e2e.test_lazy_start",
    "kafkalite.tests.test_run_and_image": "kafkalite.tests.e2e.test_run_and_image",
    "kafkalite.tests.test_spark_eos": "kafkalite.tests.e2e.test_spark_eos",
    "kafkalite.tests.test_startup_errors": "kafkalite.tests.e2e.test_startup_errors",
    "kafkalite.tests.chromium": "kafkalite.tests.support.chromium",
    "kafkalite.tests.console_helpers": "kafkalite.tests.support.console_helpers",
    "kafkalite.tests.fdlimit": "kafkalite.tests.support.fdlimit",
    "kafkalite.tests.pipes": "kafkalite.tests.support.pipes",
    "kafkalite.tests.procstat": "kafkalite.tests.support.procstat",
    "kafkalite.tests.rawclient": "kafkalite.tests.support.rawclient",
    "kafkalite.tests.saslclient": "kafkalite.tests.support.saslclient",
    "kafkalite.tests.tools_helpers": "kafkalite.tests.support.tools_helpers",
    "kafkalite.tests.validation_corpus": "kafkalite.tests.support.validation_corpus",
    "kafkalite.tests.test_authz_authorizer": "kafkalite.tests.unit.test_authz_authorizer",
    "kafkalite.tests.test_bulk": "kafkalite.tests.unit.test_bulk",
    "kafkalite.tests.test_config": "kafkalite.tests.unit.test_config",
    "kafkalite.tests.test_consumer_group_migration": "kafkalite.tests.unit.test_consumer_group_migration",
    "kafkalite.tests.test_consumer_groups": "kafkalite.tests.unit.test_consumer_groups",
    "kafkalite.tests.test_coordinator_records": "kafkalite.tests.unit.test_coordinator_records",
    "kafkalite.tests.test_fetch_trim": "kafkalite.tests.unit.test_fetch_trim",
    "kafkalite.tests.test_group_coordinator": "kafkalite.tests.unit.test_group_coordinator",
    "kafkalite.tests.test_group_properties": "kafkalite.tests.unit.test_group_properties",
    "kafkalite.tests.test_group_service": "kafkalite.tests.unit.test_group_service",
    "kafkalite.tests.test_house": "kafkalite.tests.unit.test_house",
    "kafkalite.tests.test_layout": "kafkalite.tests.unit.test_layout",
    "kafkalite.tests.test_malloc_tuning": "kafkalite.tests.unit.test_malloc_tuning",
    "kafkalite.tests.test_rename_packages": "kafkalite.tests.unit.test_rename_packages",
    "kafkalite.tests.test_share_group": "kafkalite.tests.unit.test_share_group",
    "kafkalite.tests.test_share_manager": "kafkalite.tests.unit.test_share_manager",
    "kafkalite.tests.test_share_partition": "kafkalite.tests.unit.test_share_partition",
    "kafkalite.tests.test_share_records": "kafkalite.tests.unit.test_share_records",
    "kafkalite.tests.test_share_service": "kafkalite.tests.unit.test_share_service",
    "kafkalite.tests.test_transactions": "kafkalite.tests.unit.test_transactions",
    "kafkalite.tests.test_validation": "kafkalite.tests.unit.test_validation",
    "kafkalite.tests.test_validation_threads": "kafkalite.tests.unit.test_validation_threads",
}

#: names that were attributes of an old module and are now also a submodule of the package of that name:
#: ``from kafkalite.server import serve`` meant the function; it is written ``from kafkalite.server.serve import
#: serve`` now
OLD_ATTRS: dict[str, set[str]] = {"kafkalite.server": {"serve"}}

#: a docstring for each room the moves create
ROOMS: dict[str, str] = {
    "kafkalite.config": "Settings: names, types, defaults, validation, and how DescribeConfigs shows them.",
    "kafkalite.runtime": "Process and event-loop hygiene (supervision, loop threads, stall probes, GC and malloc "
                         "policy); no Kafka semantics.",
    "kafkalite.server": "The network: listeners, connections, frames, dispatch to handlers, graceful drain.",
    "kafkalite.httpd": "What the small HTTP servers (console, metrics, control API) share.",
    "kafkalite.coordinator.classic": "Kafka's classic consumer-group protocol and committed offsets: a pure "
                                     "state machine (``coordinator``) and its trio service.",
    "kafkalite.coordinator.common": "What every coordinator shares: settings, error codes, keys, the internal "
                                    "topics they keep their state in.",
    "kafkalite.coordinator.txn": "The transaction coordinator: a pure state machine, its "
                                 "``__transaction_state`` records, and its trio service.",
    "kafkalite.client": "A small synchronous Kafka client on the project's own codec (tools and tests use it).",
    "kafkalite.tests.unit": "Pure tests: no socket, no thread of their own, no subprocess; MockClock where time matters.",
    "kafkalite.tests.broker": "An embedded broker in this process over real sockets, driven by the raw codec client.",
    "kafkalite.tests.clients": "Real client libraries in this process: confluent-kafka, kafka-python, the tools, the "
                               "console in chromium, Spark.",
    "kafkalite.tests.e2e": "Subprocesses: the CLI, a wheel in a fresh venv, the image's entry points, a fuzz slice, "
                           "Spark against a broker process.",
    "kafkalite.tests.support": "Helpers the tests share (raw and SASL clients, chromium, process probes); not tests.",
}

SKIP = {"tools/move_modules.py", "tools/rename_packages.py", "kafkalite/tests/test_rename_packages.py",
        "kafkalite/tests/test_house.py", "kafkalite/tests/unit/test_rename_packages.py",
        "kafkalite/tests/unit/test_house.py"}
TEXT_SUFFIXES = {".py", ".md", ".toml", ".cfg", ".ini", ".txt", ".sh", ".yml", ".yaml", ".rst", ".js", ".java"}
TEXT_NAMES = {"Makefile", "Dockerfile", "run"}


def _path_of(module: str, package: bool) -> Path:
    parts = module.split(".")
    return ROOT.joinpath(*parts, "__init__.py") if package else ROOT.joinpath(*parts[:-1], parts[-1] + ".py")


#: old modules that were packages (their ``__init__.py`` moves to a plain module)
_PACKAGE_MOVES = {"kafkalite.replicas"}


def _file_rel(module: str, package: bool) -> str:
    return str(_path_of(module, package).relative_to(ROOT))


#: modules that keep their name but become a package (their file moves into the package's ``__init__.py``)
BECOME_PACKAGES = ("kafkalite.state",)


def _new_modules() -> set[str]:
    """Every module and package name the new layout has: the targets, their parent packages, and every module of
    a package that an old module's name became (``kafkalite.config.addresses``)."""
    names: set[str] = set()
    for pkg in {m for m in MOVES if _path_of(m, True).exists()} | set(BECOME_PACKAGES):
        base = ROOT.joinpath(*pkg.split("."))
        for path in base.rglob("*.py"):
            rel = path.relative_to(ROOT).with_suffix("").parts
            names.add(".".join(rel[:-1] if rel[-1] == "__init__" else rel))
    for new in MOVES.values():
        parts = new.split(".")
        for i in range(1, len(parts) + 1):
            names.add(".".join(parts[:i]))
    return names


NEW = _new_modules()
# a dotted kafkalite name, not preceded by a word character, '.', '/' or '-'
_DOTTED = re.compile(r"(?<![\w./-])kafkalite(?:\.[A-Za-z_]\w*)+")
_FILE_PATHS = {
    _file_rel(old, old in _PACKAGE_MOVES): _file_rel(new, False)
    for old, new in MOVES.items()
}
_FILE_PATHS.update({_file_rel(m, False): _file_rel(m, True) for m in BECOME_PACKAGES})
_PATH_RE = re.compile(r"(?<![\w./-])(" + "|".join(re.escape(p) for p in sorted(_FILE_PATHS, key=len,
                                                                                      reverse=True)) + r")(?![\w/])")


def rename(dotted: str) -> str:
    """The new name of a dotted reference (a module, or an attribute of one), or the same name."""
    parts = dotted.split(".")
    old_len = new_len = 0
    for i in range(1, len(parts) + 1):
        prefix = ".".join(parts[:i])
        if prefix in MOVES:
            old_len = i
        if prefix in NEW:
            new_len = i
    if old_len == 0 or new_len > old_len:
        return dotted
    if old_len == len(parts) and dotted in NEW:
        return dotted   # ``kafkalite.server`` alone: the package now (its old module was moved in 2026-11)
    head = ".".join(parts[:old_len])
    return ".".join([MOVES[head], *parts[old_len:]])


def rewrite_text(text: str) -> str:
    text = _DOTTED.sub(lambda m: rename(m.group(0)), text)
    return _PATH_RE.sub(lambda m: _FILE_PATHS[m.group(1)], text)


def _from_imports(src: str) -> list[tuple[int, int, str]]:
    """(first line, last line, text) of every ``from kafkalite... import`` statement, rewritten. These lines are
    kept from the plain-text rule: in ``from kafkalite.server import connection`` the package ``kafkalite.server``
    is new, while in ``from kafkalite.server import serve`` (before the move) it is the old module."""
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return []
    lines = src.splitlines(keepends=True)
    out_edits = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or not node.module or node.level:
            continue
        if not (node.module == "kafkalite" or node.module.startswith("kafkalite.")):
            continue
        if all(f"{node.module}.{a.name}" in NEW and (a.asname or a.name) not in OLD_ATTRS.get(node.module, ())
               for a in node.names):
            module = node.module   # submodules of a package of the new layout
        else:
            module = MOVES.get(node.module) or rename(node.module)
        indent = re.match(r"[ \t]*", lines[node.lineno - 1]).group(0)
        moved = [a for a in node.names if f"{module}.{a.name}" in MOVES]
        rest = [a for a in node.names if a not in moved]
        out = []
        if rest:
            if module == node.module and not moved:
                text = "".join(lines[node.lineno - 1:node.end_lineno])
                out_edits.append((node.lineno, node.end_lineno, text))
                continue
            names = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in rest)
            out.append(f"{indent}from {module} import {names}")
        for a in moved:
            parent, leaf = MOVES[f"{module}.{a.name}"].rsplit(".", 1)
            bound = a.asname or a.name
            out.append(f"{indent}from {parent} import {leaf}" + (f" as {bound}" if bound != leaf else ""))
        tail = lines[node.end_lineno - 1][node.end_col_offset:]
        out_edits.append((node.lineno, node.end_lineno, "\n".join(out) + tail))
    return out_edits


def rewrite_python(src: str) -> str:
    imports = sorted(_from_imports(src))
    lines = src.splitlines(keepends=True)
    out: list[str] = []
    pos = 0   # next line index (0-based) not yet emitted
    for first, last, text in imports:
        if first - 1 < pos:
            continue   # nested in one already handled (cannot happen for imports, but stay safe)
        out.append(rewrite_text("".join(lines[pos:first - 1])))
        out.append(text if text.endswith("\n") or last == len(lines) else text + "\n")
        pos = last
    out.append(rewrite_text("".join(lines[pos:])))
    return "".join(out)


def rewrite_file(rel: str, text: str) -> str:
    return rewrite_python(text) if rel.endswith(".py") else rewrite_text(text)


def tracked_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    files = []
    for rel in out.decode().split("\0"):
        p = ROOT / rel
        if not rel or rel in SKIP or p.is_symlink() or not p.is_file():
            continue
        if p.suffix in TEXT_SUFFIXES or p.name in TEXT_NAMES:
            files.append(rel)
    return files


def pending_moves() -> list[tuple[Path, Path]]:
    """(old file, new file) for each move not yet made."""
    todo = [(_path_of(m, False), _path_of(m, True)) for m in BECOME_PACKAGES if _path_of(m, False).exists()]
    for old, new in MOVES.items():
        src = _path_of(old, old in _PACKAGE_MOVES)
        dst = _path_of(new, False)
        if src.exists() and not dst.exists():
            todo.append((src, dst))
    return todo


def make_moves(todo: list[tuple[Path, Path]]) -> None:
    for src, dst in todo:
        dst.parent.mkdir(parents=True, exist_ok=True)
        init = dst.parent / "__init__.py"
        if not init.exists() and init != dst:
            pkg = ".".join(dst.parent.relative_to(ROOT).parts)
            init.write_text(f'"""{ROOMS.get(pkg, pkg)}"""\n', encoding="utf-8")
            subprocess.run(["git", "add", str(init)], cwd=ROOT, check=True)
        subprocess.run(["git", "mv", str(src), str(dst)], cwd=ROOT, check=True)
        print(f"moved {src.relative_to(ROOT)} -> {dst.relative_to(ROOT)}")
    # a package whose __init__ moved away and that is left with nothing else
    for old in _PACKAGE_MOVES:
        d = ROOT.joinpath(*old.split("."))
        if d.is_dir() and not any(p for p in d.iterdir() if p.name != "__pycache__"):
            shutil.rmtree(d)


def _sort_imports(files: list[str]) -> None:
    ruff = Path(sys.executable).with_name("ruff")
    cmd = [str(ruff)] if ruff.exists() else [sys.executable, "-m", "ruff"]
    subprocess.run([*cmd, "check", "--select", "I001", "--fix", "--force-exclude", "--quiet", *files], cwd=ROOT,
                   capture_output=True, text=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file would change")
    args = ap.parse_args(argv)
    todo = pending_moves()
    if args.check:
        for src, dst in todo:
            print(f"would move {src.relative_to(ROOT)} -> {dst.relative_to(ROOT)}")
    else:
        make_moves(todo)
    changed = []
    for rel in tracked_files():
        path = ROOT / rel
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError):
            continue
        new = rewrite_file(rel, text) if "kafkalite" in text else text
        if new != text:
            changed.append(rel)
            if not args.check:
                path.write_text(new, encoding="utf-8")
    py = [rel for rel in changed if rel.endswith(".py")]
    if py and not args.check:
        _sort_imports(py)
    for rel in changed:
        print(("would rewrite " if args.check else "rewrote ") + rel)
    if not args.check:
        print(f"{len(todo)} files moved, {len(changed)} files rewritten")
    return 1 if (args.check and (changed or todo)) else 0


if __name__ == "__main__":
    sys.exit(main())
