"""``promem-fast view``: a memory graph as one self-contained HTML page.

The page needs no network: the graph is drawn as inline SVG built here with the standard
library, styled by inline CSS, and a few lines of inline JS switch between sessions. Per session:
events in dialogue order (source turns and dates beside each), details attached to their events
by lines, verified relations as labelled arcs between events, the discarded entries with their
reasons, and the per-stage LLM calls / tokens / seconds.

    from promem_fast.view import render_html
    Path("graph.html").write_text(render_html(graphs))
"""

from __future__ import annotations

import html
import os
import re
import textwrap
from pathlib import Path
from typing import Sequence, Union

from .schema import MemoryGraph

__all__ = ["render_html", "write_html", "turn_order"]

# SVG layout, in pixels
_TURN_X, _EVENT_X, _EVENT_W = 10, 210, 470
_DETAIL_X, _DETAIL_W = 760, 250
_LINE_H, _PAD, _GAP = 16, 8, 12
_EVENT_CHARS, _DETAIL_CHARS = 62, 32
_WIDTH = _DETAIL_X + _DETAIL_W + 10

_CSS = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d2733;background:#f6f7f9}
header{background:#1d2733;color:#fff;padding:10px 18px}
header h1{font-size:18px;margin:0}
nav{display:flex;flex-wrap:wrap;gap:4px;padding:8px 18px;background:#e4e8ee}
nav button{border:1px solid #9aa6b4;background:#fff;border-radius:4px;padding:4px 10px;cursor:pointer;font:inherit}
nav button.active{background:#1d6fd1;color:#fff;border-color:#1d6fd1}
section.session{padding:12px 18px}
section.session[hidden]{display:none}
h2{font-size:17px;margin:4px 0}
h3{font-size:15px;margin:18px 0 6px}
.meta{color:#4a5665;margin:2px 0 10px}
.legend span{display:inline-block;margin-right:14px}
.sw{display:inline-block;width:12px;height:12px;border-radius:2px;vertical-align:-1px;margin-right:4px}
svg{background:#fff;border:1px solid #d3d9e1;border-radius:6px;max-width:100%;height:auto}
svg text{font:13px system-ui,-apple-system,"Segoe UI",sans-serif;fill:#1d2733}
svg .small{font-size:11.5px;fill:#4a5665}
svg .col{font-weight:600;fill:#4a5665}
table{border-collapse:collapse;background:#fff;margin-bottom:6px}
th,td{border:1px solid #d3d9e1;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#eef1f5}
td.num{text-align:right;font-variant-numeric:tabular-nums}
"""

_JS = """
(function(){
  var buttons=document.querySelectorAll('nav button');
  function show(i){
    document.querySelectorAll('section.session').forEach(function(s,k){s.hidden=(k!==i);});
    buttons.forEach(function(b,k){b.classList.toggle('active',k===i);});
  }
  buttons.forEach(function(b,k){b.addEventListener('click',function(){show(k);});});
  if(buttons.length){show(0);}
})();
"""

# fill / stroke per event status
_STATUS_COLOURS = {"kept": ("#e3f1e6", "#3c8d50"), "revised": ("#fff4d6", "#c08a00"), "recovered": ("#e2ecfb", "#1d6fd1")}
_RELATION_COLOURS = {"causal": "#c0392b", "temporal": "#7d3cb5"}


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _natural_key(turn_id: str) -> list:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", turn_id)]


def turn_order(graph: MemoryGraph) -> dict[str, int]:
    """Map each turn id the graph mentions to its position in the dialogue.

    Topic segments list their turns in dialogue order, so they come first; turn ids that no
    topic holds follow in natural order ("D1:2" before "D1:10"). Returns ``{turn_id: index}``.
    """
    order: dict[str, int] = {}
    for t in graph.topics:
        for tid in t.turn_ids:
            order.setdefault(tid, len(order))
    rest = {tid for e in graph.events for tid in e.source_turn_ids} | {d.turn_id for d in graph.details}
    for tid in sorted(rest - set(order), key=_natural_key):
        order[tid] = len(order)
    return order


def _wrap(text: str, width: int) -> list[str]:
    return textwrap.wrap(text, width, break_long_words=True) or [""]


def _text_lines(lines: list[str], x: float, y: float, cls: str = "") -> str:
    attr = f' class="{cls}"' if cls else ""
    return "".join(
        f'<text x="{x:.0f}" y="{y + (k + 1) * _LINE_H - 3:.0f}"{attr}>{_e(ln)}</text>' for k, ln in enumerate(lines)
    )


def _svg(graph: MemoryGraph) -> str:
    order = turn_order(graph)
    big = len(order) + 1

    def event_key(ix_ev):
        ix, ev = ix_ev
        return (min((order.get(t, big) for t in ev.source_turn_ids), default=big), ix)

    events = [ev for _, ev in sorted(enumerate(graph.events), key=event_key)]
    parts: list[str] = []
    y = 34.0
    boxes: dict[str, tuple[float, float]] = {}  # event id -> (top, height)
    for ev in events:
        lines = _wrap(f"{ev.id}  {ev.text}", _EVENT_CHARS)
        side = ([", ".join(ev.source_turn_ids) or "(no turn)"] + ([", ".join(ev.dates)] if ev.dates else [])
                + ([f"said {ev.timestamp:%Y-%m-%d}"] if ev.timestamp else []))
        side = [s for part in side for s in _wrap(part, 26)]
        h = max(len(lines), len(side)) * _LINE_H + 2 * _PAD
        fill, stroke = _STATUS_COLOURS.get(ev.status, ("#eee", "#888"))
        verdicts = "; ".join(f"{v.premise_turn_id}: {v.label}" + (" (polarity)" if v.by == "polarity" else "")
                             for v in ev.nli)
        tip = f"{ev.origin}, {ev.status}" + (f" | NLI {verdicts}" if verdicts else "")
        if ev.original_text:
            tip += f" | before revision: {ev.original_text}"
        parts.append(
            f'<g class="event" data-id="{_e(ev.id)}" data-status="{_e(ev.status)}" data-origin="{_e(ev.origin)}">'
            f"<title>{_e(tip)}</title>"
            f'<rect x="{_EVENT_X}" y="{y:.0f}" width="{_EVENT_W}" height="{h:.0f}" rx="5" fill="{fill}" stroke="{stroke}"/>'
            + _text_lines(lines, _EVENT_X + 8, y + _PAD)
            + _text_lines(side, _TURN_X, y + _PAD, "small turns")
            + "</g>"
        )
        boxes[ev.id] = (y, h)
        y += h + _GAP
    events_bottom = y

    # details: next to the first event they are anchored to, never overlapping each other
    det_order = sorted(
        enumerate(graph.details),
        key=lambda p: (min((boxes[i][0] for i in p[1].event_ids if i in boxes), default=float("inf")),
                       order.get(p[1].turn_id, big), p[0]),
    )
    dy = 34.0
    edges: list[str] = []
    for _, d in det_order:
        lines = _wrap(f"{d.id}  {d.text}", _DETAIL_CHARS) + [f"turn {d.turn_id}" + (f", by {d.anchored_by}" if d.anchored_by else ", unanchored")]
        h = len(lines) * _LINE_H + 2 * _PAD
        anchors = [boxes[i] for i in d.event_ids if i in boxes]
        top = max(dy, anchors[0][0]) if anchors else max(dy, events_bottom)
        dash = "" if d.event_ids else ' stroke-dasharray="4 3"'
        parts.append(
            f'<g class="detail" data-id="{_e(d.id)}" data-turn="{_e(d.turn_id)}" data-events="{_e(" ".join(d.event_ids))}">'
            f'<rect x="{_DETAIL_X}" y="{top:.0f}" width="{_DETAIL_W}" height="{h:.0f}" rx="4" fill="#f4f0fa" stroke="#8e7cc3"{dash}/>'
            + _text_lines(lines[:-1], _DETAIL_X + 8, top + _PAD)
            + _text_lines(lines[-1:], _DETAIL_X + 8, top + _PAD + (len(lines) - 1) * _LINE_H, "small")
            + "</g>"
        )
        for t, bh in anchors:
            y1, y2 = top + h / 2, t + bh / 2
            edges.append(
                f'<path class="anchor" d="M{_DETAIL_X} {y1:.0f} C{_DETAIL_X - 40} {y1:.0f} {_EVENT_X + _EVENT_W + 40} {y2:.0f} '
                f'{_EVENT_X + _EVENT_W} {y2:.0f}" fill="none" stroke="#b7a9d9" stroke-width="1.2"/>'
            )
        dy = top + h + 6
    # relations: arcs left of the event column, bowing out with their span
    for k, r in enumerate(graph.relations):
        colour = _RELATION_COLOURS.get(r.type, "#555")
        probe = f" | probe: {r.probe_question}" if r.probe_question else ""
        if r.source in boxes and r.target in boxes:
            (t1, h1), (t2, h2) = boxes[r.source], boxes[r.target]
            y1, y2 = t1 + h1 / 2, t2 + h2 / 2
            bow = min(_EVENT_X - _TURN_X - 60, 22 + abs(y2 - y1) / 6 + 6 * (k % 4))
            x = _EVENT_X
            d_attr = f"M{x} {y1:.0f} C{x - bow:.0f} {y1:.0f} {x - bow:.0f} {y2:.0f} {x} {y2:.0f}"
            mid = (y1 + y2) / 2
            label = (f'<text x="{x - bow * 0.75 - 4:.0f}" y="{mid + 4:.0f}" class="small" text-anchor="end" '
                     f'style="fill:{colour}">{_e(r.type)}</text>')
        else:  # an edge to an event this graph lacks: drawn as a stub
            d_attr, label = f"M{_EVENT_X} 20 l-20 0", ""
        edges.append(
            f'<g class="relation" data-source="{_e(r.source)}" data-target="{_e(r.target)}" data-type="{_e(r.type)}">'
            f"<title>{_e(f'{r.source} -{r.type}-> {r.target}{probe}')}</title>"
            f'<path d="{d_attr}" fill="none" stroke="{colour}" stroke-width="2" marker-end="url(#arrow-{_e(r.type)})"/>'
            f"{label}</g>"
        )
    height = max(y, dy) + 10
    markers = "".join(
        f'<marker id="arrow-{t}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
        f'<path d="M0 0 L10 5 L0 10 z" fill="{c}"/></marker>'
        for t, c in _RELATION_COLOURS.items()
    )
    head = (
        f'<text x="{_TURN_X}" y="20" class="col">source turns, dates</text>'
        f'<text x="{_EVENT_X}" y="20" class="col">events (dialogue order)</text>'
        f'<text x="{_DETAIL_X}" y="20" class="col">details</text>'
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{height:.0f}" viewBox="0 0 {_WIDTH} {height:.0f}" '
        f'role="img" aria-label="memory graph of {_e(graph.session_id)}"><defs>{markers}</defs>{head}'
        + "".join(edges) + "".join(parts) + "</svg>"
    )


def _stats_table(graph: MemoryGraph) -> str:
    st = graph.stats
    rows = "".join(
        f'<tr class="stage" data-stage="{_e(name)}"><td>{_e(name)}</td><td class="num">{s.llm_calls}</td>'
        f'<td class="num">{s.prompt_tokens}</td><td class="num">{s.completion_tokens}</td><td class="num">{s.cached_tokens}</td>'
        f'<td class="num">{s.nli_pairs}</td><td class="num">{s.seconds:.1f}</td></tr>'
        for name, s in st.stages.items()
    )
    total = (f'<tr><th>total</th><th class="num">{st.llm_calls}</th><th class="num">{st.prompt_tokens}</th>'
             f'<th class="num">{st.completion_tokens}</th><th class="num">{st.cached_tokens}</th><th></th>'
             f'<th class="num">{st.seconds:.1f}</th></tr>')
    return ("<table class=\"stats\"><tr><th>stage</th><th>LLM calls</th><th>prompt tokens</th><th>completion tokens</th>"
            f"<th>cached tokens</th><th>NLI pairs</th><th>seconds</th></tr>{rows}{total}</table>"
            "<p class=\"meta\">Stages that run concurrently (details, events, draft) overlap in seconds.</p>")


def _discarded_table(graph: MemoryGraph) -> str:
    if not graph.discarded:
        return '<p class="meta">Nothing was discarded.</p>'
    rows = "".join(
        f'<tr class="discarded"><td>{k}</td><td>{_e(x.stage)}</td><td>{_e(x.text)}</td><td>{_e(x.reason)}</td></tr>'
        for k, x in enumerate(graph.discarded, 1)
    )
    return f'<table class="discarded"><tr><th>#</th><th>stage</th><th>entry</th><th>reason</th></tr>{rows}</table>'


def _relations_table(graph: MemoryGraph) -> str:
    if not graph.relations:
        return '<p class="meta">No verified relations.</p>'
    text = {e.id: e.text for e in graph.events}
    rows = "".join(
        f"<tr><td>{_e(r.source)}: {_e(text.get(r.source, '?'))}</td><td>{_e(r.type)}</td>"
        f"<td>{_e(r.target)}: {_e(text.get(r.target, '?'))}</td><td>{_e(r.probe_question or '')}</td></tr>"
        for r in graph.relations
    )
    return f"<table><tr><th>source</th><th>type</th><th>target</th><th>probe question</th></tr>{rows}</table>"


def _section(graph: MemoryGraph, k: int) -> str:
    st = graph.stats
    counts = (f"{len(graph.events)} events, {len(graph.details)} details, {len(graph.relations)} relations, "
              f"{len(graph.discarded)} discarded | {st.llm_calls} LLM calls, {st.prompt_tokens} prompt + "
              f"{st.completion_tokens} completion tokens ({st.cached_tokens} cached), {st.seconds:.1f} s")
    models = ", ".join(f"{r}: {m}" for r, m in graph.models.items())
    ablations = f" | ablations: {', '.join(graph.ablations)}" if graph.ablations else ""
    legend = "".join(
        f'<span><i class="sw" style="background:{f};border:1px solid {s}"></i>{name} event</span>'
        for name, (f, s) in _STATUS_COLOURS.items()
    ) + '<span><i class="sw" style="background:#f4f0fa;border:1px solid #8e7cc3"></i>detail (line to its events)</span>' + "".join(
        f'<span><i class="sw" style="background:{c}"></i>{t} relation</span>' for t, c in _RELATION_COLOURS.items()
    )
    return (
        f'<section class="session" id="session-{k}" data-session="{_e(graph.session_id)}">'
        f"<h2>{_e(graph.session_id)} — memory of {_e(graph.user_name)}</h2>"
        f'<p class="meta">variant {_e(graph.variant)}{_e(ablations)} | {_e(counts)}<br>{_e(models)}</p>'
        f'<p class="legend meta">{legend} (hover a box for its NLI verdicts)</p>'
        + _svg(graph)
        + "<h3>Relations</h3>" + _relations_table(graph)
        + "<h3>Discarded, with reasons</h3>" + _discarded_table(graph)
        + "<h3>Cost per stage</h3>" + _stats_table(graph)
        + "</section>"
    )


def render_html(graphs: Sequence[MemoryGraph], title: str = "promem-fast memory graph") -> str:
    """Return one self-contained HTML page (str) showing ``graphs``, one tab per session.

    The page loads nothing from the network. Raises ValueError when ``graphs`` is empty.
    """
    graphs = list(graphs)
    if not graphs:
        raise ValueError("no memory graph to show")
    nav = ""
    if len(graphs) > 1:
        ids = [g.session_id for g in graphs]
        cut = os.path.commonprefix(ids).rfind("/") + 1  # tabs drop a shared "user/" prefix
        nav = "<nav>" + "".join(f'<button type="button" title="{_e(i)}">{_e(i[cut:] or i)}</button>' for i in ids) + "</nav>"
    body = "".join(_section(g, k) for k, g in enumerate(graphs))
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>"
        f"<header><h1>{_e(title)}</h1></header>{nav}{body}<script>{_JS}</script></body></html>\n"
    )


def write_html(graphs: Sequence[MemoryGraph], out: Union[str, Path], title: str = "promem-fast memory graph") -> Path:
    """Write :func:`render_html` of ``graphs`` to ``out`` (UTF-8); returns the path written.

    Raises ValueError when ``graphs`` is empty, OSError when ``out`` cannot be written.
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_html(graphs, title), encoding="utf-8")
    return out
