"""parse_timestamp (every accepted form, errors) and resolve_dates (relative/absolute/none)."""

from datetime import date, datetime, timedelta, timezone

import pytest

from promem_fast.timeparse import TimestampError, parse_timestamp, resolve_dates

W = "session 'conv-26/session_1' turn 'D1:3' field 'timestamp'"


@pytest.mark.parametrize(
    "value, expected",
    [
        ("2023-05-08T13:56:00", datetime(2023, 5, 8, 13, 56)),
        ("2023-05-08 13:56", datetime(2023, 5, 8, 13, 56)),
        ("2023-05-08", datetime(2023, 5, 8)),
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56)),  # LoCoMo
        ("12:48 am on 1 February, 2023", datetime(2023, 2, 1, 0, 48)),  # LoCoMo, past midnight
        ("Jan 15, 2029, 15:12:20", datetime(2029, 1, 15, 15, 12, 20)),  # HaluMem
        ("Sep 04, 2025, 09:05:32", datetime(2025, 9, 4, 9, 5, 32)),  # HaluMem
        ("2023/05/20 (Sat) 00:44", datetime(2023, 5, 20, 0, 44)),  # LongMemEval
        ("  2023/05/20 (Saturday) 23:01 ", datetime(2023, 5, 20, 23, 1)),
    ],
)
def test_parse_naive_forms(value, expected):
    got = parse_timestamp(value, where=W)
    assert got == expected
    assert got.tzinfo is None


def test_parse_zoned_iso_stays_zoned():
    got = parse_timestamp("2023-05-08T13:56:00+02:00", where=W)
    assert got.utcoffset() == timedelta(hours=2)
    assert got.astimezone(timezone.utc) == datetime(2023, 5, 8, 11, 56, tzinfo=timezone.utc)
    z = parse_timestamp("2023-05-08T13:56:00Z", where=W)
    assert z == datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)


def test_parse_epoch_seconds_vs_milliseconds():
    expected = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
    assert parse_timestamp(1683554160, where=W) == expected
    assert parse_timestamp(1683554160000, where=W) == expected
    assert parse_timestamp("1683554160", where=W) == expected
    assert parse_timestamp("1683554160000", where=W) == expected
    assert parse_timestamp(1683554160.5, where=W) == expected + timedelta(milliseconds=500)
    assert parse_timestamp(1683554160500.0, where=W) == expected + timedelta(milliseconds=500)
    # small epochs stay seconds: 1e9 s = 2001-09-09
    assert parse_timestamp(10**9, where=W).year == 2001


def test_parse_objects_pass_through():
    naive = datetime(2023, 5, 8, 13, 56)
    assert parse_timestamp(naive, where=W) is naive
    assert parse_timestamp(date(2023, 5, 8), where=W) == datetime(2023, 5, 8)


@pytest.mark.parametrize("bad", ["not a date", "", "May 2023", "13:56", "2023", None, True, [2023], float("nan")])
def test_parse_errors_name_the_turn(bad):
    with pytest.raises(TimestampError) as ei:
        parse_timestamp(bad, where=W)
    assert "turn 'D1:3'" in str(ei.value)
    assert "conv-26/session_1" in str(ei.value)
    assert isinstance(ei.value, ValueError)


def test_never_falls_back_to_now():
    # dateutil would fill a missing year from today; we must refuse instead.
    with pytest.raises(TimestampError, match="incomplete"):
        parse_timestamp("8 May 13:56", where=W)


REF = datetime(2023, 5, 8, 13, 56)  # LoCoMo conv-26 session 1 (a Monday)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("I went to a LGBTQ support group yesterday and it was so powerful.", ["2023-05-07"]),
        ("I painted that lake sunrise last year.", ["2022"]),
        ("We moved here last month.", ["2023-04"]),
        ("I ran a charity race two days ago", ["2023-05-06"]),
        ("Last week was fun.", ["2023-05-01"]),
        ("We are going camping next Friday.", ["2023-05-12"]),
        ("I graduated on 7 May 2023.", ["2023-05-07"]),
        ("We met on May 20, 2023 and again in 2022.", ["2023-05-20", "2022"]),
        ("The week before 8 May 2023 was busy.", ["2023-05-08"]),
        ("We will meet tomorrow.", ["2023-05-09"]),
        ("Our trip in May was great.", ["2023-05"]),
    ],
)
def test_resolve_dates_with_ref(text, expected):
    assert resolve_dates(text, REF) == expected


@pytest.mark.parametrize(
    "text",
    ["I may go to the park.", "May I ask you something?", "Wait a second, I'm here now.",
     "I have 2 kids aged 5 and 7.", "We love hiking together.", ""],
)
def test_resolve_dates_false_positives(text):
    assert resolve_dates(text, REF) == []


def test_resolve_dates_without_ref_keeps_only_absolute():
    assert resolve_dates("I went there yesterday and on 7 May 2023.", None) == ["2023-05-07"]
    assert resolve_dates("last month", None) == []
    assert resolve_dates("Back in 2019-03-04 it rained.", None) == ["2019-03-04"]


def test_resolve_dates_zoned_ref_uses_wall_clock():
    ref = datetime(2023, 5, 8, 0, 30, tzinfo=timezone(timedelta(hours=9)))
    assert resolve_dates("yesterday", ref) == ["2023-05-07"]


@pytest.mark.parametrize("text, expected", [
    ("李雷下个月要去成都看姐姐王丽。", ["2024-04"]),
    ("李雷昨天买了一辆自行车。", ["2024-03-03"]),
    ("Nora fängt nächsten Montag bei Siemens in München an.", ["2024-03-11"]),  # said on a Monday
    ("Nora war gestern in Köln.", ["2024-03-03"]),
    ("Nora war letzte Woche in Köln.", ["2024-02-26"]),
    ("Nora ist 2019 nach Berlin gezogen.", ["2019"]),
    ("李雷2020年5月搬到了上海。", ["2020-05"]),
    # a weekday of a named week counts from that week's Monday (2024-03-04 is a Monday)
    ("李雷下周三要去看牙医。", ["2024-03-13"]),
    ("李雷上星期五去了北京。", ["2024-03-01"]),
    ("李雷这周日休息。", ["2024-03-10"]),
    ("李雷下个月搬家，下礼拜一先去看房。", ["2024-04", "2024-03-11"]),
])
def test_chinese_and_german_relative_dates_resolve_against_the_turn(text, expected):
    ref = datetime(2024, 3, 4, 9, 0)  # a Monday
    assert resolve_dates(text, ref) == expected


def test_a_chinese_weekday_of_next_week_said_on_a_friday():
    # dateparser alone read "下周三" as "in a week" (2024-05-17) and dropped the weekday
    assert resolve_dates("我下周三要去看牙医。", datetime(2024, 5, 10, 20, 0)) == ["2024-05-15"]


def test_chinese_and_german_relative_dates_need_a_reference():
    assert resolve_dates("李雷下个月要去成都。", None) == []
    assert resolve_dates("李雷下周三要去看牙医。", None) == []
    assert resolve_dates("Nora ist 2019 nach Berlin gezogen.", None) == ["2019"]
