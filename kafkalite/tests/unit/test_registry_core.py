"""The pure registry (kafkalite.registry.core): ids, versions, deletes, modes and configs as Confluent keeps them,
and replay: a registry rebuilt from the records another one wrote has the same state."""
from __future__ import annotations

import json

import pytest

from kafkalite.registry import records as R
from kafkalite.registry.core import Registry, RegistryError


def rec(name: str, *fields: tuple[str, object], **extra: object) -> dict[str, str]:
    body = {"type": "record", "name": name,
            "fields": [{"name": f, "type": t} if not isinstance(t, tuple) else {"name": f, "type": t[0], "default": t[1]}
                       for f, t in fields]}
    return {"schema": json.dumps(body), **extra}  # type: ignore[dict-item]


class Log:
    def __init__(self) -> None:
        self.records: list[tuple[bytes, bytes | None]] = []
        self.fail = False

    def __call__(self, records: list[tuple[bytes, bytes | None]]) -> None:
        if self.fail:
            raise OSError("disk full")
        self.records += records


def fresh() -> tuple[Registry, Log]:
    log = Log()
    return Registry(log), log


def replayed(log: Log) -> Registry:
    again = Registry()
    for k, v in log.records:
        again.apply(k, v)
    return again


def err(fn, *args, **kwargs) -> RegistryError:  # type: ignore[no-untyped-def]
    with pytest.raises(RegistryError) as info:
        fn(*args, **kwargs)
    return info.value


def test_ids_count_up_and_a_known_schema_keeps_its_id_in_another_subject() -> None:
    reg, log = fresh()
    assert reg.register("a", rec("A", ("x", "int"))) == {"id": 1}
    assert reg.register("b", rec("B", ("x", "int"))) == {"id": 2}
    assert reg.register("c", rec("A", ("x", "int"))) == {"id": 1}    # same schema, other subject: same id
    assert reg.register("a", rec("A", ("x", "int"))) == {"id": 1}    # already there: no new version
    assert [v.version for v in reg.live("a")] == [1]
    assert len(log.records) == 3
    k, v = log.records[0]
    assert json.loads(k) == {"keytype": "SCHEMA", "subject": "a", "version": 1, "magic": 1}
    assert v is not None and json.loads(v)["id"] == 1


def test_contexts_have_their_own_ids() -> None:
    reg, _ = fresh()
    reg.register("a", rec("A", ("x", "int")))
    assert reg.register(":.other:a", rec("A", ("x", "int"))) == {"id": 1}
    assert reg.register(":.other:b", rec("B", ("x", "int"))) == {"id": 2}
    assert reg.by_schema_id(2, ":.other:anything").subject == ":.other:b"
    assert err(reg.by_schema_id, 2).code == 40403


def test_replay_rebuilds_everything_and_the_next_id_follows_the_highest() -> None:
    reg, log = fresh()
    reg.register("a", rec("A", ("x", "int")))
    reg.register("a", rec("A", ("x", "int"), ("y", ("string", "d"))))
    reg.set_config("a", {"compatibility": "full"})
    reg.set_mode("b", "READONLY")
    reg.delete_version("a", "1")
    again = replayed(log)
    assert again.subjects() == ["a"] and [v.version for v in again.live("a")] == [2]
    assert again.all_versions("a")[0].deleted
    assert again.get_config("a") == {"compatibilityLevel": "FULL"}
    assert again.get_mode("b") == {"mode": "READONLY"}
    again._write = Log()
    assert again.register("z", rec("Z", ("q", "int"))) == {"id": 3}


def test_a_failed_write_changes_nothing() -> None:
    reg, log = fresh()
    log.fail = True
    e = err(reg.register, "a", rec("A", ("x", "int")))
    assert (e.status, e.code) == (500, 50001)
    assert reg.subjects() == [] and reg.max_id == {}


def test_versions_continue_after_soft_delete_and_permanent_delete_needs_soft_first() -> None:
    reg, log = fresh()
    reg.register("s", rec("A", ("x", "int")))
    reg.register("s", rec("A", ("x", "int"), ("y", ("int", 0))))
    assert err(reg.delete_version, "s", "2", permanent=True).code == 40407
    assert reg.delete_version("s", "2") == 2
    assert err(reg.delete_version, "s", "2").code == 40406
    assert err(reg.version, "s", "2").code == 40402
    assert reg.version("s", "2", deleted=True).deleted
    assert reg.delete_version("s", "2", permanent=True) == 2
    assert log.records[-1] == (R.encode_key(R.schema_key("s", 2)), None)   # a tombstone
    assert reg.register("s", rec("A", ("x", "int"), ("z", ("int", 1)))) == {"id": 3}
    assert [v.version for v in reg.live("s")] == [1, 2]


def test_subject_soft_then_permanent_delete() -> None:
    reg, log = fresh()
    reg.register("s", rec("A", ("x", "int")))
    reg.set_config("s", {"compatibility": "NONE"})
    assert err(reg.delete_subject, "s", permanent=True).code == 40405
    assert reg.delete_subject("s") == [1]
    k, v = log.records[-1]
    assert json.loads(k) == {"keytype": "DELETE_SUBJECT", "subject": "s", "magic": 0}
    assert json.loads(v or b"") == {"subject": "s", "version": 1}
    assert reg.subjects() == [] and reg.subjects(deleted=True) == ["s"]
    assert err(reg.delete_subject, "s").code == 40404
    assert err(reg.version, "s", "latest").code == 40401
    assert reg.delete_subject("s", permanent=True) == [1]
    assert reg.subjects(deleted=True) == [] and "s" not in reg.configs
    assert err(reg.delete_subject, "s").code == 40401
    assert replayed(log).versions == {}


def test_registering_again_after_soft_delete_tombstones_the_old_version_with_that_id() -> None:
    reg, log = fresh()
    reg.register("s", rec("A", ("x", "int")))
    reg.delete_subject("s")
    assert reg.register("s", rec("A", ("x", "int"))) == {"id": 1}
    assert (R.encode_key(R.schema_key("s", 1)), None) in log.records
    assert [v.version for v in reg.all_versions("s")] == [2]


def test_bad_versions_and_unknown_subjects() -> None:
    reg, _ = fresh()
    reg.register("s", rec("A", ("x", "int")))
    for bad in ("0", "abc", "-2", "2147483648"):
        assert err(reg.version, "s", bad).code == 42202
    assert reg.version("s", "-1").version == 1 and reg.version("s", "latest").version == 1
    assert err(reg.version, "nope", "1").code == 40401
    assert err(reg.version, "s", "9").code == 40402


def test_invalid_schemas_are_42201() -> None:
    reg, _ = fresh()
    for body in ({"schema": "{"}, {"schema": ""}, {}, {"schema": '{"type":"record","name":"A"}'},
                 {"schema": '"int"', "schemaType": "XML"}, {"schema": '{"type":"nope"}'},
                 {"schema": '"int"', "references": "x"}):
        e = err(reg.register, "s", body)
        assert (e.status, e.code) == (422, 42201), body
    assert err(reg.register, "", {"schema": '"int"'}).code == 42208


def test_config_levels_and_defaults() -> None:
    reg, _ = fresh()
    assert reg.get_config(None) == {"compatibilityLevel": "BACKWARD"}
    assert err(reg.get_config, "s").code == 40408
    assert reg.get_config("s", default_to_global=True) == {"compatibilityLevel": "BACKWARD"}
    assert err(reg.set_config, None, {"compatibility": "SIDEWAYS"}).code == 42203
    assert reg.set_config(None, {"compatibility": "forward_transitive"}) == {"compatibility": "FORWARD_TRANSITIVE"}
    assert reg.get_config(None)["compatibilityLevel"] == "FORWARD_TRANSITIVE"
    assert reg.delete_config(None) == {"compatibilityLevel": "FORWARD_TRANSITIVE"}
    assert reg.get_config(None) == {"compatibilityLevel": "BACKWARD"}


def test_incompatible_is_409_and_none_lets_anything_through() -> None:
    reg, _ = fresh()
    reg.register("s", rec("A", ("x", "int")))
    e = err(reg.register, "s", rec("A", ("x", "string")))
    assert (e.status, e.code) == (409, 409) and "TYPE_MISMATCH" in e.message
    reg.set_config("s", {"compatibility": "NONE"})
    assert reg.register("s", rec("A", ("x", "string"))) == {"id": 2}


def test_modes_readonly_and_import_with_explicit_ids() -> None:
    reg, log = fresh()
    reg.register("s", rec("A", ("x", "int")))
    assert err(reg.set_mode, None, "SIDEWAYS").code == 42204
    assert err(reg.set_mode, None, "IMPORT").code == 42205            # not empty: needs force
    reg.set_mode("s", "READONLY")
    assert err(reg.register, "s", rec("A", ("x", "int"), ("y", ("int", 0)))).code == 42205
    assert err(reg.delete_subject, "s").code == 42205
    reg.delete_mode("s")
    assert err(reg.register, "t", {**rec("T", ("x", "int")), "id": 100}).code == 42205   # not in import mode
    reg.set_mode("imp", "IMPORT")
    assert reg.register("imp", {**rec("I", ("x", "int")), "id": 100, "version": 5}) == {"id": 100}
    assert reg.version("imp", "5").id == 100
    assert err(reg.register, "imp", {**rec("J", ("x", "int")), "id": 1, "version": 6}).code == 42205  # id 1 is A
    assert reg.register("imp", {**rec("I2", ("x", "long")), "id": 101, "version": 6}) == {"id": 101}  # no compat check
    reg.delete_mode("imp")
    assert reg.register("new", rec("N", ("x", "int"))) == {"id": 102}   # after the highest id seen
    assert replayed(log).version("imp", "5").id == 100


def test_references_resolve_and_block_deletes() -> None:
    reg, _ = fresh()
    reg.register("addr", {"schema": json.dumps({"type": "record", "name": "Address", "namespace": "com.acme",
                                                "fields": [{"name": "street", "type": "string"}]})})
    body = {"schema": json.dumps({"type": "record", "name": "Person", "namespace": "com.acme",
                                  "fields": [{"name": "home", "type": "Address"}]}),
            "references": [{"name": "com.acme.Address", "subject": "addr", "version": 1}]}
    assert reg.register("person", body) == {"id": 2}
    stored = reg.version("person", "1").schema
    assert "street" not in stored and '"type":"Address"' in stored   # the referenced type is named, not inlined
    assert [v.id for v in reg.referenced_by("addr", 1)] == [2]
    assert err(reg.delete_version, "addr", "1").code == 42206
    assert err(reg.delete_subject, "addr").code == 42206
    missing = {**body, "references": [{"name": "com.acme.Address", "subject": "addr", "version": 7}]}
    assert err(reg.register, "p2", missing).code == 42201
    assert err(reg.register, "p3", {"schema": body["schema"]}).code == 42201   # Address undefined without it


def test_lookup_finds_the_version_whatever_the_spelling() -> None:
    reg, _ = fresh()
    reg.register("s", {"schema": '{"type": "record", "name": "A", "fields": [{"name": "x", "type": {"type": "int"}}]}'})
    found = reg.lookup("s", {"schema": '{"fields":[{"type":"int","name":"x"}],"name":"A","type":"record"}'})
    assert (found.version, found.id) == (1, 1)
    assert err(reg.lookup, "s", rec("B", ("x", "int"))).code == 40403
    assert err(reg.lookup, "t", rec("A", ("x", "int"))).code == 40401


def test_normalize_makes_namespaced_spellings_equal() -> None:
    reg, _ = fresh()
    a = {"schema": json.dumps({"type": "record", "name": "A", "namespace": "n",
                               "fields": [{"name": "x", "type": "int"}]})}
    b = {"schema": json.dumps({"type": "record", "name": "n.A", "fields": [{"name": "x", "type": "int"}]})}
    assert reg.register("s", a, normalize=True) == {"id": 1}
    assert reg.register("s", b, normalize=True) == {"id": 1}
    assert reg.version("s", "1").schema == '{"type":"record","name":"n.A","fields":[{"name":"x","type":"int"}]}'
