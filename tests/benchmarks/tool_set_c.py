"""Set C for `bench_capability.py --set c`: multi-step requests over twelve tools no training or tuning used.

The tools are lookups in fictional, fixed tables from domains the tool LoRA's generator
(`agentkit.training.synthetic`) has no family for: a museum's catalogue (`find_artwork`,
`artwork_record`, `artist_profile`), island ferries (`ferry_route`, `ferry_sailings`), tide tables
(`tide_table`), mountain huts (`trail_info`, `hut_beds`), beehives (`apiary_hives`, `hive_report`) and lorries
under low bridges (`lorry_spec`, `bridge_clearance`). The built-in `calculator` is offered beside them.
Several results name an id or a place that another tool takes, so requests can need a chain of calls.
Requests: `data/tool_capability_c.jsonl`, in set B's format plus, on an expected call, `needs`: the
positions (in `calls`) of the earlier calls whose results it takes its arguments from. Kinds:

- chain: a lookup whose result gives the argument of a second lookup (a title's accession number, then
  the record);
- compute: a lookup, then the calculator on its values;
- chain3: three dependent steps or more (title, record, artist; island, route, sailings and the harbour's
  tides; trail, hut, then the cost of a stay);
- parallel: two independent lookups, then their values compared or combined (in words or with the calculator).

Scoring (`right_call_c`): every expected call was made, with arguments that select the same record the
tool would (`same_value`), no call went to a tool outside the expected ones, and each dependent call came
after the calls it needs. The tools are deterministic and their ids cannot be guessed from the request, so
a dependent call with the expected argument has taken it from the earlier result. The right answer is set
A's check (`bench_capability.right_answer`: one spelling of each expected value in the answer).

    from tool_set_c import DATA_C, TOOLS_C, right_call_c
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentkit import tool
from agentkit.tools.builtin import calculator, evaluate

DATA_C = Path(__file__).with_name("data") / "tool_capability_c.jsonl"
KINDS_C = ("chain", "compute", "chain3", "parallel")

# title -> accession number
ARTWORKS = {"salt marsh at dusk": "AC-1187", "girl with a blue kite": "AC-2045", "harbour lights": "AC-0932",
            "orchard in winter": "AC-3310", "glassblower": "AC-1764", "three pears on a plate": "AC-2298"}
# accession -> (title, artist, year, medium, room, insured value in EUR)
RECORDS = {
    "AC-1187": ("The Salt Marsh at Dusk", "Edith Marrow", 1891, "oil on canvas", 14, 420_000),
    "AC-2045": ("Girl with a Blue Kite", "Tomas Vrba", 1934, "tempera on board", 6, 185_000),
    "AC-0932": ("Harbour Lights", "Pieter Ooms", 1858, "oil on panel", 3, 760_000),
    "AC-3310": ("Orchard in Winter", "Ada Lindqvist", 1919, "watercolour on paper", 21, 64_000),
    "AC-1764": ("The Glassblower", "Ines Calderon", 1903, "oil on canvas", 17, 312_000),
    "AC-2298": ("Three Pears on a Plate", "Edith Marrow", 1899, "oil on canvas", 9, 98_000),
}
# artist -> (born, died, birthplace)
ARTISTS = {"edith marrow": (1858, 1932, "Norwich, England"), "tomas vrba": (1902, 1971, "Brno, Czechia"),
           "pieter ooms": (1820, 1889, "Haarlem, Netherlands"), "ada lindqvist": (1885, 1960, "Uppsala, Sweden"),
           "ines calderon": (1871, 1944, "Cadiz, Spain")}
# island -> ferry route
ROUTES = {"skerra": "FR-12", "inchmore": "FR-07", "vallay": "FR-21", "tarsay": "FR-30", "rona beg": "FR-16"}
# route -> (island, departure harbour, departure times, crossing minutes, adult fare, car fare) in EUR
SAILINGS = {
    "FR-12": ("Skerra", "Kilbrae", ("07:40", "11:15", "16:30"), 55, 14.5, 38.0),
    "FR-07": ("Inchmore", "Portmahon", ("06:55", "13:05"), 90, 21.0, 52.0),
    "FR-21": ("Vallay", "Kilbrae", ("09:20", "15:45"), 40, 9.75, 27.5),
    "FR-30": ("Tarsay", "Eastwick", ("08:10", "12:00", "17:50"), 70, 17.25, 44.0),
    "FR-16": ("Rona Beg", "Dunmore Quay", ("10:30",), 35, 8.0, 22.0),
}
# harbour -> ((time, height m) of the morning high water, of low water, of the evening high water)
TIDES = {
    "kilbrae": (("06:12", 4.75), ("12:25", 0.75), ("18:37", 4.5)),
    "portmahon": (("04:50", 4.0), ("11:02", 1.5), ("17:15", 3.75)),
    "eastwick": (("07:31", 5.5), ("13:44", 0.5), ("19:58", 5.25)),
    "dunmore quay": (("05:05", 2.75), ("11:20", 0.5), ("17:40", 3.0)),
    "scalpa pier": (("08:22", 3.25), ("14:35", 1.0), ("20:49", 3.5)),
}
# trail -> (km, metres of ascent, hours, hut at its end)
TRAILS = {"greyrigg ridge": (14.2, 980, 6, "H-07"), "corrie loop": (8.5, 540, 3.5, "H-03"),
          "falcon crag traverse": (11.9, 1210, 7, "H-11"), "lantern pass": (17.4, 760, 6.5, "H-03"),
          "blackwater gorge": (6.5, 310, 2.5, "H-05")}
# hut -> (name, beds free tonight, price per person per night, breakfast) in EUR
HUTS = {"H-07": ("Greyrigg Hut", 9, 32, 11), "H-03": ("Corrie Bothy Lodge", 4, 26, 9),
        "H-11": ("Falcon Refuge", 0, 41, 12), "H-05": ("Gorge End Hut", 15, 24, 8)}
# apiary -> hives
APIARIES = {"meadowbank": ("HV-31", "HV-32"), "old rectory": ("HV-40", "HV-41", "HV-44"), "linden row": ("HV-52",)}
# hive -> (kg of honey in the supers, frames of brood, queen seen, last inspected)
HIVES = {"HV-31": (18.5, 7, True, "2025-06-02"), "HV-32": (11.0, 5, False, "2025-06-02"),
         "HV-40": (23.5, 8, True, "2025-05-28"), "HV-41": (6.5, 3, False, "2025-05-28"),
         "HV-44": (14.0, 6, True, "2025-05-28"), "HV-52": (20.0, 9, True, "2025-06-05")}
# bridge -> (headroom m, weight limit t)
BRIDGES = {"kelso road": (4.5, 18), "tanners wharf": (3.5, 7.5), "station viaduct": (5.0, 44),
           "canal street": (3.75, 26)}
# fleet number -> (height m, gross weight t, body)
LORRIES = {"FL-208": (3.75, 26, "curtainsider"), "FL-114": (4.25, 40, "box trailer"),
           "FL-377": (3.25, 7, "dropside"), "FL-052": (3.5, 18, "refrigerated box")}

_DROPPED_WORDS = ("bridge", "apiary", "island", "harbour", "trail", "hut")


def key(text: Any) -> str:
    """A name or id as the tools look it up: case, quotes, a leading "the" and a trailing kind word
    ("Kelso Road bridge", "the Meadowbank apiary") do not matter."""
    words = re.sub(r"[\"'`.?!]", " ", str(text)).lower().split()
    if words[:1] == ["the"]:
        words = words[1:]
    while len(words) > 1 and words[-1] in _DROPPED_WORDS:
        words = words[:-1]
    return " ".join(words)


def _code(text: str) -> str:
    return text.strip().strip("'\"").upper().replace(" ", "")


def _find(table: dict[str, Any], name: str, what: str) -> Any:
    found = table.get(key(name))
    if found is None:
        raise ValueError(f"no {what} called {name!r}; known: {', '.join(k.title() for k in table)}")
    return found


def _by_id(table: dict[str, Any], code: str, what: str) -> Any:
    found = table.get(_code(code))
    if found is None:
        raise ValueError(f"no {what} {code!r}")
    return found


def _num(x: float) -> str:
    return f"{x:g}"


@tool(read_only=True)
def find_artwork(title: str) -> str:
    """Find a work in the museum's collection by its title; gives its accession number.

    Args:
        title: the title of the work, e.g. "Harbour Lights"
    """
    accession = _find(ARTWORKS, title, "work")
    return f"{RECORDS[accession][0]!r}: accession number {accession}"


@tool(read_only=True)
def artwork_record(accession: str) -> str:
    """The catalogue record of a work: artist, year, medium, gallery room and insured value.

    Args:
        accession: the work's accession number, e.g. "AC-0001"
    """
    title, artist, year, medium, room, value = _by_id(RECORDS, accession, "accession number")
    return (f"{_code(accession)} {title!r}: by {artist}, {year}, {medium}; on show in room {room}; "
            f"insured for {value} EUR")


@tool(read_only=True)
def artist_profile(artist: str) -> str:
    """An artist's dates and birthplace, from the museum's register of artists.

    Args:
        artist: the artist's full name
    """
    born, died, place = _find(ARTISTS, artist, "artist")
    return f"{artist.strip().title()}: born {born} in {place}, died {died}"


@tool(read_only=True)
def ferry_route(island: str) -> str:
    """The ferry route code serving an island.

    Args:
        island: the island's name
    """
    return f"{key(island).title()} is served by route {_find(ROUTES, island, 'island')}"


@tool(read_only=True)
def ferry_sailings(route: str) -> str:
    """Today's sailings on a ferry route: departure harbour, times, crossing time and fares.

    Args:
        route: the route code, e.g. "FR-01"
    """
    island, harbour, times, minutes, adult, car = _by_id(SAILINGS, route, "route")
    return (f"{_code(route)} {harbour} to {island}: departures {', '.join(times)}; crossing {minutes} minutes; "
            f"fares: adult {adult:.2f} EUR, car {car:.2f} EUR")


@tool(read_only=True)
def tide_table(harbour: str) -> str:
    """Today's high and low water at a harbour: times and heights in metres.

    Args:
        harbour: the harbour's name
    """
    (h1, m1), (lo, ml), (h2, m2) = _find(TIDES, harbour, "harbour")
    return (f"{key(harbour).title()}: high water {h1} ({_num(m1)} m), low water {lo} ({_num(ml)} m), "
            f"high water {h2} ({_num(m2)} m)")


@tool(read_only=True)
def trail_info(trail: str) -> str:
    """A hiking trail's length, ascent and walking time, and the mountain hut at its end.

    Args:
        trail: the trail's name
    """
    km, ascent, hours, hut = _find(TRAILS, trail, "trail")
    return f"{key(trail).title()}: {_num(km)} km, {ascent} m of ascent, about {_num(hours)} hours; ends at hut {hut}"


@tool(read_only=True)
def hut_beds(hut: str) -> str:
    """Free beds tonight at a mountain hut, and its prices per person.

    Args:
        hut: the hut's code, e.g. "H-01"
    """
    name, free, night, breakfast = _by_id(HUTS, hut, "hut")
    return f"{_code(hut)} {name}: {free} beds free tonight; {night} EUR per person per night, breakfast {breakfast} EUR"


@tool(read_only=True)
def apiary_hives(apiary: str) -> str:
    """The hives kept at an apiary, by hive id.

    Args:
        apiary: the apiary's name
    """
    return f"{key(apiary).title()} apiary: hives {', '.join(_find(APIARIES, apiary, 'apiary'))}"


@tool(read_only=True)
def hive_report(hive: str) -> str:
    """The last inspection of a beehive: honey in the supers, frames of brood, whether the queen was seen.

    Args:
        hive: the hive id, e.g. "HV-01"
    """
    honey, brood, queen, day = _by_id(HIVES, hive, "hive")
    return (f"{_code(hive)}, inspected {day}: {_num(honey)} kg of honey, {brood} frames of brood, "
            f"queen seen: {'yes' if queen else 'no'}")


@tool(read_only=True)
def bridge_clearance(bridge: str) -> str:
    """A bridge's headroom in metres and its weight limit in tonnes.

    Args:
        bridge: the bridge's name, e.g. "Mill Street bridge"
    """
    headroom, limit = _find(BRIDGES, bridge, "bridge")
    return f"{key(bridge).title()} bridge: headroom {_num(headroom)} m, weight limit {_num(limit)} t"


@tool(read_only=True)
def lorry_spec(fleet_number: str) -> str:
    """A lorry of the fleet: its height in metres, gross weight in tonnes and body type.

    Args:
        fleet_number: the lorry's fleet number, e.g. "FL-001"
    """
    height, weight, body = _by_id(LORRIES, fleet_number, "lorry")
    return f"{_code(fleet_number)}: height {_num(height)} m, gross weight {_num(weight)} t, {body}"


TOOLS_C = [calculator, find_artwork, artwork_record, artist_profile, ferry_route, ferry_sailings, tide_table,
           trail_info, hut_beds, apiary_hives, hive_report, bridge_clearance, lorry_spec]


# -- scoring ---------------------------------------------------------------------------------------
def same_value(expected: Any, got: Any, name: str) -> bool:
    """An argument is right when it selects what the expected one does: a calculator expression of the
    same value (1 %), a number within 1 %, a name or id that the tools look up to the same record."""
    if name == "expression":
        try:
            return math.isclose(float(evaluate(str(expected))), float(evaluate(str(got))), rel_tol=0.01,
                                abs_tol=1e-9)
        except Exception:
            return False
    if isinstance(expected, int | float) and not isinstance(expected, bool):
        try:
            return math.isclose(float(expected), float(got), rel_tol=0.01)
        except (TypeError, ValueError):
            return False
    if not isinstance(got, str):
        return False
    if re.fullmatch(r"[A-Z]{2}-\d+", str(expected)):  # an id: as the tools read one
        return _code(got) == expected
    return key(expected) == key(got)


def call_matches(expected: dict[str, Any], name: str, arguments: dict[str, Any]) -> bool:
    """The call has the expected tool and, for each expected argument, an equal one (`same_value`)."""
    return name == expected["name"] and all(
        k in arguments and same_value(v, arguments[k], k) for k, v in expected["arguments"].items())


def right_call_c(item: dict[str, Any], calls: Sequence[tuple[str, dict[str, Any]]]) -> bool:
    """Every expected call was made, no call went to another tool, and each call with `needs` came after the
    calls it needs (`calls` in the order they were made). Repeats of the expected tools are allowed (a
    retry after an error, a check); with no expected call, any call is wrong."""
    expected = item["calls"]
    if not expected:
        return not calls
    wanted = {c["name"] for c in expected}
    if any(name not in wanted for name, _ in calls):
        return False
    at: list[int] = []  # the position of the call that matched each expected call
    for want in expected:
        after = max((at[i] for i in want.get("needs", ())), default=-1)
        found = next((k for k, (name, args) in enumerate(calls)
                      if k > after and k not in at and call_matches(want, name, args)), None)
        if found is None:
            return False
        at.append(found)
    return True
