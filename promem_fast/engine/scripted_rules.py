"""A generic scripted responder: schema-valid answers for every pipeline prompt, no model.

Used by the benchmark (``--llm scripted``) and the bulk crash tests: the answer to a
request is a pure function of that request (its JSON Schema and prompt text), so the
pipeline's output does not depend on batching or concurrency, and every stage has work to
do (details, events, a draft that misses some turns so the completeness check recovers
events, entries that fail NLI so decomposition / adjudication run, relations to verify).

The request kind is recognised from the JSON Schema's shape (not the stage name, which
the stage code chooses), so the responder follows prompt changes that keep the schema.

Rules (deterministic; "user turns" = dialogue lines whose role is ``user``):

* details ``{turn_id: [str]}``: the first 4 words of each asked turn, and its last 3 when
  it has more than 11 words.
* facts ``[{"fact", "turns"}]`` (events, draft, supplement, one-off): one fact per user
  turn in the asked range: ``"<user> <first 8 words of the turn>"``. The draft (the prompt
  that asks for *every* fact of the whole dialogue) skips every third user turn, and every
  fifth fact gets " on Mars" appended, which the judge cannot entail.
* relations ``[[a, type, b]]``: consecutive event pairs, alternating causal / temporal (<= 3).
* NLI judge ``{"label"}``: entailment when every word of the entry (the user's name and
  filler aside) occurs in the turn, else neutral; a grouped judgement ``{"labels"}``: the
  same rule per ``Entry k:`` line ("true" / "not mentioned").
* a turn read again for its uncovered details ``[str]``: ``"<user> said <last 8 words>"``.
* atomic decomposition ``[str]``: the entry split before " on Mars" when present, else in
  two halves.
* adjudication ``{"action", "revised_fact"}``: DISCARD a fact with "Mars"; REVISE others to
  the turn's first 8 words.
* QA answer ``{"answer"}``: the first 12 words of the first memory shown, else "I don't know".
* a fact written again in its turn's language (a JSON string): the fact unchanged.
* relation probe / answerability / dialogue support, v1 evidence: fixed shapes; the
  boolean answers come from a CRC32 of the text, so they vary but never by run.
"""

from __future__ import annotations

import json
import re
import zlib
from typing import Any, Optional

from ..backends.base import LLMRequest

_LINE = re.compile(r"^\[(?P<tid>[^\]]+)\] (?P<speaker>.*?) \((?P<role>user|assistant|system|other)\): (?P<text>.*)$")
_WORD = re.compile(r"\w+", re.U)
_USER = re.compile(r"^Dialogue of user (?P<name>.+?) \(turn id", re.M)
_FILLER = {"said", "on", "the", "a", "an", "and", "was", "is", "to", "of"}
TASK_MARK = "### Task"


def _content(req: LLMRequest) -> str:
    return "\n".join(m.get("content", "") for m in req.messages)


def _split_task(text: str) -> tuple[str, str]:
    head, _, task = text.rpartition(TASK_MARK)
    return (head, task) if _ else ("", text)


def _turns(block: str) -> list[tuple[str, str, str]]:
    """(turn_id, role, text) of each dialogue line in ``block``."""
    out = []
    for line in block.splitlines():
        m = _LINE.match(line.strip())
        if m:
            out.append((m["tid"], m["role"], m["text"]))
    return out


def _user_name(block: str, task: str) -> str:
    m = _USER.search(block)
    if m:
        return m["name"]
    m = re.search(r"with subject (\w+)", task)
    return m.group(1) if m else "User"


def _words(text: str, n: int) -> str:
    return " ".join(text.split()[:n]).rstrip(".,!?;:")


def _crc(text: str) -> int:
    return zlib.crc32(text.encode("utf-8"))


def _fact(user: str, text: str) -> str:
    return f"{user} said {_words(text, 8)}"


def _kind(schema: Optional[dict]) -> str:
    if not schema:
        return "free"
    t = schema.get("type")
    props = schema.get("properties") or {}
    if t == "object":
        keys = set(props)
        if keys == {"label"}:
            return "judge"
        if keys == {"labels"}:
            return "judge_group"
        if "evidence_turn" in keys:
            return "evidence"
        if "answerable" in keys:
            return "answerable"
        if keys == {"supported"}:
            return "supported"
        if "action" in keys:
            return "adjudicate"
        if keys == {"answer"}:
            return "answer"
        return "details"  # {turn_id: [str]}
    if t == "string":
        return "text"
    if t == "array":
        items = schema.get("items") or {}
        if items.get("type") == "object" and "answerable" in (items.get("properties") or {}):
            return "answerable"
        if items.get("type") == "boolean":
            return "supported"
        if items.get("type") == "object":
            return "facts"
        if items.get("type") == "array":
            return "relations"
        if items.get("type") == "string":
            return "strings"
    return "free"


def _entailed(premise: str, hypothesis: str, user: Optional[str] = None) -> bool:
    pw = {w.lower() for w in _WORD.findall(premise)}
    hw = [w.lower() for w in _WORD.findall(hypothesis)]
    skip = set(_FILLER)
    if hw:
        skip.add(hw[0])  # the subject (user's name)
    return all(w in pw or w in skip for w in hw)


def respond(req: LLMRequest) -> str:
    """The scripted completion for ``req`` (a JSON string valid against ``req.json_schema``)."""
    text = _content(req)
    block, task = _split_task(text)
    kind = _kind(req.json_schema)
    turns = _turns(block)
    user = _user_name(block, task)
    max_items = (req.json_schema or {}).get("maxItems", 20) if req.json_schema else 20

    if kind == "text":  # a fact written again (in its turn's language): the fact as it was
        m = re.search(r"Fact: (.*)", task)
        return json.dumps(m.group(1).strip() if m else "", ensure_ascii=False)
    if kind == "judge":
        prem = re.search(r"Turn: (.*)", text)
        hyp = re.search(r"Entry: (.*)", text)
        ok = bool(prem and hyp) and _entailed(prem.group(1), hyp.group(1))
        return json.dumps({"label": "entailment" if ok else "neutral"})
    if kind == "judge_group":
        prem = re.search(r"Turn: (.*)", text)
        hyps = re.findall(r"^Entry \d+: (.*)$", text, re.M)
        return json.dumps({"labels": ["true" if prem and _entailed(prem.group(1), h) else "not mentioned"
                                      for h in hyps]})

    if kind == "answer":  # QA: the first retrieved memory, or a refusal when none was given
        mem = re.search(r"^Memories:\n- (?:\[[^\]]*\] )?(.+)$", text, re.M)
        found = mem and mem.group(1) != "(no memories)"
        return json.dumps({"answer": _words(mem.group(1), 12) if found else "I don't know"}, ensure_ascii=False)

    if kind == "details":
        props = req.json_schema.get("properties") or {}
        by_id = {tid: t for tid, _, t in turns}
        cap = 2
        out = {}
        for tid, sub in props.items():
            cap = sub.get("maxItems", cap)
            src = by_id.get(tid, "")
            # the first 4 words, and the last 3 of a turn longer than 11 words (no fact holds
            # them, so the completeness check on details reads that turn again)
            tail = [" ".join(src.split()[-3:]).rstrip(".,!?;:")] if len(src.split()) > 11 else []
            out[tid] = ([_words(src, 4)] + tail)[:cap] if _words(src, 4) else []
        return json.dumps(out, ensure_ascii=False)

    if kind == "facts":
        users = [(tid, t) for tid, role, t in turns if role == "user"]
        m = re.search(r"Turns (\S+) to (\S+) share one topic", task)
        missed = re.search(r"missed turns (.+?)\. List", task)
        is_draft = "List every fact" in task
        if m:
            ids = [tid for tid, _, _ in turns]
            lo = ids.index(m.group(1)) if m.group(1) in ids else 0
            hi = ids.index(m.group(2)) if m.group(2) in ids else len(ids) - 1
            keep = set(ids[lo : hi + 1])
            users = [u for u in users if u[0] in keep]
        elif missed:
            keep = {s.strip() for s in missed.group(1).split(",")}
            users = [u for u in users if u[0] in keep]
        facts = []
        for i, (tid, t) in enumerate(users):
            if not _words(t, 8):
                continue
            if is_draft and i % 3 == 2:
                continue  # leave work for the completeness check
            f = _fact(user, t)
            if is_draft and i % 5 == 4:
                f += " on Mars"  # a hallucination for the verifier to catch
            facts.append({"fact": f, "turns": [tid]})
        return json.dumps(facts[:max_items], ensure_ascii=False)

    if kind == "relations":
        ev = re.findall(r"^(E\d+): ", task, re.M)
        rels = []
        for j in range(min(len(ev) - 1, 3)):
            rels.append([ev[j], "causal" if j % 2 == 0 else "temporal", ev[j + 1]])
        return json.dumps(rels[:max_items])

    recover = re.search(r"^Turn: \[[^\]]+\] .*? \((?:user|assistant|system|other)\): (.*)$", task, re.M)
    pairs = re.findall(r"Pair \d+: A: (.*?) \| B:", task) if kind == "strings" else []
    if pairs:  # relation probes, one question per claimed link
        return json.dumps([f"What followed after {_words(a, 6)}?" for a in pairs], ensure_ascii=False)

    if kind == "strings" and recover:  # a turn read again for its uncovered details
        who = re.search(r"with (.+?) as subject", task)
        words = recover.group(1).split()
        fact = f"{who.group(1) if who else user} said {' '.join(words[-8:]).rstrip('.,!?;:')}"
        return json.dumps([fact][:max_items], ensure_ascii=False)

    if kind == "strings":  # atomic decomposition
        m = re.search(r"Entry: (.*)", task)
        entry = m.group(1).strip() if m else ""
        if " on Mars" in entry:
            parts = [entry.split(" on Mars")[0], f"{entry.split()[0]} was on Mars"]
        else:
            w = entry.split()
            half = max(2, len(w) // 2)
            parts = [" ".join(w[:half]), " ".join(w[:1] + w[half:])] if len(w) > 3 else [entry]
        return json.dumps([p for p in parts if p][:max_items], ensure_ascii=False)

    if kind == "adjudicate":
        src = re.search(r"Source turn: (.*)", task)
        fact = re.search(r"Fact: (.*)", task)
        f = fact.group(1) if fact else ""
        if "Mars" in f or not src:
            return json.dumps({"action": "DISCARD", "revised_fact": None})
        body = src.group(1).split(": ", 1)[-1]
        return json.dumps({"action": "REVISE", "revised_fact": _fact(f.split()[0] if f else user, body)}, ensure_ascii=False)

    if kind == "answerable":
        qs = re.findall(r"Question \d+: (.*)", task)
        out = [{"answerable": _crc(q) % 3 == 0} for q in qs]
        return json.dumps(out)

    if kind == "supported":
        return json.dumps([_crc(link) % 4 != 0 for link in re.findall(r"Link \d+: (.*)", task)])

    if kind == "evidence":
        m = re.search(r"Memory entry: (.*)", task)
        entry = m.group(1) if m else ""
        best = next((tid for tid, _, t in turns if _entailed(t, entry)), None)
        return json.dumps(
            {"question": f"Is it true that {entry}?", "evidence_turn": best, "supported": best is not None,
             "fact": entry if best else None},
            ensure_ascii=False,
        )
    return "ok"


def scripted_llm(latency_s: float = 0.0) -> Any:
    """A :class:`ScriptedLLM` answering every prompt with :func:`respond`."""
    from ..backends.llm.scripted import ScriptedLLM

    return ScriptedLLM(rules=respond, latency_s=latency_s)


def scripted_services(latency_s: float = 0.0, embed_dim: int = 256) -> Any:
    """Services for scripted runs: scripted LLM, LLM-judge NLI over it, hashing embedder."""
    from ..backends.embed.hashing import HashEmbedder
    from ..backends.nli.llm_judge import LLMJudgeNLI
    from ..context import Services

    llm = scripted_llm(latency_s)
    return Services(llm=llm, nli=LLMJudgeNLI(None, llm=llm), embed=HashEmbedder(dim=embed_dim))
