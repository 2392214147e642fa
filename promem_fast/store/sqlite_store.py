"""Embedded lifelong memory store: SQLite (WAL) for rows, one FAISS index per user for search.

Layout under the store directory ``DIR``::

    DIR/memory.db                 entries, provenance, relations, sessions, history, users
    DIR/index/{user_hash}.faiss   IndexIDMap2(IndexFlatIP) over the user's *active* entries
    DIR/index/{user_hash}.json    {"version", "count", "max_rowid", "dim"}: staleness stamp

SQLite is the source of truth; every entry keeps its float32 embedding (BLOB), so a
missing or stale index file is rebuilt from SQLite without re-embedding. Each user has a
``version`` counter bumped by every write; an index whose stamp differs is stale.

Writers use optimistic concurrency: :meth:`SQLiteStore.commit` takes the user version
the plan was computed against and, inside one ``BEGIN IMMEDIATE`` transaction, raises
:class:`VersionConflict` if another writer (thread, Memory instance or process) got in
first; the caller re-plans. Nothing in this module deletes an entry except the explicit
API calls :meth:`delete`, :meth:`delete_user` and :meth:`reset`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
import uuid
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence

import numpy as np

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 1
# n * d below which a single-query search is a numpy mat-vec instead of a FAISS call
SMALL_SEARCH_WORK = 1 << 22
ENTRY_STATUSES = ("active", "superseded", "archived")
ENTRY_KINDS = ("event", "detail", "manual")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS users (
    user_id TEXT PRIMARY KEY,
    version INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS entries (
    rowid INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    user_id TEXT NOT NULL,
    session_id TEXT,
    kind TEXT NOT NULL,
    graph_node_id TEXT,
    text TEXT NOT NULL,
    text_key TEXT NOT NULL,
    subject TEXT,
    source_turn_ids TEXT NOT NULL DEFAULT '[]',
    event_time TEXT,
    dates TEXT NOT NULL DEFAULT '[]',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    status TEXT NOT NULL,
    supersedes TEXT,
    superseded_by TEXT,
    valid_from TEXT,
    valid_to TEXT,
    nli TEXT NOT NULL DEFAULT '[]',
    confidence REAL,
    metadata TEXT NOT NULL DEFAULT '{}',
    embedding BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS entries_user_status ON entries(user_id, status);
CREATE INDEX IF NOT EXISTS entries_user_key ON entries(user_id, text_key);
CREATE TABLE IF NOT EXISTS provenance (
    entry_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    session_id TEXT,
    graph_node_id TEXT,
    text TEXT NOT NULL,
    source_turn_ids TEXT NOT NULL DEFAULT '[]',
    nli TEXT NOT NULL DEFAULT '[]',
    added_at TEXT NOT NULL,
    UNIQUE(entry_id, session_id, graph_node_id)
);
CREATE TABLE IF NOT EXISTS relations (
    user_id TEXT NOT NULL,
    session_id TEXT,
    source_id TEXT NOT NULL,
    type TEXT NOT NULL,
    target_id TEXT NOT NULL,
    probe_question TEXT,
    UNIQUE(source_id, type, target_id)
);
CREATE TABLE IF NOT EXISTS sessions (
    user_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    input_hash TEXT,
    graph_hash TEXT NOT NULL,
    graph_json TEXT NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    added_at TEXT NOT NULL,
    PRIMARY KEY(user_id, session_id, graph_hash)
);
CREATE TABLE IF NOT EXISTS history (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    old_memory TEXT,
    new_memory TEXT,
    event TEXT NOT NULL,
    related_id TEXT,
    session_id TEXT,
    created_at TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS history_memory ON history(memory_id);
"""


class VersionConflict(RuntimeError):
    """Another writer changed the user's memory since the plan was made; re-plan and retry."""


def utcnow() -> str:
    """Current UTC time, ISO 8601 with offset (the store's timestamp format)."""
    return datetime.now(timezone.utc).isoformat()


def user_hash(user_id: str) -> str:
    """File-name-safe key of a user id (sha256 hex, 32 chars)."""
    return hashlib.sha256(user_id.encode("utf-8")).hexdigest()[:32]


def text_key(text: str) -> str:
    """Normalised text for exact-duplicate detection: casefolded, whitespace collapsed, final period dropped."""
    return " ".join(text.casefold().split()).rstrip(" .!")


@dataclass
class Entry:
    """One memory entry as stored.

    Times are ISO 8601 strings; ``event_time`` is absolute (from the graph's resolved
    ``Event.dates`` or the grounding turn's timestamp); ``valid_to`` is set when the entry
    is superseded. ``embedding`` is float32 (dim,), L2-normalised.
    """

    id: str
    user_id: str
    text: str
    kind: str = "event"
    session_id: Optional[str] = None
    graph_node_id: Optional[str] = None
    subject: Optional[str] = None
    source_turn_ids: list[str] = field(default_factory=list)
    event_time: Optional[str] = None
    dates: list[str] = field(default_factory=list)
    created_at: str = ""
    updated_at: str = ""
    status: str = "active"
    supersedes: Optional[str] = None
    superseded_by: Optional[str] = None
    valid_from: Optional[str] = None
    valid_to: Optional[str] = None
    nli: list[dict[str, Any]] = field(default_factory=list)
    confidence: Optional[float] = None
    metadata: dict[str, Any] = field(default_factory=dict)
    embedding: Optional[np.ndarray] = None
    rowid: Optional[int] = None

    def to_dict(self, include_embedding: bool = False) -> dict[str, Any]:
        d = asdict(self)
        d.pop("embedding")
        d.pop("rowid")
        if include_embedding and self.embedding is not None:
            d["embedding"] = self.embedding.tolist()
        return d


@dataclass
class Plan:
    """Writes for one consolidation, applied atomically by :meth:`SQLiteStore.commit`.

    inserts: new entries (their ``status``/``supersedes``/``superseded_by`` already set).
    supersede: (old_id, new_id, valid_to) — old becomes ``superseded``.
    merges: (target_id, provenance dict, evidence list, confidence) — a same-fact source added to target.
    relations: (source_id, type, target_id, probe_question).
    history: rows for the history table (dicts with memory_id, event, old_memory, new_memory, related_id, detail).
    session: the sessions-table row (user_id, session_id, input_hash, graph_hash, graph_json, metadata) or None.
    """

    inserts: list[Entry] = field(default_factory=list)
    supersede: list[tuple[str, str, Optional[str]]] = field(default_factory=list)
    merges: list[tuple[str, dict[str, Any], list[dict[str, Any]], Optional[float]]] = field(default_factory=list)
    relations: list[tuple[str, str, str, Optional[str]]] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)
    session: Optional[dict[str, Any]] = None


_ENTRY_COLS = (
    "rowid, id, user_id, session_id, kind, graph_node_id, text, subject, source_turn_ids, event_time, dates, "
    "created_at, updated_at, status, supersedes, superseded_by, valid_from, valid_to, nli, confidence, "
    "metadata, embedding"
)


def _row_to_entry(r: sqlite3.Row) -> Entry:
    return Entry(
        rowid=r["rowid"], id=r["id"], user_id=r["user_id"], session_id=r["session_id"], kind=r["kind"],
        graph_node_id=r["graph_node_id"], text=r["text"], subject=r["subject"],
        source_turn_ids=json.loads(r["source_turn_ids"]), event_time=r["event_time"],
        dates=json.loads(r["dates"]), created_at=r["created_at"], updated_at=r["updated_at"],
        status=r["status"], supersedes=r["supersedes"], superseded_by=r["superseded_by"],
        valid_from=r["valid_from"], valid_to=r["valid_to"], nli=json.loads(r["nli"]),
        confidence=r["confidence"], metadata=json.loads(r["metadata"]),
        embedding=np.frombuffer(r["embedding"], dtype=np.float32).copy(),
    )


class _UserIndex:
    """In-memory FAISS IndexIDMap2(IndexFlatIP) of one user's active entries; ids = SQLite rowids."""

    def __init__(self, dim: int, version: int):
        import faiss

        self.index = faiss.IndexIDMap2(faiss.IndexFlatIP(dim))
        self.version = version
        self.dim = dim


class SQLiteStore:
    """Entries, provenance, relations, sessions and history in SQLite; per-user FAISS indices.

    Args:
        path: store directory (created); ``None`` keeps everything in memory (tests) —
            then the index is never written to disk.
        index_flush_every: write a user's index file after this many commits touching that
            user (1 = every commit; larger trades durability of the *index* for speed —
            SQLite always commits, :meth:`close` flushes, and a stale file is rebuilt).

    Thread-safe: one connection guarded by a lock (check_same_thread=False). Several
    stores (threads, processes) may open the same directory; commits are serialised by
    SQLite and checked against the user version.

    Raises:
        ValueError: an embedding whose dimension differs from the store's (``meta.dim``).
    """

    def __init__(self, path: Optional[str | os.PathLike] = None, index_flush_every: int = 8):
        self.path = Path(path) if path is not None else None
        self.index_flush_every = max(1, int(index_flush_every))
        if self.path is not None:
            self.path.mkdir(parents=True, exist_ok=True)
            (self.path / "index").mkdir(exist_ok=True)
            db = str(self.path / "memory.db")
        else:
            db = ":memory:"
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(db, check_same_thread=False, isolation_level=None, timeout=30.0)
        self._conn.row_factory = sqlite3.Row
        if self.path is not None:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.executescript(_SCHEMA)
        with self._lock:
            cur = self._conn.execute("SELECT version FROM schema_version")
            row = cur.fetchone()
            if row is None:
                self._conn.execute("INSERT INTO schema_version(version) VALUES (?)", (SCHEMA_VERSION,))
            elif row[0] != SCHEMA_VERSION:
                raise RuntimeError(f"store schema version {row[0]} != supported {SCHEMA_VERSION} at {db}")
        self._indices: dict[str, _UserIndex] = {}
        self._unflushed: dict[str, int] = {}

    # ------------------------------------------------------------------ basics
    def close(self) -> None:
        """Flush every dirty index file and close the connection."""
        with self._lock:
            for uid in list(self._unflushed):
                self._flush_index(uid)
            self._conn.close()

    @property
    def dim(self) -> Optional[int]:
        r = self._conn.execute("SELECT value FROM meta WHERE key='dim'").fetchone()
        return int(r[0]) if r else None

    def _check_dim(self, d: int) -> None:
        cur = self.dim
        if cur is None:
            self._conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('dim', ?)", (str(d),))
        elif cur != d:
            raise ValueError(
                f"embedding dim {d} differs from the store's dim {cur} (a different embedding model?); "
                "use a new store directory or re-embed"
            )

    def user_version(self, user_id: str) -> int:
        """Write counter of ``user_id`` (0 for an unknown user)."""
        with self._lock:
            r = self._conn.execute("SELECT version FROM users WHERE user_id=?", (user_id,)).fetchone()
            return int(r[0]) if r else 0

    def _bump(self, user_id: str) -> int:
        self._conn.execute(
            "INSERT INTO users(user_id, version) VALUES (?, 1) "
            "ON CONFLICT(user_id) DO UPDATE SET version = version + 1",
            (user_id,),
        )
        return int(self._conn.execute("SELECT version FROM users WHERE user_id=?", (user_id,)).fetchone()[0])

    @contextmanager
    def _write_txn(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction on the store connection, yielded.

        COMMIT when the block ends normally, ROLLBACK (then re-raise) on any exception.
        The caller holds ``self._lock``; the connection is in autocommit mode
        (``isolation_level=None``), so the transaction boundaries are explicit here.
        """
        c = self._conn
        c.execute("BEGIN IMMEDIATE")
        try:
            yield c
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise

    # ------------------------------------------------------------------ reads
    def get(self, entry_id: str) -> Optional[Entry]:
        """The entry with ``entry_id`` or None."""
        with self._lock:
            r = self._conn.execute(f"SELECT {_ENTRY_COLS} FROM entries WHERE id=?", (entry_id,)).fetchone()
        return _row_to_entry(r) if r else None

    def get_many(self, ids: Sequence[str]) -> dict[str, Entry]:
        out: dict[str, Entry] = {}
        ids = list(ids)
        with self._lock:
            for i in range(0, len(ids), 500):
                chunk = ids[i : i + 500]
                q = f"SELECT {_ENTRY_COLS} FROM entries WHERE id IN ({','.join('?' * len(chunk))})"
                for r in self._conn.execute(q, chunk):
                    out[r["id"]] = _row_to_entry(r)
        return out

    def by_rowids(self, user_id: str, rowids: Sequence[int]) -> dict[int, Entry]:
        out: dict[int, Entry] = {}
        rowids = [int(x) for x in rowids]
        with self._lock:
            for i in range(0, len(rowids), 500):
                chunk = rowids[i : i + 500]
                q = (f"SELECT {_ENTRY_COLS} FROM entries WHERE user_id=? AND rowid IN "
                     f"({','.join('?' * len(chunk))})")
                for r in self._conn.execute(q, [user_id, *chunk]):
                    out[int(r["rowid"])] = _row_to_entry(r)
        return out

    def list(
        self,
        user_id: str,
        statuses: Optional[Sequence[str]] = ("active",),
        session_id: Optional[str] = None,
        kinds: Optional[Sequence[str]] = None,
        event_time_gte: Optional[str] = None,
        event_time_lte: Optional[str] = None,
        text_key_eq: Optional[str] = None,
        limit: Optional[int] = None,
    ) -> list[Entry]:
        """Entries of ``user_id`` matching the filters, oldest first (by rowid).

        ``statuses=None`` means every status. ``event_time_*`` compare ISO strings.
        """
        q = f"SELECT {_ENTRY_COLS} FROM entries WHERE user_id=?"
        args: list[Any] = [user_id]
        if statuses is not None:
            q += f" AND status IN ({','.join('?' * len(statuses))})"
            args += list(statuses)
        if kinds is not None:
            q += f" AND kind IN ({','.join('?' * len(kinds))})"
            args += list(kinds)
        if session_id is not None:
            q += " AND (session_id=? OR id IN (SELECT entry_id FROM provenance WHERE session_id=? AND user_id=?))"
            args += [session_id, session_id, user_id]
        if event_time_gte is not None:
            q += " AND event_time >= ?"
            args.append(event_time_gte)
        if event_time_lte is not None:
            q += " AND event_time <= ?"
            args.append(event_time_lte)
        if text_key_eq is not None:
            q += " AND text_key = ?"
            args.append(text_key_eq)
        q += " ORDER BY rowid"
        if limit is not None:
            q += " LIMIT ?"
            args.append(int(limit))
        with self._lock:
            return [_row_to_entry(r) for r in self._conn.execute(q, args)]

    def provenance(self, entry_id: str) -> list[dict[str, Any]]:
        """Every source of an entry (one row per session/graph node that stated it), oldest first."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT session_id, graph_node_id, text, source_turn_ids, nli, added_at FROM provenance "
                "WHERE entry_id=? ORDER BY rowid",
                (entry_id,),
            ).fetchall()
        return [
            {"session_id": r[0], "graph_node_id": r[1], "text": r[2], "source_turn_ids": json.loads(r[3]),
             "nli": json.loads(r[4]), "added_at": r[5]}
            for r in rows
        ]

    def relations(self, user_id: str) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT session_id, source_id, type, target_id, probe_question FROM relations WHERE user_id=?",
                (user_id,),
            ).fetchall()
        return [dict(zip(("session_id", "source", "type", "target", "probe_question"), r)) for r in rows]

    def session_seen(self, user_id: str, session_id: str, graph_hash: Optional[str] = None,
                     input_hash: Optional[str] = None) -> bool:
        """True if this user already added this session with the same graph (or input) hash."""
        with self._lock:
            if graph_hash is not None:
                r = self._conn.execute(
                    "SELECT 1 FROM sessions WHERE user_id=? AND session_id=? AND graph_hash=?",
                    (user_id, session_id, graph_hash),
                ).fetchone()
                if r:
                    return True
            if input_hash is not None:
                r = self._conn.execute(
                    "SELECT 1 FROM sessions WHERE user_id=? AND session_id=? AND input_hash=?",
                    (user_id, session_id, input_hash),
                ).fetchone()
                if r:
                    return True
        return False

    def session_entries(self, user_id: str, session_id: str) -> list[Entry]:
        """Entries (any status) this session created or merged into."""
        return self.list(user_id, statuses=None, session_id=session_id)

    def history(self, entry_id: str) -> list[dict[str, Any]]:
        """Mem0-shaped change log of the entry *and* every entry linked to it by supersession.

        Returns a list of {"id", "memory_id", "old_memory", "new_memory", "event", "related_id",
        "session_id", "created_at", "updated_at", "is_deleted", "detail"}, oldest first. Events:
        ADD, MERGE (same fact from another source), UPDATE (explicit edit, or the new entry of a
        supersession), SUPERSEDED (the old entry of a supersession), DELETE. Empty list for an
        unknown id.
        """
        with self._lock:
            chain = self._chain(entry_id)
            if not chain:
                return []
            q = (f"SELECT * FROM history WHERE memory_id IN ({','.join('?' * len(chain))}) ORDER BY seq")
            rows = self._conn.execute(q, list(chain)).fetchall()
        return [
            {"id": r["id"], "memory_id": r["memory_id"], "old_memory": r["old_memory"],
             "new_memory": r["new_memory"], "event": r["event"], "related_id": r["related_id"],
             "session_id": r["session_id"], "created_at": r["created_at"], "updated_at": r["created_at"],
             "is_deleted": r["event"] == "DELETE", "detail": json.loads(r["detail"])}
            for r in rows
        ]

    def _chain(self, entry_id: str) -> list[str]:
        """entry_id plus entries reachable over supersedes/superseded_by (also from history rows)."""
        seen: list[str] = []
        todo = [entry_id]
        while todo:
            eid = todo.pop()
            if eid in seen:
                continue
            r = self._conn.execute("SELECT supersedes, superseded_by FROM entries WHERE id=?", (eid,)).fetchone()
            h = self._conn.execute("SELECT 1 FROM history WHERE memory_id=? LIMIT 1", (eid,)).fetchone()
            if r is None and h is None:
                continue
            seen.append(eid)
            if r is not None:
                todo += [x for x in (r[0], r[1]) if x]
            for (rel,) in self._conn.execute(
                "SELECT related_id FROM history WHERE memory_id=? AND event IN ('UPDATE','SUPERSEDED') "
                "AND related_id IS NOT NULL", (eid,)
            ):
                todo.append(rel)
        return seen

    # ------------------------------------------------------------------ index
    def index(self, user_id: str) -> _UserIndex:
        """The user's FAISS index, loaded from disk or rebuilt from SQLite when missing or stale."""
        with self._lock:
            version = self.user_version(user_id)
            idx = self._indices.get(user_id)
            if idx is not None and idx.version == version:
                return idx
            idx = self._load_index(user_id, version)
            if idx is None:
                idx = self.rebuild_index(user_id)
            self._indices[user_id] = idx
            return idx

    def _index_paths(self, user_id: str) -> tuple[Path, Path]:
        assert self.path is not None
        h = user_hash(user_id)
        return self.path / "index" / f"{h}.faiss", self.path / "index" / f"{h}.json"

    def _active_stamp(self, user_id: str) -> tuple[int, int]:
        r = self._conn.execute(
            "SELECT COUNT(*), COALESCE(MAX(rowid), 0) FROM entries WHERE user_id=? AND status='active'",
            (user_id,),
        ).fetchone()
        return int(r[0]), int(r[1])

    def _load_index(self, user_id: str, version: int) -> Optional[_UserIndex]:
        if self.path is None:
            return None
        fpath, mpath = self._index_paths(user_id)
        if not fpath.exists() or not mpath.exists():
            return None
        try:
            import faiss

            meta = json.loads(mpath.read_text())
            count, max_rowid = self._active_stamp(user_id)
            if (meta.get("version"), meta.get("count"), meta.get("max_rowid"), meta.get("dim")) != (
                version, count, max_rowid, self.dim
            ):
                logger.info("index of user %s is stale (%s); rebuilding from SQLite", user_hash(user_id), meta)
                return None
            ix = faiss.read_index(str(fpath))
            if ix.ntotal != count:
                logger.info("index of user %s has %d vectors, SQLite %d; rebuilding", user_hash(user_id), ix.ntotal, count)
                return None
            u = _UserIndex(ix.d, version)
            u.index = ix
            return u
        except Exception as e:  # a corrupt file is not fatal: SQLite is the truth
            logger.warning("cannot read index of user %s (%s); rebuilding", user_hash(user_id), e)
            return None

    def rebuild_index(self, user_id: str) -> _UserIndex:
        """Build the user's index from the embeddings stored in SQLite and write it to disk."""
        with self._lock:
            version = self.user_version(user_id)
            rows = self._conn.execute(
                "SELECT rowid, embedding FROM entries WHERE user_id=? AND status='active' ORDER BY rowid",
                (user_id,),
            ).fetchall()
            dim = self.dim or 1
            u = _UserIndex(dim, version)
            if rows:
                ids = np.array([r[0] for r in rows], dtype=np.int64)
                emb = np.stack([np.frombuffer(r[1], dtype=np.float32) for r in rows])
                u.index.add_with_ids(np.ascontiguousarray(emb), ids)
            self._indices[user_id] = u
            self._write_index(user_id, u)
            return u

    def _write_index(self, user_id: str, u: _UserIndex) -> None:
        if self.path is None:
            return
        import faiss

        fpath, mpath = self._index_paths(user_id)
        count, max_rowid = self._active_stamp(user_id)
        tmp = fpath.with_suffix(".faiss.tmp")
        faiss.write_index(u.index, str(tmp))
        os.replace(tmp, fpath)
        meta = {"version": u.version, "count": count, "max_rowid": max_rowid, "dim": self.dim}
        tmpm = mpath.with_suffix(".json.tmp")
        tmpm.write_text(json.dumps(meta))
        os.replace(tmpm, mpath)
        self._unflushed.pop(user_id, None)

    def _flush_index(self, user_id: str) -> None:
        u = self._indices.get(user_id)
        if u is not None and u.version == self.user_version(user_id):
            self._write_index(user_id, u)

    def index_path(self, user_id: str) -> Optional[Path]:
        """Path of the user's .faiss file (None for an in-memory store)."""
        return self._index_paths(user_id)[0] if self.path is not None else None

    def active_matrix(self, user_id: str) -> tuple[np.ndarray, np.ndarray]:
        """(rowids int64 (n,), embeddings float32 (n, dim)) of the user's active entries.

        A copy of the vectors the FAISS index holds (IndexFlatIP storage), in index order.
        """
        import faiss

        with self._lock:
            u = self.index(user_id)
            n = u.index.ntotal
            if n == 0:
                return np.zeros(0, np.int64), np.zeros((0, u.dim), np.float32)
            ids = faiss.vector_to_array(u.index.id_map).astype(np.int64)
            flat = faiss.downcast_index(u.index.index)
            emb = faiss.rev_swig_ptr(flat.get_xb(), n * u.index.d).reshape(n, u.index.d).copy()
            return ids, emb

    def search_active(self, user_id: str, query: np.ndarray, k: int) -> list[tuple[Entry, float]]:
        """Top-``k`` active entries of ``user_id`` by inner product with ``query`` (float32 (dim,), L2-normalised).

        Exact (IndexFlatIP semantics). Small indices are scored with one BLAS mat-vec over the
        index's own storage: for a single query this avoids FAISS's OpenMP start-up, which
        dominates below ~1e6 multiply-adds; larger ones use ``IndexIDMap2.search``.
        """
        with self._lock:
            u = self.index(user_id)
            n = u.index.ntotal
            if n == 0 or k <= 0:
                return []
            q = np.asarray(query, dtype=np.float32).reshape(1, -1)
            if q.shape[1] != u.index.d:
                raise ValueError(f"query dim {q.shape[1]} != index dim {u.index.d}")
            k = min(k, n)
            if n * u.index.d < SMALL_SEARCH_WORK:
                import faiss

                flat = faiss.downcast_index(u.index.index)
                xb = faiss.rev_swig_ptr(flat.get_xb(), n * u.index.d).reshape(n, u.index.d)
                s = xb @ q[0]
                top = np.argpartition(-s, k - 1)[:k] if k < n else np.arange(n)
                top = top[np.argsort(-s[top], kind="stable")]
                ids = faiss.vector_to_array(u.index.id_map)[top]
                pairs = [(int(i), float(s[j])) for i, j in zip(ids, top)]
            else:
                scores, ids = u.index.search(q, k)
                pairs = [(int(i), float(sc)) for i, sc in zip(ids[0], scores[0]) if i >= 0]
            got = self.by_rowids(user_id, [i for i, _ in pairs])
        return [(got[i], sc) for i, sc in pairs if i in got]

    def active_by_keys(self, user_id: str, keys: Sequence[str]) -> list[Entry]:
        """Active entries of ``user_id`` whose normalised text (:func:`text_key`) is one of ``keys``."""
        keys = sorted(set(keys))
        out: list[Entry] = []
        with self._lock:
            for i in range(0, len(keys), 500):
                chunk = keys[i : i + 500]
                q = (f"SELECT {_ENTRY_COLS} FROM entries WHERE user_id=? AND status='active' AND text_key IN "
                     f"({','.join('?' * len(chunk))}) ORDER BY rowid")
                out += [_row_to_entry(r) for r in self._conn.execute(q, [user_id, *chunk])]
        return out

    # ------------------------------------------------------------------ writes
    def commit(self, user_id: str, expected_version: Optional[int], plan: Plan) -> int:
        """Apply ``plan`` atomically; returns the new user version.

        Raises:
            VersionConflict: the user's version is no longer ``expected_version``.
            ValueError: an embedding of the wrong dimension.
        """
        now = utcnow()
        with self._lock:
            with self._write_txn() as c:
                cur = self.user_version(user_id)
                if expected_version is not None and cur != expected_version:
                    raise VersionConflict(f"user version {cur} != planned {expected_version}")
                for e in plan.inserts:
                    if e.user_id != user_id:
                        raise ValueError(f"entry {e.id} belongs to user {e.user_id!r}, not {user_id!r}")
                    emb = np.ascontiguousarray(e.embedding, dtype=np.float32).reshape(-1)
                    self._check_dim(int(emb.shape[0]))
                    e.created_at = e.created_at or now
                    e.updated_at = now
                    cur_ = c.execute(
                        "INSERT INTO entries(id, user_id, session_id, kind, graph_node_id, text, text_key, subject, "
                        "source_turn_ids, event_time, dates, created_at, updated_at, status, supersedes, "
                        "superseded_by, valid_from, valid_to, nli, confidence, metadata, embedding) "
                        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                        (e.id, user_id, e.session_id, e.kind, e.graph_node_id, e.text, text_key(e.text), e.subject,
                         json.dumps(e.source_turn_ids), e.event_time, json.dumps(e.dates), e.created_at,
                         e.updated_at, e.status, e.supersedes, e.superseded_by, e.valid_from, e.valid_to,
                         json.dumps(e.nli), e.confidence, json.dumps(e.metadata), emb.tobytes()),
                    )
                    e.rowid = cur_.lastrowid
                    c.execute(
                        "INSERT OR IGNORE INTO provenance(entry_id, user_id, session_id, graph_node_id, text, "
                        "source_turn_ids, nli, added_at) VALUES (?,?,?,?,?,?,?,?)",
                        (e.id, user_id, e.session_id, e.graph_node_id, e.text, json.dumps(e.source_turn_ids),
                         json.dumps(e.nli), now),
                    )
                for old_id, new_id, valid_to in plan.supersede:
                    c.execute(
                        "UPDATE entries SET status='superseded', superseded_by=?, valid_to=COALESCE(?, valid_to, ?), "
                        "updated_at=? WHERE id=? AND user_id=?",
                        (new_id, valid_to, now, now, old_id, user_id),
                    )
                for target_id, prov, evidence, conf in plan.merges:
                    c.execute(
                        "INSERT OR IGNORE INTO provenance(entry_id, user_id, session_id, graph_node_id, text, "
                        "source_turn_ids, nli, added_at) VALUES (?,?,?,?,?,?,?,?)",
                        (target_id, user_id, prov.get("session_id"), prov.get("graph_node_id"), prov["text"],
                         json.dumps(prov.get("source_turn_ids", [])), json.dumps(prov.get("nli", [])), now),
                    )
                    row = c.execute("SELECT nli, confidence, metadata FROM entries WHERE id=?",
                                    (target_id,)).fetchone()
                    nli = json.loads(row[0]) + list(evidence)
                    new_conf = max(x for x in (row[1], conf) if x is not None) if (row[1] is not None or conf is not None) else None
                    meta = json.loads(row[2])
                    # the merged-in event's details join the kept entry's list
                    have = meta.get("details", [])
                    if isinstance(have, list):
                        extra = [d for d in prov.get("details") or [] if d not in have]
                        if extra:
                            meta["details"] = have + extra
                    c.execute("UPDATE entries SET nli=?, confidence=?, metadata=?, updated_at=? WHERE id=?",
                              (json.dumps(nli), new_conf, json.dumps(meta), now, target_id))
                for src, typ, tgt, probe in plan.relations:
                    c.execute(
                        "INSERT OR IGNORE INTO relations(user_id, session_id, source_id, type, target_id, probe_question) "
                        "VALUES (?,?,?,?,?,?)",
                        (user_id, plan.session.get("session_id") if plan.session else None, src, typ, tgt, probe),
                    )
                for h in plan.history:
                    self._history_row(user_id, h, now)
                if plan.session is not None:
                    s = plan.session
                    c.execute(
                        "INSERT OR IGNORE INTO sessions(user_id, session_id, input_hash, graph_hash, graph_json, "
                        "metadata, added_at) VALUES (?,?,?,?,?,?,?)",
                        (user_id, s["session_id"], s.get("input_hash"), s["graph_hash"], s["graph_json"],
                         json.dumps(s.get("metadata", {})), now),
                    )
                version = self._bump(user_id)
            self._apply_to_index(user_id, plan, version)
            return version

    def _history_row(self, user_id: str, h: dict[str, Any], now: str) -> None:
        self._conn.execute(
            "INSERT INTO history(id, memory_id, user_id, old_memory, new_memory, event, related_id, session_id, "
            "created_at, detail) VALUES (?,?,?,?,?,?,?,?,?,?)",
            (uuid.uuid4().hex, h["memory_id"], user_id, h.get("old_memory"), h.get("new_memory"), h["event"],
             h.get("related_id"), h.get("session_id"), now, json.dumps(h.get("detail", {}))),
        )

    def _apply_to_index(self, user_id: str, plan: Plan, version: int) -> None:
        """Keep the in-memory index in step with a commit (or drop it so the next read rebuilds)."""
        u = self._indices.get(user_id)
        if u is None or u.version != version - 1:
            self._indices.pop(user_id, None)  # another writer got in between: rebuild lazily
            self._unflushed[user_id] = self._unflushed.get(user_id, 0) + 1
            return
        add = [e for e in plan.inserts if e.status == "active"]
        if add:
            if u.index.ntotal == 0 and u.dim != len(add[0].embedding):
                import faiss
                u.index = faiss.IndexIDMap2(faiss.IndexFlatIP(len(add[0].embedding)))
                u.dim = len(add[0].embedding)
            u.index.add_with_ids(
                np.stack([np.asarray(e.embedding, np.float32).reshape(-1) for e in add]),
                np.array([e.rowid for e in add], dtype=np.int64),
            )
        gone = [old for old, _, _ in plan.supersede]
        if gone:
            rows = self._conn.execute(
                f"SELECT rowid FROM entries WHERE id IN ({','.join('?' * len(gone))})", gone
            ).fetchall()
            u.index.remove_ids(np.array([r[0] for r in rows], dtype=np.int64))
        u.version = version
        n = self._unflushed.get(user_id, 0) + 1
        self._unflushed[user_id] = n
        if n >= self.index_flush_every:
            self._write_index(user_id, u)

    def update_text(self, entry_id: str, text: str, embedding: np.ndarray, subject: Optional[str]) -> Optional[Entry]:
        """Explicit edit (Mem0 ``update``): new text and embedding in place; history keeps the old text."""
        with self._lock:
            e = self.get(entry_id)
            if e is None:
                return None
            now = utcnow()
            emb = np.ascontiguousarray(embedding, dtype=np.float32).reshape(-1)
            with self._write_txn() as c:
                self._check_dim(int(emb.shape[0]))
                c.execute("UPDATE entries SET text=?, text_key=?, subject=?, embedding=?, updated_at=? WHERE id=?",
                          (text, text_key(text), subject, emb.tobytes(), now, entry_id))
                self._history_row(e.user_id, {"memory_id": entry_id, "old_memory": e.text, "new_memory": text,
                                              "event": "UPDATE", "detail": {"actor": "api"}}, now)
                self._bump(e.user_id)
            self._indices.pop(e.user_id, None)
            if self.path is not None:
                self.rebuild_index(e.user_id)
            return self.get(entry_id)

    def set_status(self, entry_id: str, status: str) -> Optional[Entry]:
        """Archive / re-activate an entry (explicit API call); history records the change."""
        if status not in ENTRY_STATUSES:
            raise ValueError(f"status must be one of {ENTRY_STATUSES}, got {status!r}")
        with self._lock:
            e = self.get(entry_id)
            if e is None:
                return None
            now = utcnow()
            with self._write_txn() as c:
                c.execute("UPDATE entries SET status=?, updated_at=? WHERE id=?", (status, now, entry_id))
                self._history_row(e.user_id, {"memory_id": entry_id, "old_memory": e.text, "new_memory": e.text,
                                              "event": status.upper(), "detail": {"from": e.status}}, now)
                self._bump(e.user_id)
            self._indices.pop(e.user_id, None)
            return self.get(entry_id)

    def delete(self, entry_id: str) -> bool:
        """Explicit delete (Mem0 ``delete``): the row and its provenance go; a DELETE history row stays."""
        with self._lock:
            e = self.get(entry_id)
            if e is None:
                return False
            now = utcnow()
            with self._write_txn() as c:
                c.execute("DELETE FROM entries WHERE id=?", (entry_id,))
                c.execute("DELETE FROM provenance WHERE entry_id=?", (entry_id,))
                c.execute("DELETE FROM relations WHERE source_id=? OR target_id=?", (entry_id, entry_id))
                self._history_row(e.user_id, {"memory_id": entry_id, "old_memory": e.text, "new_memory": None,
                                              "event": "DELETE"}, now)
                self._bump(e.user_id)
            self._indices.pop(e.user_id, None)
            if self.path is not None:
                self.rebuild_index(e.user_id)
            return True

    def delete_user(self, user_id: str) -> int:
        """Remove every row of ``user_id`` (history too) and the index files; returns entries removed."""
        with self._lock:
            with self._write_txn() as c:
                n = c.execute("DELETE FROM entries WHERE user_id=?", (user_id,)).rowcount
                for t in ("provenance", "relations", "sessions", "history"):
                    c.execute(f"DELETE FROM {t} WHERE user_id=?", (user_id,))
                self._bump(user_id)
            self._indices.pop(user_id, None)
            self._unflushed.pop(user_id, None)
            if self.path is not None:
                for p in self._index_paths(user_id):
                    p.unlink(missing_ok=True)
            return n

    def reset(self) -> None:
        """Remove every user's data and index files (Mem0 ``reset``)."""
        with self._lock:
            users = [r[0] for r in self._conn.execute("SELECT user_id FROM users")]
            with self._write_txn() as c:
                for t in ("entries", "provenance", "relations", "sessions", "history", "meta"):
                    c.execute(f"DELETE FROM {t}")
                # keep version counters monotonic so stale in-memory indices elsewhere are detected
                c.execute("UPDATE users SET version = version + 1")
            self._indices.clear()
            self._unflushed.clear()
            if self.path is not None:
                for u in users:
                    for p in self._index_paths(u):
                        p.unlink(missing_ok=True)

    def owner(self, entry_id: str) -> Optional[str]:
        """The user id owning ``entry_id`` (from its row, or its history once deleted); None if unknown."""
        with self._lock:
            r = self._conn.execute("SELECT user_id FROM entries WHERE id=?", (entry_id,)).fetchone()
            if r is None:
                r = self._conn.execute("SELECT user_id FROM history WHERE memory_id=? LIMIT 1", (entry_id,)).fetchone()
        return r[0] if r else None

    def user_ids(self, prefix: str = "") -> list[str]:
        """Every user id ever written (the ``users`` table) starting with ``prefix``, sorted."""
        with self._lock:
            rows = self._conn.execute("SELECT user_id FROM users ORDER BY user_id").fetchall()
        return [r[0] for r in rows if r[0].startswith(prefix)]

    def users(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self._conn.execute(
                "SELECT DISTINCT user_id FROM entries ORDER BY user_id")]

