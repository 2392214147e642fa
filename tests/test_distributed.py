"""``--engine ray`` (promem_fast.distributed): options and the vLLM worker's engine arguments
without Ray; with Ray (a local ``ray.init(num_cpus=2)``): the same graphs, failures and
report as the local engine, resume without redoing finished sessions, --retry-failed, and a
worker SIGKILLed mid-batch whose batch Ray retries on a restarted actor."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fakes import fake_vllm  # noqa: E402
from test_bulk import EMPTY_ID, N_SESSIONS, _canon, _write_input  # noqa: E402

from promem_fast.bulk import DB_NAME, FAILED_NAME, GRAPHS_NAME, run_bulk  # noqa: E402
from promem_fast.cli import make_parser  # noqa: E402
from promem_fast.config import Config  # noqa: E402
from promem_fast.distributed import KILL_ENV, BulkWorker, RayOptions, worker_config  # noqa: E402
from promem_fast.schema import Session, Turn  # noqa: E402


def _cfg() -> Config:
    cfg = Config()
    cfg.llm.backend, cfg.nli.backend, cfg.embed.backend = "scripted", "llm", "hash"
    return cfg


def _attempts(out: Path) -> dict[str, int]:
    conn = sqlite3.connect(out / DB_NAME)
    try:
        return dict(conn.execute("SELECT session_id, attempts FROM sessions"))
    finally:
        conn.close()


# -- without Ray ----------------------------------------------------------------------


def test_engine_ray_without_ray_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    inp = _write_input(tmp_path / "in.jsonl")
    with pytest.raises(ImportError, match=r"pip install 'promem-fast\[distributed\]'"):
        run_bulk([inp], tmp_path / "out", "jsonl", 2, _cfg(), engine="ray", progress=False)
    # the local engine does not need Ray
    rep = run_bulk([inp], tmp_path / "out", "jsonl", 2, _cfg(), progress=False)
    assert (rep.ok, rep.failed) == (N_SESSIONS, 1)


def test_unknown_engine_is_refused(tmp_path):
    with pytest.raises(ValueError, match="engine must be 'local' or 'ray'"):
        run_bulk([tmp_path / "x.jsonl"], tmp_path / "out", engine="spark")


@pytest.mark.parametrize("opts, field", [
    (dict(workers=0), "workers"), (dict(gpus_per_worker=-1), "gpus_per_worker"),
    (dict(cpus_per_worker=-0.5), "cpus_per_worker"), (dict(batch_size=0), "batch_size"),
    (dict(address="nowhere"), "address"),
])
def test_ray_options_name_the_bad_field(opts, field):
    with pytest.raises(ValueError, match=f"RayOptions.{field}"):
        RayOptions(**opts).validate(_cfg())


def test_ray_options_defaults():
    cfg = _cfg()
    assert RayOptions().gpus(cfg) == 0.0 and RayOptions().batch(16) == 8 and RayOptions().batch(1) == 1
    cfg.llm.backend = "vllm"
    assert RayOptions().gpus(cfg) == 1.0
    cfg.llm.vllm.tensor_parallel_size = 2
    assert RayOptions().gpus(cfg) == 2.0 and RayOptions(gpus_per_worker=4).gpus(cfg) == 4.0
    with pytest.raises(ValueError, match="less than llm.vllm.tensor_parallel_size 2"):
        RayOptions(gpus_per_worker=1).validate(cfg)


class _FakeRay:
    """``ray`` for init_ray: records ray.init's keyword arguments."""

    def __init__(self):
        self.calls = []
        self.data = type(sys)("ray.data")

    def is_initialized(self):
        return bool(self.calls)

    def init(self, **kw):
        self.calls.append(kw)


def test_init_ray_starts_a_local_ray_or_joins_the_address(monkeypatch):
    from promem_fast import distributed

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    fake = _FakeRay()
    monkeypatch.setitem(sys.modules, "ray", fake)
    monkeypatch.setitem(sys.modules, "ray.data", fake.data)
    assert distributed.init_ray(RayOptions(num_cpus=2), log_to_driver=False) is True
    assert fake.calls == [{"address": "local", "log_to_driver": False, "include_dashboard": False, "num_cpus": 2}]
    assert distributed.init_ray(RayOptions()) is False  # connected already: nothing started
    fake.calls.clear()
    distributed.init_ray(RayOptions(address="auto"))  # a cluster to join is not configured by the job
    assert fake.calls == [{"address": "auto", "log_to_driver": True}]


def test_cli_engine_arguments():
    p = make_parser()
    a = p.parse_args(["bulk", "in.json", "--out", "o", "--engine", "ray", "--address", "ray://head:10001",
                      "--workers", "8", "--gpus-per-worker", "1", "--concurrency", "32"])
    assert (a.engine, a.address, a.workers, a.gpus_per_worker, a.concurrency) == ("ray", "ray://head:10001", 8, 1.0, 32)
    assert p.parse_args(["bulk", "in.json", "--out", "o"]).engine == "local"  # default
    with pytest.raises(SystemExit):
        p.parse_args(["bulk", "in.json", "--out", "o", "--engine", "ray", "--workers", "0"])


def _vllm_cfg(**vllm) -> Config:
    cfg = _cfg()
    cfg.llm.backend, cfg.llm.model, cfg.llm.seed = "vllm", "Qwen/Qwen2.5-7B-Instruct", 3
    for k, v in vllm.items():
        setattr(cfg.llm.vllm, k, v)
    return cfg


def test_vllm_worker_engine_args_from_config(monkeypatch):
    fake = fake_vllm.install(monkeypatch)
    cfg = _vllm_cfg(tensor_parallel_size=2, gpu_memory_utilization=0.85, max_model_len=16384)
    w = BulkWorker(cfg.model_dump_json(), concurrency=8)
    try:
        [args] = fake.engine_args
        assert args.kwargs == {
            "model": "Qwen/Qwen2.5-7B-Instruct", "seed": 3, "tensor_parallel_size": 2,
            "gpu_memory_utilization": 0.85, "max_model_len": 16384, "enable_prefix_caching": True,
            "distributed_executor_backend": "mp",  # TP ranks on the actor's own GPUs
        }
        # a session the fake model cannot serve is a failed row, not a crashed batch
        s = Session(session_id="v/1", user_name="Kim", turns=[Turn(turn_id="t0", role="user", content="I adopted a cat named Tom")])
        out = w({"ordinal": [5], "session_json": [s.model_dump_json()]})
        assert out["session_id"] == ["v/1"] and out["ordinal"] == [5] and out["graph_json"] == [""]
        assert out["error"][0].startswith("StructuredOutputError") and out["node_id"] == ["local"]
    finally:
        w.close()
    assert fake.shutdowns == 1


def test_vllm_config_fields_single_gpu_and_prefix_caching_off(monkeypatch):
    fake = fake_vllm.install(monkeypatch)
    cfg = worker_config(_vllm_cfg(enable_prefix_caching=False, max_num_seqs=64))
    assert cfg.llm.vllm.distributed_executor_backend is None  # TP 1: vLLM's own choice
    w = BulkWorker(cfg.model_dump_json())
    w.close()
    assert fake.engine_args[0].kwargs == {"model": "Qwen/Qwen2.5-7B-Instruct", "seed": 3, "max_num_seqs": 64,
                                          "enable_prefix_caching": False}
    with pytest.raises(ValueError, match="gpu_memory_utilization"):
        Config.model_validate({"llm": {"vllm": {"gpu_memory_utilization": 1.5}}})


# -- with Ray ---------------------------------------------------------------------------

try:
    import ray
except ImportError:
    ray = None
needs_ray = pytest.mark.skipif(ray is None, reason="needs Ray: pip install 'promem-fast[distributed]'")


@pytest.fixture(scope="module")
def ray_local():
    if ray.is_initialized():
        ray.shutdown()
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def local_ref(tmp_path_factory):
    """The local engine's output on the test_bulk input: (dir, report dict)."""
    tmp = tmp_path_factory.mktemp("local")
    inp = _write_input(tmp / "in.jsonl")
    rep = run_bulk([inp], tmp / "out", "jsonl", 3, _cfg(), progress=False)
    return tmp / "out", rep.as_dict()


def _graph_lines(out: Path) -> list[str]:
    return [_canon(x) for x in (out / GRAPHS_NAME).read_text().splitlines()]


def _same_report(a: dict, b: dict) -> None:
    drop = ("out_dir", "seconds", "ray")
    assert {k: v for k, v in a.items() if k not in drop} == {k: v for k, v in b.items() if k not in drop}


@pytest.mark.ray
@needs_ray
def test_ray_engine_equals_local_and_resumes(tmp_path, ray_local, local_ref):
    ref_out, ref_rep = local_ref
    inp = _write_input(tmp_path / "in.jsonl")
    out = tmp_path / "out"
    rep = run_bulk([inp], out, "jsonl", 3, _cfg(), engine="ray", ray=RayOptions(workers=2, batch_size=2),
                   progress=False)
    d = rep.as_dict()
    _same_report(d, ref_rep)
    assert (d["total"], d["ok"], d["failed"], d["skipped"]) == (N_SESSIONS + 1, N_SESSIONS, 1, 0)
    assert d["ray"]["workers"] == 2 and sum(d["ray"]["sessions_per_node"].values()) == N_SESSIONS + 1
    assert d["tokens"] == ref_rep["tokens"] > 0
    # graphs: byte-identical once the wall-clock fields are zeroed, input order
    assert _graph_lines(out) == _graph_lines(ref_out)
    assert [json.loads(x)["session_id"] for x in (out / GRAPHS_NAME).read_text().splitlines()] == \
        [f"job/s{k}" for k in range(N_SESSIONS)]
    assert (out / FAILED_NAME).read_bytes() == (ref_out / FAILED_NAME).read_bytes()
    assert "EmptySessionError" in d["failures"][EMPTY_ID]

    # resume: nothing left, no worker started, nothing sent to the LLM
    rep2 = run_bulk([inp], out, "jsonl", 3, _cfg(), engine="ray", ray=RayOptions(workers=2), progress=False)
    assert (rep2.skipped, rep2.ok, rep2.failed, rep2.tokens, rep2.ray) == (N_SESSIONS + 1, 0, 0, 0, None)

    # --retry-failed redoes only the failed session, in place
    rep3 = run_bulk([inp], out, "jsonl", 3, _cfg(), True, engine="ray", ray=RayOptions(workers=1), progress=False)
    assert (rep3.skipped, rep3.ok, rep3.failed) == (N_SESSIONS, 0, 1)
    att = _attempts(out)
    assert att[EMPTY_ID] == 2 and all(att[f"job/s{k}"] == 1 for k in range(N_SESSIONS))
    assert _graph_lines(out) == _graph_lines(ref_out)


@pytest.mark.ray
@needs_ray
def test_worker_sigkill_mid_run_loses_nothing(tmp_path, ray_local, local_ref, monkeypatch):
    ref_out, ref_rep = local_ref
    inp = _write_input(tmp_path / "in.jsonl")
    out = tmp_path / "out"
    marker = tmp_path / "killed"
    monkeypatch.setenv(KILL_ENV, f"2:{marker}")  # a worker dies after its 2nd batch, before returning it
    rep = run_bulk([inp], out, "jsonl", 2, _cfg(), engine="ray", ray=RayOptions(workers=2, batch_size=1),
                   progress=False, scripted_latency_s=0.005)
    assert marker.exists()  # the kill happened; Ray restarted the actor and retried its batch
    _same_report(rep.as_dict(), ref_rep)
    att = _attempts(out)
    assert sorted(att) == sorted([f"job/s{k}" for k in range(N_SESSIONS)] + [EMPTY_ID])
    assert set(att.values()) == {1}  # each session committed once
    assert _graph_lines(out) == _graph_lines(ref_out)
