"""Would an HV screen rule drop correct memories? A replay over the labelled runs, no LLM.

Reads every ``benchmarks/results/artifacts/precision_*/*-promem.jsonl`` graph, every
``benchmarks/review/*/labels.jsonl`` (the latest label of a session's memory text wins) and
the sessions of ``--data`` (``../shared/data``: LoCoMo once per speaker, HaluMem user3). Each
kept, labelled memory is counted once per distinct (session, text, source turns) and put to
the rule with the turns the graph gives it: its premise turn (the NLI premise), the other
speaker's turns right before and after that (the reply), the turns it cites and every user
turn of its session. With ``--observations``, the rule is also put to LoCoMo's gold
observations of each loaded session's user speaker, each with its evidence turn as premise,
the other speaker's turns beside it as cited and, as for a memory, the user turns of its own
session: how many true, human-written memories would it drop?

Prints one JSON line: the rule, memories read, flagged memories by label, flagged
observations; ``-v`` lists what it flags. ``--rule hv_screen`` replays the whole HV screen
(every rule in its order); ``--unseen`` replays the labelled memories of the ``bench_unseen``
runs (``artifacts/unseen_*/graphs-promem.jsonl`` over ``benchmarks/unseen/``) instead of dev:
how much of what the new dialogues showed would today's screen drop?

    python benchmarks/screen_replay.py --rule phrase_from_other --observations \
        --append benchmarks/results/screen_replay.jsonl
    python benchmarks/screen_replay.py --rule hv_screen --unseen -v
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def _rules() -> dict:
    """Rule name -> f(memory dict) -> bool; the memory dict as :func:`memories` builds it."""
    from promem_fast.stages import screen

    return {
        "phrase_from_other": lambda m: screen.phrase_from_other(
            m["text"], m["user"], m["user_turns"], m["cited_other"], m["others"], m["reply"]),
        "owner_swapped": lambda m: bool(m["turn"]) and screen.owner_swapped(m["text"], m["user"], m["turn"]),
        "unstated_age": lambda m: bool(m["turn"]) and screen.unstated_age(m["text"], m["turn"], m["previous"]),
        "held_by_other": lambda m: screen.held_by_other(
            m["text"], m["user"], m["user_turns"], m["other_turns"], m["others"], m["turn"]),
        "relation_unstated": lambda m: screen.relation_unstated(m["text"], m["user"], m["user_turns"], m["others"]),
        "remark_act": lambda m: screen.remark_on_speech(m["text"], m["user"]),
        "speaker_dead": lambda m: screen.speaker_dead(m["text"], m["user"]),
        "feeling_of_other": lambda m: bool(m["turn"]) and screen.feeling_of_other(m["text"], m["user"], m["turn"]),
        "exhorted_only": lambda m: bool(m["turn"]) and screen.exhorted_only(m["text"], m["user"], m["turn"]),
        "planned_as_done": lambda m: bool(m["turn"]) and screen.planned_as_done(m["text"], m["user"], m["turn"]),
        "about_the_chat": lambda m: bool(m["turn"]) and screen.about_the_chat(m["text"], m["user"], m["turn"]),
        "placeholder_object": lambda m: bool(screen.placeholder_object(m["text"], m["user"], m["turn"] or "")),
        "names_no_one": lambda m: screen.names_no_one(m["text"], m["user"], m["others"], m["user_turns"]),
        "hedged_as_certain": lambda m: bool(m["turn"]) and screen.hedged_as_certain(m["text"], m["user"], m["turn"]),
        "exclaimed_only": lambda m: bool(m["turn"]) and screen.exclaimed_only(
            m["text"], m["user"], m["turn"], m["previous"]),
        "corrected_later": lambda m: screen.corrected_later(
            m["text"], m["later_user_turns"], m["turn"]) is not None,
        "urged_only": lambda m: bool(m["turn"]) and screen.urged_only(m["text"], m["user"], m["turn"], m["previous"]),
        "answered_of_other": lambda m: bool(m["turn"]) and screen.answered_of_other(
            m["text"], m["user"], m["turn"], m["previous"]),
        "named_other": lambda m: screen.named_other(m["text"], m["user"]),
        "owner_added": lambda m: bool(m["turn"]) and screen.owner_added(m["text"], m["user"], m["turn"], m["user_turns"]),
        "object_of_other": lambda m: bool(m["turn"]) and screen.object_of_other(m["text"], m["user"], m["turn"]),
        "is_filler": lambda m: screen.is_filler(m["text"], m["user"], m["others"]),
        "act_moved_from_user": lambda m: bool(m["turn"]) and screen.act_moved_from_user(m["text"], m["user"], m["turn"]),
        "subject_clash": lambda m: bool(m["turn"]) and screen.subject_clash(m["text"], m["user"], m["turn"], m["previous"]),
        "said_to_other": lambda m: bool(m["turn"]) and screen.said_to_other(m["text"], m["user"], m["turn"]),
        "reaction_to_other": lambda m: bool(m["turn"]) and screen.reaction_to_other(
            m["text"], m["user"], m["previous"], m["turn"]),
        "remark_on_other_news": lambda m: bool(m["turn"]) and screen.remark_on_other_news(
            m["text"], m["user"], m["turn"], m["previous"]),
        "told_named_unsaid": lambda m: screen.told_named_unsaid(m["text"], m["user"], m["user_turns"], m["others"]),
        "name_unnamed": lambda m: bool(m["turn"]) and screen.name_unnamed(m["text"], m["user"], m["turn"]) is not None,
        "pronoun_opening": lambda m: not (m["turn"] and screen.name_unnamed(m["text"], m["user"], m["turn"])) and
        screen.pronoun_opening(screen.time_last(m["text"]), m["user"], m["others"]) and hv_screen(m) is None,
        "hv_screen": lambda m: hv_screen(m) is not None,
    }


_STATES: dict = {}


def hv_screen(m: dict):
    """The whole HV screen (:func:`promem_fast.stages.verify.screen_reason`) on memory ``m``:
    its reason, or None when it would go on to NLI (also when ``m`` has no premise turn)."""
    from promem_fast.stages import verify
    from promem_fast.stages.state import PipelineState

    s = m["session"]
    turn = next((t for t in s.turns if t.turn_id == m["premise_id"]), None)
    if turn is None:
        return None
    # one state per session: its user turns are read once for all of its memories
    state = _STATES.get(s.session_id)
    if state is None or state.session is not s:
        state = _STATES[s.session_id] = PipelineState.create(s, s.user_name, "")
    return verify.screen_reason(state, m["text"], turn, state.other_speakers,
                                [t.content for t in s.turns if t.role != "user"])


def _sessions(data: Path) -> dict:
    from promem_fast.io import load_sessions

    out = {}
    locomo, halumem = data / "locomo_dev.json", data / "halumem_dev_user3.jsonl"
    if not locomo.is_file() or not halumem.is_file():
        raise SystemExit(f"--data {data}: needs locomo_dev.json and halumem_dev_user3.jsonl")
    for sp in ("speaker_a", "speaker_b"):
        for s in load_sessions(locomo, "locomo", user_speaker=sp):
            out[f"{s.session_id}@{s.user_name}"] = s
    for s in load_sessions(halumem, "halumem"):
        out[s.session_id] = s
    return out


def _memory(s, text: str, label: str, premise_id, cited_ids) -> dict:
    """One memory of session ``s`` as the rules read it: its premise turn, the other speaker's
    turns right before and after that (the reply), the other speaker's turns among
    ``cited_ids`` and every user turn of the session."""
    turns = {t.turn_id: t for t in s.turns}
    order = [t.turn_id for t in s.turns]
    i = order.index(premise_id) if premise_id in turns else -1
    prev = s.turns[i - 1] if i > 0 else None
    nxt = s.turns[i + 1] if 0 <= i < len(order) - 1 else None
    return {
        "session_id": s.session_id, "text": text, "label": label, "user": s.user_name,
        "session": s, "premise_id": premise_id,
        "others": [t.speaker for t in s.turns if t.role != "user" and t.speaker][:1],
        "turn": turns[premise_id].content if premise_id in turns else "",
        "previous": prev.content if prev is not None and prev.role != "user" else "",
        "reply": nxt.content if nxt is not None and nxt.role != "user" else "",
        "cited_other": [turns[t].content for t in cited_ids if t in turns and turns[t].role != "user"],
        "user_turns": [t.content for t in s.turns if t.role == "user"],
        "later_user_turns": [t.content for t in s.turns[i + 1:] if t.role == "user"] if i >= 0 else [],
        "other_turns": [t.content for t in s.turns if t.role != "user"],
    }


DEV_GRAPHS = "benchmarks/results/artifacts/precision_*/*-promem.jsonl"
UNSEEN_GRAPHS = "benchmarks/results/artifacts/unseen_*/graphs-promem.jsonl"


def memories(sessions: dict, graphs: str = DEV_GRAPHS) -> list[dict]:
    """Every kept, labelled ``promem`` memory of the stored graphs (``graphs``: a glob under
    the repository), once per (session, text, source turns), with its label and turns. A
    memory without an NLI premise turn is read against its first user source turn."""
    from dup_pairs import all_labels
    from promem_fast.eval.precision import label_key

    labels, out = all_labels(), {}
    for f in sorted(glob.glob(str(ROOT / graphs))):
        for line in open(f, encoding="utf-8"):
            g = json.loads(line)
            s = sessions.get(g["session_id"])
            if s is None:
                continue
            for e in g["events"]:
                k = label_key(g["session_id"], e["text"])
                kk = (k, tuple(e["source_turn_ids"]))
                if e["status"] == "discarded" or k not in labels or kk in out:
                    continue
                pt = (e.get("nli") or [{}])[0].get("premise_turn_id")
                if pt is None:
                    users = {t.turn_id for t in s.turns if t.role == "user"}
                    pt = next((t for t in e["source_turn_ids"] if t in users), None)
                out[kk] = _memory(s, e["text"], labels[k]["label"], pt, e["source_turn_ids"])
    return list(out.values())


def observations(sessions: dict) -> list[dict]:
    """LoCoMo's gold observations of the user speaker of each LoCoMo session (``metadata
    ["observation"]``) as memory dicts: premise = the evidence turn, cited = the other
    speaker's turns right before and after it."""
    out = []
    for s in sessions.values():
        obs = s.metadata.get("observation") if s.metadata.get("source") == "locomo" else None
        order = [t.turn_id for t in s.turns]
        for text, ev in (obs or {}).get(s.user_name) or []:
            for e in (ev if isinstance(ev, list) else [ev]):
                if e not in order or s.turns[order.index(e)].role != "user":
                    continue
                i = order.index(e)
                beside = [order[j] for j in (i - 1, i + 1) if 0 <= j < len(order)]
                out.append(_memory(s, text, "observation", e, beside))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rule", required=True, help="one of: " + ", ".join(sorted(_rules())))
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--observations", action="store_true", help="also replay LoCoMo's gold observations")
    ap.add_argument("--unseen", action="store_true",
                    help="replay the labelled memories of the bench_unseen runs (benchmarks/unseen/) instead of dev")
    ap.add_argument("--append", type=Path, help="append the JSON line to this results file")
    ap.add_argument("-v", "--verbose", action="store_true", help="list what the rule flags")
    args = ap.parse_args()
    rules = _rules()
    if args.rule not in rules:
        ap.error(f"--rule: expected one of {sorted(rules)}, got {args.rule!r}")
    from promem_fast.results_log import append_line, run_fields

    rule = rules[args.rule]
    if args.unseen:
        from bench_unseen import load_unseen

        sessions = {s.session_id: s for s in load_unseen()}
        mems = memories(sessions, UNSEEN_GRAPHS)
    else:
        sessions = _sessions(args.data)
        mems = memories(sessions)
    hits = [m for m in mems if rule(m)]
    line = {"benchmark": "screen_replay", "rule": args.rule, **run_fields(), "data": "unseen" if args.unseen else "dev",
            "memories": len(mems),
            "by_label": dict(collections.Counter(m["label"] for m in mems)),
            "flagged": dict(collections.Counter(m["label"] for m in hits))}
    if args.observations:
        obs = observations(sessions)
        flagged = [o for o in obs if rule(o)]
        line.update(observations=len(obs), observations_flagged=len(flagged))
        hits += flagged
    if args.verbose:
        for m in hits:
            print(f"{m['label']}\t{m['session_id']}\t{m['text']}", file=sys.stderr)
    print(json.dumps(line))
    if args.append:
        append_line(args.append, line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
