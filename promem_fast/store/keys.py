"""API keys of the memory service, stored hashed in the store's SQLite (table ``api_keys``).

A key is ``pmk_<key_id>_<secret>``: ``key_id`` (12 hex chars) is public and names the key in
``keys list`` / ``keys revoke``; only the sha256 of the whole key is stored, so a leaked
database or backup does not leak usable keys. The key itself is shown once, at creation.

Scope of a key: one tenant (user ids are namespaced by it, see :func:`scoped_user`), and
either every user of that tenant or a fixed list of user ids; ``admin`` keys reach every
user of the tenant and may also reset it, run jobs and manage its keys.

Once any key has been created (revoked ones included) the service requires a key on every
request: revoking the last key locks everyone out rather than opening the store.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from .sqlite_store import SQLiteStore, utcnow

KEY_PREFIX = "pmk_"
TENANT_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
_TENANT = re.compile(TENANT_PATTERN)
_KEY = re.compile(r"^pmk_([0-9a-f]{12})_([A-Za-z0-9_-]{20,})$")
# Joins tenant and user id into the stored user id. Tenant names cannot contain it, so the
# first separator always ends the tenant: two tenants' "alice" are different stored users.
TENANT_SEP = "\x1f"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS api_keys (
    key_id TEXT PRIMARY KEY,
    key_hash TEXT NOT NULL,
    tenant TEXT NOT NULL,
    users TEXT,
    admin INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    revoked_at TEXT
);
"""


@dataclass(frozen=True)
class KeyInfo:
    """A stored key without its secret.

    ``users`` is None for a key reaching every user of ``tenant`` (admin keys always do).
    """

    key_id: str
    tenant: str
    users: Optional[tuple[str, ...]]
    admin: bool
    created_at: str
    revoked_at: Optional[str] = None

    def allows(self, user_id: str) -> bool:
        """True if this key may act for ``user_id`` (a user id of its own tenant)."""
        return self.users is None or user_id in self.users

    def to_dict(self) -> dict[str, Any]:
        return {"key_id": self.key_id, "tenant": self.tenant,
                "users": list(self.users) if self.users is not None else None,
                "admin": self.admin, "created_at": self.created_at, "revoked_at": self.revoked_at}


def check_tenant(tenant: Any) -> str:
    """``tenant`` if it is a valid tenant name (1-64 of ``A-Z a-z 0-9 . _ -``, not starting with . _ -).

    Raises:
        ValueError: naming ``tenant``.
    """
    if not isinstance(tenant, str) or not _TENANT.match(tenant):
        raise ValueError(f"tenant: {tenant!r} is not a valid name (1-64 characters A-Z a-z 0-9 . _ -, "
                         "starting with a letter or digit)")
    return tenant


def scoped_user(tenant: Optional[str], user_id: str) -> str:
    """The stored user id of ``user_id`` in ``tenant`` (``user_id`` itself when tenant is None)."""
    return user_id if tenant is None else f"{tenant}{TENANT_SEP}{user_id}"


def unscoped_user(tenant: Optional[str], stored: str) -> Optional[str]:
    """The tenant's user id of a stored user id, or None if it belongs to another tenant."""
    if tenant is None:
        return stored
    prefix = tenant + TENANT_SEP
    return stored[len(prefix):] if stored.startswith(prefix) else None


def keyless_users(store: SQLiteStore) -> list[str]:
    """User ids written while the store had no API key (plain ids, no tenant prefix), sorted:
    no key reaches their memory until it is moved into a tenant (``store export`` /
    ``store import --tenant``)."""
    return sorted(u for u in store.users() if TENANT_SEP not in u)


def keyless_warning(users: Sequence[str], store_dir: str) -> str:
    """The message that tells an operator memory written before the first key is out of every key's reach."""
    shown = ", ".join(repr(u) for u in users[:5]) + (f" and {len(users) - 5} more" if len(users) > 5 else "")
    return (f"{len(users)} user(s) of {store_dir} hold memory written before the store had an API key "
            f"({shown}); no key reaches it, so requests with a key see none of it. Move it into a tenant: "
            f"`promem-fast store export {store_dir} all.jsonl && promem-fast store import all.jsonl NEW_DIR "
            "--tenant NAME` (docs/service.md).")


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


class APIKeys:
    """Create, list, revoke and verify the API keys of one store.

    Args:
        store: the :class:`SQLiteStore` whose database holds the keys (table created if missing).
    """

    def __init__(self, store: SQLiteStore):
        self.store = store
        with store._lock:
            store._conn.executescript(_SCHEMA)

    def any_exist(self) -> bool:
        """True once any key was created in this store (revoked keys count: auth stays on)."""
        with self.store._lock:
            return self.store._conn.execute("SELECT 1 FROM api_keys LIMIT 1").fetchone() is not None

    def create(self, tenant: str, users: Optional[Sequence[str]] = None, admin: bool = False) -> tuple[str, KeyInfo]:
        """A new random key; returns (the key, shown only now; its :class:`KeyInfo`).

        Args:
            tenant: tenant name (:func:`check_tenant`).
            users: user ids the key may act for; None = every user of the tenant.
            admin: reset / jobs / key management for the tenant; needs ``users=None``.

        Raises:
            ValueError: a bad tenant, an empty or blank user id, or ``admin`` with a user list.
        """
        check_tenant(tenant)
        if users is not None:
            users = tuple(dict.fromkeys(users))
            if not users or any(not isinstance(u, str) or not u.strip() for u in users):
                raise ValueError("users: expected one or more non-blank user ids")
            if admin:
                raise ValueError("users: an admin key reaches every user of its tenant; drop the user list")
        key_id = secrets.token_hex(6)
        key = f"{KEY_PREFIX}{key_id}_{secrets.token_urlsafe(32)}"
        info = KeyInfo(key_id, tenant, users, bool(admin), utcnow())
        with self.store._lock:
            self.store._conn.execute(
                "INSERT INTO api_keys(key_id, key_hash, tenant, users, admin, created_at) VALUES (?,?,?,?,?,?)",
                (key_id, _hash(key), tenant, json.dumps(list(users)) if users is not None else None,
                 int(info.admin), info.created_at))
        return key, info

    def list(self, tenant: Optional[str] = None) -> list[KeyInfo]:
        """Every key (of ``tenant`` when given), oldest first; revoked ones have ``revoked_at``."""
        q, args = "SELECT * FROM api_keys", []
        if tenant is not None:
            q, args = q + " WHERE tenant=?", [tenant]
        with self.store._lock:
            rows = self.store._conn.execute(q + " ORDER BY created_at, key_id", args).fetchall()
        return [self._info(r) for r in rows]

    def revoke(self, key_id: str, tenant: Optional[str] = None) -> bool:
        """Revoke ``key_id`` (of ``tenant`` when given); False if no such live key."""
        q, args = "UPDATE api_keys SET revoked_at=? WHERE key_id=? AND revoked_at IS NULL", [utcnow(), key_id]
        if tenant is not None:
            q, args = q + " AND tenant=?", args + [tenant]
        with self.store._lock:
            return self.store._conn.execute(q, args).rowcount == 1

    def verify(self, key: str) -> Optional[KeyInfo]:
        """The :class:`KeyInfo` of a valid, unrevoked ``key``, else None."""
        m = _KEY.match(key or "")
        if m is None:
            return None
        with self.store._lock:
            r = self.store._conn.execute("SELECT * FROM api_keys WHERE key_id=?", (m.group(1),)).fetchone()
        # compare_digest: the time taken does not tell how much of a guessed hash matched
        if r is None or not hmac.compare_digest(r["key_hash"], _hash(key)) or r["revoked_at"] is not None:
            return None
        return self._info(r)

    @staticmethod
    def _info(r: Any) -> KeyInfo:
        users = json.loads(r["users"]) if r["users"] is not None else None
        return KeyInfo(r["key_id"], r["tenant"], tuple(users) if users is not None else None, bool(r["admin"]),
                       r["created_at"], r["revoked_at"])
