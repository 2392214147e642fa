"""schemathesis over the authenticated API: a store with keys, every operation called with a key."""

from __future__ import annotations

import json
import os

import httpx
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
schemathesis = pytest.importorskip("schemathesis")

from hypothesis import HealthCheck, Phase, settings  # noqa: E402
from schemathesis.checks import negative_data_rejection  # noqa: E402

from promem_fast.engine.scripted_rules import scripted_services  # noqa: E402
from promem_fast.server import create_app  # noqa: E402
from promem_fast.store import AsyncMemory  # noqa: E402
from promem_fast.store.keys import APIKeys  # noqa: E402

from _live import LiveServer  # noqa: E402
from _store_helpers import graph, services  # noqa: E402


@pytest.fixture(scope="module")
def authed(tmp_path_factory):
    """Live server over a store with keys of two tenants and some memory of each; yields (url, keys)."""
    tmp = tmp_path_factory.mktemp("authed")
    (tmp / "jobs").mkdir()
    mem = AsyncMemory(services=scripted_services(), path=str(tmp / "mem"))
    keys = APIKeys(mem.store)
    admin, _ = keys.create("acme", admin=True)
    scoped, _ = keys.create("acme", users=["alice", "u"])
    other, _ = keys.create("bravo", admin=True)
    with LiveServer(create_app(mem, jobs_root=str(tmp / "jobs"))) as live:
        for key in (admin, other):
            g = json.loads(graph("s1", [("Alice owns a red bicycle.", None)]).to_json())
            r = httpx.post(f"{live.url}/graphs", json={"user_id": "alice", "graph": g},
                           headers={"Authorization": f"Bearer {key}"})
            assert r.status_code == 200, r.text
        yield live.url, {"admin": admin, "scoped": scoped}


schema = schemathesis.openapi.from_dict(create_app(AsyncMemory(services=services())).openapi())


@pytest.mark.parametrize("which", ["admin", "scoped"])
@schema.parametrize()
@settings(max_examples=int(os.environ.get("PROMEM_SCHEMATHESIS_EXAMPLES", "15")), phases=[Phase.generate],
          deadline=None, suppress_health_check=list(HealthCheck), database=None)
def test_authenticated_api_conforms_with_no_server_errors(case, authed, which):
    """Every operation with an admin key and with a user-limited key: no 5xx, responses as declared."""
    url, keys = authed
    # as in test_server: pydantic's lax mode accepts some schema-invalid values, so that check is off
    case.call_and_validate(base_url=url, headers={"Authorization": f"Bearer {keys[which]}"},
                           excluded_checks=[negative_data_rejection])
