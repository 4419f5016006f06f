"""Set D for `bench_capability.py --set d`: the dev counterpart of set C, multi-step requests over twelve more
tools no training used.

Set C is the frozen test set; set D is built the same way and is the one to tune on and decide with. Its tools
are lookups in fictional, fixed tables from domains that neither set C nor the tool LoRA's generator
(`agentkit.training.synthetic`) has: a seed bank (`seed_lot`, `germination_test`, `sowing_rate`), a ski resort
(`ski_lift`, `piste_report`, `ski_wax`), a wine cellar (`wine_barrel`, `barrel_tasting`, `bottling_run`) and an
orchestra's loaned instruments (`loaned_instrument`, `instrument_card`, `instrument_maker`). The built-in
`calculator` is offered beside them. Several results name an id that another tool takes, and three tools
take a number that another one reports (a germination rate, a snow temperature, the litres left in a barrel),
so requests can need a chain of calls that carries values as well as ids.
Requests: `data/tool_capability_d.jsonl`, in set C's format (`needs` on a dependent call). Kinds:

- chain: a lookup whose result gives the argument of a second tool (a lift's piste, then its report; a
  piste's snow temperature, then the wax for it);
- compute: a lookup, then the calculator on its values;
- chain3: three dependent steps or more (species, seed lot, germination test and the seeds to sow; wine,
  barrel and its bottling; musician, instrument and its maker);
- parallel: two independent lookups, then their values compared or combined (in words or with the calculator).

Scoring is set C's (`tool_set_c.right_call_c` and `same_value`, imported): every expected call was made with
arguments that select the same record or value, no call went to another tool, and each dependent call came
after the calls it needs. Names and ids are read as set C's tools read them (`tool_set_c.key`), so what a tool
accepts is what the scorer accepts. The right answer is set A's check (`bench_capability.right_answer`).

    from tool_set_d import DATA_D, TOOLS_D, right_call_c
"""

from __future__ import annotations

import math
from pathlib import Path

from tool_set_c import _by_id, _code, _find, _num, key, right_call_c, same_value

from agentkit import tool
from agentkit.tools.builtin import calculator

__all__ = ["DATA_D", "KINDS_D", "TOOLS_D", "right_call_c", "same_value"]

DATA_D = Path(__file__).with_name("data") / "tool_capability_d.jsonl"
KINDS_D = ("chain", "compute", "chain3", "parallel")

# species -> seed lot
SPECIES = {"alpine aster": "SB-4471", "marsh gentian": "SB-2093", "field scabious": "SB-5318",
           "wild thyme": "SB-0786", "pasqueflower": "SB-3642", "sea kale": "SB-1257"}
# lot -> (species, where collected, year, seeds in store, grams per 1000 seeds)
LOTS = {
    "SB-4471": ("Alpine Aster", "Col de Varne", 2019, 12_400, 0.9),
    "SB-2093": ("Marsh Gentian", "Hollow Fen", 2021, 3_150, 0.04),
    "SB-5318": ("Field Scabious", "Parrow Down", 2020, 8_600, 4.2),
    "SB-0786": ("Wild Thyme", "Kestle Cliffs", 2022, 21_000, 0.2),
    "SB-3642": ("Pasqueflower", "Barrow Hill", 2018, 1_850, 2.6),
    "SB-1257": ("Sea Kale", "Shingle Spit", 2023, 640, 88),
}
# lot -> (date of the last germination test, % germinated, days to the first shoot)
GERMINATION = {"SB-4471": ("2025-02-11", 72, 9), "SB-2093": ("2024-11-04", 38, 26),
               "SB-5318": ("2025-01-20", 85, 7), "SB-0786": ("2025-03-03", 64, 12),
               "SB-3642": ("2024-12-09", 55, 18), "SB-1257": ("2025-02-25", 90, 14)}
# lift -> (kind, open today, top station altitude m, ride minutes, pistes from the top)
LIFTS = {
    "edelweiss express": ("gondola", True, 2460, 9, ("PS-37", "PS-41")),
    "marmot six": ("six-seat chairlift", True, 2115, 6, ("PS-12",)),
    "hornli quad": ("four-seat chairlift", False, 2290, 7, ("PS-58",)),
    "bergkristall": ("cable car", True, 2980, 11, ("PS-64", "PS-23")),
    "riedboden drag": ("drag lift", True, 1820, 4, ("PS-09",)),
}
# piste -> (name, grade, length m, snow depth cm, snow temperature in Celsius)
PISTES = {"PS-37": ("Adlerabfahrt", "red", 3400, 145, -8), "PS-41": ("Gamsweg", "blue", 5200, 120, -2.5),
          "PS-12": ("Murmelpiste", "blue", 2100, 95, -4), "PS-58": ("Hornli Schuss", "black", 1650, 110, -10),
          "PS-64": ("Gletscherblick", "red", 4800, 210, -14), "PS-23": ("Kristallrinne", "black", 1900, 180, -11.5),
          "PS-09": ("Dorfwiese", "blue", 900, 40, 1.5)}
# the coldest snow temperature each wax is for (Celsius), warmest band first
WAXES = ((0.0, "Wet Klister"), (-3.0, "Spring Glide"), (-7.0, "Midwinter"), (-12.0, "Cold Grip"),
         (-math.inf, "Arctic Hard"))
# wine -> barrel
WINES = {"clos marnier": "BQ-318", "les ormeaux": "BQ-452", "coteau gris": "BQ-127", "cuvee isolde": "BQ-509",
         "vieilles vignes noires": "BQ-266"}
# barrel -> (wine, vintage, grape, litres left, alcohol %, months in oak, tasting note)
BARRELS = {
    "BQ-318": ("Clos Marnier", 2021, "Syrah", 212.5, 13.5, 18, "blackberry, cracked pepper, firm tannins"),
    "BQ-452": ("Les Ormeaux", 2022, "Chardonnay", 198, 12.5, 10, "ripe pear, hazelnut, a buttery finish"),
    "BQ-127": ("Coteau Gris", 2020, "Pinot Gris", 150, 13, 14, "quince, smoke, a round finish"),
    "BQ-509": ("Cuvee Isolde", 2019, "Grenache", 225, 14.5, 24, "dried fig, clove, a warm finish"),
    "BQ-266": ("Vieilles Vignes Noires", 2021, "Pinot Noir", 187.5, 12.5, 16, "red cherry, forest floor, silky"),
}
# musician -> (section, instrument on loan, loan ends)
MUSICIANS = {"mira kovac": ("first violins", "IV-208", "2026-06-30"),
             "tobias lenz": ("cellos", "IV-531", "2025-12-31"),
             "amara osei": ("violas", "IV-144", "2027-03-31"),
             "jonas ekberg": ("double basses", "IV-377", "2026-01-15"),
             "lucia ferrante": ("second violins", "IV-062", "2025-09-30")}
# instrument -> (kind, maker, year made, valuation in EUR)
INSTRUMENTS = {"IV-208": ("violin", "Giacomo Ravelli", 1742, 1_250_000),
               "IV-531": ("cello", "Henri Vautrin", 1823, 640_000),
               "IV-144": ("viola", "Giacomo Ravelli", 1751, 890_000),
               "IV-377": ("double bass", "Anselm Hofer", 1790, 210_000),
               "IV-062": ("violin", "Marta Kozlowska", 1911, 95_000)}
# maker -> (born, died, workshop)
MAKERS = {"giacomo ravelli": (1698, 1764, "Brescia, Italy"), "henri vautrin": (1779, 1851, "Mirecourt, France"),
          "anselm hofer": (1744, 1812, "Fussen, Bavaria"), "marta kozlowska": (1868, 1939, "Krakow, Poland")}

BOTTLE_LITRES = 0.75
CASE_BOTTLES = 6


@tool(read_only=True)
def seed_lot(species: str) -> str:
    """The seed bank's lot of a species: its lot id, where and when it was collected, seeds in store and
    their weight.

    Args:
        species: the plant's common name, e.g. "Meadow Clary"
    """
    lot = _find(SPECIES, species, "species")
    name, site, year, seeds, grams = LOTS[lot]
    return (f"{name}: lot {lot}, collected at {site} in {year}; {seeds} seeds in store, "
            f"{_num(grams)} g per 1000 seeds")


@tool(read_only=True)
def germination_test(lot: str) -> str:
    """The last germination test of a seed lot: the share of seeds that germinated and how soon.

    Args:
        lot: the seed lot id, e.g. "SB-0001"
    """
    day, percent, days = _by_id(GERMINATION, lot, "seed lot")
    return f"{_code(lot)}, tested {day}: {percent}% of seeds germinated; first shoots after {days} days"


@tool(read_only=True)
def sowing_rate(germination_percent: float, seedlings: int) -> str:
    """How many seeds to sow to raise a number of seedlings, given the seeds' germination rate.

    Args:
        germination_percent: the share of seeds that germinate, in percent (e.g. 80 for 80%)
        seedlings: how many seedlings are wanted
    """
    if not 0 < germination_percent <= 100 or seedlings < 1:
        raise ValueError("germination_percent must be in (0, 100] and seedlings at least 1")
    seeds = math.ceil(seedlings * 100 / germination_percent - 1e-9)
    return f"to raise {seedlings} seedlings at {_num(germination_percent)}% germination, sow {seeds} seeds"


@tool(read_only=True)
def ski_lift(lift: str) -> str:
    """A ski lift of the resort: its kind, whether it runs today, its top station and the pistes from there.

    Args:
        lift: the lift's name, e.g. "Alpenrose Express"
    """
    kind, running, top, minutes, pistes = _find(LIFTS, lift, "lift")
    return (f"{key(lift).title()} ({kind}): {'open' if running else 'closed'} today; top station at {top} m, "
            f"{minutes} minutes up; pistes from the top: {', '.join(pistes)}")


@tool(read_only=True)
def piste_report(piste: str) -> str:
    """Today's report on a piste: its grade, length, snow depth and snow temperature.

    Args:
        piste: the piste's id, e.g. "PS-01"
    """
    name, grade, length, depth, temperature = _by_id(PISTES, piste, "piste")
    return (f"{_code(piste)} {name}: {grade}, {length} m long; snow depth {depth} cm, "
            f"snow temperature {_num(temperature)} °C")


@tool(read_only=True)
def ski_wax(snow_temperature: float) -> str:
    """The ski wax for a snow temperature, from the resort's ski shop.

    Args:
        snow_temperature: the snow temperature in degrees Celsius, e.g. -6
    """
    for i, (coldest, wax) in enumerate(WAXES):
        if snow_temperature >= coldest:
            warmer = WAXES[i - 1][0] if i else math.inf
            band = (f"below {_num(warmer)}" if coldest == -math.inf else f"above {_num(coldest)}"
                    if warmer == math.inf else f"{_num(coldest)} to {_num(warmer)}")
            return f"snow at {_num(snow_temperature)} °C: use {wax} wax (for {band} °C)"
    raise ValueError(f"not a temperature: {snow_temperature!r}")


@tool(read_only=True)
def wine_barrel(wine: str) -> str:
    """The cellar barrel a wine is ageing in.

    Args:
        wine: the wine's name, e.g. "Clos de la Roche"
    """
    barrel = _find(WINES, wine, "wine")
    return f"{BARRELS[barrel][0]} is in barrel {barrel}"


@tool(read_only=True)
def barrel_tasting(barrel: str) -> str:
    """The cellar's last tasting of a barrel: vintage, grape, litres left, alcohol, months in oak and notes.

    Args:
        barrel: the barrel id, e.g. "BQ-001"
    """
    wine, vintage, grape, litres, alcohol, months, note = _by_id(BARRELS, barrel, "barrel")
    return (f"{_code(barrel)} {wine} {vintage} ({grape}): {_num(litres)} litres left, {_num(alcohol)}% alcohol, "
            f"{months} months in oak; notes: {note}")


@tool(read_only=True)
def bottling_run(litres: float) -> str:
    """How many 75 cl bottles, and full cases of six, a volume of wine fills.

    Args:
        litres: the volume of wine in litres
    """
    if litres <= 0:
        raise ValueError("litres must be positive")
    bottles = math.floor(litres / BOTTLE_LITRES + 1e-9)
    cases, loose = divmod(bottles, CASE_BOTTLES)
    return (f"{_num(litres)} litres fill {bottles} bottles of 75 cl: {cases} cases of six and {loose} loose "
            f"bottle{'' if loose == 1 else 's'}")


@tool(read_only=True)
def loaned_instrument(musician: str) -> str:
    """The instrument the orchestra has lent a musician: its inventory number and when the loan ends.

    Args:
        musician: the musician's full name
    """
    section, instrument, until = _find(MUSICIANS, musician, "musician")
    return f"{key(musician).title()} ({section}) has instrument {instrument} on loan until {until}"


@tool(read_only=True)
def instrument_card(instrument: str) -> str:
    """The orchestra's card for an instrument: what it is, its maker, the year it was made and its valuation.

    Args:
        instrument: the inventory number, e.g. "IV-001"
    """
    kind, maker, year, value = _by_id(INSTRUMENTS, instrument, "instrument")
    return f"{_code(instrument)}: a {kind} by {maker}, made in {year}; valued at {value} EUR"


@tool(read_only=True)
def instrument_maker(maker: str) -> str:
    """An instrument maker's dates and where their workshop was.

    Args:
        maker: the maker's full name
    """
    born, died, workshop = _find(MAKERS, maker, "maker")
    return f"{key(maker).title()}: born {born}, died {died}; workshop in {workshop}"


TOOLS_D = [calculator, seed_lot, germination_test, sowing_rate, ski_lift, piste_report, ski_wax, wine_barrel,
           barrel_tasting, bottling_run, loaned_instrument, instrument_card, instrument_maker]
