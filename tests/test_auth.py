"""Access control of the memory service: API keys, scopes, tenants, safe host defaults.

The property-based test drives every route with tenant A's keys against a store that also
holds tenant B's memory, and checks that B's memory is never read, changed or deleted.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3

import httpx
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from promem_fast.cli import main  # noqa: E402
from promem_fast.server import create_app, is_loopback  # noqa: E402
from promem_fast.store import AsyncMemory  # noqa: E402
from promem_fast.store.keys import APIKeys  # noqa: E402

from _live import LiveServer  # noqa: E402
from _store_helpers import graph, services  # noqa: E402


def _world(tmp_path):
    mem = AsyncMemory(services=services(), path=str(tmp_path / "mem"))
    return create_app(mem), mem, APIKeys(mem.store)


def _client(app, key=None):
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test", headers=headers)


def _graph_body(user_id, sid, texts):
    return {"user_id": user_id, "graph": json.loads(graph(sid, [(t, None) for t in texts]).to_json())}


# ---------------------------------------------------------------------------- keys
def test_keys_are_random_shown_once_and_stored_hashed(tmp_path):
    _, mem, keys = _world(tmp_path)
    k1, i1 = keys.create("acme", admin=True)
    k2, i2 = keys.create("acme", users=["alice", "bob", "alice"])
    assert k1 != k2 and k1.startswith(f"pmk_{i1.key_id}_") and len(k1) >= 50
    assert i2.users == ("alice", "bob") and not i2.admin and i1.users is None and i1.admin
    raw = b"".join(p.read_bytes() for p in (tmp_path / "mem").glob("memory.db*"))
    assert k1.encode() not in raw and k2.encode() not in raw
    con = sqlite3.connect(tmp_path / "mem" / "memory.db")
    hashes = {r[0] for r in con.execute("SELECT key_hash FROM api_keys")}
    assert hashes == {hashlib.sha256(k.encode()).hexdigest() for k in (k1, k2)}
    assert keys.verify(k1).tenant == "acme" and keys.verify(k2).users == ("alice", "bob")
    assert keys.verify(k1[:-1] + ("A" if k1[-1] != "A" else "B")) is None
    assert keys.verify("pmk_" + i1.key_id + "_" + "x" * 43) is None and keys.verify("nonsense") is None
    assert keys.revoke(i1.key_id) and keys.verify(k1) is None and not keys.revoke(i1.key_id)
    assert [(k.key_id, k.revoked_at is not None) for k in keys.list()] == [(i1.key_id, True), (i2.key_id, False)]
    with pytest.raises(ValueError, match="^tenant:"):
        keys.create("a b")
    with pytest.raises(ValueError, match="^users:"):
        keys.create("acme", users=["alice"], admin=True)
    with pytest.raises(ValueError, match="^users:"):
        keys.create("acme", users=[" "])


async def test_every_route_needs_a_valid_key_once_one_exists(tmp_path):
    app, _, keys = _world(tmp_path)
    async with _client(app) as c:  # no key yet: open, as before
        assert (await c.get("/health")).status_code == 200
    key, info = keys.create("acme", admin=True)
    spec = app.openapi()
    routes = [(m.upper(), path.replace("{memory_id}", "m1").replace("{job_id}", "j1").replace("{key_id}", "k1"))
              for path, ops in spec["paths"].items() for m in ops]
    assert len(routes) == 16
    for headers in ({}, {"Authorization": "Bearer pmk_000000000000_" + "y" * 43}, {"Authorization": "Basic " + key}):
        async with _client(app) as c:
            for method, url in routes:
                r = await c.request(method, url, json={} if method in ("POST", "PUT") else None, headers=headers)
                assert r.status_code == 401, (headers, method, url, r.status_code, r.text)
                assert r.headers["www-authenticate"] == "Bearer"
    keys.revoke(info.key_id)
    async with _client(app, key) as c:
        r = await c.get("/health")
        assert r.status_code == 401 and r.json()["detail"] == "invalid or revoked API key"
    # revoking every key does not open the store again
    async with _client(app) as c:
        assert (await c.get("/health")).status_code == 401


async def test_scopes_tenants_and_admin_routes(tmp_path):
    app, mem, keys = _world(tmp_path)
    a_admin, _ = keys.create("acme", admin=True)
    a_alice, _ = keys.create("acme", users=["alice"])
    b_admin, b_info = keys.create("bravo", admin=True)
    async with _client(app, a_admin) as a, _client(app, a_alice) as aa, _client(app, b_admin) as b:
        ra = await a.post("/graphs", json=_graph_body("alice", "s1", ["Alice owns a red bicycle."]))
        rbob = await a.post("/graphs", json=_graph_body("bob", "s1", ["Bob collects stamps."]))
        rb = await b.post("/graphs", json=_graph_body("alice", "s1", ["Alice keeps bees on the roof."]))
        assert ra.status_code == rb.status_code == rbob.status_code == 200
        a_id, b_id = ra.json()["results"][0]["id"], rb.json()["results"][0]["id"]
        bob_id = rbob.json()["results"][0]["id"]
        # two tenants' "alice" are different users; records show the caller's user id
        hits = (await a.post("/search", json={"query": "bees roof", "user_id": "alice"})).json()["results"]
        assert [h["memory"] for h in hits] == ["Alice owns a red bicycle."] and hits[0]["user_id"] == "alice"
        rows = (await b.get("/memories", params={"user_id": "alice"})).json()["results"]
        assert [(r["id"], r["memory"], r["user_id"]) for r in rows] == [(b_id, "Alice keeps bees on the roof.", "alice")]
        assert {u.split("\x1f")[0] for u in mem.store.users()} == {"acme", "bravo"}
        # ids of another scope answer exactly like unknown ids
        for method, url in (("GET", f"/memories/{b_id}"), ("PUT", f"/memories/{b_id}"),
                            ("DELETE", f"/memories/{b_id}"), ("GET", f"/memories/{b_id}/history")):
            r = await a.request(method, url, json={"data": "x"} if method == "PUT" else None)
            assert (r.status_code, r.json()) == (404, {"detail": f"memory {b_id!r} not found"}), (method, url)
            r = await aa.request(method, url.replace(b_id, bob_id), json={"data": "x"} if method == "PUT" else None)
            assert r.status_code == 404, (method, url)
        assert (await b.get(f"/memories/{b_id}")).json()["memory"] == "Alice keeps bees on the roof."
        assert (await aa.get(f"/memories/{a_id}")).json()["user_id"] == "alice"
        assert (await a.get(f"/memories/{a_id}", params={"user_id": "bob"})).status_code == 404
        # a user-limited key: 403 naming the field for other users, admin routes closed
        r = await aa.post("/search", json={"query": "stamps", "user_id": "bob"})
        assert r.status_code == 403 and r.json()["detail"] == "user_id: user 'bob' is outside this API key's scope"
        assert (await aa.get("/memories", params={"user_id": "bob"})).status_code == 403
        assert (await aa.delete("/memories", params={"user_id": "bob"})).status_code == 403
        for method, url, body in (("POST", "/reset", None), ("GET", "/keys", None), ("POST", "/keys", {}),
                                  ("POST", "/jobs", {"user_id": "alice", "sessions": []}), ("GET", "/jobs/x", None)):
            r = await aa.request(method, url, json=body)
            assert (r.status_code, r.json()["detail"]) == (403, "this route needs an admin API key"), (method, url)
        # jobs of another tenant are not found
        job = (await a.post("/jobs", json={"user_id": "carol", "sessions": [{
            "session_id": "j1", "turns": [{"turn_id": "t0", "role": "user", "content": "I like tea"}]}]})).json()
        assert (await b.get(f"/jobs/{job['job_id']}")).status_code == 404
        assert (await a.get(f"/jobs/{job['job_id']}")).json()["user_id"] == "carol"
        # key management stays inside the tenant
        r = await a.post("/keys", json={"users": ["carol"]})
        assert r.status_code == 201 and r.json()["tenant"] == "acme" and r.json()["users"] == ["carol"]
        carol_key = r.json()["key"]
        assert (await a.post("/keys", json={"tenant": "bravo"})).status_code == 403
        assert (await a.delete(f"/keys/{b_info.key_id}")).status_code == 404
        assert {k["tenant"] for k in (await a.get("/keys")).json()} == {"acme"}
        assert len((await b.get("/keys")).json()) == 1
        async with _client(app, carol_key) as cc:
            assert (await cc.get("/memories", params={"user_id": "carol"})).status_code == 200
            assert (await cc.get("/memories", params={"user_id": "alice"})).status_code == 403
        # an admin reset empties its own tenant only
        r = await a.post("/reset")
        assert r.status_code == 200 and r.json()["message"] == "Memory of tenant 'acme' reset"
        assert (await a.get("/memories", params={"user_id": "alice", "status": "all"})).json()["results"] == []
        assert [r["id"] for r in (await b.get("/memories", params={"user_id": "alice"})).json()["results"]] == [b_id]


def test_openapi_declares_the_bearer_scheme(tmp_path):
    app, _, _ = _world(tmp_path)
    spec = app.openapi()
    scheme = spec["components"]["securitySchemes"]["APIKey"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            assert op["security"] == [{"APIKey": []}], (method, path)
            assert {"401", "403"} <= set(op["responses"]), (method, path)


# ---------------------------------------------------------------------------- safe defaults
def test_is_loopback():
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.8.0.1", "localhost", "::1", "[::1]"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "10.0.0.2", "192.168.1.5", "example.com", ""))


def test_serve_refuses_a_public_host_without_keys(tmp_path, monkeypatch, capsys):
    import uvicorn

    ran = []
    monkeypatch.setattr(uvicorn, "run", lambda app, host, port, log_level: ran.append(host))
    store = str(tmp_path / "store")
    base = ["serve", "--store", store, "--llm", "scripted", "--embed", "hash"]
    assert main(base + ["--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err
    assert "refusing to serve on '0.0.0.0'" in err and "promem-fast keys create" in err and "--insecure-no-auth" in err
    assert ran == [] and not (tmp_path / "store").exists()  # refused before any store is created
    assert main(base) == 0 and ran == ["127.0.0.1"]  # loopback without keys: as before
    assert main(base + ["--host", "0.0.0.0", "--insecure-no-auth"]) == 0 and ran[-1] == "0.0.0.0"
    assert main(["keys", "create", "--tenant", "acme", "--admin", "--store", store]) == 0
    assert main(base + ["--host", "0.0.0.0"]) == 0 and ran == ["127.0.0.1", "0.0.0.0", "0.0.0.0"]


def test_keys_command_line(tmp_path, capsys):
    store = str(tmp_path / "store")
    assert main(["keys", "create", "--tenant", "acme", "--users", "alice,bob", "--store", store]) == 0
    out = capsys.readouterr()
    key = out.out.strip()
    assert key.startswith("pmk_") and "shown only now" in out.err and key not in out.err
    key_id = key.split("_")[1]
    assert main(["keys", "list", "--store", store]) == 0
    listed = capsys.readouterr().out
    assert listed.split("\t")[:4] == [key_id, "acme", "-", "alice,bob"] and listed.strip().endswith("active")
    assert key not in listed
    assert main(["keys", "revoke", key_id, "--store", store]) == 0
    assert main(["keys", "list", "--store", store]) == 0 and "\trevoked " in capsys.readouterr().out
    capsys.readouterr()
    assert main(["keys", "revoke", key_id, "--store", store]) == 2
    assert "KEY_ID: no active key" in capsys.readouterr().err
    assert main(["keys", "create", "--tenant", "acme", "--store", store]) == 2
    assert "--users: give the user ids" in capsys.readouterr().err
    assert main(["keys", "create", "--tenant", "a b", "--all-users", "--store", store]) == 2
    assert "tenant: 'a b' is not a valid name" in capsys.readouterr().err
    assert main(["keys", "create", "--tenant", "acme", "--admin", "--users", "x", "--store", store]) == 2
    assert main(["keys", "list", "--store", str(tmp_path / "nope")]) == 2


async def test_first_key_warns_of_memory_no_key_reaches(tmp_path, capsys):
    store = tmp_path / "store"
    m = AsyncMemory(services=services(), path=str(store))
    await m.add_graph(graph("s1", [("Caroline went to a support group.", "2023-05-07")]), user_id="caroline")
    await m.close()
    assert main(["keys", "create", "--tenant", "acme", "--admin", "--store", str(store)]) == 0
    err = capsys.readouterr().err
    assert "1 user(s)" in err and "'caroline'" in err and "store import all.jsonl NEW_DIR --tenant NAME" in err
    # memory written under a tenant's key is reachable: no warning for it
    m = AsyncMemory(services=services(), path=str(tmp_path / "fresh"))
    await m.add_graph(graph("s1", [("Bob adopted a cat.", None)], user_name="Bob"), user_id="acme\x1fbob")
    await m.close()
    assert main(["keys", "create", "--tenant", "acme", "--admin", "--store", str(tmp_path / "fresh")]) == 0
    assert "warning" not in capsys.readouterr().err


# ---------------------------------------------------------------------------- property: no cross-tenant access
B_TEXTS = ["Bravo secret: Alice keeps bees on the roof.", "Bravo secret: Bob sails a yacht named Heron.",
           "Bravo secret: Alice moved to Lisbon."]


@pytest.fixture(scope="module")
def two_tenants(tmp_path_factory):
    """A live server whose store holds tenant bravo's memory (users alice, bob; an updated, a deleted
    entry) and tenant acme's; yields (url, acme keys, bravo's ids, a function snapshotting bravo)."""
    tmp = tmp_path_factory.mktemp("tenants")
    mem = AsyncMemory(services=services(), path=str(tmp / "mem"))
    keys = APIKeys(mem.store)
    a_admin, _ = keys.create("acme", admin=True)
    a_alice, _ = keys.create("acme", users=["alice", "bob"])
    b_admin, b_info = keys.create("bravo", admin=True)
    app = create_app(mem)
    with LiveServer(app) as live, httpx.Client(base_url=live.url, timeout=30,
                                                 headers={"Authorization": f"Bearer {b_admin}"}) as b:
        ids = []
        for i, (uid, text) in enumerate((("alice", B_TEXTS[0]), ("bob", B_TEXTS[1]), ("alice", B_TEXTS[2]))):
            r = b.post("/graphs", json=_graph_body(uid, f"b{i}", [text]))
            ids.append(r.json()["results"][0]["id"])
        assert b.put(f"/memories/{ids[0]}", json={"data": B_TEXTS[0] + " Still."}).status_code == 200
        assert b.delete(f"/memories/{ids[2]}").status_code == 200
        with httpx.Client(base_url=live.url, headers={"Authorization": f"Bearer {a_admin}"}) as a:
            r = a.post("/graphs", json=_graph_body("alice", "a0", ["Alice owns a red bicycle."]))
            a_id = r.json()["results"][0]["id"]

        def snapshot():
            s = mem.store
            rows = {u: [(e.id, e.text, e.status, e.updated_at) for e in s.list(u, statuses=None)]
                    for u in s.user_ids("bravo\x1f")}
            return rows, {i: s.history(i) for i in ids}, [(k.key_id, k.revoked_at) for k in keys.list("bravo")]

        yield live.url, [a_admin, a_alice], ids, a_id, b_info.key_id, snapshot


ROUTES = ["get", "get_scoped", "put", "delete", "history", "get_all", "delete_all", "search", "add_graph",
          "reset", "jobs", "keys_list", "keys_create", "keys_revoke", "health"]


@given(route=st.sampled_from(ROUTES), key_i=st.integers(0, 1), id_i=st.integers(0, 4),
       user=st.sampled_from(["alice", "bob", "bravo\x1falice", "carol"]),
       text=st.sampled_from(["bees roof", "yacht", "Lisbon", "Alice"]))
@settings(max_examples=120, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_tenant_a_never_reaches_tenant_b(two_tenants, route, key_i, id_i, user, text):
    url, a_keys, b_ids, a_id, b_key_id, snapshot = two_tenants
    before = snapshot()
    mid = (b_ids + [a_id, "no-such-id"])[id_i]
    with httpx.Client(base_url=url, timeout=30, headers={"Authorization": f"Bearer {a_keys[key_i]}"}) as c:
        r = {
            "get": lambda: c.get(f"/memories/{mid}"),
            "get_scoped": lambda: c.get(f"/memories/{mid}", params={"user_id": user}),
            "put": lambda: c.put(f"/memories/{mid}", json={"data": "overwritten by acme", "user_id": user}),
            "delete": lambda: c.delete(f"/memories/{mid}"),
            "history": lambda: c.get(f"/memories/{mid}/history"),
            "get_all": lambda: c.get("/memories", params={"user_id": user, "status": "all"}),
            "delete_all": lambda: c.delete("/memories", params={"user_id": user}),
            "search": lambda: c.post("/search", json={"query": text, "user_id": user, "filters": {"status": "all"}}),
            "add_graph": lambda: c.post("/graphs", json=_graph_body(user, f"x-{text}", [f"{user} likes {text}."])),
            "reset": lambda: c.post("/reset"),
            "jobs": lambda: c.post("/jobs", json={"user_id": user, "sessions": []}),
            "keys_list": lambda: c.get("/keys"),
            "keys_create": lambda: c.post("/keys", json={"tenant": "bravo", "admin": True}),
            "keys_revoke": lambda: c.delete(f"/keys/{b_key_id}"),
            "health": lambda: c.get("/health"),
        }[route]()
    assert r.status_code < 500, r.text
    assert "Bravo secret" not in r.text, (route, r.text)
    if mid in b_ids and route in ("get", "get_scoped", "put", "delete", "history"):
        assert (r.status_code, r.json()) == (404, {"detail": f"memory {mid!r} not found"})
    if route in ("keys_create", "keys_revoke"):
        assert r.status_code in (403, 404)
    assert snapshot() == before
