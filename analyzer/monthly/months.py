"""Calendar months of a review: parsing ``--month``, the last complete month, the trend window."""

from __future__ import annotations

import calendar
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from analyzer.core.errors import InputError


@dataclass(frozen=True, order=True)
class Month:
    """One calendar month (UTC days)."""

    year: int
    month: int

    @classmethod
    def parse(cls, text: str, field: str = "--month") -> Month:
        """``2026-10`` → Month(2026, 10); anything else → one-line InputError naming ``field``."""
        parts = text.strip().split("-")
        if len(parts) == 2 and all(p.isdigit() for p in parts) and len(parts[0]) == 4:
            year, month = int(parts[0]), int(parts[1])
            if 1 <= month <= 12 and year >= 1:
                return cls(year, month)
        raise InputError(f"{field}: {text!r} is not a month; write it as YYYY-MM, e.g. 2026-10")

    @classmethod
    def of(cls, day: date) -> Month:
        return cls(day.year, day.month)

    @property
    def first(self) -> date:
        return date(self.year, self.month, 1)

    @property
    def last(self) -> date:
        return date(self.year, self.month, self.days)

    @property
    def days(self) -> int:
        return calendar.monthrange(self.year, self.month)[1]

    @property
    def hours(self) -> int:
        return 24 * self.days

    def shift(self, months: int) -> Month:
        index = self.year * 12 + (self.month - 1) + months
        return Month(index // 12, index % 12 + 1)

    def __str__(self) -> str:
        return f"{self.year:04d}-{self.month:02d}"


def last_complete_month(days: Sequence[date]) -> Month:
    """The latest month whose last day is in the history (``days`` non-empty, any order).

    "Complete" means the history reaches the month's last day; days missing inside the month are
    reported by the review as coverage, not refused here.
    """
    last = max(days)
    month = Month.of(last)
    if last != month.last:
        month = month.shift(-1)
    if month.last < min(days):
        raise InputError(
            f"HISTORY_DIR: the history holds {min(days)} to {last}, no complete month; "
            f"pass --month {Month.of(last)} to review the month so far"
        )
    return month


def trend_months(month: Month, count: int) -> list[Month]:
    """The ``count`` months ending with ``month``, oldest first."""
    return [month.shift(k - count + 1) for k in range(count)]
