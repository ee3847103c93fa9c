"""`kafkalite_wire.messages` is lazy and the generated classes behave like the slotted dataclasses they replaced.

Laziness is checked in fresh interpreters (`sys.modules` of this one already holds most message modules).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import kafkalite_wire.messages as messages
from kafkalite_wire.messages import REGISTRY, FetchRequest, FetchResponse, HeartbeatRequest


def _fresh(code: str) -> str:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return proc.stdout.strip()


GEN = "sorted(m for m in sys.modules if m.startswith('kafkalite_wire.messages._gen_'))"


@pytest.mark.e2e
def test_importing_the_package_imports_no_message_module() -> None:
    out = _fresh(f"import sys, kafkalite_wire.messages as m; k = m.REGISTRY[0]; print(k.name, k.max_version, {GEN})")
    assert out == "Produce 13 []"


@pytest.mark.e2e
def test_from_import_loads_only_that_api_module() -> None:
    out = _fresh(f"import sys; from kafkalite_wire.messages import ProduceRequest; print({GEN})")
    assert out == "['kafkalite_wire.messages._gen_produce']"


@pytest.mark.e2e
def test_registry_resolves_classes_on_first_access() -> None:
    code = f"import sys; from kafkalite_wire.messages import REGISTRY; c = REGISTRY[1].response_class; print(c.__name__, {GEN})"
    assert _fresh(code) == "FetchResponse ['kafkalite_wire.messages._gen_fetch']"


@pytest.mark.e2e
def test_api_parse_request_loads_its_module() -> None:
    code = (
        "import sys; from kafkalite_wire.api import parse_request; from kafkalite_wire.headers import RequestHeader; "
        "import kafkalite_wire.messages as m; "
        "body = m.HeartbeatRequest(group_id='g', member_id='x').encode(4); "
        "frame = RequestHeader(12, 4, 7, 'c').encode(2) + body; "
        "hdr, req = parse_request(frame); print(hdr.correlation_id, req.group_id, type(req).__name__)"
    )
    assert _fresh(code) == "7 g HeartbeatRequest"


def test_every_exported_name_resolves() -> None:
    for name in messages.__all__:
        assert getattr(messages, name) is not None
    assert set(messages.__all__) <= set(dir(messages))
    with pytest.raises(AttributeError):
        messages.NoSuchRequest  # noqa: B018


def test_registry_classes_match_keys() -> None:
    for key, info in REGISTRY.items():
        assert key == info.request_class.API_KEY and key == info.response_class.API_KEY
        assert info.request_class is getattr(messages, info.request_name)
        assert info.request_class.__module__ == info.module


def test_api_info_is_immutable() -> None:
    with pytest.raises(AttributeError):
        REGISTRY[0].max_version = 99  # type: ignore[misc]
    assert REGISTRY[0] == REGISTRY[0] and REGISTRY[0] != REGISTRY[1]
    assert hash(REGISTRY[3]) == hash(REGISTRY[3])


def test_dataclass_like_behaviour() -> None:
    a = FetchRequest(replica_id=1)
    b = FetchRequest(replica_id=1)
    assert a == b and a != FetchRequest(replica_id=2) and a != object()
    assert a.topics is not b.topics and a.replica_state is not b.replica_state  # fresh mutable defaults
    assert a.unknown_tagged_fields == {} and a.unknown_tagged_fields is not b.unknown_tagged_fields
    a.topics.append(FetchRequest.FetchTopic(topic="t"))
    assert a != b and FetchRequest().topics == []
    # explicit None is kept (not replaced by a default): encoding then reports it
    assert FetchResponse(responses=None).responses is None  # type: ignore[arg-type]
    r = HeartbeatRequest("g", 3, member_id="m")
    assert repr(r) == (
        "HeartbeatRequest(group_id='g', generation_id=3, member_id='m', group_instance_id=None, "
        "unknown_tagged_fields={})"
    )
    assert repr(FetchResponse.EpochEndOffset()).startswith("FetchResponse.EpochEndOffset(epoch=-1, ")
    with pytest.raises(TypeError):
        hash(r)
    with pytest.raises(AttributeError):
        r.no_such_field = 1  # type: ignore[attr-defined]
    r.generation_id = 4
    assert r.generation_id == 4
    assert HeartbeatRequest.__match_args__[:2] == ("group_id", "generation_id")
    with pytest.raises(TypeError):
        HeartbeatRequest(bogus=1)  # type: ignore[call-arg]
