"""The command line end to end with the scripted LLM and the hashing embedder (no models)."""

import json

import pytest

from promem_fast.cli import main
from promem_fast.schema import MemoryGraph


def _dialogue(path):
    turns = [
        {"role": "user", "content": "Adopted a beagle named Rex last week.", "timestamp": "2024-03-10T09:00:00"},
        {"role": "assistant", "content": "Congratulations! How is Rex settling in?", "timestamp": "2024-03-10T09:00:05"},
        {"role": "user", "content": "Great, long walks in Riverside Park every morning.", "timestamp": "2024-03-10T09:01:00"},
    ]
    path.write_text(json.dumps(turns))
    return path


def test_extract_writes_a_valid_graph_and_qa_reads_it(tmp_path, capsys):
    src = _dialogue(tmp_path / "dialogue.json")
    out = tmp_path / "graph.json"
    rc = main(["extract", str(src), "--out", str(out), "--llm", "scripted", "--embed", "hash"])
    assert rc == 0
    g = MemoryGraph.from_json(out.read_text())
    assert g.variant == "promem" and g.events
    turn_ids = {"t0", "t1", "t2"}
    assert all(set(e.source_turn_ids) <= turn_ids for e in g.events)
    assert g.stats.llm_calls == sum(s.llm_calls for s in g.stats.stages.values()) > 0
    capsys.readouterr()
    assert main(["qa", str(out), "Where does the user walk?", "--llm", "scripted", "--embed", "hash"]) == 0
    assert capsys.readouterr().out.strip()


def test_extract_several_sessions_concurrently_writes_a_list(tmp_path):
    sessions = [
        {"session_id": f"s{i}", "user_name": "Ana", "turns": [
            {"role": "user", "content": f"Ran {i + 5} kilometres along the river today.", "timestamp": "2024-05-01T08:00:00"},
        ]}
        for i in range(3)
    ]
    src = tmp_path / "sessions.json"
    src.write_text(json.dumps(sessions))
    out = tmp_path / "graphs.json"
    assert main(["extract", str(src), "--out", str(out), "--llm", "scripted", "--embed", "hash", "--concurrency", "3"]) == 0
    graphs = [MemoryGraph.model_validate(x) for x in json.loads(out.read_text())]
    assert [g.session_id for g in graphs] == ["s0", "s1", "s2"]


def test_qa_reads_json_lines_of_graphs_as_bulk_writes_them(tmp_path, capsys):
    sessions = [{"session_id": f"s{i}", "user_name": "Ana", "turns": [
        {"role": "user", "content": text, "timestamp": "2024-05-01T08:00:00"}]}
        for i, text in enumerate(["Ran 12 kilometres along the river today.", "Baked sourdough bread for my sister."])]
    src = tmp_path / "sessions.json"
    src.write_text(json.dumps(sessions))
    out = tmp_path / "graphs.json"
    assert main(["extract", str(src), "--out", str(out), "--llm", "scripted", "--embed", "hash"]) == 0
    jsonl = tmp_path / "graphs.jsonl"
    jsonl.write_text("".join(json.dumps(g) + "\n" for g in json.loads(out.read_text())))
    capsys.readouterr()
    assert main(["qa", str(jsonl), "What did Ana bake?", "--llm", "scripted", "--embed", "hash", "--show-context"]) == 0
    res = capsys.readouterr()
    assert "s0/" in res.err and "s1/" in res.err  # both graphs were searched
    assert res.out.strip() != "I don't know"
    jsonl.write_text(jsonl.read_text() + "{broken\n")
    assert main(["qa", str(jsonl), "q?", "--llm", "scripted", "--embed", "hash"]) == 2
    assert "graphs.jsonl: line 3 is not valid JSON" in capsys.readouterr().err


def test_openai_backend_without_url_is_a_clear_error(tmp_path):
    src = _dialogue(tmp_path / "d.json")
    with pytest.raises(SystemExit, match="--llm-url"):
        main(["extract", str(src), "--out", str(tmp_path / "o.json"), "--llm", "openai"])


def test_schema_command_prints_the_published_schema(capsys):
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out)["title"] == "MemoryGraph"


def test_missing_input_is_a_one_line_error_not_a_traceback(tmp_path, capsys):
    rc = main(["extract", str(tmp_path / "nope.json"), "--out", str(tmp_path / "o.json"), "--llm", "scripted", "--embed", "hash"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("error: ") and "nope.json" in err and "Traceback" not in err
    assert not (tmp_path / "o.json").exists()


@pytest.mark.parametrize("argv", [["view", "{g}"], ["qa", "{g}", "Where does she live?", "--llm", "scripted",
                                                         "--embed", "hash"]])
def test_a_missing_graph_file_is_named_as_such(tmp_path, capsys, argv):
    g = str(tmp_path / "nope.json")
    assert main([a.replace("{g}", g) for a in argv]) == 2
    assert capsys.readouterr().err == f"error: memory graph file not found: {g}\n"


@pytest.mark.parametrize("argv", [["schema"], ["keys", "list", "--store", "{store}"]])
def test_output_into_a_closed_pipe_ends_without_a_traceback(tmp_path, argv):
    import os
    import subprocess
    import sys

    store = str(tmp_path / "store")
    assert main(["keys", "create", "--tenant", "acme", "--admin", "--store", store]) == 0
    # fd 1 becomes a pipe whose reader is gone, as in `promem-fast schema | head -1` once head
    # exits; `keys list` prints one short line, which fails only when the buffer is flushed
    code = ("import os, sys; r, w = os.pipe(); os.close(r); os.dup2(w, 1); "
            f"from promem_fast.cli import main; sys.exit(main({[a.replace('{store}', store) for a in argv]!r}))")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert (p.returncode, p.stderr) == (1, "")


def test_concurrency_must_be_positive(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["extract", str(_dialogue(tmp_path / "d.json")), "--out", str(tmp_path / "o.json"), "--concurrency", "0"])
    assert e.value.code == 2 and "must be at least 1" in capsys.readouterr().err


def test_unwritable_out_fails_before_any_extraction(tmp_path, capsys, monkeypatch):
    from promem_fast.context import Services

    def no_models(*a, **k):
        raise AssertionError("models were loaded before --out was checked")

    monkeypatch.setattr(Services, "from_config", classmethod(no_models))
    src = _dialogue(tmp_path / "d.json")
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    rc = main(["extract", str(src), "--out", str(blocker / "sub" / "graph.json"), "--llm", "scripted", "--embed", "hash"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("error: --out:") and "a_file is a file" in err
    rc = main(["extract", str(src), "--out", str(tmp_path), "--llm", "scripted", "--embed", "hash"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("error: --out:") and "is a directory" in err


def test_the_out_check_creates_no_folders(tmp_path, capsys):
    # the check passes, the input is missing: nothing may be left behind
    rc = main(["extract", str(tmp_path / "nope.json"), "--out", str(tmp_path / "new" / "sub" / "g.json"),
               "--llm", "scripted", "--embed", "hash"])
    assert rc == 2 and "nope.json" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_qa_on_a_file_that_is_not_a_graph_names_file_and_field(tmp_path, capsys):
    bad = tmp_path / "turns.json"
    bad.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    rc = main(["qa", str(bad), "q?", "--llm", "scripted", "--embed", "hash"])
    err = capsys.readouterr().err
    assert rc == 2 and "turns.json: item 0 is not a memory graph" in err and "field session_id" in err
    assert len(err.strip().splitlines()) == 1
    broken = tmp_path / "broken.json"
    broken.write_text('{"session_id": ')
    rc = main(["qa", str(broken), "q?", "--llm", "scripted", "--embed", "hash"])
    assert rc == 2 and "broken.json: not valid JSON" in capsys.readouterr().err


def test_serve_store_that_is_a_file_is_a_clear_error(tmp_path, capsys):
    f = tmp_path / "store.json"
    f.write_text("{}")
    rc = main(["serve", "--store", str(f), "--llm", "scripted", "--embed", "hash"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("error: --store:") and "not a directory" in err
