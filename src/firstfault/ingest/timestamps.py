"""Timestamps in the formats training logs carry, parsed without strptime (it is too slow).

Python logging / ISO 8601 / DeepSpeed (`2026-12-02 16:46:31,644`, `2026-12-02T16:46:31.644Z`),
torchelastic (`2026-12-02_16:48:32`), glog (`E1016 03:31:38.928000`), syslog
(`Dec  2 16:46:31`), `dmesg -T` (`[Wed Dec  2 16:46:31 2026]`), vLLM (`ERROR 08-26 17:03:35`), a
compact date (`20260423-12:27:13.225`). Formats without a year take the
reference year (the first full date seen in the input, else the current year). Naive times are
read as if they were UTC: what matters is ordering across files written on the same cluster. A
time whose text carried a zone (`Z`, `+02:00`) comes back as a `ZonedTime`, so reports print
`Z` only for those and print naive times as the log wrote them.
"""
from __future__ import annotations

import calendar
import re
import time
from functools import lru_cache

MONTHS = {name: index for index, name in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), start=1)}

_TIMESTAMP = re.compile(
    r"(?P<Y>(?:19|20)\d\d)-(?P<m>[01]\d)-(?P<d>[0-3]\d)[T _](?P<H>[0-2]\d):(?P<M>[0-5]\d):(?P<S>[0-6]\d)"
    r"(?:[.,](?P<frac>\d{1,9}))?(?P<tz>Z|[+-][01]\d:?[0-5]\d)?"
    r"|\b[IWEF](?P<gm>[01]\d)(?P<gd>[0-3]\d) (?P<gH>[0-2]\d):(?P<gM>[0-5]\d):(?P<gS>[0-6]\d)\.(?P<gfrac>\d{1,9})"
    r"|\b(?P<mon>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) {1,2}(?P<sd>[0-3]?\d) "
    r"(?P<sH>[0-2]\d):(?P<sM>[0-5]\d):(?P<sS>[0-6]\d)(?:\.(?P<sfrac>\d{1,9}))?(?: (?P<sY>(?:19|20)\d\d))?"
    # vLLM's logger: the level, then month-day and time (`ERROR 08-26 17:03:35`)
    r"|\b(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<vm>[01]\d)-(?P<vd>[0-3]\d) (?P<vH>[0-2]\d):(?P<vM>[0-5]\d):(?P<vS>[0-6]\d)(?:\.(?P<vfrac>\d{1,9}))?\b"
    # a compact date (`20260423-12:27:13.225`)
    r"|\b(?P<cY>(?:19|20)\d\d)(?P<cm>[01]\d)(?P<cd>[0-3]\d)-(?P<cH>[0-2]\d):(?P<cM>[0-5]\d):(?P<cS>[0-6]\d)(?:[.,](?P<cfrac>\d{1,9}))?"
)
# Timestamps are looked for near the start of a line only: later ones are message content.
SEARCH_WINDOW = 120


class ZonedTime(float):
    """POSIX seconds of a time whose zone the log stated; plain floats are zone-less (naive)."""

    __slots__ = ()


class Clock:
    """Parses timestamps; remembers the reference year for formats that omit it."""

    def __init__(self) -> None:
        self.reference_year: int | None = None
        # what a scan of part of a file tells the scan of the whole (match/split.py)
        self.first_full_year: int | None = None  # the year of the first full date parsed
        self.year_less = 0  # times parsed with the reference year (their text had none)

    def parse(self, text: str) -> float | None:
        groups = _TIMESTAMP.search(text, 0, SEARCH_WINDOW)  # read by group name, as a dict would be
        if not groups:
            return None
        if groups["Y"]:
            return self._full_date(groups)
        if groups["gm"]:
            return self._epoch(self._year(), int(groups["gm"]), int(groups["gd"]), groups["gH"],
                               groups["gM"], groups["gS"], groups["gfrac"])
        if groups["vm"]:
            return self._epoch(self._year(), int(groups["vm"]), int(groups["vd"]), groups["vH"],
                               groups["vM"], groups["vS"], groups["vfrac"])
        if groups["cY"]:
            return self._full_date({"Y": groups["cY"], "m": groups["cm"], "d": groups["cd"], "H": groups["cH"],
                                    "M": groups["cM"], "S": groups["cS"], "frac": groups["cfrac"], "tz": None})
        year = int(groups["sY"]) if groups["sY"] else self._year()
        return self._epoch(year, MONTHS[groups["mon"]], int(groups["sd"]), groups["sH"],
                           groups["sM"], groups["sS"], groups["sfrac"])

    def _year(self) -> int:
        self.year_less += 1
        return self.reference_year or time.gmtime().tm_year

    def _full_date(self, groups: dict) -> float | None:
        year = int(groups["Y"])
        if self.first_full_year is None:
            self.first_full_year = year
        if self.reference_year is None:
            self.reference_year = year
        seconds = self._epoch(year, int(groups["m"]), int(groups["d"]), groups["H"], groups["M"],
                              groups["S"], groups["frac"])
        if seconds is None or not groups["tz"]:
            return seconds
        if groups["tz"] != "Z":
            sign = 1 if groups["tz"][0] == "+" else -1
            digits = groups["tz"][1:].replace(":", "")
            seconds -= sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
        return ZonedTime(seconds)

    @staticmethod
    def _epoch(year, month, day, hour, minute, second, fraction) -> float | None:
        if not (1 <= month <= 12 and 1 <= day <= 31):
            return None
        try:
            base = _day_start(year, month, day) + int(hour) * 3600 + int(minute) * 60 + int(second)
        except (ValueError, OverflowError):
            return None
        return base + (float("0." + fraction) if fraction else 0.0)


@lru_cache(maxsize=4096)
def _day_start(year: int, month: int, day: int) -> int:
    """POSIX seconds at the start of a day (calendar.timegm is linear in the time of day, and a
    log repeats its days millions of times)."""
    return calendar.timegm((year, month, day, 0, 0, 0, 0, 0, 0))
