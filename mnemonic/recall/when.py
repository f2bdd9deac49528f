"""When does a question point to? "two weeks ago", "yesterday", "last Saturday".

"What gardening did I do two weeks ago?" names its answer by time as much as by words, and
a memory daemon is asked that way all day ("the bug I fixed yesterday", "what we decided
last week", "the call on March 3rd"). This reads such a phrase as a window of time counted
back from when the question is asked; recall then lifts the candidates inside it
(``recall.when_weight``, explained as the ``when`` contribution). Nothing outside is
pushed down, so a phrase that points to where no memory is changes no ranking but one:
the words of a count back ("four weeks ago") are not searched (``search_terms``).

Phrases read: "yesterday"; "two weeks ago", "5 days ago", "a couple of months ago"; "last
Friday", "last weekend", "last week / month / year" (the calendar one before this);
"in the last month", "the past three weeks", "last 3 days" (from then up to now); dates
and months: "on October 13, 2023", "1 February 2023", "the 15th of March", "in December
2023", "in June" (without a year, the latest such day or month up to now), "in 2022"
(``_dated`` says when a number beside a month is its day). Only phrases that point to the
past are read (a date after now is not): "today", "tonight" and "this week" mostly
describe the asker's present ("a movie for tonight?"), not where the answer was stored.
Windows are generous, as people are with time: "two weeks ago" is 14 days back, give or
take a quarter of that; "last Friday" is that whole day, widened by half a day each side,
since memories carry UTC times and the asker's day is local.

English words only, read in one pass over at most ``SCANNED_CHARS`` characters: linear,
nothing to backtrack. The first phrase found wins.
"""

from __future__ import annotations

import re
from calendar import isleap, monthrange
from dataclasses import dataclass
from datetime import datetime, timedelta

from mnemonic.timeutil import ensure_utc

SCANNED_CHARS = 1000
_WORD = re.compile(r"[^\W_]+")

_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "few": 3,  # "a few days ago"
    "couple": 2,  # "a couple of weeks ago" (the "of" is skipped)
}
_UNIT_DAYS = {"day": 1.0, "week": 7.0, "month": 30.4, "year": 365.25}
_MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_MONTH_LEADS = frozenset({"in", "during", "early", "mid", "late"})  # before a bare month
_PAUSE = re.compile(r"[,;:.!?]")  # between two words: a date does not run across it
# "in 2000 words" counts something; it is no year
_COUNTED = frozenset(
    {"words", "characters", "chars", "tokens", "lines", "pages", "bytes", "pixels", "steps"}
    | {"people", "users", "items", "rows", "calories", "dollars", "euros", "miles", "meters"}
)
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_SPREAD = 0.25  # "N units ago": the window is N units, give or take this share of it
_DAY_SLACK = timedelta(hours=12)  # around a named day (UTC times, local days)
_MAX_AGO = 1000  # "9999 years ago" points to no memory; past this the phrase is ignored


@dataclass(frozen=True, slots=True)
class TimeWindow:
    start: datetime
    end: datetime
    # the words of a count back from the asking moment ("four weeks ago"); see
    # ``search_terms``
    counted: frozenset[str] = frozenset()

    def search_terms(self, terms: list[str]) -> list[str]:
        """``terms`` without the words of a count back ("four", "weeks", "ago"), unless
        nothing else is left.

        A memory told at another moment counts back to the same day with another number,
        so as search words such a phrase finds other times ("I repotted it three weeks
        ago"), never this one: the window already says when. The query's word evidence is
        then the share of the remaining words a hit holds, as for the question without
        the phrase. Measured (BENCHMARKS, session 21): dropping every time word instead
        lost LoCoMo answers that repeat the question's own "last weekend" or "last year",
        as people retell them.
        """
        kept = [term for term in terms if term not in self.counted]
        return kept or terms

    def closeness(self, timestamp: float) -> float:
        """1 inside the window, falling linearly to 0 one window-width outside it."""
        start, end = self.start.timestamp(), self.end.timestamp()
        width = max(end - start, 1.0)
        if start <= timestamp <= end:
            return 1.0
        gap = start - timestamp if timestamp < start else timestamp - end
        return max(0.0, 1.0 - gap / width)


def time_window(question: str, asked_at: datetime) -> TimeWindow | None:
    """The window of time ``question`` points to, counted back from ``asked_at``; None
    when it names none (or one before the calendar begins: "900 years ago" in year 500)."""
    try:
        return _first_window(question, ensure_utc(asked_at))
    except (OverflowError, ValueError):
        return None


def _first_window(question: str, now: datetime) -> TimeWindow | None:
    text = question[:SCANNED_CHARS].casefold()
    spans = [(m.start(), m.end()) for m in _WORD.finditer(text)]
    words = [text[a:b] for a, b in spans]
    # after which words a comma or a stop stands: "In May, 10 of us" is not May 10th
    breaks = {i for i in range(len(spans) - 1) if _PAUSE.search(text, spans[i][1], spans[i + 1][0])}
    for i, word in enumerate(words):
        if word == "yesterday":
            day = _midnight(now) - timedelta(days=1)
            return _day(day, 1)
        if word == "ago" and i >= 2:
            found = _ago(words, i, now)
            if found is not None:
                return found
        if word in _MONTHS:
            found = _dated(words, breaks, i, now)
            if found is not None:
                return found
        if word in ("in", "during") and i + 1 < len(words):
            found = _in_year(words, i + 1, now)
            if found is not None:
                return found
        if word in ("last", "past") and i + 1 < len(words):
            found = _trailing(words, i, now)
            if found is None and word == "last":
                found = _last(words[i + 1], now)
            if found is not None:
                return found
    return None


def _trailing(words: list[str], i: int, now: datetime) -> TimeWindow | None:
    """``the last month``, ``the past three weeks``, ``last 3 days``, ``past few months``:
    from that far back up to now. Without "the" or a number, "last month" is the
    calendar month before this one (``_last``)."""
    at = i + 1
    count = _number(words[at])
    if count is not None:
        at += 1
    if at < len(words) and words[at] == "of":  # "the past couple of weeks"
        at += 1
    if at >= len(words):
        return None
    unit = words[at].removesuffix("s")
    if unit not in _UNIT_DAYS:
        return None
    if count is None and words[i] == "last" and (i == 0 or words[i - 1] != "the"):
        return None  # "last month": the calendar month (``_last``)
    count = count or 1
    if not 0 < count <= _MAX_AGO:
        return None
    back = timedelta(days=count * _UNIT_DAYS[unit])
    return TimeWindow(now - back - _DAY_SLACK, now)


def _ago(words: list[str], i: int, now: datetime) -> TimeWindow | None:
    """``<number> <unit>(s) ago``, the number a digit string or a word."""
    unit = words[i - 1].removesuffix("s")
    if unit not in _UNIT_DAYS:
        return None
    number_at = i - 2
    if words[number_at] == "of" and number_at >= 1:  # "a couple of weeks ago"
        number_at -= 1
    count = _number(words[number_at])
    if count is None or not 0 < count <= _MAX_AGO:
        return None
    back = timedelta(days=count * _UNIT_DAYS[unit])
    slack = max(back * _SPREAD, timedelta(days=1))
    # a word the question also uses elsewhere stays searched ("how many days did the
    # flu last that started three days ago")
    counted = frozenset(words[number_at : i + 1]) - frozenset(words[:number_at] + words[i + 1 :])
    return TimeWindow(now - back - slack, now - back + slack, counted)


def _last(what: str, now: datetime) -> TimeWindow | None:
    """``last <weekday>``, ``last weekend``, ``last week``, ``last month``, ``last year``."""
    today = _midnight(now)
    if what in _WEEKDAYS:
        back = (today.weekday() - _WEEKDAYS.index(what) - 1) % 7 + 1  # 1..7 days before
        return _day(today - timedelta(days=back), 1)
    if what == "weekend":
        back = (today.weekday() - 5 - 1) % 7 + 1  # the last Saturday before today
        return _day(today - timedelta(days=back), 2)
    if what == "week":  # the calendar week before this one (Monday to Sunday)
        monday = today - timedelta(days=today.weekday() + 7)
        return _day(monday, 7)
    if what == "month":
        first = today.replace(day=1)
        previous = (first - timedelta(days=1)).replace(day=1)
        return _day(previous, (first - previous).days)
    if what == "year":
        previous = today.replace(year=today.year - 1, month=1, day=1)
        return _day(previous, (today.replace(month=1, day=1) - previous).days)
    return None


def _dated(words: list[str], breaks: set[int], i: int, now: datetime) -> TimeWindow | None:
    """A calendar date or month around the month name at ``i``: "March 15th", "15th
    March", "the 15th of March", "October 13, 2023", "in December 2023", "in June".

    A plain number next to a month is often a count ("Why step 2 may fail", "in March 3
    times"), so it is a day only with an ordinal suffix, a year after it, "on" before the
    month, or nothing after it; one after a comma is no day at all ("In May, 10 of us").
    A month name alone counts only after "in", "during", "early", "mid" or "late" ("may"
    and "march" are verbs too). Without a year it is the latest such day or month up to
    ``now``; a date after ``now`` points to no memory and is not read.
    """
    month = _MONTHS.index(words[i]) + 1
    size = len(words)
    before = words[i - 1] if i >= 1 and i - 1 not in breaks else ""
    day: int | None = None
    year_at = i + 1  # where a year would stand
    after = words[i + 1] if i + 1 < size and i not in breaks else ""
    if (number := _day_of_month(after)) is not None:
        followed = i + 2 < size and _year(words[i + 2]) is not None
        if _ordinal(after) or followed or before == "on" or i + 2 == size:
            day, year_at = number, i + 2
    year_next = i + 1 < size and _year(words[i + 1]) is not None
    if day is None and (_ordinal(before) or year_next):
        day = _day_of_month(before)  # "15th March", "15 March 2023"
    if day is None and before == "of" and i >= 2 and _ordinal(words[i - 2]):
        day = _day_of_month(words[i - 2])  # "the 15th of March"
    year = _year(words[year_at]) if year_at < size else None
    if day is None and year is None and before not in _MONTH_LEADS:
        return None
    if year is None:  # the latest such day or month up to now
        year = now.year if (month, day or 1) <= (now.month, now.day) else now.year - 1
        while (month, day) == (2, 29) and not isleap(year):
            year -= 1
    elif (year, month, day or 1) > (now.year, now.month, now.day):
        return None
    if day is not None:
        if day > monthrange(year, month)[1]:  # "February 30th"
            return None
        return _day(datetime(year, month, day, tzinfo=now.tzinfo), 1)
    return _day(datetime(year, month, 1, tzinfo=now.tzinfo), monthrange(year, month)[1])


def _in_year(words: list[str], at: int, now: datetime) -> TimeWindow | None:
    """``in 2022``, ``during 2021``: that calendar year, up to ``now``'s; not a count of
    something ("in 2000 words")."""
    year = _year(words[at])
    if year is None or year > now.year:
        return None
    if at + 1 < len(words) and words[at + 1] in _COUNTED:
        return None
    return _day(datetime(year, 1, 1, tzinfo=now.tzinfo), 366 if isleap(year) else 365)


def _day_of_month(word: str) -> int | None:
    """1..31 from "15", "15th", "1st"; None otherwise."""
    digits = word.removesuffix("st").removesuffix("nd").removesuffix("rd").removesuffix("th")
    if not (digits.isascii() and digits.isdigit() and len(digits) <= 2):
        return None
    value = int(digits)
    return value if 1 <= value <= 31 else None


def _ordinal(word: str) -> bool:
    """ "15th", "1st", "22nd", "3rd": a day, where a plain "15" may be a count."""
    return word[-2:] in ("st", "nd", "rd", "th") and word[:-2].isascii() and word[:-2].isdigit()


def _year(word: str) -> int | None:
    """A four-digit year from 1900 to 2199; None otherwise."""
    if word.isascii() and word.isdigit() and len(word) == 4 and 1900 <= int(word) < 2200:
        return int(word)
    return None


def _number(word: str) -> int | None:
    if word.isascii() and word.isdigit() and len(word) <= 4:
        return int(word)
    return _NUMBERS.get(word)


def _midnight(now: datetime) -> datetime:
    return now.replace(hour=0, minute=0, second=0, microsecond=0)


def _day(start: datetime, days: int) -> TimeWindow:
    """``days`` whole days from ``start``, widened by half a day each side."""
    return TimeWindow(start - _DAY_SLACK, start + timedelta(days=days) + _DAY_SLACK)
