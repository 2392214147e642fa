"""Backups and moves of a store directory: ``promem-fast store backup | export | import``.

* :func:`backup` copies ``memory.db`` with SQLite's online backup API: a consistent snapshot
  even while ``promem-fast serve`` writes to the store (API keys included, hashed).
* :func:`export_store` writes JSON Lines: one ``{"record": "header"}`` line, then one line per
  user, entry (embedding as base64 float32), provenance, relation, session and history row,
  each ``{"record": <kind>, <column>: <value>, ...}``.
  API keys are never exported.
* :func:`import_store` loads such a file into a new (empty) store directory in one
  transaction, keeping row order, ids and timestamps, then rebuilds every user's FAISS
  index from SQLite: the imported store answers search, get and history like the original.

``tenant`` moves memory between tenants: an export with ``tenant`` holds only that tenant's
users, under their plain user ids; an import with ``tenant`` puts every user into it (e.g.
memory written before the store had keys, which no tenant's key reaches otherwise).
"""

from __future__ import annotations

import base64
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any, Iterator, Optional, Union

from .keys import check_tenant, scoped_user, unscoped_user
from .sqlite_store import SCHEMA_VERSION, SQLiteStore

PathLike = Union[str, Path]
EXPORT_FORMAT = "promem-store-export"
EXPORT_VERSION = 1

# (record type, table, columns) in the order they are written and read back
_TABLES: list[tuple[str, str, tuple[str, ...]]] = [
    ("user", "users", ("user_id", "version")),
    ("entry", "entries", (
        "rowid", "id", "user_id", "session_id", "kind", "graph_node_id", "text", "text_key", "subject",
        "source_turn_ids", "event_time", "dates", "created_at", "updated_at", "status", "supersedes",
        "superseded_by", "valid_from", "valid_to", "nli", "confidence", "metadata", "embedding")),
    ("provenance", "provenance", (
        "rowid", "entry_id", "user_id", "session_id", "graph_node_id", "text", "source_turn_ids", "nli", "added_at")),
    ("relation", "relations", ("rowid", "user_id", "session_id", "source_id", "type", "target_id", "probe_question")),
    ("session", "sessions", (
        "rowid", "user_id", "session_id", "input_hash", "graph_hash", "graph_json", "metadata", "added_at")),
    ("history", "history", (
        "seq", "id", "memory_id", "user_id", "old_memory", "new_memory", "event", "related_id", "session_id",
        "created_at", "detail")),
]
_COLS = {typ: (table, cols) for typ, table, cols in _TABLES}


def _db(store_dir: PathLike) -> Path:
    db = Path(store_dir) / "memory.db"
    if not db.is_file():
        raise FileNotFoundError(f"STORE: no store at {store_dir} ({db} does not exist)")
    return db


def _empty_target(out_dir: PathLike, what: str) -> Path:
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{what}: {out} exists and is not a directory")
    if (out / "memory.db").exists():
        raise ValueError(f"{what}: {out} already holds a store; give a new directory")
    return out


def backup(store_dir: PathLike, out_dir: PathLike) -> dict[str, int]:
    """Copy the store's SQLite database into the new store directory ``out_dir`` (online, consistent).

    The FAISS index files are not copied: ``out_dir`` rebuilds them from SQLite on first use.

    Returns:
        ``{"entries": n, "users": n}`` counted in the copy.

    Raises:
        FileNotFoundError: ``store_dir`` has no ``memory.db``.
        ValueError: ``out_dir`` is a file or already holds a store.
    """
    src_path = _db(store_dir)
    out = _empty_target(out_dir, "OUT")
    out.mkdir(parents=True, exist_ok=True)
    src = sqlite3.connect(str(src_path), timeout=30.0)
    dst = sqlite3.connect(str(out / "memory.db"))
    try:
        # one step (pages=-1): the copy is one read snapshot, whatever writers do meanwhile
        src.backup(dst)
        dst.execute("PRAGMA journal_mode=WAL")
        return {"entries": dst.execute("SELECT COUNT(*) FROM entries").fetchone()[0],
                "users": dst.execute("SELECT COUNT(*) FROM users").fetchone()[0]}
    finally:
        dst.close()
        src.close()


def _encode(typ: str, cols: tuple[str, ...], row: sqlite3.Row, tenant: Optional[str]) -> dict[str, Any]:
    d: dict[str, Any] = {"record": typ}  # not "type": relations have a column of that name
    for c in cols:
        v = row[c]
        if c == "embedding":
            v = base64.b64encode(v).decode("ascii")
        elif c == "user_id":
            v = unscoped_user(tenant, v)
        d[c] = v
    return d


def export_store(store_dir: PathLike, out_path: PathLike, tenant: Optional[str] = None) -> dict[str, int]:
    """Write every user's memory in ``store_dir`` to the JSON Lines file ``out_path`` (no API keys).

    Read in one SQLite transaction, so the file is a consistent snapshot of a running store.
    ``tenant``: only that tenant's users, written under their plain user ids.

    Returns:
        rows written per record type, e.g. ``{"user": 2, "entry": 10, ...}``.

    Raises:
        FileNotFoundError: ``store_dir`` has no ``memory.db``.
        ValueError: a bad ``tenant`` name.
    """
    if tenant is not None:
        check_tenant(tenant)
    con = sqlite3.connect(str(_db(store_dir)), timeout=30.0, isolation_level=None)
    con.row_factory = sqlite3.Row
    counts = {typ: 0 for typ, _, _ in _TABLES}
    out = Path(out_path)
    tmp = out.with_name(out.name + ".tmp")
    try:
        con.execute("BEGIN")  # one read snapshot for every table
        dim = con.execute("SELECT value FROM meta WHERE key='dim'").fetchone()
        with tmp.open("w", encoding="utf-8") as f:
            header = {"record": "header", "format": EXPORT_FORMAT, "version": EXPORT_VERSION,
                      "schema_version": SCHEMA_VERSION, "dim": int(dim[0]) if dim else None, "tenant": tenant}
            f.write(json.dumps(header) + "\n")
            for typ, table, cols in _TABLES:
                order = "seq" if table == "history" else ("user_id" if table == "users" else "rowid")
                where, args = "", []
                if tenant is not None:
                    prefix = scoped_user(tenant, "")
                    where, args = "WHERE substr(user_id, 1, ?) = ?", [len(prefix), prefix]
                for row in con.execute(f"SELECT {', '.join(cols)} FROM {table} {where} ORDER BY {order}", args):
                    f.write(json.dumps(_encode(typ, cols, row, tenant), ensure_ascii=False) + "\n")
                    counts[typ] += 1
        con.execute("COMMIT")
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)
        con.close()
    return counts


def _records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    from ..io._common import iter_jsonl

    for n, rec in iter_jsonl(path):
        if not isinstance(rec, dict) or not isinstance(rec.get("record"), str):
            raise ValueError(f"{path}: line {n}: record: expected an object with a 'record' kind")
        yield n, rec


def import_store(in_path: PathLike, store_dir: PathLike, tenant: Optional[str] = None) -> dict[str, int]:
    """Load a file written by :func:`export_store` into the new store directory ``store_dir``.

    All rows go in one transaction (nothing is kept if a line is bad); every user's FAISS
    index is then rebuilt from the imported embeddings. ``tenant``: every user id goes into
    that tenant (a key of the tenant reaches it under the user id of the file).

    Returns:
        rows read per record type.

    Raises:
        FileNotFoundError: no file ``in_path``.
        ValueError: ``store_dir`` already holds a store, a bad ``tenant``, or a bad line (its number
            and field named).
    """
    if tenant is not None:
        check_tenant(tenant)
    src = Path(in_path)
    if not src.is_file():
        raise FileNotFoundError(f"IN: no file {src}")
    out = _empty_target(store_dir, "STORE")
    lines = _records(src)
    first = next(lines, None)
    if first is None or first[1].get("record") != "header" or first[1].get("format") != EXPORT_FORMAT:
        raise ValueError(f"{src}: line 1 is not the header of a `promem-fast store export` file")
    header = first[1]
    if header.get("version") != EXPORT_VERSION:
        raise ValueError(f"{src}: export version {header.get('version')!r} is not supported (expected {EXPORT_VERSION})")
    store = SQLiteStore(out)
    counts = {typ: 0 for typ, _, _ in _TABLES}
    try:
        with store._lock, store._write_txn() as c:
            if header.get("dim") is not None:
                c.execute("INSERT INTO meta(key, value) VALUES ('dim', ?)", (str(int(header["dim"])),))
            for n, rec in lines:
                typ = rec["record"]
                if typ not in _COLS:
                    raise ValueError(f"{src}: line {n}: record: unknown record kind {typ!r}")
                table, cols = _COLS[typ]
                missing = [col for col in cols if col not in rec]
                if missing:
                    raise ValueError(f"{src}: line {n}: {missing[0]}: missing in this {typ} record")
                vals = []
                for col in cols:
                    v = rec[col]
                    if col == "embedding":
                        try:
                            v = base64.b64decode(v, validate=True)
                        except (ValueError, TypeError):
                            raise ValueError(f"{src}: line {n}: embedding: not base64 float32 data") from None
                    elif col == "user_id" and tenant is not None:
                        if not isinstance(v, str):
                            raise ValueError(f"{src}: line {n}: user_id: expected a string")
                        v = scoped_user(tenant, v)
                    vals.append(v)
                try:
                    c.execute(f"INSERT INTO {table}({', '.join(cols)}) VALUES ({','.join('?' * len(cols))})", vals)
                except (sqlite3.Error, ValueError, TypeError) as e:
                    raise ValueError(f"{src}: line {n}: cannot store this {typ} record ({e})") from None
                counts[typ] += 1
        for uid in store.user_ids():
            store.rebuild_index(uid)
    except BaseException:
        store.close()
        for p in (out / "memory.db", out / "memory.db-wal", out / "memory.db-shm"):
            p.unlink(missing_ok=True)  # a failed import leaves no half store behind
        shutil.rmtree(out / "index", ignore_errors=True)
        raise
    store.close()
    return counts
