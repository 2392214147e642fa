"""HTTP service for lifelong memory (``promem-fast serve``): FastAPI app over :class:`AsyncMemory`.

Routes follow Mem0's REST server (``/memories``, ``/search``, ``/memories/{id}/history``,
``/reset``) plus ``/graphs`` (add an already extracted graph) and ``/jobs`` (bulk
extraction in the background). The OpenAPI spec is at ``/openapi.json``.

Access: once the store holds an API key (``promem-fast keys create``), every route needs
``Authorization: Bearer KEY``: 401 without a valid key, 403 for a user id or an admin route
outside the key's scope. A key reaches only its tenant's users (stored user ids are
``tenant + "\\x1f" + user_id``, so two tenants' "alice" never meet) and, unless it has
``--all-users``, only its listed users. Routes addressed by memory or job id answer 404 for
an id of another scope, exactly as for an unknown id. ``/reset``, ``/jobs`` and ``/keys`` need
an admin key, and ``/reset`` with a key resets only that key's tenant. Without any key
(local use) every route is open, as before.

Errors: 422 for invalid input, with ``detail[].loc`` naming the failing field (FastAPI's
validation shape, also used for checks done past the request model); 404 for unknown
memory or job ids. Concurrent writes to one user are serialised by :class:`AsyncMemory`
(per-user lock + optimistic version check), so no update is lost.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import re
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, Union

from fastapi import Depends, FastAPI, HTTPException, Query, Request, Security
from fastapi.exception_handlers import http_exception_handler
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints, model_validator

from .config import Config
from .schema import MemoryGraph, Session
from .store.keys import TENANT_PATTERN, APIKeys, KeyInfo, keyless_users, keyless_warning, scoped_user, unscoped_user
from .store.memory import NONBLANK_PATTERN, AsyncMemory, InvalidInput, StoreConfig

logger = logging.getLogger(__name__)

NONBLANK = NONBLANK_PATTERN  # at least one non-whitespace character
UserId = Field(min_length=1, max_length=256, pattern=NONBLANK,
               description="Owner of the memory; every operation is scoped to it.")


class _Req(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _iso_only(v: Any) -> Any:
    if v is not None and not isinstance(v, (str, datetime)):
        raise ValueError("expected an ISO 8601 date-time string")
    return v


class Message(_Req):
    role: Literal["user", "assistant", "system", "other"] = "user"
    content: str = Field(min_length=1, max_length=100_000, pattern=NONBLANK)
    timestamp: Annotated[Optional[datetime], BeforeValidator(_iso_only)] = Field(
        default=None, description="When the message was said (ISO 8601).")
    name: Optional[str] = Field(default=None, max_length=256, description="Speaker name.")


_ONE_OF = lambda a, b: {"oneOf": [{"required": [a]}, {"required": [b]}]}  # noqa: E731


class AddRequest(_Req):
    """Exactly one of ``messages`` or ``session``."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_ONE_OF("messages", "session"))

    user_id: str = UserId
    # not nullable in the spec: absent means "not given" (None default is not validated)
    messages: list[Message] = Field(default=None, min_length=1, max_length=2000)  # type: ignore[assignment]
    session: Session = None  # type: ignore[assignment]
    metadata: dict[str, Any] = Field(default_factory=dict)
    session_id: Optional[str] = Field(default=None, min_length=1, max_length=256)
    user_name: Optional[str] = Field(default=None, min_length=1, max_length=256)

    @model_validator(mode="after")
    def _one_source(self) -> "AddRequest":
        if (self.messages is None) == (self.session is None):
            raise ValueError("give exactly one of 'messages' or 'session'")
        return self


class AddGraphRequest(_Req):
    user_id: str = UserId
    graph: MemoryGraph
    session: Optional[Session] = Field(default=None, description="The source session (turn timestamps).")
    metadata: dict[str, Any] = Field(default_factory=dict)


StatusName = Literal["active", "superseded", "archived"]
KindName = Literal["event", "detail", "manual"]


class EventTimeRange(_Req):
    gte: Optional[str] = Field(default=None, description="Earliest event time (ISO 8601, compared as text).")
    lte: Optional[str] = Field(default=None, description="Latest event time (ISO 8601, compared as text).")


class Filters(_Req):
    """Which entries to consider; default: active entries of every kind."""

    status: Optional[Union[Literal["all"], StatusName, list[StatusName]]] = Field(
        default=None, description="'all', one status, or a non-empty list of statuses (default 'active').")
    session_id: Optional[str] = Field(default=None, description="Entries stated in this session.")
    kind: Optional[Union[KindName, list[KindName]]] = None
    event_time: Optional[EventTimeRange] = None
    metadata: Optional[dict[str, Any]] = Field(default=None, description="Metadata equality, key by key.")

    def as_dict(self) -> dict[str, Any]:
        d = self.model_dump(exclude_none=True)
        for k in ("status", "kind"):
            if d.get(k) == []:
                d.pop(k)  # an empty list means no restriction
        if "event_time" in d and not d["event_time"]:
            d.pop("event_time")
        return d


class SearchRequest(_Req):
    query: str = Field(min_length=1, max_length=10_000, pattern=NONBLANK)
    user_id: str = UserId
    top_k: int = Field(default=20, ge=1, le=1000)
    filters: Optional[Filters] = None
    threshold: Optional[float] = Field(default=None, ge=-1.0, le=1.0, strict=True)


class UpdateRequest(_Req):
    data: str = Field(min_length=1, max_length=100_000, pattern=NONBLANK, description="New text of the memory entry.")
    user_id: Optional[str] = Field(default=None, min_length=1, max_length=256, pattern=NONBLANK)


class JobRequest(_Req):
    """Exactly one of ``sessions`` or ``path`` (a file under the server's jobs root)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_ONE_OF("sessions", "path"))

    user_id: str = UserId
    sessions: list[Session] = Field(default=None, min_length=1, max_length=10_000)  # type: ignore[assignment]
    # no NUL: no file system takes it, so the spec says so too
    path: str = Field(default=None, min_length=1, max_length=4096, pattern=r"^[^\x00]*$")  # type: ignore[assignment]
    format: Optional[Literal["locomo", "halumem", "longmemeval", "json", "jsonl"]] = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_source(self) -> "JobRequest":
        if (self.sessions is None) == (self.path is None):
            raise ValueError("give exactly one of 'sessions' or 'path'")
        return self


class AddResult(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str
    memory: str
    event: str
    status: str


class AddResponse(BaseModel):
    results: list[AddResult]
    session_id: str


class MemoryRecord(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str
    memory: str
    user_id: str
    metadata: dict[str, Any]
    created_at: str
    updated_at: str
    status: str
    score: Optional[float] = None


class RecordsResponse(BaseModel):
    results: list[MemoryRecord]


class HistoryItem(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str
    memory_id: str
    old_memory: Optional[str]
    new_memory: Optional[str]
    event: str
    created_at: str


class MessageResponse(BaseModel):
    model_config = ConfigDict(extra="allow")
    message: str


class JobSessionResult(BaseModel):
    session_id: str
    status: Literal["done", "failed"]
    results: int = 0
    error: Optional[str] = None


class JobStatus(BaseModel):
    job_id: str
    user_id: str
    status: Literal["queued", "running", "done", "failed"]
    total: int
    done: int
    failed: int
    created_at: str
    finished_at: Optional[str] = None
    error: Optional[str] = None
    sessions: list[JobSessionResult] = Field(default_factory=list)


class Detail(BaseModel):
    detail: str


class KeyRecord(BaseModel):
    key_id: str
    tenant: str
    users: Optional[list[str]] = Field(description="User ids the key may act for; null = every user of the tenant.")
    admin: bool
    created_at: str
    revoked_at: Optional[str] = None


class CreatedKey(KeyRecord):
    key: str = Field(description="The API key; shown only in this response (only its hash is stored).")


class KeyRequest(_Req):
    """``users`` (a list of user ids) or ``admin: true``, not both; neither: every user of the tenant."""

    # the spec says what the validator does: an admin key cannot have a user list
    model_config = ConfigDict(extra="forbid", json_schema_extra={
        "not": {"required": ["admin", "users"], "properties": {"admin": {"const": True}}}})

    tenant: Optional[str] = Field(default=None, pattern=TENANT_PATTERN,
                                  description="Tenant of the new key: only the caller's own (the default).")
    # not nullable in the spec: absent means every user of the tenant
    users: list[Annotated[str, StringConstraints(min_length=1, max_length=256, pattern=NONBLANK)]] = Field(
        default=None, min_length=1, max_length=10_000,  # type: ignore[assignment]
        description="User ids the key may act for; absent = every user of the tenant.")
    admin: bool = False

    @model_validator(mode="after")
    def _users_ok(self) -> "KeyRequest":
        if self.admin and self.users is not None:
            raise ValueError("users: an admin key reaches every user of its tenant; drop the user list")
        return self


_NOT_FOUND = {404: {"model": Detail, "description": "Unknown id (or an id outside the key's scope)."}}
_AUTH_RESPONSES: dict[Union[int, str], dict[str, Any]] = {
    401: {"model": Detail, "description": "Missing, invalid or revoked API key (only once the store has keys)."},
    403: {"model": Detail, "description": "A user id or route outside the key's scope."},
}
_bearer = HTTPBearer(auto_error=False, scheme_name="APIKey",
                     description="`Authorization: Bearer KEY`, a key from `promem-fast keys create`; "
                                 "required once the store holds any key.")


@dataclass(frozen=True)
class Principal:
    """Who is calling: ``key`` None means no key exists in the store (open, local use)."""

    key: Optional[KeyInfo]

    @property
    def tenant(self) -> Optional[str]:
        return self.key.tenant if self.key is not None else None

    @property
    def admin(self) -> bool:
        return self.key is None or self.key.admin

    def allows(self, user_id: str) -> bool:
        return self.key is None or self.key.allows(user_id)

    def user(self, user_id: str, field: str = "user_id") -> str:
        """The stored user id for ``user_id``; HTTP 403 when outside the key's scope."""
        if not self.allows(user_id):
            raise HTTPException(403, f"{field}: user {user_id!r} is outside this API key's scope")
        return scoped_user(self.tenant, user_id)

    def external(self, stored: str) -> Optional[str]:
        """The caller's user id for a stored one; None when outside the key's scope."""
        u = unscoped_user(self.tenant, stored)
        return u if u is not None and self.allows(u) else None


def _unauthorized(msg: str) -> HTTPException:
    return HTTPException(401, msg, headers={"WWW-Authenticate": "Bearer"})


async def _principal(request: Request, cred: Optional[HTTPAuthorizationCredentials] = Security(_bearer)) -> Principal:
    """The caller of this request; HTTP 401 once the store has keys and none valid is sent."""
    keys: APIKeys = request.app.state.keys
    # checked per request: keys made by `promem-fast keys create` while serving count at once
    if not keys.any_exist():
        return Principal(None)
    if cred is None:
        raise _unauthorized("missing API key: send 'Authorization: Bearer KEY'")
    info = keys.verify(cred.credentials)
    if info is None:
        raise _unauthorized("invalid or revoked API key")
    return Principal(info)


async def _admin(p: Principal = Depends(_principal)) -> Principal:
    if not p.admin:
        raise HTTPException(403, "this route needs an admin API key")
    return p


# module level: the route annotations are strings (postponed evaluation), resolved in this module
Caller = Annotated[Principal, Depends(_principal)]
Admin = Annotated[Principal, Depends(_admin)]


def _invalid(field: str, msg: str, where: str = "body") -> JSONResponse:
    loc: list[Any] = [where] + [p for p in field.replace("]", "").replace("[", ".").split(".") if p]
    return JSONResponse(status_code=422, content={"detail": [{"loc": loc, "msg": msg, "type": "value_error"}]})


_LONE_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _clean(x: Any) -> Any:
    """Replace lone UTF-16 surrogates (valid JSON escapes, but not Unicode text) with U+FFFD."""
    if isinstance(x, str):
        return _SURROGATE.sub("\ufffd", x)
    if isinstance(x, list):
        return [_clean(v) for v in x]
    if isinstance(x, dict):
        return {_clean(k): _clean(v) for k, v in x.items()}
    return x


class _CleanJSONBody:
    """ASGI middleware: JSON bodies with lone-surrogate escapes get them replaced by U+FFFD, so every
    stored string is valid UTF-8 (SQLite, tokenizers and hashes need it) instead of failing later."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, send)
            return
        chunks, more = [], True
        while more:
            msg = await receive()
            if msg["type"] != "http.request":
                await self.app(scope, receive, send)
                return
            chunks.append(msg.get("body", b""))
            more = msg.get("more_body", False)
        body = b"".join(chunks)
        if _LONE_SURROGATE_ESCAPE.search(body):
            try:
                body = json.dumps(_clean(json.loads(body))).encode("utf-8")
            except ValueError:
                pass  # not JSON: FastAPI answers with its own error
        done = False

        async def replay() -> dict:
            nonlocal done
            if not done:
                done = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def create_app(memory: AsyncMemory, *, jobs_root: Optional[str] = None, job_concurrency: int = 1) -> FastAPI:
    """The HTTP app over ``memory``.

    Args:
        memory: the :class:`AsyncMemory` served (its services/extractor are used for adds and jobs);
            its store's ``api_keys`` table decides whether requests need a key (see the module doc).
        jobs_root: directory that ``POST /jobs`` ``path`` values must lie in; None disables paths.
        job_concurrency: sessions of one job extracted at once.
    """
    app = FastAPI(
        title="promem_fast memory",
        version="0.1.0",
        description="Lifelong, verified memory for LLM agents (ProMem extraction + cross-session consolidation).",
        responses=_AUTH_RESPONSES,
    )
    jobs: dict[str, JobStatus] = {}
    job_tenant: dict[str, Optional[str]] = {}
    tasks: set[asyncio.Task] = set()
    root = Path(jobs_root).resolve() if jobs_root else None
    keys = APIKeys(memory.store)

    def _records(p: Principal, out: dict[str, Any]) -> dict[str, Any]:
        for r in out["results"]:
            r["user_id"] = p.external(r["user_id"])
        return out

    def _owned_id(p: Principal, memory_id: str, user_id: Optional[str]) -> Optional[str]:
        """The stored user id to pass on for ``memory_id``; HTTP 404 when the id is outside the scope."""
        owner = memory.store.owner(memory_id)
        if owner is None or p.external(owner) is None or (user_id is not None and not p.allows(user_id)):
            raise HTTPException(404, f"memory {memory_id!r} not found")
        return scoped_user(p.tenant, user_id) if user_id is not None else None

    @app.exception_handler(StarletteHTTPException)
    async def _on_http(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 400:  # unparseable body: same shape as validation errors
            return _invalid("", f"request body is not valid JSON ({exc.detail})")
        if exc.status_code == 405:  # Allow must list the methods of *every* route on this path
            allowed: set[str] = set()
            for route in app.router.routes:
                match, _ = route.matches({**request.scope, "method": "GET"}) if hasattr(route, "matches") else (None, None)
                if match is not None and match != Match.NONE and getattr(route, "methods", None):
                    allowed |= set(route.methods)
            return JSONResponse({"detail": exc.detail}, status_code=405,
                                headers={"Allow": ", ".join(sorted(allowed))})
        return await http_exception_handler(request, exc)

    @app.exception_handler(InvalidInput)
    async def _on_invalid(request: Request, exc: InvalidInput) -> JSONResponse:
        return _invalid(exc.field, exc.msg, "query" if request.method in ("GET", "DELETE") else "body")

    @app.get("/health", response_model=MessageResponse)
    async def health(p: Caller) -> dict[str, Any]:
        return {"message": "ok"}

    @app.post("/memories", response_model=AddResponse)
    async def add(req: AddRequest, p: Caller) -> Any:
        """Extract memory from messages or a session and consolidate it into the user's memory."""
        uid = p.user(req.user_id)
        src: Any = req.session if req.session is not None else [m.model_dump() for m in req.messages or []]
        try:
            return await memory.add(src, uid, req.metadata, session_id=req.session_id,
                                    user_name=req.user_name)
        except InvalidInput:
            raise
        except ValueError as e:  # e.g. an empty session: bad input, not a server fault
            field = "session" if req.session is not None else "messages"
            return _invalid(field, str(e))

    @app.post("/graphs", response_model=AddResponse)
    async def add_graph(req: AddGraphRequest, p: Caller) -> Any:
        """Consolidate an already extracted memory graph into the user's memory."""
        return await memory.add_graph(req.graph, p.user(req.user_id), req.metadata, session=req.session)

    @app.post("/search", response_model=RecordsResponse)
    async def search(req: SearchRequest, p: Caller) -> Any:
        """Top-k memory entries of the user by similarity to the query (active entries by default)."""
        uid = p.user(req.user_id)
        filters = req.filters.as_dict() if req.filters is not None else None
        return _records(p, await memory.search(req.query, uid, req.top_k, filters, req.threshold))

    @app.get("/memories", response_model=RecordsResponse)
    async def get_all(
        p: Caller,
        user_id: str = Query(min_length=1, max_length=256, pattern=NONBLANK),
        status: Literal["active", "superseded", "archived", "all"] = "active",
        limit: int = Query(default=100, ge=1, le=10_000),
    ) -> Any:
        """All memory entries of the user with the given status, oldest first."""
        return _records(p, await memory.get_all(p.user(user_id), {"status": status}, limit))

    @app.delete("/memories", response_model=MessageResponse)
    async def delete_all(p: Caller, user_id: str = Query(min_length=1, max_length=256, pattern=NONBLANK)) -> Any:
        """Delete every memory entry (and its history) of the user."""
        return await memory.delete_all(p.user(user_id))

    @app.get("/memories/{memory_id}", response_model=MemoryRecord, responses=_NOT_FOUND)
    async def get(p: Caller, memory_id: str,
                  user_id: Optional[str] = Query(default=None, min_length=1, max_length=256, pattern=NONBLANK)) -> Any:
        """One memory entry with its provenance."""
        rec = await memory.get(memory_id, _owned_id(p, memory_id, user_id))
        if rec is None:
            raise HTTPException(404, f"memory {memory_id!r} not found")
        rec["user_id"] = p.external(rec["user_id"])
        return rec

    @app.put("/memories/{memory_id}", response_model=MessageResponse, responses=_NOT_FOUND)
    async def update(memory_id: str, req: UpdateRequest, p: Caller) -> Any:
        """Replace the text of a memory entry (the old text stays in its history)."""
        try:
            return await memory.update(memory_id, req.data, _owned_id(p, memory_id, req.user_id))
        except KeyError:
            raise HTTPException(404, f"memory {memory_id!r} not found") from None

    @app.delete("/memories/{memory_id}", response_model=MessageResponse, responses=_NOT_FOUND)
    async def delete(p: Caller, memory_id: str,
                     user_id: Optional[str] = Query(default=None, min_length=1, max_length=256, pattern=NONBLANK)) -> Any:
        """Delete one memory entry (a DELETE row stays in its history)."""
        try:
            return await memory.delete(memory_id, _owned_id(p, memory_id, user_id))
        except KeyError:
            raise HTTPException(404, f"memory {memory_id!r} not found") from None

    @app.get("/memories/{memory_id}/history", response_model=list[HistoryItem], responses=_NOT_FOUND)
    async def history(memory_id: str, p: Caller) -> Any:
        """Changes of the entry and of the entries it superseded or was superseded by, oldest first."""
        _owned_id(p, memory_id, None)
        try:
            return await memory.history(memory_id)
        except KeyError:
            raise HTTPException(404, f"memory {memory_id!r} not found") from None

    @app.post("/reset", response_model=MessageResponse)
    async def reset(p: Admin) -> Any:
        """Delete every user's memory (with an admin key: every user of the key's tenant). Admin only."""
        if p.tenant is None:
            await memory.reset()
            return {"message": "Memory store reset"}
        users = memory.store.user_ids(scoped_user(p.tenant, ""))
        for uid in users:
            await memory.delete_all(uid)
        return {"message": f"Memory of tenant {p.tenant!r} reset", "users": len(users)}

    @app.get("/keys", response_model=list[KeyRecord])
    async def list_keys(p: Admin) -> Any:
        """The API keys of the caller's tenant, without their secrets. Admin only."""
        return [k.to_dict() for k in keys.list(p.tenant)]

    @app.post("/keys", response_model=CreatedKey, status_code=201)
    async def create_key(req: KeyRequest, p: Admin) -> Any:
        """Create a key of the caller's tenant; the key is in this response only. Admin only."""
        if p.tenant is None:  # an open store: whoever can reach it must not mint keys for tenants
            raise HTTPException(403, "the store has no API key yet: create the first one on the server with "
                                     "`promem-fast keys create`")
        if req.tenant not in (None, p.tenant):
            raise HTTPException(403, f"tenant: an admin key of {p.tenant!r} cannot make keys of {req.tenant!r}")
        try:
            key, info = keys.create(p.tenant, req.users, req.admin)
        except ValueError as e:  # keys.py names the field first ("users: ...")
            field, _, msg = str(e).partition(": ")
            return _invalid(field, msg)
        return {**info.to_dict(), "key": key}

    @app.delete("/keys/{key_id}", response_model=MessageResponse, responses=_NOT_FOUND)
    async def revoke_key(key_id: str, p: Admin) -> Any:
        """Revoke a key of the caller's tenant (it stops working at once). Admin only."""
        if not keys.revoke(key_id, p.tenant):
            raise HTTPException(404, f"key {key_id!r} not found (or already revoked)")
        return {"message": "API key revoked", "key_id": key_id}

    async def _run_job(job: JobStatus, uid: str, sessions: list[Session], metadata: dict[str, Any]) -> None:
        job.status = "running"
        sem = asyncio.Semaphore(max(1, job_concurrency))

        async def one(s: Session) -> None:
            async with sem:
                try:
                    out = await memory.add(s, uid, metadata)
                    job.sessions.append(JobSessionResult(session_id=s.session_id, status="done",
                                                         results=len(out["results"])))
                    job.done += 1
                except Exception as e:  # one bad session must not sink the job
                    logger.warning("job %s: session %s failed: %s", job.job_id, s.session_id, e)
                    job.sessions.append(JobSessionResult(session_id=s.session_id, status="failed",
                                                         error=f"{type(e).__name__}: {e}"))
                    job.failed += 1

        try:
            await asyncio.gather(*(one(s) for s in sessions))
            job.status = "done" if job.failed < job.total or job.total == 0 else "failed"
        except Exception as e:  # pragma: no cover - gather of guarded tasks
            job.status, job.error = "failed", str(e)
        job.finished_at = datetime.now(timezone.utc).isoformat()

    @app.post("/jobs", response_model=JobStatus, status_code=202, responses={
        403: {"model": Detail, "description": "Path outside the jobs root, or paths disabled."},
        404: {"model": Detail, "description": "No such file under the jobs root."}})
    async def create_job(req: JobRequest, p: Admin) -> Any:
        """Start bulk extraction + consolidation of sessions (in the body, or a file under the jobs root). Admin only."""
        uid = p.user(req.user_id)
        if req.path is not None:
            if root is None:
                raise HTTPException(403, "path: server-side paths are disabled (start the server with a jobs root)")
            try:
                fp = (root / req.path).resolve()
                inside = root == fp or root in fp.parents
                exists = inside and fp.is_file()
            except (ValueError, OSError, RuntimeError) as e:  # NUL bytes, over-long names, symlink loops
                return _invalid("path", f"not a usable file path ({e})")
            if not inside:
                raise HTTPException(403, "path: must lie inside the server's jobs root")
            if not exists:
                raise HTTPException(404, f"path: no file {req.path!r} under the jobs root")
            from .io import load_sessions

            try:
                sessions = await asyncio.to_thread(load_sessions, fp, req.format)
            except Exception as e:  # any malformed file is the caller's input, never a 500
                return _invalid("path", f"cannot load sessions: {type(e).__name__}: {e}")
        else:
            sessions = list(req.sessions or [])
        try:
            from .store.memory import _json_safe

            _json_safe("metadata", req.metadata)
        except InvalidInput as e:
            return _invalid(e.field, e.msg)
        job = JobStatus(job_id=uuid.uuid4().hex, user_id=req.user_id, status="queued", total=len(sessions),
                        done=0, failed=0, created_at=datetime.now(timezone.utc).isoformat())
        jobs[job.job_id] = job
        job_tenant[job.job_id] = p.tenant
        t = asyncio.create_task(_run_job(job, uid, sessions, req.metadata))
        tasks.add(t)
        t.add_done_callback(tasks.discard)
        return job

    @app.get("/jobs/{job_id}", response_model=JobStatus, responses=_NOT_FOUND)
    async def get_job(job_id: str, p: Admin) -> Any:
        """Progress and per-session outcome of a job (of the caller's tenant). Admin only."""
        job = jobs.get(job_id)
        if job is None or job_tenant.get(job_id) != p.tenant:
            raise HTTPException(404, f"job {job_id!r} not found")
        return job

    app.add_middleware(_CleanJSONBody)
    app.state.memory = memory
    app.state.jobs = jobs
    app.state.keys = keys
    return app


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1); names are not resolved."""
    if host.strip().lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to a public interface


class InsecureHost(ValueError):
    """``serve`` was asked to listen beyond loopback while the store has no API key."""


def check_host(host: str, has_keys: bool, insecure_no_auth: bool = False) -> None:
    """Refuse a non-loopback ``host`` for a store without keys.

    Raises:
        InsecureHost: ``host`` is not loopback, ``has_keys`` is False and ``insecure_no_auth`` is not set.
    """
    if has_keys or insecure_no_auth or is_loopback(host):
        return
    raise InsecureHost(
        f"--host: refusing to serve on {host!r} without authentication: the store has no API key, so anyone "
        "who can reach this address could read and delete every user's memory. Create one first with "
        "`promem-fast keys create --tenant NAME --admin --store DIR` (then send 'Authorization: Bearer KEY'), "
        "or pass --insecure-no-auth to serve openly anyway.")


def serve(host: str = "127.0.0.1", port: int = 8000, config: Optional[Config] = None, *,
          path: Optional[str] = None, store_config: Optional[StoreConfig] = None,
          jobs_root: Optional[str] = None, log_level: str = "info", insecure_no_auth: bool = False) -> None:
    """Run the memory service with uvicorn (blocking). ``path``: store directory (default in memory).

    Raises:
        InsecureHost: a non-loopback ``host`` while the store has no API key (see :func:`check_host`).
    """
    import uvicorn

    if not (insecure_no_auth or is_loopback(host)) and not (path and (Path(path) / "memory.db").is_file()):
        check_host(host, False, insecure_no_auth)  # no store yet, so no key: refuse before creating one
    memory = AsyncMemory(config or Config(), path=path, store_config=store_config)
    has_keys = APIKeys(memory.store).any_exist()
    try:
        check_host(host, has_keys, insecure_no_auth)
    except InsecureHost:
        memory.store.close()
        raise
    if insecure_no_auth and not is_loopback(host):
        logger.warning("serving on %s with --insecure-no-auth: every user's memory is open to any caller", host)
    stranded = keyless_users(memory.store) if has_keys else []
    if stranded:
        logger.warning("%s", keyless_warning(stranded, path or "the store"))
    app = create_app(memory, jobs_root=jobs_root, job_concurrency=(config or Config()).engine.concurrency)
    uvicorn.run(app, host=host, port=port, log_level=log_level)
