"""Does the re-read of a user turn (completeness check on details) attribute better when the
model first names whom each fact is about? A probe on chosen turns of the new dialogues
(``benchmarks/unseen/``), no pipeline.

For each (session, turn) of ``CASES`` it builds two requests for the embedded model
(``Config().llm``): today's :func:`~promem_fast.prompts.extract.recover_request` (a list of
fact strings) and the same instruction asking for ``{"about", "fact"}`` objects, "about"
being whom the fact is about as the turn names them ("I", "my sister Leila", "Biscuit"). The
missing details are the graph's details of that turn (the ``bench_unseen`` artifact named in
the case). Both requests go in one batch; greedy decoding. Prints one JSON line with both
answers per turn; with the objects, a fact whose "about" is not the speaker but which opens
with the speaker's name is marked as one the code would drop.

    python benchmarks/probe_reread_subject.py --append benchmarks/results/probe_reread_subject.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from promem_fast.backends.base import LLMRequest  # noqa: E402
from promem_fast.prompts.common import text_schema, turn_line  # noqa: E402
from promem_fast.prompts.extract import facts_max_tokens, recover_request  # noqa: E402

# (artifact, session, turn): turns whose re-read put a third party's fact on the user in the
# labelled runs (the first eight), and four whose re-read was correct
CASES = [("unseen_4a50f7d", "nikhil-ana/session_1@Nikhil", "D1:2"), ("unseen_2787d3b", "priyanka-leo/session_1@Leo", "D1:6"),
         ("unseen_04aff24", "tariq-sofie/session_1@Tariq", "D1:3"), ("unseen_04aff24", "tariq-sofie/session_1@Sofie", "D1:8"),
         ("unseen_4a50f7d", "grace/session_1", "t2"), ("unseen_4a50f7d", "grace/session_1", "t4"),
         ("unseen_2787d3b", "sofia/session_1", "t4"), ("unseen_4a50f7d", "nikhil-ana/session_1@Ana", "D1:13"),
         ("unseen_2787d3b", "malik/session_1", "t0"), ("unseen_2787d3b", "priyanka-leo/session_1@Priyanka", "D1:3"),
         ("unseen_4a50f7d", "nikhil-ana/session_1@Nikhil", "D1:4"), ("unseen_04aff24", "hamid/session_1", "t2")]
FIRST_PERSON = frozenset("i me my myself mine we us our".split())


def with_subject(turn: str, user_name: str, missing: list[str], max_facts: int) -> LLMRequest:
    """recover_request's request asking for ``[{"about", "fact"}]``: whom each fact is about,
    as the turn names them, before the fact."""
    req = recover_request(turn, user_name, missing, max_facts)
    body = req.messages[-1]["content"]
    head, _, _ = body.partition("JSON:")
    assert head != body, "recover_request changed"
    body = head.replace("Write each fact this turn states", "For each fact this turn states, first write whom it is about "
                        f"as the turn names them (\"I\" when it is {user_name} themself, else the person or thing: "
                        "\"my sister Ana\", \"our dog Rex\", \"he\" as the turn says it), then write the fact") + \
        'JSON: [{"about": "...", "fact": "..."}]'
    schema = {"type": "array", "maxItems": max_facts, "items": {
        "type": "object", "properties": {"about": text_schema(60), "fact": text_schema()},
        "required": ["about", "fact"], "additionalProperties": False}}
    return dataclasses.replace(req, messages=[*req.messages[:-1], {**req.messages[-1], "content": body}],
                               json_schema=schema, max_tokens=facts_max_tokens(max_facts) + 12 * max_facts)


def drops(item: dict, user_name: str) -> bool:
    """The answer says the fact is about someone else, yet the fact opens with the user."""
    about = str(item.get("about", "")).strip()
    words = {w.strip(".,!'\"").lower() for w in about.split()}
    fact = str(item.get("fact", "")).strip()
    if words & FIRST_PERSON or about.casefold() in (user_name.casefold(), "user") or not about:
        return False
    return fact.lower().startswith(user_name.lower()) and not fact.lower().startswith(user_name.lower() + "'s")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--append", type=Path, default=None, help="results file to append the JSON line to")
    args = ap.parse_args(argv)

    from bench_unseen import load_unseen

    from promem_fast.backends.registry import create_llm
    from promem_fast.config import Config
    from promem_fast.results_log import append_line, run_fields

    sessions = {s.session_id: s for s in load_unseen()}
    reqs, meta = [], []
    for art, sid, tid in CASES:
        path = ROOT / "benchmarks/results/artifacts" / art / "graphs-promem.jsonl"
        graph = next(g for g in map(json.loads, path.read_text().splitlines()) if g["session_id"] == sid)
        s = sessions[sid]
        turn = next(t for t in s.turns if t.turn_id == tid)
        missing = [d["text"] for d in graph["details"] if d["turn_id"] == tid]
        n = min(4, 2 * max(len(missing), 1))
        line = turn_line(turn, s.user_name)
        reqs += [recover_request(line, s.user_name, missing, n), with_subject(line, s.user_name, missing, n)]
        meta.append({"session_id": sid, "turn_id": tid, "user": s.user_name, "missing": missing})
    cfg = Config()
    llm = create_llm(cfg.llm, cache_dir=cfg.cache_dir)
    outs = asyncio.run(llm.generate(reqs))
    for k, m in enumerate(meta):
        m["facts"] = outs[2 * k].text.strip()
        raw = outs[2 * k + 1].text.strip()
        try:
            items = [x for x in json.loads(raw) if isinstance(x, dict)]
        except ValueError:
            items = []
        m["about_fact"] = raw
        m["dropped"] = [x.get("fact") for x in items if drops(x, m["user"])]
    rec = {"bench": "probe_reread_subject", **run_fields(), "llm": getattr(llm, "model_name", llm.name), "cases": meta}
    print(json.dumps(rec, ensure_ascii=False))
    if args.append:
        append_line(args.append, rec)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
