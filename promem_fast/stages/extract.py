"""Stage 1, multi-grained disentanglement (ProMem §3.2), and the initial draft (§3.3).

- :func:`extract_details`: fine details of user turns, one call per topic (stage "details").
- :func:`abstract_events`: macro events per topic (stage "events").
- :func:`infer_relations`: causal/temporal edges over all events (stage "relations").
- :func:`extract_draft`: the initial memory draft over the whole session (stage "draft").

Every prompt starts with the same system message and the session's dialogue block
(prompts/common.py), so the backend reuses the prefix; details of each turn keep its turn id.
"""

from __future__ import annotations

import functools
import logging
import re
import unicodedata
from typing import Any, Callable, Mapping, Optional, Sequence

from lemminflect import getAllInflections, getAllLemmas

from ..context import SessionContext
from ..prompts.common import FACT_CHARS, dialogue_block
from ..prompts.extract import EDGE_CANDIDATES, details_request, draft_request, events_request, relations_request
from ..schema import Turn
from .state import Candidate, Entry, PipelineState, clean_text, has_text, norm_key

logger = logging.getLogger(__name__)

_EVENT_ID = re.compile(r"^\s*e?\s*(\d+)\s*$", re.I)
# An English fact in the first person is a copied dialogue line (seen with the 1.5B model:
# "The stories were so inspiring! I was so happy"), not a third-person fact about the user.
# Case-sensitive so "US" (the country) is not "us".
_PLURAL_FORMS = r"[Ww]e|[Ww]e're|[Oo]ur|[Oo]urs|[Oo]urselves|[Uu]s"
_FIRST_PERSON = re.compile(r"\b(I|I'm|I’m|I'd|I've|I'll|[Mm]e|[Mm]y|[Mm]ine|[Mm]yself|" + _PLURAL_FORMS + r")\b")
FIRST_PERSON_REASON = "first-person copy of a dialogue line, not a third-person fact"
# "Sarah (user): ..." is the speaker label of a dialogue line (prompts/common.speaker_label):
# a fact holding one copied the line instead of stating something about a person.
_SPEAKER_LABEL = re.compile(r"[(（]\s*(?:user|assistant|system|other)\s*[)）]\s*[:：]", re.I)
LINE_COPY_REASON = "copy of a dialogue line (holds its speaker label), not a fact"
# a slot of a prompt's sentence template ("User <did what> ...", prompts/extract.py) written
# back as if it were the fact; the 1.5B model copies whatever a prompt shows
_TEMPLATE_SLOT = re.compile(r"<[a-z][a-z ]{0,24}>")
TEMPLATE_REASON = "copy of the prompt's sentence template, not a fact"
# Letters outside the Latin script ("朋友" in "supportive朋友"): where no turn says them, the
# 1.5B model translated part of a fact into another language (seen on English HaluMem turns).
# Candidates by regex, then only letters (not modifier letters such as the ʻokina, nor
# subscript digits) count; Chinese, Japanese and Korean scripts are one group (a Japanese
# sentence mixes kanji, hiragana and katakana).
_NON_LATIN_LETTERS = re.compile(r"[^\W\d_\u0000-\u024f\u1e00-\u1eff]+")
_LETTER = frozenset("Lu Ll Lt Lo".split())
_CJK_GROUP = frozenset("CJK HIRAGANA KATAKANA KATAKANA-HIRAGANA HANGUL HALFWIDTH FULLWIDTH IDEOGRAPHIC".split())
MIXED_SCRIPT_REASON = "holds words in a script its turns do not use (half-translated), not the turn's language"
# A fact as long as the schema allows (prompts/common.FACT_CHARS) was cut off by constrained
# decoding mid-sentence ("... and she is proud of,"): it keeps its complete sentences. A
# sentence ends at "." / "!" / "?" (closing quotes or brackets kept) before a capital or the
# end, not after an abbreviation ("Dr.", "St.", "a.m.", "z. B."), an initial ("J. K.") or a
# day before a month ("am 3. Mai"), or at "。" / "！" / "？".
_SENTENCE_STOP = re.compile(r"(?:(?P<word>[\w.]*)[.!?]|[。！？])[\"'”’»)\]」』）]*(?=\s+[\"'“‘(¿¡]?[A-Z\u00c0-\u024f]|\s*$)|"
                            r"[。！？][\"'”’»)\]」』）]*")
_ABBREVIATIONS = frozenset("""
dr mr mrs ms mx st jr sr prof vs etc e.g i.e a.m p.m no nr inc ltd co mt ft ca bzw usw z.b d.h u.a ggf
""".split())
# a day number before a month is an ordinal ("am 3. Mai"), not a sentence end ("She is 39. Her")
_MONTH_NEXT = re.compile(r"\s+(?:jan|feb|m[aä]r|apr|ma[iy]|jun|jul|aug|sep|o[ck]t|nov|de[cz])", re.I)
CUT_OFF_REASON = "cut off at the fact length cap with no complete sentence: a partial output"
# a fact the model closed after a comma or a conjunction: what it began to add is not there
# (lower case only: "Portland, OR"; not "while": "for a while")
_DANGLING_END = re.compile(r"(?:\s*[,;:，；：、]|\s+(?:and|or|but|because))+\s*$")
_PLURAL_FIRST_PERSON = re.compile(r"\b(" + _PLURAL_FORMS + r")\b")
# singular first-person forms -> third person about the user; contractions before "I"
_SINGULAR_FIRST_PERSON = [
    (re.compile(r"\bI(?:'m|’m| am)\b"), "{n} is"),
    (re.compile(r"\bI(?:'ve|’ve| have)\b"), "{n} has"),
    (re.compile(r"\bI(?:'d|’d)\b"), "{n} would"),
    (re.compile(r"\bI(?:'ll|’ll)\b"), "{n} will"),
    (re.compile(r"\b(?:[Mm]y|[Mm]ine)\b"), "{n}'s"),
    (re.compile(r"\b(?:[Mm]e|[Mm]yself)\b"), "{n}"),
]
# "I'd" is "I had" before a past participle or "better" ("I'd never been", "I'd better go")
_I_HAD = re.compile(r"\bI(?:'d|’d)(\s+(?:never|already|just|not|ever|only|always|really|since))?(?=\s+(\w+))")


def _had_form(word: str) -> bool:
    low = word.lower()
    return low == "better" or any(low != x and low in getAllInflections(x, upos="VERB").get("VBN", ())
                                  for x in getAllLemmas(low, upos="VERB").get("VERB", ()))


_I_FORMS = 4  # the patterns above "my": the "I" forms, read before a bare "I"
# a bare "I" right after a capitalised word ("World War I", "Henry I") or a noun that
# numbers ("phase I trial", "type I diabetes") is a numeral, kept; the verb after any other
# (past one adverb) is read to agree with the name that replaces it
_BARE_I = re.compile(r"(\b[A-Z][\w'’-]* |\b(?:phase|type|stage|grade|part|level|class|chapter|volume|act|"
                     r"book|season|tier|category|section|round|step|unit) )?\bI\b((?: (?:also|just|really|still|always|never|often|usually|"
                     r"sometimes|even|only|truly|absolutely|totally|definitely|genuinely|actually|finally|"
                     r"especially|honestly|mostly|recently|rarely|seriously))? )?([a-z]+n['’]t|[a-z]+)?")


def copies_dialogue_line(text: str) -> bool:
    """True when ``text`` holds a dialogue line's speaker label, "Name (user):" (as the
    prompts print turns): the model copied the line rather than writing a fact."""
    return _SPEAKER_LABEL.search(text) is not None


# Chinese and German first-person words, which the model copies from a turn in those
# languages ("李娜妈妈说她会过来帮我", "... kann mir bei den Besichtigungen helfen"). Neither
# language needs agreement with a name in the object or possessive slot: "我" -> "李娜",
# "mir" / "mich" -> "Miriam", "mein(e|em|en|er|es)" -> "Miriams". "ich" needs its verb
# changed and "我们" / "wir" / "uns" / "unser..." name others: a copy.
_ZH_FIRST = re.compile(r"(?<![自忘唯敌])我")  # not "自我" (self), "忘我", "唯我", "敌我"
_ZH_FIRST_PLURAL = re.compile(r"我们|咱们|咱")
# "meinen" / "meine" before a comma, "dass" or the end is the verb ("Seine Eltern meinen, ...")
_DE_FIRST_SINGULAR = re.compile(r"\b(?:mir|mich|mein(?:e|em|en|er|es)?\b(?!\s*(?:[,:]|dass\b|$)))\b")
_DE_FIRST_COPY = re.compile(r"\b(?:[Ii]ch|[Ww]ir|[Uu]ns|[Uu]nser\w*)\b")


def _german_genitive(name: str) -> str:
    """"Miriam" -> "Miriams"; a name ending in an s sound takes an apostrophe ("Hans'")."""
    return name + ("'" if name[-1:].lower() in "sßxz" else "s")


def _other_first_person(text: str) -> bool:
    return bool(_ZH_FIRST.search(text) or _DE_FIRST_SINGULAR.search(text) or _DE_FIRST_COPY.search(text))


def _opens_with(text: str, name: str, genitive_s: bool) -> bool:
    """``text`` opens with ``name`` as a word: "Sarah's ...", a Chinese name run into the
    next word ("李娜家的猫"), with ``genitive_s`` the German "Miriams Schwester"; not
    "Sarahville" (nor "Sarahs" in English)."""
    if text[: len(name)].casefold() != name.casefold():
        return False
    rest = text[len(name):]
    return (not rest[:1].isalnum() or _is_cjk(name[-1:])
            or (genitive_s and rest[:1] == "s" and not rest[1:2].isalnum()))


def _is_cjk(ch: str) -> bool:
    return bool(ch) and "\u3400" <= ch <= "\u9fff"


def third_person(text: str, user_name: str) -> Optional[str]:
    """``text`` with stray singular first-person words turned into ``user_name``, or None
    when it is a first-person copy of a dialogue line.

    A fact that opens with the user's name (or its first word) is a third-person fact with a
    pronoun slip when "I / me / my" occur later (the 1.5B model writes "Sarah dislikes energy
    drinks, because they make me feel jittery"): "me" -> "Sarah", "my" -> "Sarah's",
    "I'm" -> "Sarah is". Any other fact with a first-person word, and any fact with a plural
    one ("we", "our", "ours", "ourselves", "us": who else is meant is unknown), is a copy: None.
    Chinese and German facts the same way: "我" -> the name; "mir" / "mich" -> the name,
    "mein..." -> its genitive ("Miriams"); "我们", "ich", "wir", "uns", "unser..." make a copy
    (issue 16 item 5: seen on benchmarks/unseen li_na.zh.json and miriam.de.json).
    """
    # what the fact quotes keeps its speaker's words ("she said 'I'm not driving it'" is
    # hers, "Never Let Me Go" a title): the rest is read and repaired with the quotes aside
    bare, restore = hide_quotes(text)
    english = bool(_FIRST_PERSON.search(bare))
    if not english and not _other_first_person(bare):
        return text
    first = (user_name.split() or [""])[0]
    opens = [w for w in (user_name, first) if w and w.lower() != "user"]
    if not any(_opens_with(text, w, genitive_s=not english) for w in opens):
        return None
    out = repair_first_person(bare, user_name, english)
    return None if out is None else restore(out)


def hide_quotes(text: str) -> tuple[str, Callable[[str], str]]:
    """``text`` with each quotation or title (:data:`_FACT_QUOTE`) replaced by a placeholder,
    and the function that puts them back: what a quote says keeps its speaker's words."""
    quotes: list[str] = []

    def hide(m: re.Match) -> str:
        quotes.append(m.group())
        return f"\x00{len(quotes) - 1}\x00"

    return _FACT_QUOTE.sub(hide, text), lambda out: re.sub(r"\x00(\d+)\x00", lambda m: quotes[int(m.group(1))], out)


# a quotation or title inside a fact: "...", “...”, „...“, «...», »...«, ‚...‘, 「...」, 《...》,
# or '...' whose inner apostrophes sit between letters ("'I'm not driving anything I can't park'")
_FACT_QUOTE = re.compile(r"\"[^\"\n]+\"|[\u201c\u201e][^\u201c\u201d\u201e\n]+[\u201d\u201c]|\u00ab[^\u00bb\n]+\u00bb|"
                         r"\u00bb[^\u00ab\n]+\u00ab|\u201a[^\u2018\n]+\u2018|"
                         r"[\u300c\u300e\u300a\u3008][^\u300d\u300f\u300b\u3009\n]+[\u300d\u300f\u300b\u3009]|"
                         r"(?<!\w)['\u2018](?:[^'\u2018\u2019\n]|(?<=\w)['\u2019](?=\w))+?['\u2019](?!\w)")


def repair_first_person(text: str, user_name: str, english: bool) -> Optional[str]:
    """:func:`third_person` past its checks of the opening name: ``text`` with its quotes
    held aside."""
    if _PLURAL_FIRST_PERSON.search(text) or _ZH_FIRST_PLURAL.search(text) or _DE_FIRST_COPY.search(text):
        return None
    text = _ZH_FIRST.sub(user_name, text)
    text = _DE_FIRST_SINGULAR.sub(
        lambda m: user_name if m.group().lower() in ("mir", "mich") else _german_genitive(user_name), text)
    if not english:
        return text
    text = _I_HAD.sub(lambda m: f"{user_name} had{m.group(1) or ''}" if _had_form(m.group(2)) else m.group(0), text)
    for pat, repl in _SINGULAR_FIRST_PERSON[:_I_FORMS]:
        text = pat.sub(repl.format(n=user_name), text)

    def bare_i(m: re.Match) -> str:
        if m.group(1):
            return m.group(0)
        verb = m.group(3) or ""
        # "Kai and I go", "my son and I go": a compound subject stays plural ("chess and I
        # enjoy ..." joins two clauses)
        agree = m.group(2) is not None and _COMPOUND_SUBJECT.search(text[:m.start()]) is None
        return user_name + (m.group(2) or "") + (third_person_verb(verb) if agree else verb)

    text = _BARE_I.sub(bare_i, text)
    # "me" / "my" after the bare "I": "Tom told me I should" must not read "Tom told Sam I" as
    # a numeral after a name
    for pat, repl in _SINGULAR_FIRST_PERSON[_I_FORMS:]:
        text = pat.sub(repl.format(n=user_name), text)
    return text


# a name or a possessed / determined noun right before "and" / "or" in front of an "I"
_COMPOUND_SUBJECT = re.compile(r"(?:\b[A-Z][\w'’-]*|\b(?:my|his|her|their|our|the|\w+['’]s)\s+\w+)\s+(?:and|or)\s+$")
# the forms that agree with "I" only, plain or before "n't"
_AGREEMENT = {"do": "does", "have": "has", "am": "is"}


def third_person_verb(word: str) -> str:
    """``word`` as it agrees with a third-person singular subject when it is a verb in the
    form that only "I" takes ("love" -> "loves", "don't" -> "doesn't", "haven't" ->
    "hasn't", "am" -> "is"); anything else as it is: past forms ("went"; "found" and "saw",
    which are also base forms of other verbs), modals ("can"), and base forms that are also
    past forms ("read", "put": which one the model meant is unknown). Forms from
    ``lemminflect``'s lexicon."""
    neg = re.match(r"(\w+?)(n['’]t)$", word)
    if neg:
        base, tail = neg.groups()
        agreed = _AGREEMENT.get(base.lower())
        return agreed + tail if agreed and base.islower() else word  # can't, won't, didn't: no person
    low = word.lower()
    if low in _AGREEMENT:
        return _AGREEMENT[low]
    # its own and only lemma: "found" is also the past of "find", "saw" of "see"
    if getAllLemmas(low, upos="VERB").get("VERB", ()) != (low,):
        return word
    forms = getAllInflections(low, upos="VERB")
    if low in forms.get("VBD", ()) or not forms.get("VBZ"):
        return word
    return forms["VBZ"][0]


_WORD = re.compile(r"\w+", re.U)
# said around a name, about no one ("Hi Jo!", "Dear Sam")
_GREETINGS = frozenset("hi hey hello dear bye".split())
# words that carry no detail on their own ("Hey Mel! Good to see you!" -> "good", "see", "you")
_FILLER_WORDS = frozenset(
    "the and for you how see good are was were with that this have has had been not but what who "
    "its his her their they she him your our very really just some any all can will would could "
    "about from into out get got yes yeah okay hey hello thanks thank great nice new".split()
)


def stated_in(detail: str, turn_text: str) -> bool:
    """True when a content word of ``detail`` occurs in ``turn_text`` (case-insensitive).

    Cheap lexical grounding of per-turn details (§3.2 extracts them turn by turn): the 1.5B
    model attributes details to the wrong turn and lists filler words of greetings. A word
    counts when it has >= 3 characters (or is a number) and is not filler, and matches at the
    start of a word of the turn; words longer than 4 characters also match by their first 4
    (inflections: "painting" / "paints"). For scripts without spaces (CJK), any 2 consecutive
    characters of the detail must occur (:func:`word_in`).
    """
    return stated_words(detail, turn_text) > 0


def stated_words(detail: str, turn_text: str) -> int:
    """How many content words of ``detail`` occur in ``turn_text`` (the rule of :func:`stated_in`)."""
    turn = turn_text.lower()
    return sum(word_in(w, turn) for w in content_words(detail))


def content_words(text: str) -> list[str]:
    """The lower-cased words of ``text`` that :func:`stated_words` looks for: words of >= 3
    characters (or numbers) that are not filler, and every non-ASCII word."""
    return [w for w in _WORD.findall(text.lower())
            if not w.isascii() or (w not in _FILLER_WORDS and (len(w) >= 3 or w.isdigit()))]


# Non-ASCII words (CJK runs have no spaces) count as present when this share of their
# character pairs occurs (the value the screen and the completeness check pass to word_in).
PAIR_SHARE = 0.5


def word_in(word: str, text_lower: str, *, pair_share: float = 0.0) -> bool:
    """One content word (from :func:`content_words`) occurs in ``text_lower``.

    ASCII: the word, or for a word longer than 4 its first 4 characters, at the start of a
    word of the text ("paints" / "painting"; "art" is not in "started"). Non-ASCII (CJK runs
    have no spaces, so a "word" can be a clause): some of its 2-character pairs occur, at
    least ``pair_share`` of them (0 = any one pair).
    """
    if not word.isascii():
        pairs = [word[i:i + 2] for i in range(max(1, len(word) - 1))]
        hits = sum(p in text_lower for p in pairs)
        return hits > 0 and hits >= pair_share * len(pairs)
    return _stem_pattern(word[:4] if len(word) > 4 else word).search(text_lower) is not None


@functools.lru_cache(maxsize=8192)
def _stem_pattern(stem: str) -> re.Pattern:
    return re.compile(r"(?<![a-z0-9])" + re.escape(stem))


def home_turn(detail: str, claimed: str, turn_ids: Sequence[str], text_of: Mapping[str, str]) -> Optional[str]:
    """The turn among ``turn_ids`` (a topic's user turns, dialogue order) that states ``detail``:
    ``claimed`` when it does, else the one sharing most of its content words, the nearest to
    ``claimed`` on a tie (the later one when two are as near); None when no turn states it.
    The 1.5B model often files a topic's details one turn early ("I'd like to share my
    reading preference" gets "adventure novels")."""
    if stated_in(detail, text_of[claimed]):
        return claimed
    pos = {t: k for k, t in enumerate(turn_ids)}
    # Ties on distance go to the later turn (the topic's content follows its announcement);
    # comparing the id strings would order "D1:10" before "D1:9".
    words = {t: stated_words(detail, text_of[t]) for t in turn_ids}
    best = max(turn_ids, key=lambda t: (words[t], -abs(pos[t] - pos[claimed]), pos[t]))
    return best if words[best] > 0 else None


def parse_facts(
    state: PipelineState, items: list[dict[str, Any]], allowed: Sequence[str], where: str
) -> list[tuple[str, list[str]]]:
    """``[{"fact", "turns"}]`` -> [(clean text, valid turn ids)]; empty texts are skipped and
    copies of dialogue lines (first person, or with the line's speaker label) or of a prompt's
    template slot ("<did what>", unless a turn says it) and facts with a non-Latin word in a
    script that none of their turns uses and that no turn or speaker name says (half its
    character pairs; "supportive朋友" on an English turn) are discarded (all logged); a fact
    as long as the schema's cap (``FACT_CHARS``), cut off mid-sentence, keeps its complete
    sentences (:func:`complete_part`) or is discarded; a third-person fact with a stray "me" /
    "my" is rewritten by :func:`third_person`."""
    out = []
    for it in items:
        raw = str(it.get("fact", ""))
        text = clean_text(raw, state.user_name)
        if not has_text(text):
            logger.warning("session %s: %s: skipped empty fact %r", state.session.session_id, where, it)
            continue
        whole = uncut(raw, text)
        if whole is None:
            state.discard(text, where, CUT_OFF_REASON)
            continue
        if whole != text:
            logger.info("session %s: %s: a fact cut off at %d characters keeps its complete part: %r",
                        state.session.session_id, where, FACT_CHARS, whole[-80:])
            text = whole
        if copies_dialogue_line(text):
            state.discard(text, where, LINE_COPY_REASON)
            continue
        slot = _TEMPLATE_SLOT.search(text)
        if slot and not any(slot.group(0) in t.content for t in state.session.turns):
            state.discard(text, where, TEMPLATE_REASON)
            continue
        fixed = third_person(text, state.user_name)
        if fixed is None:
            state.discard(text, where, FIRST_PERSON_REASON)
            continue
        ids = state.valid_ids(it.get("turns", []), allowed, where)
        if half_translated(state, text, [state.session.turn(t) for t in ids] or state.session.turns):
            state.discard(text, where, MIXED_SCRIPT_REASON)
            continue
        if fixed != text:
            logger.info("session %s: %s: first-person words of %r written in the third person",
                        state.session.session_id, where, text[:120])
            text = fixed
        out.append((text, ids))
    return out


def complete_part(text: str) -> Optional[str]:
    """What stays of a fact cut off mid-sentence (at the schema's length cap): its complete
    sentences ("... financial security. Her career has been fulfilling, and she is proud
    of," -> "... financial security."); None when it has none. A text that ends a sentence
    comes back unchanged. Clauses are not kept: "Because she lost her job, she" would keep a
    dependent clause alone."""
    t = text.rstrip()
    end = 0
    for m in _SENTENCE_STOP.finditer(t):
        word = (m.group("word") or "").lower().rstrip(".")
        if m.group("word") is not None and (word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha())
                                            or (word.isdigit() and len(word) <= 2 and _MONTH_NEXT.match(t, m.end()))):
            continue
        end = m.end()
    return t[:end] if end else None


def uncut(raw: str, text: str) -> Optional[str]:
    """``text`` (``raw`` cleaned) as it may be stored: when ``raw`` is shorter than the
    schema's cap (``FACT_CHARS``), without a separator or conjunction left dangling at its
    end ("Mia is 5 years old now," -> "Mia is 5 years old now"), else its complete part
    (:func:`complete_part`), None when it has none. For every LLM string capped at
    ``FACT_CHARS``: extracted facts, atomic facts, revisions, rewrites."""
    if len(str(raw)) >= FACT_CHARS:
        return complete_part(text)
    return _DANGLING_END.sub("", text) or text


def clean_uncut(raw: str, user_name: str) -> str:
    """``raw`` (an LLM string capped at ``FACT_CHARS``) cleaned (:func:`~.state.clean_text`)
    as it may be stored (:func:`uncut`); "" when it was cut off with no complete sentence."""
    return uncut(raw, clean_text(raw, user_name)) or ""


def half_translated(state: PipelineState, text: str, turns: Sequence[Turn]) -> bool:
    """``text`` (a fact) holds a word of letters in a script that none of ``turns`` (the
    turns it comes from) uses and that no turn of the session or speaker name says (half
    its character pairs): "surrounding herself with supportive朋友" on an English turn.
    Chinese, Japanese and Korean letters are one script."""
    foreign = _foreign_words(text)
    if not foreign:
        return False
    cited = _scripts([t.content for t in turns])
    odd = [w for w in foreign if not _scripts([w]) <= cited]
    if not odd:  # the usual case in a Chinese or Russian session: no need to read every turn
        return False
    said = "\n".join([state.user_name, *state.other_speakers, *(t.content for t in state.session.turns)]).lower()
    return any(not word_in(w.lower(), said, pair_share=PAIR_SHARE) for w in odd)


def _foreign_words(text: str) -> list[str]:
    """Runs of letters outside the Latin script in ``text`` ("朋友", "Москва")."""
    out = []
    for run in _NON_LATIN_LETTERS.findall(text):
        word = "".join(c for c in run if unicodedata.category(c) in _LETTER)
        if word:
            out.append(word)
    return out


def _script(letter: str) -> str:
    """Script of one letter by its Unicode name ("CYRILLIC", "GREEK"); "CJK" for Chinese,
    Japanese and Korean letters."""
    head = unicodedata.name(letter, "?").split()[0]
    return "CJK" if head in _CJK_GROUP else head


def _scripts(texts: Sequence[str]) -> set[str]:
    """Scripts of the non-Latin letters of ``texts``."""
    return set().union(*(_text_scripts(t) for t in texts))


@functools.lru_cache(maxsize=4096)
def _text_scripts(text: str) -> frozenset[str]:
    # cached: the screen asks for the scripts of every turn of a session once per entry
    return frozenset(_script(c) for w in _foreign_words(text) for c in w)


def _topic_user_ids(state: PipelineState, topic: Sequence[str]) -> list[str]:
    ids = set(topic)
    return [t.turn_id for t in state.user_text_turns if t.turn_id in ids]


async def extract_details(ctx: SessionContext, state: PipelineState) -> list[tuple[str, str]]:
    """Fine-grained details (§3.2, Figure 9 intent) of the user turns, one call per topic,
    each showing only its topic's turns.

    Turns without letters/digits yield none; assistant turns are context only.
    Sets ``state.details`` = [(turn_id, detail text)] in dialogue order.
    """
    cap = ctx.config.pipeline.max_details_per_turn
    topics = [(i, _topic_user_ids(state, t)) for i, t in enumerate(state.topics)]
    topics = [(i, ids) for i, ids in topics if ids]
    by_id = {t.turn_id: t for t in state.user_text_turns}
    reqs = [
        # only the topic's turns (the whole dialogue per topic was the stage's largest prompt
        # cost); the same block opens the topic's events prompt, so the two share a prefix
        details_request(dialogue_block(state.session, state.user_name, state.topics[i]), ids, cap)
        for i, ids in topics
    ]
    outs = await ctx.llm_json(reqs, "details")
    # the user's own name is in every memory entry already; as a detail it anchors nothing
    names = {norm_key(n) for n in (state.user_name, (state.user_name.split() or [""])[0]) if n}
    # nor does the other speaker's ("Caroline" in "Thanks, Caroline!"): a re-read for it
    # only finds what the turn says to that person
    from .screen import name_parts  # screen imports this module

    other_words = {w.casefold() for w in name_parts(state.other_speakers, state.user_name)}
    text_of = {t: by_id[t].content for t in by_id}
    refile = ctx.config.pipeline.refile_details
    placed: list[tuple[bool, str, str]] = []  # (moved, home turn, text)
    for (_, ids), out in zip(topics, outs):
        for tid, phrases in out.items():
            if tid not in ids:
                logger.warning("session %s: details: dropped turn id %r (not a user turn of the topic)",
                               state.session.session_id, tid)
                continue
            for ph in phrases:
                text = clean_text(ph)
                if not has_text(text):
                    continue
                if norm_key(text) in names:
                    state.discard(text, "details", "the user's name, not a detail")
                    continue
                # "Hey Jon!", "Al" are the name alone
                words = [w for w in _WORD.findall(text.lower())
                         if len(w) >= 2 and w not in _FILLER_WORDS and w not in _GREETINGS]
                if other_words and words and all(w in other_words for w in words):
                    state.discard(text, "details", "the other speaker's name, not a detail")
                    continue
                home = home_turn(text, tid, ids, text_of) if refile else (
                    tid if stated_in(text, text_of[tid]) else None)
                if home is None:
                    state.discard(text, "details", "not stated in any user turn of its topic" if refile
                                  else f"not stated in turn {tid}")
                    continue
                if home != tid:
                    logger.debug("session %s: detail %r filed under %s, stated in %s",
                                 state.session.session_id, text, tid, home)
                placed.append((home != tid, home, text))
    # A turn's own details take its cap before details moved to it from another turn.
    got: dict[str, list[str]] = {}
    seen: dict[str, set[str]] = {}
    for _, home, text in sorted(placed, key=lambda p: p[0]):
        keys = seen.setdefault(home, set())
        if norm_key(text) not in keys and len(keys) < cap:
            keys.add(norm_key(text))
            got.setdefault(home, []).append(text)
    state.details = [(t.turn_id, d) for t in state.user_text_turns for d in got.get(t.turn_id, [])]
    return state.details


async def abstract_events(ctx: SessionContext, state: PipelineState) -> list[Candidate]:
    """Macro events per topic (§3.2, Figure 10 intent); sets ``state.events``.

    Turn ids are validated against the topic's turns (invalid ones dropped, logged); an event
    left without ids gets the topic's user turn ids. Topics with no user text make no call.
    """
    cap = ctx.config.pipeline.max_events_per_topic
    todo = [(i, t) for i, t in enumerate(state.topics) if _topic_user_ids(state, t)]
    # Each call sees only its topic's turns (§3.2: events are abstracted per topic cluster);
    # shown the whole dialogue, the 1.5B model returned the same lines for every topic.
    reqs = [
        events_request(dialogue_block(state.session, state.user_name, t), state.user_name, t, cap)
        for _, t in todo
    ]
    outs = await ctx.llm_json(reqs, "events")
    events: list[Candidate] = []
    seen: set[str] = set()  # across topics: the small model repeats events between topics
    for (i, topic), out in zip(todo, outs):
        for text, ids in parse_facts(state, out, topic, f"events of topic {i + 1}"):
            if norm_key(text) in seen:
                continue
            seen.add(norm_key(text))
            events.append(Candidate(text, ids or _topic_user_ids(state, topic), i))
    state.events = events
    return events


def parse_edges(state: PipelineState, raw: list[list[str]], n_events: int) -> list[tuple[int, str, int]]:
    """``[["E1", "causal", "E2"]]`` -> [(0, "causal", 1)]; unknown ids, bad types, self-loops and
    repeats are dropped with a logged reason."""
    edges: list[tuple[int, str, int]] = []
    sid = state.session.session_id
    for item in raw:
        src, typ, dst = (str(x) for x in item)
        ms, md = _EVENT_ID.match(src), _EVENT_ID.match(dst)
        typ = typ.strip().lower()
        if not ms or not md or not (1 <= int(ms.group(1)) <= n_events) or not (1 <= int(md.group(1)) <= n_events):
            logger.warning("session %s: relations: dropped %r (unknown event id)", sid, item)
            continue
        if typ not in ("causal", "temporal"):
            logger.warning("session %s: relations: dropped %r (type must be causal or temporal)", sid, item)
            continue
        a, b = int(ms.group(1)) - 1, int(md.group(1)) - 1
        if a == b:
            logger.warning("session %s: relations: dropped %r (self-loop)", sid, item)
            continue
        if (a, typ, b) not in edges:
            edges.append((a, typ, b))
    return edges


async def infer_relations(ctx: SessionContext, state: PipelineState) -> list[tuple[int, str, int]]:
    """Initial causal/temporal edges between events (§3.2, Figure 11 intent); sets
    ``state.event_edges`` as (event index, type, event index). Asks for
    ``max(max_relation_checks, EDGE_CANDIDATES)`` edges, since §3.5 drops those whose ends
    are not live memory entries before it checks ``max_relation_checks`` of them. No call for
    < 2 events, nor with ``max_relation_checks`` = 0 (no edge could be verified)."""
    cap = ctx.config.pipeline.max_relation_checks
    if len(state.events) < 2 or cap == 0:
        state.event_edges = []
        return []
    lines = [f"E{i + 1}: {e.text}" for i, e in enumerate(state.events)]
    (out,) = await ctx.llm_json([relations_request(lines, max(cap, EDGE_CANDIDATES))], "relations")
    state.event_edges = parse_edges(state, out, len(state.events))
    return state.event_edges


async def extract_draft(ctx: SessionContext, state: PipelineState, stage: str = "draft") -> list[Entry]:
    """Initial memory draft M_draft over the whole session (§3.3, Figure 12 intent).

    Each fact becomes an Entry(origin "draft", status "kept") with its valid source turns;
    exact repeats are dropped and recorded in ``state.discarded``. Appends to ``state.entries``.
    """
    all_ids = [t.turn_id for t in state.session.turns]
    (out,) = await ctx.llm_json([draft_request(state.block, state.user_name, ctx.config.pipeline.max_draft_facts)], stage)
    return add_entries(state, parse_facts(state, out, all_ids, stage), "draft", "kept", stage)


def add_entries(
    state: PipelineState, facts: list[tuple[str, list[str]]], origin: str, status: str, stage: str
) -> list[Entry]:
    """Append facts as entries, skipping exact repeats of existing live entries (recorded)."""
    seen = {norm_key(state.entries[i].text) for i in state.live_entries()}
    added = []
    for text, ids in facts:
        if norm_key(text) in seen:
            state.discard(text, stage, "exact duplicate of another entry")
            continue
        seen.add(norm_key(text))
        e = Entry(text=text, origin=origin, status=status, source_turn_ids=ids)
        state.entries.append(e)
        added.append(e)
    return added
