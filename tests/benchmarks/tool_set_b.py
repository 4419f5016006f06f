"""A second tool-use set for `bench_capability.py --set b`: ten other tools, written after tool selection
was built and measured on the first set, to check it (and the model) on tools they were never tried on.

Several tools look alike on purpose (a tip and a sales tax, days between two dates and a date some days
on, counting words and reversing text), as tools of one real toolkit often do. The data are fixed
tables, so the answers are known. Requests: `data/tool_capability_b.jsonl`.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from agentkit import tool

DATA_B = Path(__file__).with_name("data") / "tool_capability_b.jsonl"

LOCAL_TIME = {"tokyo": "14:05", "sydney": "16:05", "london": "05:05", "new york": "00:05", "paris": "06:05"}
DISTANCE_KM = {frozenset({"london", "paris"}): 344, frozenset({"madrid", "rome"}): 1365,
               frozenset({"berlin", "vienna"}): 524}
SHARE_PRICE = {"AAPL": 189.5, "MSFT": 415.2, "NVDA": 128.4}
WORDS = {("water", "spanish"): "agua", ("cat", "french"): "chat", ("house", "german"): "Haus",
         ("water", "french"): "eau"}
LANGUAGES = {"es": "spanish", "fr": "french", "de": "german"}


@tool
def local_time(city: str) -> str:
    """The current local time in a city.

    Args:
        city: the city name, e.g. "London"
    """
    found = LOCAL_TIME.get(city.strip().lower())
    if found is None:
        raise ValueError(f"no clock for {city!r}; known: {', '.join(c.title() for c in LOCAL_TIME)}")
    return f"{city.strip().title()}: {found}"


@tool
def city_distance(from_city: str, to_city: str) -> str:
    """The distance by air between two cities, in kilometres.

    Args:
        from_city: the first city
        to_city: the second city
    """
    found = DISTANCE_KM.get(frozenset({from_city.strip().lower(), to_city.strip().lower()}))
    if found is None:
        raise ValueError(f"no distance known between {from_city!r} and {to_city!r}")
    return f"{from_city.strip().title()} to {to_city.strip().title()}: {found} km"


@tool
def tip_amount(bill: float, percent: float) -> str:
    """The tip to leave on a restaurant bill.

    Args:
        bill: the amount of the bill
        percent: the tip in percent, e.g. 15
    """
    return f"tip: {round(bill * percent / 100, 2)}"


@tool
def sales_tax(price: float, rate: float) -> str:
    """The sales tax due on a price.

    Args:
        price: the price before tax
        rate: the tax rate in percent, e.g. 8
    """
    return f"tax: {round(price * rate / 100, 2)}"


def _date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not a date as YYYY-MM-DD") from None


@tool
def days_between(start: str, end: str) -> str:
    """The number of days from one date to another.

    Args:
        start: the first date, YYYY-MM-DD
        end: the second date, YYYY-MM-DD
    """
    return f"{(_date(end) - _date(start)).days} days"


@tool
def add_days(date: str, days: int) -> str:
    """The date a number of days after a given date.

    Args:
        date: the starting date, YYYY-MM-DD
        days: how many days later
    """
    return (_date(date) + dt.timedelta(days=days)).isoformat()


@tool
def word_count(text: str) -> str:
    """Count the words in a text.

    Args:
        text: the text
    """
    return str(len(text.split()))


@tool
def reverse_text(text: str) -> str:
    """Reverse the characters of a text.

    Args:
        text: the text to reverse
    """
    return text[::-1]


@tool
def stock_price(ticker: str) -> str:
    """The latest share price of a company's stock.

    Args:
        ticker: the stock's ticker symbol, e.g. "AAPL"
    """
    found = SHARE_PRICE.get(ticker.strip().upper())
    if found is None:
        raise ValueError(f"unknown ticker {ticker!r}; known: {', '.join(SHARE_PRICE)}")
    return f"{ticker.strip().upper()}: {found} USD"


@tool
def translate_word(word: str, language: str) -> str:
    """Translate an English word into another language.

    Args:
        word: the English word
        language: the language to translate into, e.g. "Spanish"
    """
    lang = language.strip().lower()
    found = WORDS.get((word.strip().lower(), LANGUAGES.get(lang, lang)))
    if found is None:
        raise ValueError(f"no translation of {word!r} into {language!r}")
    return found


TOOLS_B = [local_time, city_distance, tip_amount, sales_tax, days_between, add_days, word_count, reverse_text,
           stock_price, translate_word]
