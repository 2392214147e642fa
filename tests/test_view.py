"""`promem-fast view`: the HTML page, the command, and the page in a real headless browser."""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from promem_fast import cli
from promem_fast.schema import (
    Detail, Discarded, Event, GraphStats, MemoryGraph, NLIVerdict, Relation, StageStats, Topic,
)
from promem_fast.view import render_html, turn_order

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="Debian's chromium is not installed (.ci/setup installs it with apt-get where it runs as root)",
)


def _graph(sid: str = "conv-26/session_1") -> MemoryGraph:
    ent = lambda tid, text: [NLIVerdict(premise_turn_id=tid, hypothesis=text, label="entailment", score=1.0)]
    events = [  # stored out of dialogue order: the view sorts them by their first source turn
        Event(id="e3", text="Caroline is researching adoption agencies.", origin="detail", status="recovered",
              source_turn_ids=["D1:10"], nli=ent("D1:10", "x")),
        Event(id="e1", text="Caroline went to an LGBTQ support group on 7 May.", origin="draft", status="kept",
              source_turn_ids=["D1:3"], dates=["2023-05-07"], nli=ent("D1:3", "x")),
        Event(id="e2", text="Caroline felt <accepted> & \"brave\" after it.", origin="draft", status="revised",
              source_turn_ids=["D1:5", "D1:7"], original_text="Caroline felt accepted.", nli=ent("D1:5", "x")),
    ]
    details = [
        Detail(id="d1", text="LGBTQ support group", turn_id="D1:3", event_ids=["e1"], anchored_by="turn"),
        Detail(id="d2", text="courage", turn_id="D1:7", event_ids=["e2", "e1"], anchored_by="topic"),
        Detail(id="d3", text="adoption agencies", turn_id="D1:10", event_ids=["e3"], anchored_by="turn"),
        Detail(id="d4", text="a loose end", turn_id="D1:11", event_ids=[], anchored_by=None),
    ]
    relations = [
        Relation(source="e1", type="causal", target="e2", probe_question="Did the group make her feel accepted?"),
        Relation(source="e2", type="temporal", target="e3"),
    ]
    discarded = [
        Discarded(text="Caroline painted a lake sunrise.", stage="verify", reason="assistant statement, not a user fact"),
        Discarded(text="lake sunrise", stage="details", reason="not stated in any user turn of its topic"),
    ]
    stages = {
        "draft": StageStats(llm_calls=1, prompt_tokens=736, completion_tokens=138, seconds=42.0),
        "verify": StageStats(llm_calls=16, prompt_tokens=1848, completion_tokens=98, cached_tokens=1239,
                             nli_pairs=12, seconds=7.25),
    }
    return MemoryGraph(
        session_id=sid, user_name="Caroline", variant="promem", events=events, details=details,
        relations=relations, discarded=discarded,
        topics=[Topic(id="t1", turn_ids=["D1:1", "D1:3", "D1:5", "D1:7"]), Topic(id="t2", turn_ids=["D1:10", "D1:11"])],
        stats=GraphStats(stages=stages, llm_calls=17, prompt_tokens=2584, completion_tokens=236, cached_tokens=1239,
                         seconds=49.25),
        models={"llm": "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"},
    )


class _Dom(HTMLParser):
    """Collects elements by class (with their attributes) and all visible text."""

    def __init__(self):
        super().__init__()
        self.by_class: dict[str, list[dict]] = {}
        self.text: list[str] = []
        self.sections: list[dict] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for c in (a.get("class") or "").split():
            self.by_class.setdefault(c, []).append(a)
        if tag == "section":
            self.sections.append(a)

    def handle_data(self, data):
        self.text.append(data)


def _parse(page: str) -> _Dom:
    d = _Dom()
    d.feed(page)
    return d


def _assert_holds_graph(dom: _Dom, g: MemoryGraph) -> None:
    text = " ".join(dom.text)
    assert [e["data-id"] for e in dom.by_class["event"]][:3] == ["e1", "e2", "e3"]  # dialogue order
    for e in g.events:
        assert e.text in text
    assert {d["data-id"]: d["data-events"] for d in dom.by_class["detail"]} == {
        "d1": "e1", "d2": "e2 e1", "d3": "e3", "d4": ""}
    for d in g.details:
        assert d.text in text
    assert [(r["data-source"], r["data-type"], r["data-target"]) for r in dom.by_class["relation"]] == [
        ("e1", "causal", "e2"), ("e2", "temporal", "e3")]
    assert [x.get("data-stage") for x in dom.by_class["stage"]] == ["draft", "verify"]
    assert len(dom.by_class["discarded"]) == 1 + 2  # the table + one row per entry
    for x in g.discarded:
        assert x.text in text and x.reason in text
    assert "2023-05-07" in text and "D1:5, D1:7" in text
    assert "Did the group make her feel accepted?" in text


def test_turn_order_topics_first_then_natural():
    g = _graph()
    g.events[0].source_turn_ids = ["D1:12", "D1:2"]
    order = turn_order(g)
    assert list(order) == ["D1:1", "D1:3", "D1:5", "D1:7", "D1:10", "D1:11", "D1:2", "D1:12"]


def test_page_holds_every_entry_escaped_and_offline():
    g = _graph()
    page = render_html([g])
    _assert_holds_graph(_parse(page), g)
    assert "Caroline felt &lt;accepted&gt; &amp; &quot;brave&quot; after it." in page
    assert "<accepted>" not in page
    # nothing to fetch: no src/href attributes, no remote url() or @import
    assert not re.search(r"\b(src|href)\s*=|url\(\s*['\"]?https?:|@import", page)
    assert "<nav>" not in page  # one session: no tabs
    assert "17 LLM calls, 2584 prompt + 236 completion tokens (1239 cached), 49.2 s" in page


def test_several_sessions_get_one_tab_each():
    page = render_html([_graph("s/1"), _graph("s/2")])
    dom = _parse(page)
    assert [s["data-session"] for s in dom.sections] == ["s/1", "s/2"]
    assert re.findall(r'<button type="button" title="([^"]+)">([^<]+)</button>', page) == [("s/1", "1"), ("s/2", "2")]
    with pytest.raises(ValueError, match="no memory graph"):
        render_html([])


@pytest.mark.parametrize("shape", ["one", "list", "jsonl"])
def test_view_command_reads_extract_and_bulk_outputs(tmp_path, shape, capsys):
    gs = [_graph("s/1"), _graph("s/2")]
    src = tmp_path / "g.json"
    if shape == "one":
        src.write_text(gs[0].to_json())
    elif shape == "list":
        src.write_text("[" + ",".join(g.to_json() for g in gs) + "]")
    else:
        src = tmp_path / "graphs.jsonl"
        src.write_text("".join(g.to_json(indent=None) + "\n" for g in gs))
    assert cli.main(["view", str(src)]) == 0
    out = src.with_suffix(".html")
    n = 1 if shape == "one" else 2
    assert f"wrote {out} ({n} session{'s' if n > 1 else ''})" in capsys.readouterr().err
    dom = _parse(out.read_text(encoding="utf-8"))
    assert [s["data-session"] for s in dom.sections] == ["s/1", "s/2"][:n]
    assert len(dom.by_class["event"]) == 3 * n


def test_view_command_errors(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"session_id": "x"}))
    assert cli.main(["view", str(bad), "--out", str(tmp_path / "o.html")]) == 2
    assert "not a memory graph" in capsys.readouterr().err
    assert not (tmp_path / "o.html").exists()
    assert cli.main(["view", str(tmp_path / "missing.json")]) == 2


def test_version(capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as ei:
        cli.main(["--version"])
    assert ei.value.code == 0
    assert capsys.readouterr().out.strip() == f"promem-fast {version('promem-fast')}"


def test_stage_progress_is_one_line_per_stage_and_session_off_a_terminal():
    buf = io.StringIO()  # not a terminal
    bars = cli.StageBars(2, stream=buf)
    for sid in ["s/1", "s/2"]:
        for stage in ["draft", "verify"]:
            bars(sid, stage, "start")
            bars(sid, stage, "end")
    bars.close()
    lines = buf.getvalue().splitlines()
    assert [re.sub(r" in [0-9.]+ s", "", ln) for ln in lines] == [
        "s/1: draft done (1/2 sessions)", "s/1: verify done (1/2 sessions)",
        "s/2: draft done (2/2 sessions)", "s/2: verify done (2/2 sessions)",
    ]
    assert bars.bars == {}  # no tqdm bar was made
    assert "\r" not in buf.getvalue()


def test_stage_progress_draws_bars_on_a_terminal():
    buf = io.StringIO()
    bars = cli.StageBars(1, stream=buf, tty=True)
    bars("s/1", "draft", "start")
    bars("s/1", "draft", "end")
    bars.close()
    assert list(bars.bars) == ["draft"] and bars.bars["draft"].n == 1
    assert "\r" in buf.getvalue() or "1/1" in buf.getvalue()


# --- in a real headless browser ------------------------------------------------------------


def _chromium_dom(page: Path, tmp_path: Path) -> tuple[str, list[str]]:
    """Load ``page`` in headless chromium; returns (DOM after scripts ran, console lines)."""
    proc = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
         f"--user-data-dir={tmp_path / 'chromium-profile'}", "--enable-logging=stderr", "--v=0",
         "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [ln for ln in proc.stderr.splitlines() if ":CONSOLE" in ln]
    return proc.stdout, console


@needs_chromium
def test_browser_catches_console_errors(tmp_path):
    """The detector itself: a page that throws is reported."""
    p = tmp_path / "bad.html"
    p.write_text("<!DOCTYPE html><html><body><script>throw new Error('view-test-boom')</script></body></html>")
    _, console = _chromium_dom(p, tmp_path)
    assert any("view-test-boom" in ln for ln in console), console


@needs_chromium
def test_page_in_headless_chromium(tmp_path):
    g1, g2 = _graph("conv-26/session_1"), _graph("conv-26/session_2")
    p = tmp_path / "graph.html"
    src = tmp_path / "graphs.json"
    src.write_text("[" + g1.to_json() + "," + g2.to_json() + "]")
    assert cli.main(["view", str(src), "--out", str(p)]) == 0
    dom_text, console = _chromium_dom(p, tmp_path)
    assert console == []  # no console errors (nor any other console output)
    dom = _parse(dom_text)
    # the tab script ran: the first session shown, the second hidden, its button active
    assert [("hidden" in s) for s in dom.sections] == [False, True]
    assert dom.by_class["active"][0].get("type") == "button"
    first = dom_text[dom_text.index('id="session-0"'):dom_text.index('id="session-1"')]
    _assert_holds_graph(_parse(first), g1)
