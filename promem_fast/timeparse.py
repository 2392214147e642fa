"""Timestamps and time expressions.

Two jobs:

* :func:`parse_timestamp` turns the timestamp of a turn or session, as the data sets
  write it, into a ``datetime``. Accepted forms:

  - ``datetime`` / ``date`` objects (a ``date`` becomes midnight);
  - ISO 8601 with or without a zone (``2023-05-08T13:56:00``, ``...+02:00``, ``...Z``);
  - epoch seconds or epoch milliseconds (int, float or numeric string), told apart by
    magnitude: ``abs(v) >= 1e11`` is milliseconds (1e11 s would be the year 5138,
    1e11 ms is March 1973). Epochs are UTC by definition, so they come back zoned (UTC).
    A 4-digit string ("2023") is taken as a bare year and rejected, not as an epoch;
  - LoCoMo ``session_N_date_time``: ``"1:56 pm on 8 May, 2023"``;
  - HaluMem ``timestamp`` / ``start_time``: ``"Sep 04, 2025, 09:05:32"``;
  - LongMemEval ``haystack_dates`` / ``question_date``: ``"2023/05/20 (Sat) 00:44"``.

  Strings go to ``datetime.fromisoformat`` first, then to python-dateutil; only the
  weekday in parentheses (LongMemEval) is removed beforehand. A string must give year,
  month and day: dateutil fills missing fields from a default date, so the string is
  parsed against two different defaults and rejected when the results differ. Nothing
  ever falls back to the current time. Naive stays naive, zoned stays zoned.

* :func:`resolve_dates` finds time expressions in a memory entry or turn text and
  resolves them to absolute ISO dates against the turn's timestamp (ProMem §3.2 keeps
  entries time-anchored; LoCoMo category-2 questions ask "when").
"""

from __future__ import annotations

import logging
import math
import re
from datetime import date, datetime, time, timedelta, timezone
from functools import lru_cache
from typing import Any, Optional

from dateutil import parser as _du_parser

logger = logging.getLogger(__name__)

__all__ = ["TimestampError", "parse_timestamp", "resolve_dates"]


class TimestampError(ValueError):
    """A timestamp could not be parsed; the message names where it came from."""


_EPOCH_MS_THRESHOLD = 1e11
_BARE_YEAR_RE = re.compile(r"^[12]\d{3}$")
_NUMERIC_RE = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
# LongMemEval writes "2023/05/20 (Sat) 00:44"; dateutil cannot skip the parenthesised weekday.
_PAREN_WEEKDAY_RE = re.compile(r"\(\s*(mon|tue|wed|thu|fri|sat|sun)[a-z]*\.?\s*\)", re.IGNORECASE)
_DEFAULT_A = datetime(2000, 1, 1)
_DEFAULT_B = datetime(2001, 2, 2)


def _from_epoch(v: float, value: Any, where: str) -> datetime:
    if not math.isfinite(v):
        raise TimestampError(f"timestamp {value!r} at {where} is not a finite number")
    seconds = v / 1000.0 if abs(v) >= _EPOCH_MS_THRESHOLD else v
    try:
        return datetime.fromtimestamp(seconds, tz=timezone.utc)
    except (OverflowError, OSError, ValueError) as exc:
        raise TimestampError(f"timestamp {value!r} at {where} is out of range as epoch: {exc}") from exc


def parse_timestamp(value: Any, *, where: str) -> datetime:
    """Parse one timestamp.

    Args:
        value: ``datetime``, ``date``, ``int``/``float`` epoch (seconds or milliseconds),
            or a string in one of the forms listed in the module docstring.
        where: where the value came from, e.g.
            ``"session 'conv-26/session_1' turn 'D1:3' field 'timestamp'"``; it is put in
            the error message.

    Returns:
        ``datetime``; naive if the source had no zone, zoned if it had one; epochs are UTC.

    Raises:
        TimestampError: value missing, of the wrong type, unparseable, or lacking
            year/month/day. The message contains ``where``.
    """
    if isinstance(value, datetime):
        return value
    if isinstance(value, date):
        return datetime.combine(value, time())
    if value is None:
        raise TimestampError(f"missing timestamp at {where}")
    if isinstance(value, bool):
        raise TimestampError(f"timestamp {value!r} at {where} is a boolean, not a time")
    if isinstance(value, (int, float)):
        return _from_epoch(float(value), value, where)
    if not isinstance(value, str):
        raise TimestampError(f"timestamp {value!r} at {where} has unsupported type {type(value).__name__}")

    text = value.strip()
    if not text:
        raise TimestampError(f"empty timestamp at {where}")
    if _BARE_YEAR_RE.match(text):  # "2023" is a year, not 33 minutes after the epoch
        raise TimestampError(f"incomplete timestamp {value!r} at {where}: a bare year has no month or day")
    if _NUMERIC_RE.match(text):
        return _from_epoch(float(text), value, where)
    try:
        return _parse_text(text)
    except _Unparseable as exc:
        raise TimestampError(f"{exc.args[0]} timestamp {value!r} at {where}: {exc.args[1]}") from None


class _Unparseable(Exception):
    """Internal: (kind, detail); parse_timestamp adds the value and ``where``."""


# Known data-set formats, tried with strptime before dateutil (much faster; HaluMem has
# about a thousand turns per user and the same strings repeat, hence also the cache).
_KNOWN_FORMATS = (
    "%b %d, %Y, %H:%M:%S",  # HaluMem: "Sep 04, 2025, 09:05:32"
)


@lru_cache(maxsize=65536)
def _parse_text(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        pass
    for fmt in _KNOWN_FORMATS:
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            pass
    cleaned = " ".join(_PAREN_WEEKDAY_RE.sub(" ", text).split())
    try:
        a = _du_parser.parse(cleaned, default=_DEFAULT_A)
        b = _du_parser.parse(cleaned, default=_DEFAULT_B)
    except (ValueError, OverflowError) as exc:  # dateutil's ParserError is a ValueError
        raise _Unparseable("unparseable", str(exc)) from None
    if a != b:
        raise _Unparseable("incomplete", "year, month and day are all required")
    return a


# --------------------------------------------------------------------------- resolve_dates

_MONTHS_FULL = (
    "january february march april june july august september october november december"
).split()  # "may" handled apart: it is also a modal verb
_MONTHS_ABBR = "jan feb mar apr jun jul aug sep sept oct nov dec".split()
_WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday".split()
_REL_WORDS = {"yesterday", "today", "tomorrow", "tonight", "ago"}
_REL_UNITS = {"day", "days", "week", "weeks", "weekend", "month", "months", "year", "years", "night", "morning",
              "afternoon", "evening", "fortnight"}
_REL_MODIFIERS = {"last", "next", "this", "previous", "past", "coming", "following"}
_EDGE_STOPWORDS = {"and", "or", "but", "on", "in", "at", "of", "the", "since", "from", "to", "until", "by",
                   "during", "for", "a", "an", "around", "about"}
_MAY_CONTEXT = {"in", "this", "last", "next", "since", "until", "by", "early", "late", "mid", "of", "during",
                "through", "before", "after"}
_TOKEN_RE = re.compile(r"[A-Za-z]+|\d+")
_YEAR_RE = re.compile(r"\b(1[6-9]\d\d|20\d\d|2100)\b")
_NUMERIC_DATE_RE = re.compile(r"\b\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}\b")
# Cheap gate: only texts containing one of these go to dateparser (it costs ~5 ms a call).
_CANDIDATE_RE = re.compile(
    r"\d|\b(" + "|".join(_MONTHS_FULL + _MONTHS_ABBR + _WEEKDAYS + ["may"] + sorted(_REL_WORDS) +
                         sorted(_REL_MODIFIERS)) + r")\b",
    re.IGNORECASE,
)


def _strip_edges(s: str) -> str:
    toks = s.split()
    while toks and toks[0].lower().strip(",.;:") in _EDGE_STOPWORDS:
        toks.pop(0)
    while toks and toks[-1].lower().strip(",.;:") in _EDGE_STOPWORDS:
        toks.pop()
    return " ".join(toks).strip(" ,.;:")


def _classify(match: str, before: str) -> Optional[str]:
    """Return 'absolute', 'relative' or None (not a date expression) for a dateparser match.

    ``before`` is the text preceding the match (to judge a bare "May").
    """
    raw_tokens = _TOKEN_RE.findall(match)
    tokens = [t.lower() for t in raw_tokens]
    has_number = any(t.isdigit() for t in tokens)
    has_year = bool(_YEAR_RE.search(match)) or bool(_NUMERIC_DATE_RE.search(match))
    month = any(t in _MONTHS_FULL for t in tokens) or (has_number and any(t in _MONTHS_ABBR for t in tokens))
    if "may" in tokens:
        idx = tokens.index("may")
        prev = tokens[idx - 1] if idx > 0 else (before.split()[-1].lower() if before.split() else "")
        # "May" the month: next to a number, or capitalised after a preposition ("in May").
        if has_number or (raw_tokens[idx] == "May" and prev in _MAY_CONTEXT):
            month = True
    weekday = any(t in _WEEKDAYS for t in tokens)
    relative = any(t in _REL_WORDS for t in tokens) or (
        any(t in _REL_MODIFIERS for t in tokens) and any(t in _REL_UNITS or t in _WEEKDAYS for t in tokens)
    )
    if has_year and not relative:
        return "absolute"
    if relative or weekday or month:
        return "relative"  # needs the reference time (a bare weekday or month has no year)
    if has_year:
        return "absolute"
    return None


@lru_cache(maxsize=1)
def _dateparser():
    try:
        import dateparser  # noqa: F401
        from dateparser.date import DateDataParser
        from dateparser.search import search_dates
    except ImportError as exc:  # pragma: no cover - dependency is declared
        raise ImportError("resolve_dates needs the 'dateparser' package (pip install dateparser)") from exc
    return search_dates, DateDataParser


_BASE_SETTINGS = {"RETURN_AS_TIMEZONE_AWARE": False, "PREFER_DAY_OF_MONTH": "first", "STRICT_PARSING": False}
# Placeholder base when ref is None: only expressions with an explicit year are kept then,
# so the base never leaks into a result; a fixed value keeps runs reproducible.
_PLACEHOLDER_BASE = datetime(2000, 1, 1)


def _format(d: datetime, period: str) -> str:
    if period == "year":
        return f"{d.year:04d}"
    if period == "month":
        return f"{d.year:04d}-{d.month:02d}"
    return d.date().isoformat()  # day, week (the day the expression points at), time


_CJK = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")
_GERMAN = re.compile(r"[äöüß]|\b(?:der|die|das|und|ist|nicht|ich|wir|gestern|morgen|heute|nächste[nmrs]?|"
                     r"letzte[nmrs]?|vorige[nmrs]?|kommende[nmrs]?|woche|monat|jahr|vor|montag|dienstag|"
                     r"mittwoch|donnerstag|freitag|samstag|sonntag)\b", re.I)
# words before a bare weekday / unit that point forward or back ("nächsten Montag", "下周")
_FUTURE = re.compile(r"(?:nächste[nmrs]?|kommende[nmrs]?|übernächste[nmrs]?|下|明)\s*$", re.I)
_PAST = re.compile(r"(?:letzte[nmrs]?|vorige[nmrs]?|vergangene[nmrs]?|上|昨)\s*$", re.I)
_DE_EDGES = {"in", "im", "am", "an", "um", "bei", "zu", "zum", "zur", "und", "oder", "seit", "bis", "ab"}


# German words that are not also English ("die", "am", "an", "hat", "bin", "den" are both)
_DE_FUNCTION = re.compile(r"\b(?:der|das|dem|des|und|ist|sind|nicht|ich|wir|du|sie|mein|meine|"
                          r"bei|mit|auf|für|von|zum|zur|ein|eine|einen|habe|wird|nach|auch|oder|aber)\b", re.I)
# words that are not also German ("was", "will", "an", "in" are both)
_EN_FUNCTION = re.compile(r"\b(?:the|a|and|is|are|not|i|we|you|he|she|it|my|his|her|their|at|on|of|"
                          r"for|with|to|has|have|be|by|from|this|that)\b", re.I)


def language_of(text: str) -> str:
    """"zh" for a text with CJK characters; "de" for one with more German than English
    function words (words both languages share, "was", "will", "an", "in", count for
    neither), or with German letters and no English function word ("Nora visits Jürgen in
    München." is "de": too little to tell); else "en". "München" in a sentence with an
    English function word leaves it English."""
    if _CJK.search(text):
        return "zh"
    de, en = len(_DE_FUNCTION.findall(text)), len(_EN_FUNCTION.findall(text))
    if de > en or (en == 0 and _GERMAN.search(text)):
        return "de"
    return "en"



def has_language_evidence(text: str) -> bool:
    """``text`` has CJK characters or a German or English function word: enough to tell its
    language (a short "Nora joggt gern." has none)."""
    return bool(_CJK.search(text) or _DE_FUNCTION.search(text) or _EN_FUNCTION.search(text))


# "下周三" / "上星期一" / "这礼拜五": a weekday of the week before, of or after the turn's
# week. dateparser (1.2) reads "下周三" as "in a week" and drops the weekday (2024-05-17 for
# Wednesday of the week after Friday 2024-05-10), and "上星期三" as the last Wednesday (the
# same week); Chinese counts whole weeks from Monday.
_ZH_WEEK_DAY = re.compile(r"([上下这這本])(?:个|個)?(?:周|週|星期|礼拜|禮拜)([一二三四五六日天])")
_ZH_WEEK_SHIFT = {"上": -1, "下": 1, "这": 0, "這": 0, "本": 0}
_ZH_WEEKDAY = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}


def _zh_week_days(text: str, base: datetime) -> list[tuple[int, str]]:
    """(position, ISO day) of each :data:`_ZH_WEEK_DAY` expression in ``text``."""
    monday = base - timedelta(days=base.weekday())
    return [(m.start(), (monday + timedelta(days=7 * _ZH_WEEK_SHIFT[m.group(1)] + _ZH_WEEKDAY[m.group(2)]))
             .strftime("%Y-%m-%d")) for m in _ZH_WEEK_DAY.finditer(text)]


def _resolve_other(text: str, ref: Optional[datetime], lang: str) -> list[str]:
    """:func:`resolve_dates` for Chinese and German text: dateparser's own parsers for that
    language; a weekday or unit after a forward / backward word ("nächsten Montag", "下个月")
    resolves with dateparser's PREFER_DATES_FROM future / past; a Chinese weekday of a named
    week ("下周三": Wednesday of the week after the turn's) by the week's Monday
    (:data:`_ZH_WEEK_DAY`). Without ``ref`` only expressions with a 4-digit year are kept."""
    search_dates, DateDataParser = _dateparser()
    base = ref.replace(tzinfo=None) if ref is not None else _PLACEHOLDER_BASE
    settings = dict(_BASE_SETTINGS, RELATIVE_BASE=base)
    week_days = _zh_week_days(text, base) if lang == "zh" and ref is not None else []
    if week_days:
        text = _ZH_WEEK_DAY.sub(lambda m: " " * len(m.group(0)), text)  # same positions for the rest
    try:
        found = search_dates(text, languages=[lang], settings=settings) or []
    except Exception as exc:  # dateparser raises assorted errors on odd input; a miss is harmless
        logger.debug("dateparser search failed on %r: %s", text[:80], exc)
        found = []
    if not found and not week_days:
        return []
    dated: list[tuple[int, str]] = list(week_days)
    out: list[str] = []
    pos = 0
    for match, when in found:
        at = text.find(match, pos)
        pos = at + len(match) if at >= 0 else pos
        toks = match.split()
        while toks and toks[-1].lower() in _DE_EDGES:
            toks.pop()
        while toks and toks[0].lower() in _DE_EDGES:
            toks.pop(0)
        phrase = " ".join(toks).strip(" ,.;:，。")
        if not phrase:
            continue
        if ref is None and not _YEAR_RE.search(phrase):
            continue
        before = text[:at] if at >= 0 else ""
        prefer = "future" if _FUTURE.search(before) else "past" if _PAST.search(before) else None
        opts = dict(settings, PREFER_DATES_FROM=prefer) if prefer else settings
        data = DateDataParser(languages=[lang], settings=opts).get_date_data(phrase)
        if data is not None and data.date_obj is not None:
            when, period = data.date_obj, data.period or "day"
        else:
            period = "day"
        if not 1600 <= when.year <= 2200:
            continue  # a misread number ("2020年" once came back as year 4)
        if prefer == "future" and when.replace(tzinfo=None) <= base and period == "day":
            when = when + timedelta(days=7)  # "nächsten Montag" said on a Monday: a week on
        dated.append((at if at >= 0 else len(text), _format(when, period)))
    for _, iso in sorted(dated, key=lambda d: d[0]):
        if iso not in out:
            out.append(iso)
    return out


def resolve_dates(text: str, ref: Optional[datetime]) -> list[str]:
    """Absolute ISO dates for the time expressions in ``text``.

    Args:
        text: an entry or turn text, e.g. "I went to a support group yesterday".
        ref: the turn's timestamp; relative expressions ("yesterday", "last month",
            "two days ago", "next Friday", a bare "Friday" or "8 May") resolve against it.
            A zoned ``ref`` is used as its local wall-clock time. ``None``: only
            expressions that carry their own year are returned.

    Returns:
        ISO strings in text order, deduplicated: ``YYYY-MM-DD`` for day- and week-level
        expressions ("last week" -> the day seven days before ``ref``), ``YYYY-MM`` for
        month-level ("last month", "May 2023"), ``YYYY`` for year-level ("last year",
        "in 2022"). Words dateparser over-matches ("may", "now", "second", "we") are
        filtered out; time-of-day-only expressions are dropped.
    """
    if not text:
        return []
    lang = language_of(text)
    if lang != "en":
        return _resolve_other(text, ref, lang)
    if not _CANDIDATE_RE.search(text):
        return []
    search_dates, DateDataParser = _dateparser()
    base = ref.replace(tzinfo=None) if ref is not None else _PLACEHOLDER_BASE
    settings = dict(_BASE_SETTINGS, RELATIVE_BASE=base)
    try:
        found = search_dates(text, languages=["en"], settings=settings) or []
    except Exception as exc:  # dateparser raises assorted errors on odd input; a miss is harmless
        logger.debug("dateparser search failed on %r: %s", text[:80], exc)
        return []
    ddp = DateDataParser(languages=["en"], settings=settings)
    # Locate matches in the text; dateparser splits "8 May 2023" after "the week before"
    # into "8 May" + "2023", so spans separated only by spaces/commas are joined again.
    spans: list[list[int]] = []
    pos = 0
    for match, _ in found:
        at = text.find(match, pos)
        if at < 0:
            continue
        end = at + len(match)
        if spans and re.fullmatch(r"[\s,]*", text[spans[-1][1]:at]):
            spans[-1][1] = end
        else:
            spans.append([at, end])
        pos = end
    out: list[str] = []
    for start, end in spans:
        match = text[start:end]
        phrase = _strip_edges(match)
        if not phrase:
            continue
        kind = _classify(phrase, text[: start + max(match.find(phrase), 0)])
        if kind is None or (kind == "relative" and ref is None):
            continue
        data = ddp.get_date_data(phrase)
        if data is None or data.date_obj is None:
            continue
        iso = _format(data.date_obj, data.period or "day")
        if iso not in out:
            out.append(iso)
    return out
