"""What the synthetic conversations never offer: the evaluation sets' tools, words that would mark their domains,
and the framework's own finishing tools.

The evaluation sets are `tests/benchmarks`: set A (`tool_capability.jsonl`), set B (`tool_set_b.py`), set C
(`tool_set_c.py`: multi-step requests over twelve lookup tools and the calculator; the test set), set D
(`tool_set_d.py`: the dev multi-step set, built like set C over twelve other lookup tools, to tune and decide on)
and the multi-turn chat sessions (`multiturn_sessions.jsonl`, over set C's tools). A model tuned on the
conversations is measured there on tools it was never trained on.
"""

from __future__ import annotations

import re

HELD_OUT_TOOLS: frozenset[str] = frozenset({
    # set A
    "calculator", "get_weather", "convert_currency", "get_population", "unit_convert", "count_letters",
    # set B
    "local_time", "city_distance", "tip_amount", "sales_tax", "days_between", "add_days", "word_count",
    "reverse_text", "stock_price", "translate_word",
    # set C and the multi-turn sessions (with the calculator above)
    "find_artwork", "artwork_record", "artist_profile", "ferry_route", "ferry_sailings", "tide_table",
    "trail_info", "hut_beds", "apiary_hives", "hive_report", "bridge_clearance", "lorry_spec",
    # set D, the dev multi-step set (with the calculator above)
    "seed_lot", "germination_test", "sowing_rate", "ski_lift", "piste_report", "ski_wax", "wine_barrel",
    "barrel_tasting", "bottling_run", "loaned_instrument", "instrument_card", "instrument_maker",
})
"""The evaluation sets' tool names: never offered."""

HELD_OUT_WORDS: frozenset[str] = frozenset({
    # sets A and B: arithmetic, weather, money exchange, population, units, letter/word counting, clocks and
    # time zones, distances, tips and tax, date arithmetic, reversal, share prices, translation
    "calc", "calculator", "calculate", "math", "arithmetic", "expression", "weather", "forecast", "currency",
    "exchange", "fx", "population", "convert", "conversion", "unit", "units", "count", "letters", "words",
    "clock", "time", "timezone", "distance", "tip", "tax", "days", "between", "reverse", "stock", "share",
    "ticker", "translate", "translation",
    # set C: a museum's catalogue, island ferries, tides, mountain trails and huts, beehives, lorries and bridges
    "art", "artwork", "artist", "museum", "painting", "painter", "accession", "ferry", "ferries", "sailing",
    "sailings", "crossing", "tide", "tides", "harbour", "harbor", "trail", "trails", "hut", "huts", "hike",
    "hiking", "apiary", "hive", "hives", "bee", "bees", "honey", "lorry", "lorries", "truck", "bridge",
    "bridges", "clearance", "headroom", "fleet",
    # set D: a seed bank, a ski resort, a wine cellar, an orchestra's loaned instruments
    "seed", "seeds", "germination", "germinate", "sowing", "sow", "ski", "skis", "skiing", "lift", "lifts",
    "piste", "pistes", "wax", "snow", "gondola", "chairlift", "wine", "wines", "barrel", "barrels", "cellar",
    "bottling", "vintage", "tasting", "grape", "instrument", "instruments", "loaned", "orchestra", "violin",
    "viola", "cello", "luthier", "musician",
})
"""Name parts that mark a held-out domain: no offered tool's name has one."""

FRAMEWORK_FINISHERS: frozenset[str] = frozenset({"confirm_answer", "final_result"})
"""Tools that finish the run in the framework (the SQL toolkit's `confirm_answer`, typed output's
`final_result`): never generated, so a model tuned here meets them as new tools."""


def name_words(name: str) -> set[str]:
    """The lower-cased words of a tool name, split at underscores and camelCase humps."""
    return {w.lower() for w in re.split(r"_|(?<=[a-z0-9])(?=[A-Z])", name) if w}


def held_out(name: str) -> bool:
    """Whether `name` is an evaluation set's tool, a framework finisher, or has a held-out domain's word."""
    return name in HELD_OUT_TOOLS or name in FRAMEWORK_FINISHERS or bool(name_words(name) & HELD_OUT_WORDS)
