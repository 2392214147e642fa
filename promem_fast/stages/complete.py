"""Explicit completeness check (ProMem §3.3).

Cross-reference matrix ``S(e_i, m_j)`` = cosine of event and draft-entry embeddings;
``Match(e_i) = max_j S > tau_comp`` (0.6). Unmatched events E_miss are recovered:
``M_comp = M_draft ∪ E_miss``. Matched events map to their argmax draft entry, which is how
relation edges between events become edges between memory entries (§3.5).

:func:`recover_from_details` (this engine's extension, after HV) runs the same check on the
fine details: a user turn whose details no verified entry states is read again.
"""

from __future__ import annotations

import logging
import re
from typing import Iterable, Optional

from lemminflect import getAllLemmas

from ..context import SessionContext
from ..prompts.common import turn_line
from ..prompts.extract import recover_request
from ..schema import Turn
from . import screen
from .extract import PAIR_SHARE, content_words, parse_facts, word_in
from .state import Entry, PipelineState, norm_key

logger = logging.getLogger(__name__)


async def completeness_check(ctx: SessionContext, state: PipelineState, *, recover: bool = True) -> list[int]:
    """Map events to draft entries and (when ``recover``) add the unmatched ones.

    Args:
        recover: False for the no-CC ablation: the mapping is still computed (it costs no
            LLM call and relation remapping needs it) but nothing is added.

    Returns:
        Indices (into ``state.events``) of the recovered events. Updates
        ``state.event_to_entry`` and ``state.entries``.
    """
    if not state.events:
        return []
    draft_idx = state.live_entries()
    ev = await ctx.embed([e.text for e in state.events])
    dr = await ctx.embed([state.entries[i].text for i in draft_idx])
    x = await ctx.xref(ev, dr, ctx.config.pipeline.tau_comp)
    recovered = []
    for i, event in enumerate(state.events):
        if x.matched[i]:
            state.event_to_entry[i] = draft_idx[int(x.argmax[i])]
        elif recover:
            state.entries.append(
                Entry(text=event.text, origin="event", status="recovered", source_turn_ids=list(event.turn_ids))
            )
            state.event_to_entry[i] = len(state.entries) - 1
            recovered.append(i)
            logger.info("session %s: recovered event (max cosine %.3f): %r",
                        state.session.session_id, float(x.max_sim[i]), event.text[:120])
    return recovered


# A recovered fact repeats an entry when the entry holds this share of its content words, and
# is read from its turn when the turn holds this share (else it must state a missing detail).
REPEAT_SHARE = 0.8
STAGE = "recover"
# a re-read fact naming the other speaker was about the exchange with them
OTHER_NAMED_REASON = "re-read fact that names the other speaker: about the exchange, not the user's own life"


def _states_all(words: list[str], text_lower: str) -> bool:
    return bool(words) and all(word_in(w, text_lower, pair_share=PAIR_SHARE) for w in words)


def _mostly_in(words: list[str], text_lower: str) -> bool:
    return sum(word_in(w, text_lower, pair_share=PAIR_SHARE) for w in words) >= REPEAT_SHARE * len(words)


def uncovered_details(state: PipelineState) -> dict[str, list[str]]:
    """Turn id -> its details (``state.details``, which hold user turns only) that no live
    entry states, in dialogue order, each once (case-insensitive). A detail is stated by an
    entry holding every one of its content words
    (:func:`~promem_fast.stages.extract.content_words`, matched by
    :func:`~promem_fast.stages.extract.word_in`: at a word start, 4-letter stems; half the
    character pairs of a non-ASCII word); details without content words are skipped."""
    texts = [state.entries[i].text.lower() for i in state.live_entries()]
    out: dict[str, list[str]] = {}
    seen: set[tuple[str, str]] = set()
    for tid, d in state.details:
        words = content_words(d)
        if (tid, norm_key(d)) in seen or not words or any(_states_all(words, t) for t in texts):
            continue
        seen.add((tid, norm_key(d)))
        out.setdefault(tid, []).append(d)
    return out


_NAME_TOKEN = re.compile(r"[^\W\d_][\w'-]*|\S")
# a day or month is a time, which date resolution handles, not a thing to recall; interjections
# and chat spellings are capitalised at will
_NOT_NAMES = frozenset((screen._MONTHS + " " + screen._WEEKDAYS).split()) | frozenset(
    "mon tue tues wed thu thur thurs fri sat sun i i'm i've i'll i'd im ive ill id hey yeah yep yay lol omg ok "
    "btw haha hmm gonna wanna gotta dunno kinda sorta idk tbh omw pls thx ty".split())


def _bare(token: str) -> str:
    """``token`` lower-cased without a possessive "'s" ("Grandma's" -> "grandma")."""
    return re.sub(r"'s$", "", token.lower())


def _speaker_word(token: str, skip: set[str]) -> bool:
    """``token`` is a speaker's name, a short form of one ("Mel"), or a hyphenated one
    ("Jean-Luc", whose parts ``skip`` holds)."""
    return screen._short_of(token, skip) or all(screen._short_of(p, skip) for p in _bare(token).split("-") if p)


def _names_in(sentence: str, skip: set[str]) -> list[str]:
    """Names in one English ``sentence``: runs of capitalised words after its first word
    with at least one that lemminflect does not know as a common word ("Rome", "Shirley
    Franco", "New York", "Élodie"; not "Family", "One", "Movie", "Grandma's"), without a
    possessive "'s"; never days, months, interjections, chat spellings ("Gonna", "Im"),
    acronyms ("CEO", "LGBTQ": many name a kind of thing) or the words of ``skip`` (speakers'
    names, their short forms and parts)."""
    toks = _NAME_TOKEN.findall(sentence.replace("\u2019", "'"))
    runs: list[list[str]] = []
    prev = -2
    for k, t in enumerate(toks):
        if k == 0 or not t[:1].isupper() or t.isupper() or _bare(t) in _NOT_NAMES or _speaker_word(t, skip):
            continue
        word = re.sub(r"'s$", "", t)
        if k == prev + 1:
            runs[-1].append(word)
        else:
            runs.append([word])
        prev = k
    # a run is a name when one of its words is no common word ("New York", not "My Family")
    return [" ".join(r) for r in runs if any(not getAllLemmas(w.lower()) for w in r)]


def _sentences_naming(text: str, names: list[str]) -> str:
    """The sentences of ``text`` that say one of ``names`` (as whole words), in order."""
    pats = [re.compile(r"(?<![\w])" + re.escape(n) + r"(?![\w])") for n in names]
    return " ".join(x.strip() for x in screen._SENTENCE_END.split(text.replace("\u2019", "'"))
                    if x.strip() and any(p.search(x) for p in pats))


def _own_sentences(text: str) -> list[str]:
    """The sentences in which an English ``text`` tells of its speaker: those
    :func:`.screen.own_statements` keeps, less those said to the other side ("I'm so proud of
    you for ... the LGBTQ community": about them); none for a text not in English (a German
    noun is capitalised)."""
    if not screen.reads_english(text):
        return []
    return [sent for sent in screen._SENTENCE_END.split(screen.own_statements(text))
            if not screen._ADDRESSEE & {t.lower() for t in screen._TOKEN.findall(sent.replace("\u2019", "'"))}]


def _own_names(text: str, skip: set[str]) -> set[str]:
    """The names (:func:`_names_in`) that ``text`` says of its speaker (:func:`_own_sentences`)."""
    return {n for sent in _own_sentences(text) for n in _names_in(sent, skip)}


def _speaker_words(state: PipelineState) -> set[str]:
    """The words of the user's and the other speakers' names, case-folded (not names to recover)."""
    return screen._speaker_name_words(state.user_name, *state.other_speakers)


def uncovered_names(state: PipelineState) -> dict[str, list[str]]:
    """Turn id -> the names (:func:`_names_in`) that the turn says of its speaker
    (:func:`.screen.own_statements`) and that no live entry states, in order, each once.
    The 1.5B details stage leaves out names said in passing ("Been only to Rome once."), and
    the completeness check on details sees only what it lists. Sentences with "you" / "your"
    are said to the other side and give no names, nor does a sentence that says nothing
    else ("Thanks, Mell!", "Luna and Oliver!"). English turns only (a German
    noun is capitalised); the user's and the other speakers' names and short forms ("Mel")
    are not names to recover."""
    skip = _speaker_words(state)
    texts = [state.entries[i].text.lower() for i in state.live_entries()]
    out: dict[str, list[str]] = {}
    for turn in state.user_text_turns:
        for sent in _own_sentences(turn.content):
            names = _names_in(sent, skip)
            said = {w for n in names for w in content_words(n)}
            if not [w for w in content_words(sent) if w not in said and not screen._short_of(w, skip)]:
                continue  # "Thanks, Mell!", "Luna and Oliver!": nothing said of the name
            for name in names:
                words = content_words(name)
                if words and name not in out.get(turn.turn_id, ()) and not any(_states_all(words, t) for t in texts):
                    out.setdefault(turn.turn_id, []).append(name)
    return out


async def recover_from_details(ctx: SessionContext, state: PipelineState) -> list[int]:
    """Completeness check on details (not in the paper, which checks only events, §3.3).

    Extracted turn by turn (§3.2), the details show what a user turn stated; a turn with
    details that no live entry states was missed by the draft and by the events, or its entry
    was discarded by HV (e.g. a flipped "likes"). A name the turn says of its speaker that
    no detail lists and no entry states counts as a missing detail too
    (:func:`uncovered_names`: "Been only to Rome once."). Each such turn (at most
    ``max_detail_recoveries``, most uncovered details first) is read again: an English turn
    by rule (``recover_by`` "restate", :func:`restate_facts`: its own sentence written about
    the user, no LLM call), any other turn (and every turn with "llm") in one short
    call (:func:`~promem_fast.prompts.extract.recover_request`, at most
    ``recovered_facts_per_detail`` facts per missing detail and ``max_recovered_facts`` in
    all; ``max_recovered_facts`` alone when it is 0). A returned fact becomes an
    entry (origin "detail", status "recovered", source turn = that turn) when it states one of
    the turn's missing details (every content word) or takes >= 80 % of its content words
    from the turn, and repeats no live entry (>= 80 % of its content words in one entry); the
    user's name does not count as a content word. Other facts are dropped with a logged reason
    (with the 1.5B model, a turn that only announces a topic, "I'd like to share my food
    preference", was answered with invented foods). With ``pipeline.screen_entries`` a turn
    is read only for what it says of its speaker and asked only about details all of whose content
    words it says (:func:`_own_missing`), and a fact needs half
    its content words from those sentences, and a fact that names the other speaker is dropped
    (read one by one, such re-reads were praise, thanks or plans of the two speakers: 2 of 25
    correct on the labelled LoCoMo runs). The caller verifies the new entries (HV, §3.4).

    Returns:
        Indices (into ``state.entries``) of the added entries.

    Raises:
        StructuredOutputError: a re-read answer stayed invalid JSON after the retries (the
            session fails; nothing of it is stored).
    """
    p = ctx.config.pipeline
    missing = uncovered_details(state)
    asked_names: dict[str, set[str]] = {}
    for tid, names in uncovered_names(state).items():
        listed = [d.lower() for d in missing.get(tid, ())]
        # a name inside a missing detail ("trip to Rome") is asked about with that detail
        new = [n for n in names if not any(_states_all(content_words(n), d) for d in listed)]
        if new:
            missing.setdefault(tid, []).extend(new)
            asked_names[tid] = set(new)
    if not missing or p.max_detail_recoveries == 0:
        return []
    by_id = {t.turn_id: t for t in state.user_text_turns}
    missing = {t: ds for t, ds in missing.items() if t in by_id}
    if p.screen_entries:
        missing, by_id = _own_missing(state, missing, by_id)
    # turns with most missing details first, then most names: a name does not push out details
    n_details = {t: sum(d not in asked_names.get(t, ()) for d in ds) for t, ds in missing.items()}
    todo = sorted(missing, key=lambda t: (-n_details[t], -len(missing[t]), state.turn_pos[t]))
    todo = sorted(todo[: p.max_detail_recoveries], key=state.turn_pos.__getitem__)
    skip = _speaker_words(state)
    for t in todo:
        # a turn read again for names only (found by uncovered_names, or a detail that is just
        # a name the turn says: "Paris") is shown only the sentences that say them: shown the
        # whole turn, the 1.5B model spliced its other sentences into the fact ("Gina visited
        # Rome once, which she had never done before, and she was impressed by the spot she
        # saw" at 5001b75; "Jon found a place with great natural light in Paris yesterday" in
        # four runs). Only names: shown just their sentences, other details were read into
        # invented facts ("5 years already!" -> "has been alive for 5 years", at eee24b5)
        text = by_id[t].content
        said = _own_names(text, skip)
        if all(d in asked_names.get(t, ()) or d in said for d in missing[t]):
            only = _sentences_naming(text, missing[t])
            if only:
                by_id[t] = by_id[t].model_copy(update={"content": only})
    per = p.recovered_facts_per_detail
    cap = {t: min(p.max_recovered_facts, per * len(missing[t])) if per else p.max_recovered_facts for t in todo}
    # English turns are restated by rule (recover_by "restate"); others go to the model
    by_rule = {t for t in todo if p.recover_by == "restate" and screen.reads_english(by_id[t].content)}
    asked = [t for t in todo if t not in by_rule]
    answers = await ctx.llm_json([recover_request(turn_line(by_id[t], state.user_name), state.user_name, missing[t],
                                                  cap[t]) for t in asked], STAGE) if asked else []
    got = dict(zip(asked, answers))
    people = screen.introduced_people(state.user_turn_texts, _speaker_words(state)) if by_rule else frozenset()
    partner = screen.household_partner(state.user_turn_texts) if by_rule else None
    outs = [restate_facts(by_id[t].content, state.user_name, missing[t], cap[t], people, partner)
            if t in by_rule else got[t] for t in todo]
    name_words = set(content_words(state.user_name))
    others = state.other_speakers
    live = [state.entries[i].text.lower() for i in state.live_entries()]
    added: list[int] = []
    for tid, out in zip(todo, outs):
        # same cleaning as every extracted fact: empty ones skipped, first-person copies discarded
        for fixed, _ in parse_facts(state, [{"fact": f, "turns": [tid]} for f in out], [tid], STAGE):
            words = [w for w in content_words(fixed) if w not in name_words]
            low = fixed.lower()
            if not words:
                logger.debug("session %s: recover: %r names only the user", state.session.session_id, fixed)
                continue
            if any(norm_key(fixed) == norm_key(t) or _mostly_in(words, t) for t in live):
                logger.debug("session %s: recover: %r repeats an entry", state.session.session_id, fixed[:120])
                continue
            said = by_id[tid].content
            if not (any(_states_all(content_words(d), low) for d in missing[tid])
                    or _mostly_in(words, said.lower())):
                state.discard(fixed, STAGE, f"states none of the missing details and is not read from turn {tid}")
                continue
            if p.screen_entries and screen.support(fixed, state.user_name, said) < screen.MIN_SUPPORT:
                state.discard(fixed, STAGE, f"not read from what turn {tid} says of its speaker")
                continue
            if p.screen_entries and screen.names_other_speaker(fixed, others, state.user_name):
                state.discard(fixed, STAGE, OTHER_NAMED_REASON)
                continue
            live.append(fixed.lower())
            state.entries.append(Entry(text=fixed, origin="detail", status="recovered", source_turn_ids=[tid]))
            added.append(len(state.entries) - 1)
            logger.info("session %s: recovered from the details of %s: %r",
                        state.session.session_id, tid, fixed[:120])
    return added


def restate_facts(text: str, user_name: str, missing: list[str], max_facts: int,
                  people: Iterable[str] = (), partner: Optional[str] = None) -> list[str]:
    """The re-read of one English user turn by rule (``pipeline.recover_by`` "restate"): for
    each missing detail, the sentence of ``text`` holding most of its content words (at least
    half; :func:`.screen.chat_sentences`) that :func:`.screen.restate_sentence` writes about
    the user, most words first, then the earlier; a sentence that opens with "she" / "he"
    right after one that names a single person is read as that person's
    (:func:`.screen.resolve_opening_pronoun`), and one that opens with a person the user
    introduced (``people``, :func:`.screen.introduced_people`) or with "Mum" / "Dad" as that
    person's (:func:`.screen.restate_about_person`), and a "we" sentence as the user's and
    ``partner``'s when the user pairs themself with one (:func:`.screen.household_partner`,
    :func:`.screen.restate_as_couple`); each fact once, at most ``max_facts``. A
    detail none of whose sentences is the user's to restate (no "I" / "my", a "we" or "you",
    a question, an open "she" / "he", a request) gives nothing. With the 1.5B model re-reading the turn, half the
    facts it added to the memories of the new dialogues were wrong or filler, most of them a
    third person's act or thing given to the user (docs/evaluation.md). Shape: (str, str,
    list of str, int) -> list of str."""
    sents = screen.chat_sentences(text)
    out: list[str] = []
    for d in missing:
        words = content_words(d)
        if not words or not sents:
            continue
        if len(out) >= max_facts:
            break
        counts = [sum(word_in(w, x.lower(), pair_share=PAIR_SHARE) for w in words) for x in sents]
        # the sentences that hold at least half its words, most first: the first one to restate
        for k in sorted((k for k, n in enumerate(counts) if 2 * n >= len(words)), key=lambda k: (-counts[k], k)):
            fact = screen.restate_sentence(sents[k], user_name)
            named = screen.resolve_opening_pronoun(sents[k], sents[k - 1], user_name) if k and not fact else None
            if named:  # "She grew up ..." after "My partner Efua ...": Efua's fact
                fact = screen.restate_sentence(named, user_name, about_named=True)
            if not fact:  # "Maisie has been begging for a dog" after "my daughter Maisie"
                fact = screen.restate_about_person(sents[k], user_name, people)
            if not fact:  # "we rent a one bed" after "me and my partner Ola"
                fact = screen.restate_as_couple(sents[k], user_name, partner)
            if fact:
                if fact not in out:
                    out.append(fact)
                break
    return out


def _own_missing(state: PipelineState, missing: dict[str, list[str]],
                 by_id: dict[str, Turn]) -> tuple[dict[str, list[str]], dict[str, Turn]]:
    """Restrict the re-read to what each turn says of its speaker
    (:func:`.screen.own_statements`): a missing detail stays when every one of its content
    words is in those sentences (:func:`.screen.support` 1.0) and it is not filler ("Hey
    Jon!"); a turn with none left is not read again, and the others are read as those
    sentences only. With the 1.5B model, re-reading a whole turn of praise or advice to the
    other speaker ("Your family will be lucky", "Push through, you got this") wrote it down
    as the user's own fact; and a detail with a word the turn does not say (filed under the
    wrong turn, taken from the other speaker's reply, or cut off at its length cap) was
    written into the fact: "family and mentors" quoted for a turn that names only the family
    gave "courageous for her family and mentors". Returns (missing, turns) for the turns kept."""
    name, others = state.user_name, state.other_speakers
    kept: dict[str, list[str]] = {}
    turns: dict[str, Turn] = {}
    for tid, details in missing.items():
        own = screen.own_statements(by_id[tid].content)
        ds = [d for d in details if own and screen.support(d, name, own) == 1.0
              and not screen.is_filler(d, name, others)]
        if not ds:
            logger.debug("session %s: recover: turn %s says nothing new of its speaker",
                         state.session.session_id, tid)
            continue
        kept[tid] = ds
        turns[tid] = by_id[tid] if own == by_id[tid].content else by_id[tid].model_copy(update={"content": own})
    return kept, turns
