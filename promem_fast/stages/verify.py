"""Hallucination verification via NLI (ProMem §3.4).

1. Turn-level grounding: each entry goes to its most similar turn by embedding cosine
   (``cross_reference`` entries x turns); the entry's own source turn is preferred when
   its cosine is within ``SOURCE_PREFERENCE`` (90%) of the best turn's.
1b. Screen (``pipeline.screen_entries``, :mod:`.screen`): before NLI, the entry's premise
   becomes the user turn among its grounding and source turns that states most of it, and
   filler, facts about the other speaker, entries stated by none of those turns (world
   knowledge, invented, the other side's words), quoted lines and facts pinned on the wrong
   person are discarded with their reason; atomic facts and revisions pass the same screen.
2. NLI (premise = ``[date] Speaker (role): turn text``, hypothesis = entry, and also its main
   clause when a reason clause follows, see :func:`head_claim`). Entailment of both -> kept.
   An entry grounded to a non-user turn is checked against its most similar *user* turn
   instead: entailed -> kept and re-grounded there; otherwise discarded as "assistant
   statement, not a user fact" (an assistant's words are not the user's facts).
3. Otherwise atomic decomposition (LLM; repeated facts judged once), NLI of each atomic fact
   (and of its main clause, as in 2) against the same premise; non-entailed facts go to the
   LLM adjudicator (REVISE with a corrected fact, or DISCARD).
4. The entry's text becomes the kept + revised atomic facts (status "revised",
   ``original_text`` kept); if every atomic fact was entailed the original text stays; if
   none survives the entry is discarded. Every verdict is recorded on the entry.

A near-copy of its user turn (every content word there, outside quotes) is entailed without
an NLI call (``pipeline.lexical_entailment``, ``by="lexical"``). After HV and the detail
recovery, :func:`dedup_entries` drops near-duplicates (``pipeline.dedup``, ``tau_dup``).

All calls are batched per step (one NLI call, one decomposition call, one NLI call, one
adjudication call per session and pass), charged to stage "verify"; entries recovered from
details after HV get a second, smaller pass (``verify_entries(only=...)``).
"""

from __future__ import annotations

import logging
import re
from typing import Hashable, Optional, Sequence

import numpy as np

from ..context import SessionContext
from ..kernels import cross_reference
from ..prompts.common import premise_text, turn_date
from ..prompts.verify import adjudicate_request, decompose_request, restate_request
from ..timeparse import has_language_evidence, language_of, resolve_dates
from ..schema import AtomicFact, NLIVerdict, Turn
from ..structured import StructuredOutputError
from . import screen
from .extract import (CUT_OFF_REASON, LINE_COPY_REASON, MIXED_SCRIPT_REASON, clean_uncut, copies_dialogue_line,
                      half_translated, third_person, uncut)
from .anchor import entry_turns
from .segment import turn_vectors
from .state import Entry, PipelineState, clean_text, has_text, norm_key

logger = logging.getLogger(__name__)

ASSISTANT_REASON = "assistant statement, not a user fact"
NO_SUBJECT_REASON = "names no one: a fragment, not a memory of the user or of anyone the user told about"
FILLER_REASON = "filler: nothing to recall later (pleasantry, praise, agreement or conversation meta)"
OTHER_SPEAKER_REASON = "about the other speaker, not the user"
UNSTATED_REASON = "not stated in the user's turn (world knowledge or invented)"
QUOTED_REASON = "quoted text, not the user's own statement"
ASKED_REASON = "asked of the other speaker, not stated by the user"
WISHED_REASON = "a wish of the user's stated as a fact"
EXHORTED_REASON = "a collective exhortation ('we can ...') stated as the user's own"
PLANNED_REASON = "a plan of the user's ('I'll ask her') stored as done"
HEDGED_REASON = "a possibility the user named ('I might apply') stored as certain"
EXCLAIMED_REASON = "a reaction put as a bare exclamation ('Poor Lukas!', 'Busy April!'), not a fact"
OWNER_ADDED_REASON = "gives the user what the turn says of someone else with 'the' ('The physio says she ...')"
OBJECT_OF_OTHER_REASON = "puts the user where the turn has 'him' / 'her' ('throwing him a party' -> 'throwing Ana a party')"
NAMED_OTHER_REASON = "calls the user by another name ('Nikhil is a greyhound named Biscuit'): about that one, not the user"
TOLD_REASON = "says the user told a named person what no user turn says they told them ('Elif informed Priya that ...')"
ANSWERED_REASON = "answers the other side's question about someone else ('How's Leila?' - 'Tired but happy'), not of the user"
CORRECTED_REASON = "holds a value the user corrected later in the session ('Sunday at 11, not Saturday')"
NOT_SELF_REASON = "stated by a sentence said to the other side (advice, praise or a question), not of the user"
BORROWED_REASON = "the other speaker's own news restated about the user (words from their turn, not the user's)"
ADDRESSED_REASON = "speaks to someone ('you', 'your'): a copied line of the dialogue, not a memory"
REMARK_REASON = "stated only in a remark on the other speaker's news from the turn before (no 'I' in it): their news, not the user's"
CITED_OTHER_REASON = "the other speaker's turn it cites states it better than the user's turns: their news, not the user's"
WRONG_PERSON_REASON = "about another person in turn {tid}, not the user"
PHRASE_REASON = "copies a phrase of the other speaker's turn that no user turn says: their words, not the user's"
OWNER_REASON = "gives the user what the turn gives a named owner ('Marley's ... grip' -> 'Gina's grip')"
HELD_BY_OTHER_REASON = "gives the user what the other speaker calls 'my ...' and the user 'your ...'"
DEAD_SPEAKER_REASON = "says the user, who speaks in the session, is dead"
RELATION_REASON = "says how a named person relates to someone, which no user turn says of that name"
SAID_OF_IT_REASON = "the turn says it of 'it' or 'they', not of the user"
REVERSED_FEELING_REASON = "swaps who feels and who causes it ('is impressed' where the turn says others will impress)"
FEELING_OF_OTHER_REASON = "a feeling the turn gives someone else ('You must be proud'), not the user"
URGED_REASON = "urged on the other speaker ('Check ...', 'Push through ...'), not done by the user"
INFERRED_REASON = "adds a reading of the turn (', implying ...') that the user did not state"
PLACEHOLDER_REASON = ("names its object only by a placeholder ('the project' the turn never says, "
                      "'these practices' the entry never names) or its subject by a bare 'this' / 'it' (vague)")
PRAISE_REASON = "praise of the user in words the user's turn never says (the other side's appraisal, not a fact)"
KIND_REASON = "files someone under a kind the turn never names (world knowledge: 'her husband is a man')"
AGE_REASON = "gives an age the turn never states (a number of the turn read as someone's age)"
# A source turn is kept as grounding when its cosine is at least this share of the best turn's.
SOURCE_PREFERENCE = 0.9
# where an entry's main claim ends and its stated reason begins
_REASON_CLAUSE = re.compile(r",?\s+(?:because|since|so that)\b", re.I)


def head_claim(text: str) -> Optional[str]:
    """The entry's main clause when a reason clause follows it, else None.

    "Sarah dislikes burgers, because they are her favorite." -> "Sarah dislikes burgers."
    A head of fewer than 3 words is not split off (None).
    """
    m = _REASON_CLAUSE.search(text)
    if not m:
        return None
    head = text[: m.start()].rstrip(" ,;:")
    return head + "." if len(head.split()) >= 3 else None


# Polarity rule: words that negate a clause, sentiment verbs (not content: "likes X" and
# "doesn't like X" are about the same X), and function words that carry no content.
_NEGATORS = frozenset("not no never nor none neither nothing cannot dislike dislikes disliked "
                      "hate hates hated".split())
_SENTIMENT = frozenset("like likes liked love loves loved enjoy enjoys enjoyed prefer prefers preferred "
                       "fan fond keen".split())
_FUNCTION = frozenset("the and for are was were with that this have has had been does did doing "
                      "she her hers his him they them their its you your our very really just too also "
                      "from into about find finds found feel feels felt because since would could should "
                      "will can may might must shall than then there here what which who whom whose "
                      "when where why how all any some much many more most such only own same".split())
_POL_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_INFLECTION = re.compile(r"(?<=[a-z]{3})(?:ing|ed|s)$")
# a clause ends at punctuation or "but" / "however" (a main clause follows) or at a subordinator
_CLAUSE = re.compile(r"([.!?;,:]|\b(?:but|however)\b)|\b(?:because|since|while|although|though|whereas)\b")


def _clause_words(clause: str, skip: frozenset) -> tuple[bool, set[str]]:
    """(negated, content words) of one clause; a content word loses "ing" / "ed" / "s" and is
    cut to 5 characters, so inflections match ("plays" / "playing", "games" / "game")."""
    words = _POL_WORD.findall(clause)
    negated = any(w in _NEGATORS or w.endswith("n't") for w in words)
    content = {_INFLECTION.sub("", w)[:5] for w in words
               if len(w) >= 3 and "'" not in w and w not in _NEGATORS and w not in _SENTIMENT
               and w not in _FUNCTION and w not in skip}
    return negated, content


def shared_words(short: str, full: str, user_name: str = "") -> tuple[int, int]:
    """(content words of ``short`` that ``full`` also holds, content words of ``short``): words
    of every clause (:func:`_clauses`, so "but" / "because" are not words), stemmed as
    :func:`_clause_words` does (no function, sentiment or negation words), the user's name aside.

    "Caroline chose an adoption agency that helps LGBTQ+ folks with adoption" in "Caroline
    chose them because they help LGBTQ+ folks with adoption. Their inclusivity ... spoke to
    her": (5, 6); "plays chess on weekends" in "plays tennis on weekends": (2, 3).
    """
    skip = _name_skip(user_name)
    w = _all_clause_words(short, skip)
    return len(w & _all_clause_words(full, skip)), len(w)


def _name_skip(user_name: str) -> frozenset:
    return frozenset(_POL_WORD.findall(user_name.lower()))


def _all_clause_words(text: str, skip: frozenset) -> set[str]:
    """The content words of every clause of ``text`` (:func:`_clause_words`)."""
    return set().union(*(_clause_words(c, skip)[1] for c, _ in _clauses(text)))


def polarity_clash(hypothesis: str, premise: str, user_name: str = "") -> bool:
    """True when the premise clause that best matches the hypothesis's main clause says the
    opposite: one of the two is negated ("not", "n't", "never", "dislike", "hate", ...) and
    the other is not, and they share at least 2 content words and 60 % of the hypothesis's.

    A rule for what a small NLI judge misses: it reads "Sarah likes first-person shooters" as
    entailed by "I don't like to play first-person shooters" (HaluMem user3 session 3). No
    decision (False) when the best clause is not unique or the overlap is smaller.
    """
    return same_polarity(hypothesis, premise, user_name) is False


def same_polarity(hypothesis: str, premise: str, user_name: str = "", min_share: float = 0.6) -> Optional[bool]:
    """Whether the hypothesis's main clause has the polarity of the premise clause that best
    matches it (the rule of :func:`polarity_clash`): True when both are negated or neither,
    False when one is, None when the rule cannot decide (fewer than 2 shared content words or
    fewer than ``min_share`` of the main clause's, or best clauses of both polarities)."""
    skip = _name_skip(user_name)
    h_neg, h_words = _clause_words(_clauses(hypothesis)[0][0], skip)
    if len(h_words) < 2:
        return None
    scored = []
    for clause, main in _clauses(premise):
        neg, words = _clause_words(clause, skip)
        # a main clause wins a tie with a subordinate one ("..., because puzzle games frustrate me")
        scored.append(((len(h_words & words), main), neg))
    best = max(k for k, _ in scored)
    if best[0] < 2 or best[0] < min_share * len(h_words):
        return None
    pols = {neg for k, neg in scored if k == best}
    return h_neg in pols if len(pols) == 1 else None


def _clauses(text: str) -> list[tuple[str, bool]]:
    """``text`` (lower-cased) cut into (clause, is main clause) pairs at :data:`_CLAUSE`."""
    text = text.replace("\u2019", "'").lower()
    out, start, main = [], 0, True
    for m in _CLAUSE.finditer(text):
        out.append((text[start:m.start()], main))
        start, main = m.end(), m.group(1) is not None
    out.append((text[start:], main))
    return [(c, mn) for c, mn in out if c.strip()] or [("", True)]


def _best_within(vec: np.ndarray, turn_vecs: np.ndarray, cand: list[int]) -> int:
    x = cross_reference(vec[None, :], turn_vecs[cand], 0.0)
    return cand[int(x.argmax[0])]


async def ground_entries(
    ctx: SessionContext, state: PipelineState, only: Optional[list[int]] = None
) -> dict[int, Optional[int]]:
    """Set each live entry's ``ground_turn_id`` (§3.4 turn-level grounding).

    Args:
        only: entry indices to ground (live ones among them); None = every live entry.

    Returns:
        entry index -> index (into ``state.text_turns``) of the most similar *user* turn, or
        None when the session has no user text turn (used for non-user groundings).
    """
    live = _live(state, only)
    if not live or not state.text_turns:
        return {i: None for i in live}
    tv = await turn_vectors(ctx, state)
    ev = await ctx.embed([state.entries[i].text for i in live])
    pos = {t.turn_id: k for k, t in enumerate(state.text_turns)}
    user_k = [k for k, t in enumerate(state.text_turns) if t.role == "user"]
    best_all = await ctx.xref(ev, tv, 0.0)
    best_user = await ctx.xref(ev, tv[user_k], 0.0) if user_k else None
    out: dict[int, Optional[int]] = {}
    for row, i in enumerate(live):
        e = state.entries[i]
        cand = [pos[t] for t in e.source_turn_ids if t in pos]
        k = int(best_all.argmax[row])
        if cand:
            # prefer the entry's own source turn unless it is clearly less similar than the
            # best turn overall (small models often cite the wrong turn id)
            j = _best_within(ev[row], tv, cand)
            if float(tv[j] @ ev[row]) >= SOURCE_PREFERENCE * float(best_all.max_sim[row]):
                k = j
        e.ground_turn_id = state.text_turns[k].turn_id
        out[i] = user_k[int(best_user.argmax[row])] if best_user is not None else None
    return out


def _hypotheses(text: str, premise: str, user_name: str, p) -> list[str]:
    """What NLI must all entail for ``text`` to pass: the text, then its main clause
    (:func:`head_claim`) when ``check_head_claim`` is on and a reason clause follows it.

    The main clause is left out when, with ``check_polarity`` on, it is one clause whose every
    content word is in one clause of ``premise`` said with the same polarity
    (:func:`same_polarity` at ``min_share`` 1): the separate check is there to catch a main
    clause changed while the reason copies the turn, and in the stored graphs to 16315a5 it
    changed 4 of 120 verdicts, each time calling a true main clause neutral
    (docs/pipeline.md). A swapped noun or a second clause keeps the check."""
    head = head_claim(text) if p.check_head_claim else None
    if head is None:
        return [text]
    if p.check_polarity and len(_clauses(head)) == 1 and same_polarity(head, premise, user_name, min_share=1.0):
        return [text]
    return [text, head]


def flipped_claim(text: str, verdicts: Sequence[NLIVerdict]) -> Optional[str]:
    """The entry's main claim when the polarity rule found the turn saying it the other way
    and that claim is one clause (no "and", comma or other join, :func:`.screen.is_compound`),
    else None; None too when a "since" follows it (a date, not only a reason).

    ``verdicts``: the entry's step-1 NLI verdicts; one ``by="polarity"`` contradiction means
    its main clause is flipped (the rule reads the main clause only). The claim, without its
    reason clause ("Sarah likes sodas, because they are too sweet" -> "Sarah likes sodas."),
    is then the only atomic fact: the adjudicator revises or discards it (§3.4) without a
    decomposition call, whose 1.5B answer repeated the entry or split off a reason that
    explains the flipped claim (HaluMem user3 session 3 at 4d2bd1c: 3 such entries, 3
    decomposition and 4 adjudication calls, every fact discarded)."""
    if not any(v.by == "polarity" and v.label == "contradiction" for v in verdicts):
        return None
    reason = _REASON_CLAUSE.search(text)
    if reason and "since" in reason.group(0).lower():
        return None  # "since May" may date the claim: not cut off
    claim = head_claim(text) or text
    return claim if len(_clauses(claim)) == 1 and not screen.is_compound(claim) else None


def _verdict(turn: Turn, hypothesis: str, res) -> NLIVerdict:
    return NLIVerdict(premise_turn_id=turn.turn_id, hypothesis=hypothesis, label=res.label, score=res.score)


def _lexical(text: str, user_name: str, turn_text: str) -> bool:
    """:func:`.screen.lexical_entailment`, and a negated ``text`` needs a negation in the
    turn (outside quotes): the turn's words with a "not" added are not entailed ("John is
    not a classmate of Sarah" from "John is my Classmate, John and I studied together", a
    re-read at d31d9c7, whose shared words were too few for the polarity rule)."""
    if not screen.lexical_entailment(text, user_name, turn_text):
        return False
    return not _negated(text) or _negated(screen.unquoted(turn_text))


async def _nli_check(
    ctx: SessionContext, state: PipelineState, premise_turn: dict[int, Optional[Turn]],
    items: list[tuple[Hashable, int, str]],
) -> dict[Hashable, list[NLIVerdict]]:
    """One batched NLI call for ``items`` of (key, entry index, text): each text (and its main
    clause, :func:`_hypotheses`) against the entry's premise turn. Every verdict is also
    recorded on the entry. Returns the verdicts per key, in hypothesis order."""
    p = ctx.config.pipeline
    sess, name = state.session, state.user_name
    pairs = []
    for key, i, text in items:
        # a near-copy of the user's turn (every content word there, outside quotes) needs
        # no NLI call; its main clause is then covered too
        if p.lexical_entailment and _lexical(text, name, premise_turn[i].content):
            pairs.append((key, i, text))
        else:
            pairs.extend((key, i, h) for h in _hypotheses(text, premise_turn[i].content, name, p))
    # a clause the turn plainly negates (or affirms) the other way needs no NLI call
    clash = [p.check_polarity and polarity_clash(h, premise_turn[i].content, name) for _, i, h in pairs]
    lexical = [not c and p.lexical_entailment and _lexical(h, name, premise_turn[i].content)
               for (_, i, h), c in zip(pairs, clash)]
    asked = [(_premise(premise_turn[i], sess, name, h, p.premise_max_words), h)
             for (_, i, h), c, lx in zip(pairs, clash, lexical) if not c and not lx]
    res = iter(await ctx.nli(asked, "verify") if asked else [])
    out: dict[Hashable, list[NLIVerdict]] = {key: [] for key, _, _ in items}
    for (key, i, h), c, lx in zip(pairs, clash, lexical):
        if c:
            v = NLIVerdict(premise_turn_id=premise_turn[i].turn_id, hypothesis=h, label="contradiction",
                           score=1.0, by="polarity")
        elif lx:
            v = NLIVerdict(premise_turn_id=premise_turn[i].turn_id, hypothesis=h, label="entailment",
                           score=1.0, by="lexical")
        else:
            v = _verdict(premise_turn[i], h, next(res))
        state.entries[i].nli.append(v)
        out[key].append(v)
    return out


def _premise(turn: Turn, session, user_name: str, hypothesis: str, max_words: int) -> str:
    """:func:`premise_text` of ``turn`` cut to the sentences that bear on ``hypothesis``
    (:func:`.screen.focus_premise`)."""
    cut = screen.focus_premise(turn.content, hypothesis, user_name, max_words)
    return premise_text(turn if cut == turn.content else turn.model_copy(update={"content": cut}), session, user_name)


def _clauses_of_repeat(entry: str, facts: list[str], user_name: str) -> list[str]:
    """``facts`` (a decomposition of the flagged compound ``entry`` that repeats it) with the
    repeat replaced by the :func:`.screen.split_clauses` pieces of ``entry`` that no other
    fact holds every word of ("Nora is skipping it because her ankle hurts" beside "Nora is
    skipping the team run because her ankle hurts")."""
    key = norm_key(entry)
    others = [f for f in facts if norm_key(f) != key]
    # support 1.0 covers a piece equal to another fact too
    pieces = [c for c in screen.split_clauses(entry, user_name)
              if all(screen.support(c, user_name, o) < 1.0 for o in others)]
    return [g for f in facts for g in (pieces if norm_key(f) == key else [f])]


def _join(facts: list[str]) -> str:
    return " ".join(f.strip() for f in facts if f.strip())


def _live(state: PipelineState, only: Optional[list[int]]) -> list[int]:
    live = state.live_entries()
    if only is None:
        return live
    keep = set(only)
    return [i for i in live if i in keep]


def _part_reasons(turn: Turn) -> tuple[str, ...]:
    """Screen reasons that may concern one clause of a compound entry only."""
    return (WRONG_PERSON_REASON.format(tid=turn.turn_id), QUOTED_REASON, BORROWED_REASON, ASKED_REASON,
            WISHED_REASON, EXHORTED_REASON, INFERRED_REASON, URGED_REASON, SAID_OF_IT_REASON, KIND_REASON,
            PLACEHOLDER_REASON, NOT_SELF_REASON, REVERSED_FEELING_REASON, ADDRESSED_REASON, CITED_OTHER_REASON,
            REMARK_REASON, PRAISE_REASON, AGE_REASON, OWNER_REASON, PHRASE_REASON,
            FEELING_OF_OTHER_REASON, PLANNED_REASON, HEDGED_REASON, EXCLAIMED_REASON,
            CORRECTED_REASON, ANSWERED_REASON, NAMED_OTHER_REASON, OWNER_ADDED_REASON,
            OBJECT_OF_OTHER_REASON)


def screen_reason(state: PipelineState, text: str, turn: Turn, others: list[str],
                  other_turns: list[str]) -> Optional[str]:
    """Why ``text`` (an entry or atomic fact) is not a user fact stated by ``turn`` (a user
    turn), or None when it may go on to NLI (:mod:`.screen`). ``others``: names of the other
    speakers; ``other_turns``: their turn texts (for the support of assistant words).
    The sentence that states ``text`` must not be one said to the other side
    (:func:`.screen.said_to_other`): re-reads, and drafts read one by one, turned advice
    and praise to the other side ("You'll be an awesome mom!") into user facts. An
    adjudicator's revision or atomic fact half in another script is rejected as
    :func:`.extract.parse_facts` rejects extracted facts (:func:`.extract.half_translated`)."""
    name = state.user_name
    previous = _previous_other(state, turn)
    text = screen.time_last(text)  # "Yesterday, Nikhil ran ..." read with its subject first
    # an adjudicator's revision or an atomic fact; against every turn, as for a fact that
    # cites none (an entry may paraphrase another turn of a bilingual session)
    if half_translated(state, text, state.session.turns):
        return MIXED_SCRIPT_REASON
    if (screen.is_filler(text, name, others) or screen.reaction_to_other(text, name, previous, turn.content)
            or screen.about_the_chat(text, name, turn.content) or screen.retracted_joke(text, name, turn.content)):
        return FILLER_REASON
    if screen.about_other_speaker(text, others):
        return OTHER_SPEAKER_REASON
    if screen.support(text, name, turn.content) < screen.MIN_SUPPORT:
        said_by_other = any(screen.support(text, name, t) >= screen.MIN_SUPPORT for t in other_turns)
        return ASSISTANT_REASON if said_by_other else UNSTATED_REASON
    if screen.addresses_someone(text, [name, *others]):
        return ADDRESSED_REASON
    if screen.praised_in_other_words(text, turn.content):
        return PRAISE_REASON
    if screen.names_no_one(text, name, others, state.user_turn_texts):
        return NO_SUBJECT_REASON
    if screen.quoted_only(text, name, turn.content):
        return QUOTED_REASON
    if screen.asked_only(text, name, turn.content):
        return ASKED_REASON
    if screen.wished_only(text, name, turn.content):
        return WISHED_REASON
    if screen.exhorted_only(text, name, turn.content):
        return EXHORTED_REASON
    if screen.planned_as_done(text, name, turn.content):
        return PLANNED_REASON
    if screen.hedged_as_certain(text, name, turn.content):
        return HEDGED_REASON
    if screen.exclaimed_only(text, name, turn.content, previous):
        return EXCLAIMED_REASON
    if screen.answered_of_other(text, name, turn.content, previous):
        return ANSWERED_REASON
    if screen.named_other(text, name):
        return NAMED_OTHER_REASON
    if screen.owner_added(text, name, turn.content, state.user_turn_texts):
        return OWNER_ADDED_REASON
    if screen.object_of_other(text, name, turn.content):
        return OBJECT_OF_OTHER_REASON
    if screen.told_named_unsaid(text, name, state.user_turn_texts, others):
        return TOLD_REASON
    pos = state.turn_pos.get(turn.turn_id, -1)
    head, rest = screen.split_after_statement(text, turn.content, name)  # a turn may correct itself
    rest = rest if screen.has_correction_mark(rest) else ""  # a rest that says the value again is no correction
    own = screen.stating_correction(text, turn.content, name)  # the stating sentence corrects itself
    value = screen.corrected_later(text, [own] * bool(own) + [rest] * bool(rest)
                                   + [t.content for t in state.user_text_turns if state.turn_pos.get(t.turn_id, -1) > pos],
                                   head)
    if value:
        logger.debug("%r: %r corrected later", text[:60], value)
        return CORRECTED_REASON
    if screen.urged_only(text, name, turn.content, previous):
        return URGED_REASON
    if screen.speaker_dead(text, name):
        return DEAD_SPEAKER_REASON
    if screen.subject_clash(text, name, turn.content, previous) or screen.act_moved_from_user(text, name, turn.content):
        return WRONG_PERSON_REASON.format(tid=turn.turn_id)
    if screen.owner_swapped(text, name, turn.content):
        return OWNER_REASON
    if screen.held_by_other(text, name, state.user_turn_texts, other_turns, others,
                            turn.content):
        return HELD_BY_OTHER_REASON
    if screen.relation_unstated(text, name, state.user_turn_texts, others):
        return RELATION_REASON
    if screen.said_of_it(text, name, turn.content):
        return SAID_OF_IT_REASON
    if screen.reversed_feeling(text, name, turn.content):
        return REVERSED_FEELING_REASON
    if screen.feeling_of_other(text, name, turn.content):
        return FEELING_OF_OTHER_REASON
    # the other side's news from the turn before or, when the user only reacted (no question
    # before, no first person in the turn: "Wow, the studio looks awesome!"), from the turn
    # after, which the model merges with the reaction ("I'm determined to make this studio
    # work"); an answer ("How's the job?" / "Exhausting, the night shifts are brutal.") is
    # the user's own news whatever the other side says of theirs next
    following = "" if "?" in previous or screen.speaks_of_self(turn.content) else _next_other(state, turn)
    if (screen.borrowed_from_other(text, name, turn.content, previous)
            or screen.borrowed_from_other(text, name, turn.content, following)):
        return BORROWED_REASON
    if screen.remark_on_other_news(text, name, turn.content, previous):
        return REMARK_REASON
    if screen.inferred(text, turn.content):
        return INFERRED_REASON
    if screen.unstated_kind(text, name, turn.content):
        return KIND_REASON
    if screen.unstated_age(text, turn.content, previous):
        return AGE_REASON
    if screen.placeholder_object(text, name, turn.content):
        return PLACEHOLDER_REASON
    if screen.said_to_other(text, name, turn.content):
        return NOT_SELF_REASON
    return None


def _name_unnamed(state: PipelineState, e: Entry, turn: Turn) -> None:
    """Write the person the entry's leading "she" / "he" / "her" means, as its premise
    ``turn`` tells it (:func:`.screen.name_unnamed`); the draft's text goes to
    ``original_text``."""
    named = screen.name_unnamed(e.text, state.user_name, turn.content)
    if named and named != e.text:
        logger.debug("named %r -> %r", e.text[:60], named[:60])
        e.original_text = e.original_text or e.text
        e.text = named


def _cited_other(state: PipelineState, e: Entry, premise: Turn, turn_by_id: dict[str, Turn],
                 text: Optional[str] = None) -> Optional[str]:
    """:data:`CITED_OTHER_REASON` when a non-user turn among the entry's source turns states
    ``text`` (default: the entry's text; an atomic fact of it when the entry was split)
    better than ``premise`` and the entry's user source turns
    (:func:`.screen.cited_other_states_better`); :data:`PHRASE_REASON` when ``text`` copies
    a phrase of such a turn, or of the other side's reply to ``premise``, that no user turn
    says (:func:`.screen.phrase_from_other`)."""
    cited = [turn_by_id[t] for t in e.source_turn_ids if t in turn_by_id]
    users = [premise.content] + [t.content for t in cited if t.role == "user" and t.turn_id != premise.turn_id]
    other = [t.content for t in cited if t.role != "user"]
    text = e.text if text is None else text
    if screen.cited_other_states_better(text, state.user_name, users, other):
        return CITED_OTHER_REASON
    if screen.phrase_from_other(text, state.user_name, [t.content for t in state.user_text_turns], other,
                                state.other_speakers, _next_other(state, premise)):
        return PHRASE_REASON
    return None


def _other_beside(state: PipelineState, turn: Turn, step: int) -> str:
    """Text of the turn ``step`` places from ``turn`` (-1: before, 1: after) when it is not
    the user's; "" when there is none, it is the user's, or ``turn`` is not in the session."""
    k = state.turn_pos.get(turn.turn_id)
    j = -1 if k is None else k + step
    turns = state.session.turns
    return turns[j].content if 0 <= j < len(turns) and turns[j].role != "user" else ""


def _previous_other(state: PipelineState, turn: Turn) -> str:
    """Text of the non-user turn right before ``turn`` ("" when the turn before is the user's)."""
    return _other_beside(state, turn, -1)


def _next_other(state: PipelineState, turn: Turn) -> str:
    """Text of the non-user turn right after ``turn`` ("" when there is none, or it is the user's)."""
    return _other_beside(state, turn, 1)


def _other_speakers(state: PipelineState) -> tuple[list[str], list[str]]:
    return state.other_speakers, [t.content for t in state.text_turns if t.role != "user"]


def _restate_turn(state: PipelineState, i: int, premise: Turn, user_turns: dict[str, Turn]) -> Turn:
    """The user turn among the entry's grounding turn and its user source turns that states
    most of its content words (:func:`.screen.support`); the grounding turn on a tie."""
    e = state.entries[i]
    cand = [(premise.turn_id, premise.content)] + [
        (t, user_turns[t].content) for t in e.source_turn_ids if t in user_turns and t != premise.turn_id]
    best = screen.best_supporting_turn(e.text, state.user_name, cand)
    return user_turns[best[0]] if best else premise


async def verify_entries(ctx: SessionContext, state: PipelineState, only: Optional[list[int]] = None) -> None:
    """Run §3.4 on every live entry of ``state``, or on the live ones among ``only`` (entry
    indices; entries recovered after HV); modifies entries in place and records discards."""
    p = ctx.config.pipeline
    best_user = await ground_entries(ctx, state, only)
    live = _live(state, only)
    if not live:
        return
    turn_by_id = {t.turn_id: t for t in state.text_turns}
    sess, name = state.session, state.user_name

    # 1) entry-level NLI against the grounding turn (a user turn for non-user groundings)
    premise_turn: dict[int, Optional[Turn]] = {}
    for i in live:
        t = turn_by_id[state.entries[i].ground_turn_id]
        if t.role != "user":
            k = best_user[i]
            t = state.text_turns[k] if k is not None else None
        premise_turn[i] = t
    checkable = [i for i in live if premise_turn[i] is not None]
    for i in live:
        if premise_turn[i] is None:
            state.entries[i].discarded = True
            state.discard(state.entries[i].text, "verify", ASSISTANT_REASON)
    others, other_turns = _other_speakers(state)
    split: set[int] = set()  # compounds the screen flagged for one clause: decomposed without NLI
    if p.keep_turn_language:
        await localise_entries(ctx, state, premise_turn, checkable)
    if p.screen_entries:
        user_turns = {t.turn_id: t for t in state.user_text_turns}
        kept = []
        for i in checkable:
            e = state.entries[i]
            premise_turn[i] = _restate_turn(state, i, premise_turn[i], user_turns)
            why = screen_reason(state, e.text, premise_turn[i], others, other_turns) or _cited_other(
                state, e, premise_turn[i], turn_by_id)
            if not why:
                # named only once screened as written: "she" of a named other speaker, or
                # an entry naming no one, stays out (names_no_one)
                _name_unnamed(state, e, premise_turn[i])
                if screen.pronoun_opening(screen.time_last(e.text), name, others):
                    why = NO_SUBJECT_REASON
            grounded_user = turn_by_id[e.ground_turn_id].role == "user"
            if why and grounded_user and why in _part_reasons(premise_turn[i]) and screen.is_compound(e.text):
                # one clause may be someone else's, the others the user's: decompose (step 2)
                # and screen each atomic fact, rather than lose the user's part
                logger.debug("split %r: %s", e.text[:60], why)
                split.add(i)
            elif why:
                e.discarded = True
                e.ground_turn_id = premise_turn[i].turn_id
                state.discard(e.text, "verify", why)
            else:
                kept.append(i)
        checkable = kept
    verdicts = await _nli_check(ctx, state, premise_turn, [(i, i, state.entries[i].text) for i in checkable])
    failed = sorted(split)  # in entry order, as the screen met them
    for i in checkable:
        e, t = state.entries[i], premise_turn[i]
        grounded_user = turn_by_id[e.ground_turn_id].role == "user"
        if all(v.label == "entailment" for v in verdicts[i]):
            e.ground_turn_id = t.turn_id
        elif not grounded_user:
            e.discarded = True
            state.discard(e.text, "verify", ASSISTANT_REASON)
        else:
            failed.append(i)
    if not failed:
        return

    # 2) atomic decomposition of the non-entailed entries; an entry whose one-clause main
    # claim the turn says the other way needs none: that claim is its atomic fact
    facts: dict[int, list[str]] = {}
    for i in failed:
        claim = None if i in split else flipped_claim(state.entries[i].text, state.entries[i].nli)
        if claim:
            facts[i] = [claim]
    to_split = [i for i in failed if i not in facts]
    decomp = await ctx.llm_json(
        [decompose_request(state.entries[i].text, name, p.max_atomic_facts) for i in to_split], "verify"
    ) if to_split else []
    for i, out in zip(to_split, decomp):
        fs, seen = [], set()
        for f in out[: p.max_atomic_facts]:
            f = clean_uncut(f, name)  # an atomic fact cut off at the cap: dropped
            # the 1.5B decomposer often repeats the entry; a repeat is judged once
            if has_text(f) and norm_key(f) not in seen:
                seen.add(norm_key(f))
                fs.append(f)
        if i in split and len(fs) > 1 and norm_key(state.entries[i].text) in seen:
            # the decomposer gave the flagged compound back beside a clause of it: judged
            # whole, the compound fails the screen; its clauses stand in for it, each one
            # the other facts do not already state
            fs = _clauses_of_repeat(state.entries[i].text, fs, name)
        if i in split and len(fs) <= 1:
            # the 1.5B decomposer gave the flagged compound back whole: cut it at its clauses,
            # or before the reading it adds
            fs = screen.split_clauses(state.entries[i].text, name)
            cut = screen.without_reading(state.entries[i].text) if len(fs) <= 1 else None
            fs = [cut] if cut else fs
        facts[i] = fs or [state.entries[i].text]  # nothing split off: judge the entry itself

    # 3) NLI of every atomic fact (and its main clause, as in step 1) against the entry's premise;
    # an atomic fact the screen rejects is discarded without NLI or adjudication
    atoms: dict[int, list[AtomicFact]] = {i: [] for i in failed}
    screened: dict[tuple[int, int], str] = {}
    if p.screen_entries:
        for i in failed:
            for k, f in enumerate(facts[i]):
                # an atomic fact keeps its entry's sources: the other side's clause of a
                # compound the draft took from their turn is theirs
                why = screen_reason(state, f, premise_turn[i], others, other_turns) or _cited_other(
                    state, state.entries[i], premise_turn[i], turn_by_id, f)
                if not why:
                    # "She plans ..." over the turn's "I'll start ...": the decomposer drops names too
                    facts[i][k] = screen.name_unnamed(f, name, premise_turn[i].content) or f
                    if screen.pronoun_opening(screen.time_last(facts[i][k]), name, others):
                        why = NO_SUBJECT_REASON  # as for an entry: a "They ..." nothing resolves
                if why:
                    screened[(i, k)] = why
    verdicts = await _nli_check(
        ctx, state, premise_turn,
        [((i, k), i, f) for i in failed for k, f in enumerate(facts[i]) if (i, k) not in screened],
    )
    to_judge: list[tuple[int, AtomicFact]] = []
    for i in failed:
        for k, f in enumerate(facts[i]):
            if (i, k) in screened:
                atoms[i].append(AtomicFact(text=f, action="discarded"))
                state.discard(f, "verify", f"atomic fact: {screened[(i, k)]}")
                continue
            vs = verdicts[(i, k)]
            bad = [v for v in vs if v.label != "entailment"]
            a = AtomicFact(text=f, verdict=bad[0] if bad else vs[0], action="kept")
            atoms[i].append(a)
            if bad:
                to_judge.append((i, a))

    # 4) LLM adjudication of the non-entailed atomic facts
    rulings = await ctx.llm_json(
        [adjudicate_request(_premise(premise_turn[i], sess, name, a.text, p.premise_max_words), a.text)
         for i, a in to_judge], "verify"
    )
    for (i, a), ruling in zip(to_judge, rulings):
        raw = ruling.get("revised_fact") or ""
        revised = clean_text(raw, name)
        whole = uncut(raw, revised)
        # a revision must itself pass the screen against the premise (the adjudicator can
        # write what the turn never said)
        if has_text(revised) and whole is None:
            why = CUT_OFF_REASON
        elif has_text(revised) and copies_dialogue_line(revised):
            why = LINE_COPY_REASON  # format, not content: checked first, with or without the screen
        else:
            why = (screen_reason(state, revised, premise_turn[i], others, other_turns)
                   if p.screen_entries and has_text(revised) else None)
        if why and ruling["action"] == "REVISE":
            a.action = "discarded"
            state.discard(revised, "verify", f"revision of {a.text!r}: {why}")
        elif ruling["action"] == "REVISE" and has_text(revised):
            a.action, a.revised_text = "revised", whole
        else:
            a.action = "discarded"
            state.discard(
                a.text, "verify",
                f"atomic fact not entailed by turn {premise_turn[i].turn_id}; adjudicator: DISCARD",
            )

    # 5) rebuild each entry from its surviving atomic facts
    for i in failed:
        e = state.entries[i]
        e.atomic_facts = atoms[i]
        e.ground_turn_id = premise_turn[i].turn_id
        survivors = [a.revised_text if a.action == "revised" else a.text for a in atoms[i] if a.action != "discarded"]
        if not survivors:
            e.discarded = True
            state.discard(e.text, "verify", "no atomic fact survived verification")
        elif any(a.action != "kept" for a in atoms[i]) or (i in split and _join(survivors) != e.text):
            # a flagged compound is rebuilt from its atomic facts even when all of them pass:
            # the flagged clause is not one of them as written
            e.original_text, e.text, e.status = e.text, _join(survivors), "revised"
        # else: every atomic fact entailed -> the entry is supported as written


TEMPLATE_REASON = "one sentence repeated with another name in each (the model filled it with every name it saw)"


def drop_filled_templates(state: PipelineState) -> list[int]:
    """Discard the live entries that :func:`.screen.filled_templates` groups (three or more
    that differ by one capitalised word only); returns their indices."""
    live = state.live_entries()
    out = [live[r] for r in sorted(screen.filled_templates([state.entries[i].text for i in live]))]
    for i in out:
        state.entries[i].discarded = True
        state.discard(state.entries[i].text, "verify", TEMPLATE_REASON)
    return out


async def dedup_entries(ctx: SessionContext, state: PipelineState) -> list[int]:
    """Discard the entries of a filled template (:func:`drop_filled_templates`), then
    near-duplicates (:func:`dedup_similar`). Returns the discarded entry indices."""
    return drop_filled_templates(state) + await dedup_similar(ctx, state)


async def dedup_similar(ctx: SessionContext, state: PipelineState) -> list[int]:
    """Discard near-duplicate live entries (ProMem v1's dedup, inside promem).

    Two live entries are one fact when their embedding cosine is >= ``pipeline.tau_dup``
    (0.9) or every content word of one (the user's name aside) occurs in the other, or, when
    they share a turn (a source turn, or the turn HV grounded it on), the fuller one states the
    other (:func:`stands_for`: at least 2 and :data:`SAME_TURN_SHARE`, 70 %, of its words). Of
    such a pair (both negated or neither, and every number of the dropped one also in the
    kept one: :func:`_numbers`) the entry with more content words stays (the
    earlier one on a tie) and takes the other's source turns; the other is discarded with
    the reason. Polarity is read as :func:`_same_sign` does: a negation in a clause only the
    fuller entry has ("..., removing sugary sodas from her disliked list") does not keep the
    pair apart. Of the rest, a pair at cosine >= ``pipeline.tau_dup_nli`` (0.8; None = off)
    whose fuller entry holds at least :data:`DEDUP_NLI_SHARE` of the shorter one's content
    words is sent to NLI (fuller entry as premise, stage "verify"); entailment makes the
    shorter one a duplicate too. Returns the discarded entry indices.
    """
    live = state.live_entries()
    if len(live) < 2:
        return []
    name = state.user_name
    texts = [state.entries[i].text for i in live]  # dedup changes no text
    vecs = await ctx.embed(texts)
    sim = np.asarray(vecs, dtype=np.float32) @ np.asarray(vecs, dtype=np.float32).T
    words = [screen.predicate_words(t, name) for t in texts]
    # more content words first, then creation order: the fuller statement of a fact stays
    order = sorted(range(len(live)), key=lambda r: (-len(set(words[r])), r))
    kept: list[int] = []
    dropped: list[int] = []
    # "likes jazz" and "doesn't like jazz" share every word and most of their vector
    neg = [_negated(t) for t in texts]
    nums = [_numbers(t) for t in texts]
    # an entry's turns include the one HV grounded it on (its premise), which the output graph
    # lists among its source turns too: a draft entry citing only D3:10 but verified on D3:5
    # restates another entry of D3:5
    turns = [entry_turns(state.entries[i]) for i in live]

    def same_sign(r: int, k: int) -> bool:
        # parses both entries' clauses: asked after the cheap checks of each pair
        return _same_sign(texts[r], texts[k], name, neg[r], neg[k])

    for r in order:
        twin = next((k for k in kept if nums[r] <= nums[k] and (
            sim[r, k] >= ctx.config.pipeline.tau_dup
            or (words[r] and screen.support(texts[r], name, texts[k]) == 1.0)) and same_sign(r, k)), None)
        if twin is not None:
            _merge(state, live[r], live[twin], f"near-duplicate of {texts[twin][:120]!r} "
                                                f"(cosine {float(sim[r, twin]):.3f})")
            turns[twin] |= turns[r]
            dropped.append(live[r])
            continue
        # a fuller statement of the same turn: the draft's "chose an adoption agency that helps
        # LGBTQ+ folks" beside the re-read "chose them because they help LGBTQ+ folks ...
        # their inclusivity and support spoke to her" (5 of 6 words); not "plays chess" /
        # "plays tennis on weekends" (2 of 3)
        fuller = next((k for k in kept if nums[r] <= nums[k] and turns[r] & turns[k]
                       and _states_more(texts[r], texts[k], name) and same_sign(r, k)), None)
        if fuller is None:
            kept.append(r)
            continue
        n, of = shared_words(texts[r], texts[fuller], name)
        _merge(state, live[r], live[fuller], f"restated more fully by {texts[fuller][:120]!r} "
                                              f"(same turn, {n} of its {of} words)")
        turns[fuller] |= turns[r]  # as _merge widened its source turns
        dropped.append(live[r])
    # A paraphrase below tau_dup ("chose an adoption agency that helps LGBTQ+ folks" / "chose
    # them because they help LGBTQ+ folks"): cosine alone cannot tell it from a distinct fact
    # ("likes biographies" / "likes historical fiction", 0.89), so the fuller entry must also
    # hold half the shorter one's words and entail it (NLI, the fuller entry as premise).
    tau = ctx.config.pipeline.tau_dup_nli
    if tau is None or tau >= ctx.config.pipeline.tau_dup:
        return dropped
    cand: list[tuple[int, int]] = []  # (shorter, fuller) positions in ``kept``
    gone: set[int] = set()
    for a in range(len(kept)):
        for b in range(a + 1, len(kept)):
            full, short = kept[a], kept[b]  # kept is ordered fuller first
            if sim[short, full] < tau or not words[short] or not nums[short] <= nums[full] or not same_sign(short, full):
                continue
            if screen.support(texts[short], name, texts[full]) >= DEDUP_NLI_SHARE:
                cand.append((short, full))
    if not cand:
        return dropped
    res = await ctx.nli([(texts[f], texts[sh]) for sh, f in cand], "verify")
    for (short, full), v in zip(cand, res):
        if v.label != "entailment" or short in gone or full in gone:
            continue
        _merge(state, live[short], live[full], f"restates {texts[full][:120]!r} "
                                               f"(cosine {float(sim[short, full]):.3f}, entailed by it)")
        gone.add(short)
        dropped.append(live[short])
    return dropped


# Share of an entry's content words (at least 2) that a fuller entry of the same source turn
# must hold to stand for it (:func:`stands_for`). Over the pairs that survived dedup in every
# labelled run (dup_pairs.jsonl line 8, after the regionals fact key was unified): at 0.7,
# 19 same-fact pairs, 1 distinct pair and 3 that keep a wrong or filler entry over a correct
# one; at 0.75 (until 3971431), 14, 1 and 3; at 0.8, 5, 1 and 1. The 5 same-fact pairs 0.7
# adds (and 1 pair of fillers) hold 5 of 7 words ("Gina's team won first place at a regional
# at age fifteen" in "..., winning first place at a regional at age fifteen": "won" is not
# "winning") or 7 of 10.
SAME_TURN_SHARE = 0.7


def _negated(text: str) -> bool:
    """Whether ``text`` holds a negation (:func:`_clause_words` over it, lower-cased, a
    typographic apostrophe read as the plain one: "doesn’t")."""
    return _clause_words(text.replace("\u2019", "'").lower(), frozenset())[0]


def stands_for(short: str, full: str, user_name: str = "", share: Optional[float] = None) -> bool:
    """Whether ``full``, an entry of the same source turn, states ``short`` more fully (dedup's
    same-turn rule): the same polarity (:func:`_same_sign`), every number of ``short`` in ``full``, ``full``
    has more content words (:func:`shared_words`) and holds at least 2 and ``share``
    (None: :data:`SAME_TURN_SHARE`, what dedup uses) of ``short``'s, both as stems and as word
    starts (:func:`.screen.support`: "classical" is not "classes").

    What it cannot see: a fuller entry that swaps one word of the shorter one for another
    ("her daughter plays piano at school concerts" / "her son plays piano at school concerts
    every Friday", 4 of 5 words) is taken for a restatement; no such pair was among the
    labelled runs' entries (``dup_pairs.jsonl`` line 5).
    """
    return (_same_sign(short, full, user_name, _negated(short), _negated(full))
            and _numbers(short) <= _numbers(full) and _states_more(short, full, user_name, share))


def _same_sign(short: str, full: str, user_name: str, neg_short: bool, neg_full: bool) -> bool:
    """Whether ``full`` says ``short`` with its polarity, for dedup: :func:`same_polarity`
    (the shorter entry's main clause against the fuller entry's clause that best matches it)
    when it decides; else both negated or neither. A negation only in a clause the fuller entry
    adds ("..., removing sugary sodas from her disliked list") does not keep a restatement
    apart; a shorter entry with a negation of its own ("plays chess but never tennis") needs
    the fuller one to have one too."""
    sp = same_polarity(short, full, user_name)
    if sp is False:
        return False
    if neg_short == neg_full:
        return True
    return not neg_short and sp is True


def _states_more(short: str, full: str, user_name: str, share: Optional[float] = None) -> bool:
    """:func:`stands_for` without its polarity and number checks, which dedup_entries has
    already made from its per-entry lists."""
    share = SAME_TURN_SHARE if share is None else share
    skip = _name_skip(user_name)
    w, fw = _all_clause_words(short, skip), _all_clause_words(full, skip)
    n = len(w & fw)
    return (n >= 2 and n >= share * len(w) and len(fw) > len(w)
            and screen.support(short, user_name, full) >= share)


# Share of the shorter entry's content words the fuller one must hold before NLI is asked
# whether it restates it: "is 39 years old" entails nothing about "is a Female" (0 shared),
# yet the 1.5B judge said it did.
DEDUP_NLI_SHARE = 0.5


# a number with thousands separators ("15,600") is one number, the same as "15600"
_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?!\d)|\d+")


def _numbers(text: str) -> frozenset[str]:
    """The numbers of ``text`` as digit runs ("1986", "03", "26"; "$15,600" -> "15600"): an
    entry is a duplicate only of one that holds all of its numbers ("was born on 1986-03-26"
    is not "her partner was born on 1985-07-15", cosine 0.93)."""
    return frozenset(m.replace(",", "") for m in _NUMBER.findall(text))


def _merge(state: PipelineState, i: int, keep_i: int, reason: str) -> None:
    """Discard entry ``i`` as a duplicate of ``keep_i``, which takes its source turns."""
    e, keep = state.entries[i], state.entries[keep_i]
    e.discarded = True
    # the dropped entry's grounding turn too: dedup compares entries by both (entry_turns)
    gained = e.source_turn_ids + ([e.ground_turn_id] if e.ground_turn_id else [])
    keep.source_turn_ids = list(dict.fromkeys(keep.source_turn_ids + gained))
    state.discard(e.text, "verify", reason)


def _same_dates(text: str, turn: Turn, state: PipelineState) -> bool:
    """Every date ``text`` resolves to is one its turn resolves to (the model, asked to
    translate, also computes calendar dates, and gets them wrong)."""
    ref = turn_date(turn, state.session)
    return set(resolve_dates(text, ref)) <= set(resolve_dates(turn.content, ref))


def _language_gap(text: str, turn: Turn) -> Optional[str]:
    """The language of ``turn`` (a user turn) when ``text`` is in another one and both have
    enough words to tell (:func:`~promem_fast.timeparse.has_language_evidence`); else None."""
    if turn.role != "user":
        return None
    lang = language_of(turn.content)
    if lang != language_of(text) and has_language_evidence(text) and has_language_evidence(turn.content):
        return lang
    return None


def _usable_rewrite(out: object, lang: str, turns: Sequence[Turn], state: PipelineState) -> Optional[tuple[str, Turn]]:
    """(text, turn) of a rewrite in ``lang`` that a turn of ``turns`` states (:func:`.screen.support`
    >= :data:`.screen.MIN_SUPPORT`, the best one) and that names no date that turn does not
    resolve to; None when the answer is not such a rewrite."""
    new = clean_uncut(out, state.user_name) if isinstance(out, str) else ""
    if not has_text(new) or language_of(new) != lang:
        return None
    new = third_person(new, state.user_name)  # "... kann mir helfen" copies the turn's "mir"
    if new is None:
        return None
    best = screen.best_supporting_turn(new, state.user_name, [(t.turn_id, t.content) for t in turns])
    turn = next((t for t in turns if best and t.turn_id == best[0]), None)
    if turn is None or best[1] < screen.MIN_SUPPORT or not _same_dates(new, turn, state):
        return None
    return new, turn


async def localise_entries(ctx: SessionContext, state: PipelineState, premise_turn: dict[int, Optional[Turn]],
                           todo: Sequence[int]) -> None:
    """Issue 16 item 5, before the screen: each entry of ``todo`` written in another language
    than its premise user turn (a German turn, an English entry: the 1.5B model writes most
    German facts in English) is written again in the turn's language, one batched request,
    so the screen and NLI read it against the turn's own words. Measured on
    benchmarks/unseen/miriam.de.json at eb2152c: 4 of 5 correct English entries of the German
    session failed the lexical screen ("not stated in the user's turn") and were lost.
    The rewrite is shown the premise turn and the entry's other user source turns in that
    language (cross-lingual MiniLM grounding is weak); it is kept when it is in that language,
    a turn among those states it (:func:`.screen.support` >= :data:`.screen.MIN_SUPPORT`;
    that turn becomes the premise) and it names no date the turn does not resolve to. A
    rewrite that fails any check, or a failed request, leaves the entry to the screen as it
    was. Modifies ``state.entries`` and ``premise_turn`` in place."""
    user_turns = {t.turn_id: t for t in state.user_text_turns}
    jobs: list[tuple[int, str, list[Turn]]] = []
    for i in todo:
        t = premise_turn.get(i)
        lang = _language_gap(state.entries[i].text, t) if t is not None else None
        if lang is None or half_translated(state, state.entries[i].text, state.session.turns):
            continue  # a half-translated entry is rejected by the screen, not repaired
        same = [user_turns[s] for s in state.entries[i].source_turn_ids
                if s in user_turns and s != t.turn_id and language_of(user_turns[s].content) == lang]
        jobs.append((i, lang, [t, *same][:3]))
    if not jobs:
        return
    try:
        outs = await ctx.llm_json(
            [restate_request("\n".join(t.content for t in turns), state.entries[i].text, lang)
             for i, lang, turns in jobs], "verify")
    except StructuredOutputError as exc:
        logger.warning("session %s: entries screened in their own language: %s", state.session.session_id, exc)
        return
    for (i, lang, turns), out in zip(jobs, outs):
        usable = _usable_rewrite(out, lang, turns, state)
        if usable is None:
            logger.info("screening %r as written: its rewrite in %s was not usable (%r)",
                        state.entries[i].text[:60], lang, str(out)[:60])
            continue
        e = state.entries[i]
        e.original_text = e.original_text or e.text
        e.text, premise_turn[i] = usable


async def restore_language(ctx: SessionContext, state: PipelineState) -> None:
    """Issue 16 item 5: a memory stays in the language of its turn. Each live entry whose
    language (:func:`~promem_fast.timeparse.language_of`: "en", "de", "zh") differs from
    its grounding user turn's is written again in the turn's language, one batched request.
    A rewrite is kept only when it is in that language and the turn states it
    (:func:`.screen.support` >= :data:`.screen.MIN_SUPPORT`); otherwise the entry stays as
    it was (a fact is not lost for its language), as it does when the rewrite names a date
    the turn does not resolve to. The old text goes to ``original_text``."""
    turn_by_id = {t.turn_id: t for t in state.text_turns}
    todo: list[tuple[int, Turn, str]] = []
    for i in state.live_entries():
        e = state.entries[i]
        t = turn_by_id.get(e.ground_turn_id)
        lang = _language_gap(e.text, t) if t is not None else None
        if lang is not None:
            todo.append((i, t, lang))
    if not todo:
        return
    try:
        outs = await ctx.llm_json(
            [restate_request(t.content, state.entries[i].text, lang)
             for i, t, lang in todo], "verify")
    except StructuredOutputError as exc:
        # a repair, not a stage: the verified entries stay as they are
        logger.warning("session %s: entries kept in their language: %s", state.session.session_id, exc)
        return
    for (i, t, lang), out in zip(todo, outs):
        usable = _usable_rewrite(out, lang, [t], state)
        if usable is not None:
            e = state.entries[i]
            e.original_text = e.original_text or e.text
            e.text = usable[0]
        else:
            logger.info("kept %r: its rewrite in %s was not usable (%r)", state.entries[i].text[:60], lang,
                        str(out)[:60])
