"""Synthetic tool-use conversations for fine-tuning the embedded model's tool use.

The local model should learn the skills, not particular tools: call the right tool among several
offered, with arguments copied (and normalised) from the request; answer in plain text from a tool's
result, quoting its values; make two calls in sequence when the second needs the first's result (or the
request asks for two things); answer directly, without a call, when no offered tool fits; and, on request
(`finish=`), end with the call of an offered tool that finishes the run (`@tool(final=True)`: a
`final_answer`, a `submit`) instead of a text answer (off by default; Why: docs/decisions.md#tool-lora). The
tools come from a programmatic pool of invented families across many domains; none of them is, or is
close to, a tool of the evaluation sets (`HELD_OUT_TOOLS`), so the model is evaluated on tools it was
never trained on.

    from agentkit.training.synthetic_tools import synthetic_conversations
    for conv in synthetic_conversations(2000, seed=1):
        conv.kind, conv.tools, conv.messages   # OpenAI function specs; user, calls/results, final answer

Everything is drawn from one `random.Random(seed)`: the same (n, seed) gives the same conversations.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import re
import string
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from agentkit.messages import Message, ToolCall

# The evaluation sets' tools (tests/benchmarks: tool_capability*.jsonl): never generated, nor their domains.
HELD_OUT_TOOLS: frozenset[str] = frozenset({
    "calculator", "get_weather", "convert_currency", "get_population", "unit_convert", "count_letters",
    "local_time", "city_distance", "tip_amount", "sales_tax", "days_between", "add_days", "word_count",
    "reverse_text", "stock_price",
    "translate_word",  # the second evaluation set's tenth tool (tests/benchmarks/tool_set_b.py)
})
# Name parts that would mark a held-out domain (arithmetic, weather, money exchange, population, units,
# letter/word counting, clocks and time zones, distances, tips and tax, date arithmetic, reversal,
# share prices, translation).
HELD_OUT_WORDS: frozenset[str] = frozenset({
    "calc", "calculator", "calculate", "math", "arithmetic", "expression", "weather", "forecast", "currency",
    "exchange", "fx", "population", "convert", "conversion", "unit", "units", "count", "letters", "words",
    "clock", "time", "timezone", "distance", "tip", "tax", "days", "between", "reverse", "stock", "share",
    "ticker", "translate", "translation",
})

# Tools that finish the run. The framework's own (the SQL toolkit's `confirm_answer`, typed output's
# `final_result`) are never generated: a model tuned here meets them as new tools.
FRAMEWORK_FINISHERS: frozenset[str] = frozenset({"confirm_answer", "final_result"})
# (name, description, parameter, its description): the answer is the argument.
_ANSWER_FINISHERS: tuple[tuple[str, str, str, str], ...] = (
    ("final_answer", "Give the final answer to the user. Call it last: it ends the task.", "answer",
     "the answer, in a sentence"),
    ("submit_answer", "Submit your answer; this ends the task.", "answer", "the full answer"),
    ("finish", "Finish the task and send your reply to the user.", "reply", "what to tell the user"),
    ("respond_to_user", "Send the final response to the user (ends the conversation).", "response",
     "the response text"),
    ("complete_task", "Mark the task complete with its result; call it once, when done.", "result",
     "the result, stated for the user"),
    ("deliver_answer", "Deliver the answer to the user and end the task.", "text", "the answer text"),
    ("report_back", "Report the outcome to the user. This is the last call.", "message", "the message for the user"),
    ("done", "Call this when you are done: it gives the user your final answer.", "final_answer", "the final answer"),
)
# (name, description): the argument of the call that found the answer is given again, and that call's result
# is the answer (as SQL's confirm_answer takes the query that answered).
_ECHO_FINISHERS: tuple[tuple[str, str], ...] = (
    ("submit_final", "Submit the {param} whose result answers the request; it is run once more and ends the task."),
    ("confirm_result", "Confirm the final {param}: it is looked up once more and its result is the answer. "
                       "Ends the task."),
    ("accept_result", "Accept the {param} that gave the answer; this ends the task."),
    ("lock_in", "Lock in the final {param}; this ends the task and shows its result to the user."),
)
_RECEIPTS = ("Answer sent.", "Delivered to the user.", "Done.", "OK")

# ----------------------------------------------------------------------------------------------------------
# Value pools

_IATA = {"Denver": "DEN", "Osaka": "KIX", "Nairobi": "NBO", "Toronto": "YYZ", "Krakow": "KRK", "Austin": "AUS",
         "Bergen": "BGO", "Porto": "OPO", "Seville": "SVQ", "Lyon": "LYS", "Hamburg": "HAM", "Dublin": "DUB",
         "Melbourne": "MEL", "Auckland": "AKL", "Montreal": "YUL", "Chicago": "ORD", "Seattle": "SEA",
         "Valencia": "VLC", "Gothenburg": "GOT", "Bristol": "BRS", "Zurich": "ZRH", "Geneva": "GVA",
         "Bologna": "BLQ", "Glasgow": "GLA", "Lima": "LIM", "Bogota": "BOG", "Accra": "ACC", "Hanoi": "HAN",
         "Manila": "MNL", "Calgary": "YYC"}
_DEFINITIONS = {
    "ephemeral": ("lasting a very short time", "adjective"), "candid": ("truthful and straightforward", "adjective"),
    "meander": ("to follow a winding course", "verb"), "lucid": ("expressed clearly; easy to understand", "adjective"),
    "frugal": ("sparing with money or food", "adjective"), "cohort": ("a group of people with a shared trait", "noun"),
    "mitigate": ("to make less severe", "verb"), "ubiquitous": ("found everywhere", "adjective"),
    "quandary": ("a state of not knowing what to do", "noun"),
    "tenacious": ("holding firmly to something", "adjective"),
    "relish": ("to enjoy greatly", "verb"), "anecdote": ("a short account of a real incident", "noun"),
}
_MOON = {"new moon": "0", "waxing crescent": "24", "first quarter": "50", "waxing gibbous": "76",
         "full moon": "100", "waning gibbous": "77", "last quarter": "49", "waning crescent": "22"}
_TABLES: dict[str, dict[str, str]] = {
    "iata_of": _IATA, "definition_of": {w: d for w, (d, _) in _DEFINITIONS.items()},
    "pos_of": {w: p for w, (_, p) in _DEFINITIONS.items()}, "illumination_of": _MOON,
}
_POOLS: dict[str, tuple[str, ...]] = {k: tuple(v.split("|")) for k, v in {
    "first": "Maria|James|Aisha|Chen|Olga|Diego|Priya|Tom|Fatima|Lukas|Sofia|Kenji|Amara|Noah|Elena|Omar|Hannah|"
             "Ravi|Ingrid|Mateo|Zoe|Yusuf|Clara|Ben|Leila|Ivan|Grace|Tariq|Nina|Sam",
    "last": "Lopez|Smith|Khan|Wei|Petrova|Garcia|Patel|Brown|Haddad|Meyer|Rossi|Tanaka|Okafor|Jensen|Novak|Silva|"
            "Murphy|Iyer|Larsen|Costa|Nguyen|Demir|Fischer|Kowalski|Ali|Moreau|Evans|Sato|Duarte|Berg",
    "mail_host": "example.com|mailbox.org|acme.io|northwind.dev|fastmail.net|proton.me",
    "city": "|".join([*_IATA, "Leeds", "Antwerp", "Turin", "Cork", "Quito", "Kyoto", "Busan", "Perth", "Rotterdam"]),
    "airport_city": "|".join(_IATA), "iata": "|".join(_IATA.values()),
    "hotel": "Harbour View Inn|The Linden|Hotel Marisol|Parkside Suites|Copper Kettle Lodge|Atrium House|"
             "Hotel Nordlys|Casa Verde|The Old Mill Hotel|Skyline Residence",
    "merchant": "Greenleaf Market|CityFuel|BookNook|Urban Threads|Pixel Outlet|Corner Bakery|HomeWorks|FreshCart",
    "product": "wireless earbuds|standing desk|yoga mat|espresso machine|hiking boots|usb-c hub|office chair|"
               "water bottle|desk lamp|rain jacket|mechanical keyboard|air fryer",
    "brand": "Nordik|Auralis|Kestrel|Brightway|Lumo|Terra|Vantage|Oakline",
    "company": "Acme Components|Brightline Supply|Keystone Parts|Northwind Traders|Bluefin Logistics|"
               "Silverleaf Ltd|Orbit Metals|Harbor & Co",
    "department": "Sales|Finance|Engineering|Marketing|Legal|Support|Operations|Design",
    "job_title": "Data Analyst|Account Manager|Backend Engineer|UX Designer|Paralegal|Support Specialist|"
                 "Product Manager",
    "book_title": "The Silent Orchard|Maps of Tomorrow|A House of Salt|The Glass Cartographer|Letters from Kelso|"
                  "The Ninth Lantern|Rivers Under Stone|The Clockmaker's Daughter|Small Hours|North of Nowhere",
    "team": "Riverside Rovers|Northport United|Eastbridge Athletic|Kingsford FC|Lakeview Wanderers|Harbor City|"
            "Millbrook Town|Redcliff Rangers",
    "league": "Premier Division|Championship North|Coastal League|Metro Cup",
    "dish": "lasagne|chicken curry|pad thai|mushroom risotto|shakshuka|banana bread|falafel|ramen|paella|chili",
    "ingredient": "tomatoes|chickpeas|rice|eggs|flour|coconut milk|garlic|mushrooms|lentils|beef",
    "food": "oats|lentils|salmon|almonds|brown rice|greek yogurt|broccoli|avocado|chicken breast|tofu|cheddar",
    "artist": "The Velvet Owls|Mira Sol|Northern Static|Juno Park|Lola Vance|Ember Coast|Kodo Sound|The Quiet Foxes",
    "song": "Midnight Ferry|Paper Moons|Golden Hour Drive|Static Hearts|Lanterns|Slow River|Neon Orchard|Afterglow",
    "playlist": "Morning Run|Focus|Road Trip|Sunday Chill|Workout|Dinner Party",
    "venue": "The Roundhouse|Riverside Hall|Apollo Arena|The Blue Room|Civic Theatre|Warehouse 9",
    "town": "Ashford|Kelso|Whitby|Ludlow|Thirsk|Bude|Keswick|Rye|Hexham|Tenby",
    "region": "North East|South West|Yorkshire|Wales|Scottish Borders|East Anglia|Cumbria",
    "constellation": "Orion|Lyra|Cygnus|Cassiopeia|Perseus|Andromeda|Taurus|Scorpius",
    "rocket": "Aurora 2|Kestrel Heavy|Nova Lite|Vega Prime|Atlas Dawn",
    "meeting": "Budget review|Team standup|Client call|Design sync|Quarterly planning|Project kickoff|Dentist",
    "path": "/home/ana/report.pdf|/var/log/app.log|/data/sales_2024.csv|/srv/site/index.html|/home/li/notes.md|"
            "/etc/nginx/nginx.conf|/opt/tools/run.sh",
    "username": "ana|li|root|deploy|svc_backup|mkhan",
    "glob": "*.csv|*.log|*.py|*.md|*.json|*.pdf",
    "directory": "/home/ana/projects|/data/exports|/var/log|/srv/app|/home/li/docs",
    "file_stem": "report|summary|export|main|notes|config|backup|draft",
    "repo": "acme/web-app|acme/billing-service|orbit/mobile-client|datalab/pipeline|kite/docs-site|nova/api-gateway",
    "branch": "main|develop|release-2.4|feature/login|hotfix/payment",
    "commit_msg": "fix flaky login test|bump dependencies|add retry to uploader|refactor cache layer|update docs",
    "issue": "Cannot log in|Refund not received|App crashes on start|Wrong item delivered|Password reset email missing|"
             "Invoice shows wrong amount",
    "room": "kitchen|living room|bedroom|office|garage|hallway",
    "street": "Baker Street|Elm Avenue|Harbour Road|Mill Lane|Station Road|Oak Street|Chapel Row",
    "station": "Central Square|Riverside|Market Hall|University|Old Town|Docklands",
    "garage": "Central Car Park|Riverside Garage|Station Parking|Mall Deck|Westgate Multi-Storey",
    "cuisine": "thai|italian|lebanese|mexican|japanese|ethiopian|indian|greek",
    "restaurant": "Saffron House|Trattoria Luca|Blue Lotus|El Fogon|Kiku|The Olive Tree|Mesob|Taverna Nikos",
    "course": "Intro to Statistics|Organic Chemistry I|Modern Poetry|Data Structures|Macroeconomics|Art History",
    "domain": "brightline.io|kestrel-labs.com|orbitcafe.net|greenleaf.shop|northwind.dev|pixelpress.org",
    "hostname": "api.brightline.io|www.kestrel-labs.com|mail.orbitcafe.net|shop.greenleaf.shop|cdn.northwind.dev",
    "registrar": "NameKit|DomainDock|HostHarbor|RegiNet",
    "sms": "Running 10 minutes late|Call me when you land|Dinner at 7?|The package arrived|Meeting moved to Friday",
    "topic": "technology|health|science|business|education|space",
    "headline": "Local startup opens new lab|City council approves bike lanes|New study on sleep and memory|"
                "Museum reopens after renovation|School adds coding classes",
    "outlet": "Daily Ledger|The Courier|Metro Wire|Global Desk",
    "podcast": "Deep Focus|The Long Way Round|Data Points|Kitchen Table Talks|Night Sky Notes",
    "episode": "Starting over|The quiet hour|Inside the archive|What we got wrong|Small wins",
    "dict_word": "|".join(_DEFINITIONS),
}.items()}
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")
_NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                 "twelve")
_VIN_CHARS = "ABCDEFGHJKLMNPRSTUVWXYZ0123456789"
_VERBATIM = frozenset({"pool:issue", "pool:sms", "pool:meeting"})  # free text: passed on exactly as written


def _person(rng: random.Random) -> str:
    return f"{rng.choice(_POOLS['first'])} {rng.choice(_POOLS['last'])}"


def _email_of(name: str, rng: random.Random) -> str:
    return f"{name.lower().replace(' ', '.')}@{rng.choice(_POOLS['mail_host'])}"


def _value(spec: str, rng: random.Random, known: Mapping[str, Any]) -> tuple[Any, str]:
    """A value drawn from `spec` and how a user would write it: (canonical value, surface text).

    `known` holds the values drawn so far (arguments, then outputs), which `map:`, `nameof:`, `emailof:`
    and `path_in:` derive from."""
    kind, _, rest = spec.partition(":")
    if "<" in rest:  # "int:55:390<max_price", "num:5:480:2<max_price": capped by that value when known
        rest, cap = rest.split("<")
        if cap in known:
            low, high, *tail = rest.split(":")
            rest = ":".join([low, str(min(float(high), known[cap]) if kind == "num" else min(int(high), known[cap])),
                             *tail])
    if kind == "int":
        lo, hi = (int(x) for x in rest.split(":"))
        n = rng.randint(lo, hi)
        return n, _NUMBER_WORDS[n] if 0 < n <= 12 and rng.random() < 0.2 else str(n)
    if kind == "num":
        a, b, d = rest.split(":")
        x = round(rng.uniform(float(a), float(b)), int(d))
        return x, str(x)
    if kind in ("pick", "enum"):
        v = rng.choice(rest.split("|"))
        return v, v.replace("_", " ")
    if kind == "bool":
        yes, no = rest.split("|")
        flag = rng.random() < 0.5
        return flag, yes if flag else no
    if kind == "code":
        v = "".join(rng.choice(string.digits) if c == "#" else rng.choice(string.ascii_uppercase) if c == "@" else c
                    for c in rest)
        return v, v.lower() if rng.random() < 0.15 else v
    if kind == "pool":
        v = rng.choice(_POOLS[rest])
        return v, v.lower() if spec not in _VERBATIM and rng.random() < 0.15 else v
    if kind == "map":
        table, key = rest.split(":")
        v = _TABLES[table][str(known[key])]
        return (int(v), v) if v.isdigit() else (v, v)
    if kind == "person":
        v = _person(rng)
        return v, v.lower() if rng.random() < 0.15 else v
    if kind == "email":
        v = _email_of(_person(rng), rng)
        return v, v
    if kind == "nameof":  # the person an email address names
        v = str(known[rest]).split("@")[0].replace(".", " ").title()
        return v, v
    if kind == "emailof":
        v = _email_of(str(known[rest]), rng)
        return v, v
    if kind == "date":
        day = dt.date(2024, 1, 1) + dt.timedelta(rng.randrange(1000))
        v, r = day.isoformat(), rng.random()
        if r < 0.55:
            return v, v
        month = _MONTHS[day.month - 1]
        return v, f"{month} {day.day}, {day.year}" if r < 0.8 else f"{day.day} {month} {day.year}"
    if kind == "time":
        h, m = rng.randrange(6, 23), rng.randrange(0, 60, 5)
        v = f"{h:02d}:{m:02d}"
        return v, v if rng.random() < 0.65 else f"{(h - 1) % 12 + 1}:{m:02d} {'am' if h < 12 else 'pm'}"
    if kind == "hex":
        v = "".join(rng.choice("0123456789abcdef") for _ in range(int(rest)))
        return v, v
    if kind == "ip":
        v = ".".join(str(rng.randint(1, 254)) for _ in range(4))
        return v, v
    if kind == "vin":
        v = "".join(rng.choice(_VIN_CHARS) for _ in range(17))
        return v, v
    if kind == "path_in":  # a file in the directory argument that matches the pattern argument
        folder, pattern = rest.split(":")
        v = f"{known[folder]}/{rng.choice(_POOLS['file_stem'])}{str(known[pattern]).lstrip('*')}"
        return v, v
    raise ValueError(f"unknown value spec {spec!r}")


def _schema_type(spec: str) -> dict[str, Any]:
    kind, _, rest = spec.partition(":")
    if kind == "enum":
        return {"type": "string", "enum": rest.split("|")}
    return {"type": {"int": "integer", "num": "number", "bool": "boolean"}.get(kind, "string")}


# ----------------------------------------------------------------------------------------------------------
# Tool families


@dataclass(frozen=True)
class _Param:
    name: str
    gen: str
    doc: str
    optional: bool


@dataclass(frozen=True)
class _Judge:
    """A use-the-result question: is output `field` `op` a threshold the user names?"""

    field: str
    op: str  # ">=" or "<="
    gen: str
    asks: tuple[str, ...]
    yes: str
    no: str


@dataclass(frozen=True)
class _Family:
    """One kind of tool: its names (aliases), schema, how users ask for it, its results and the answers."""

    names: tuple[str, ...]
    domain: str
    doc: str
    params: tuple[_Param, ...]
    outs: tuple[tuple[str, str], ...]
    sentence: str
    asks: tuple[str, ...]
    answers: tuple[str, ...]
    task: str  # what it does, for "none of my tools can ..."
    judge: _Judge | None

    @property
    def key(self) -> str:
        return self.names[0]

    def spec(self, name: str) -> dict[str, Any]:
        """The OpenAI function spec under `name`."""
        props = {p.name: {**_schema_type(p.gen), "description": p.doc} for p in self.params}
        required = [p.name for p in self.params if not p.optional]
        return {"type": "function", "function": {"name": name, "description": self.doc, "parameters": {
            "type": "object", "properties": props, "required": required}}}


_Ask = tuple[str, str, str, list[str], str, str]


def _fam(names: str, domain: str, doc: str, params: list[tuple[str, str, str]], outs: str, sentence: str,
         asks: list[str], answers: list[str], task: str, judge: _Ask | None = None) -> _Family:
    """A family from compact literals: params as (name, value spec, description), a name ending in "?"
    optional; outs as "field=spec; field=spec"."""
    ps = tuple(_Param(n.rstrip("?"), g, d, n.endswith("?")) for n, g, d in params)
    out_pairs = tuple((f.strip(), g.strip()) for f, g in (o.split("=", 1) for o in outs.split(";")))
    j = _Judge(judge[0], judge[1], judge[2], tuple(judge[3]), judge[4], judge[5]) if judge else None
    return _Family(tuple(names.split()), domain, doc, ps, out_pairs, sentence, tuple(asks), tuple(answers), task, j)


_DATE = "date, YYYY-MM-DD"
_FAMILIES: tuple[_Family, ...] = (
    # travel
    _fam("get_flight_status flight_status check_flight", "travel", "Current status and gate of a flight.",
         [("flight", "code:@@###", "flight number, e.g. KL123"), ("date?", "date", "departure " + _DATE)],
         "status=pick:on time|delayed|boarding|landed|cancelled; gate=code:@##",
         "Flight {flight} is {status}, gate {gate}.",
         ["What's the status of flight {flight}?", "is flight {flight} on time on {date}?",
          "Can you check flight {flight} for me? I'm picking someone up.", "status of {flight} pls",
          "Check whether {flight} on {date} is delayed."],
         ["Flight {flight} is {status} and uses gate {gate}.", "{flight} is currently {status} (gate {gate})."],
         "check flight statuses"),
    _fam("search_flights find_flights", "travel", "Find the cheapest flight between two airports on a date.",
         [("origin", "pool:iata", "origin airport IATA code"),
          ("destination", "pool:iata", "destination airport IATA code"),
          ("date", "date", "travel " + _DATE), ("cabin?", "enum:economy|premium_economy|business", "cabin class")],
         "flight=code:@@###; departure=time; fare=num:49:1200:2",
         "The cheapest option is {flight} departing {departure}, fare {fare}.",
         ["Find me a flight from {origin} to {destination} on {date}.",
          "cheapest {cabin} flight {origin} to {destination} on {date}?",
          "I need to fly {origin} -> {destination} on {date}. What's available?",
          "Search flights {origin} to {destination}, {date}, {cabin} class please."],
         ["The cheapest flight from {origin} to {destination} on {date} is {flight} at {departure}, for {fare}.",
          "{flight} leaves {origin} at {departure} and costs {fare}."],
         "search for flights",
         ("fare", "<=", "int:100:900",
          ["Is there a flight from {origin} to {destination} on {date} for at most {threshold}?",
                                        "My budget is {threshold}. Can I fly {origin} to {destination} on {date}?"],
          "Yes: {flight} at {departure} costs {fare}, within your {threshold}.",
          "No: the cheapest, {flight}, costs {fare}, more than {threshold}.")),
    _fam("lookup_airport_code airport_code_for_city", "travel", "The IATA code of a city's main airport.",
         [("city", "pool:airport_city", "city name")], "code=map:iata_of:city", "The main airport of {city} is {code}.",
         ["What's the airport code for {city}?", "which airport code do I use for {city}",
          "Look up the IATA code of {city}'s airport."],
         ["The airport code for {city} is {code}.", "{city}'s main airport is {code}."], "look up airport codes"),
    _fam("airport_delays get_airport_delays", "travel", "Current departure delays at an airport.",
         [("airport", "pool:iata", "IATA airport code")], "delayed_departures=int:0:60; average_delay_min=int:0:95",
         "{delayed_departures} departures from {airport} are delayed, {average_delay_min} minutes on average.",
         ["Are there delays at {airport} right now?", "how bad are delays at {airport} today",
          "Check departure delays for {airport} airport, please."],
         ["{airport} has {delayed_departures} delayed departures, averaging {average_delay_min} minutes.",
          "At {airport}, {delayed_departures} flights are delayed by {average_delay_min} minutes on average."],
         "check airport delays",
         ("average_delay_min", "<=", "int:10:45",
          ["I have a tight connection at {airport}. Are delays there {threshold} minutes or less on average?"],
          "Yes: delays at {airport} average {average_delay_min} minutes, within {threshold}.",
          "No: delays at {airport} average {average_delay_min} minutes, more than {threshold}.")),
    _fam("car_rental_quote rental_car_quote", "travel", "Price quote for renting a car in a city.",
         [("city", "pool:city", "pick-up city"), ("days", "int:1:21", "rental length in days"),
          ("car_class", "enum:economy|compact|suv|van", "car class")],
         "company=pick:Drivo|Rentwise|CarHop|Motiva; total_price=num:45:1400:2",
         "{company} quotes {total_price} for a {car_class} in {city}.",
         ["How much to rent a {car_class} in {city} for {days} days?",
          "quote me a {car_class} rental in {city}, {days} days",
          "I'd like a price for a {car_class} car in {city} for {days} days, please."],
         ["A {car_class} in {city} for {days} days costs {total_price} with {company}.",
          "{company} can rent you a {car_class} in {city} for {total_price}."],
         "quote car rentals",
         ("total_price", "<=", "int:100:900",
          ["Can I rent a {car_class} in {city} for {days} days on a {threshold} budget?"],
          "Yes: {company} quotes {total_price}, within {threshold}.",
          "No: the quote is {total_price} from {company}, above {threshold}.")),
    # hotels
    _fam("search_hotels find_hotel hotel_search", "hotel", "Find an available hotel in a city for given dates.",
         [("city", "pool:city", "city"), ("check_in", "date", "check-in " + _DATE),
          ("nights", "int:1:14", "number of nights"),
          ("max_price?", "int:60:400", "maximum price per night")],
         "hotel=pool:hotel; price_per_night=int:55:390<max_price; rating=num:3:5:1",
         "{hotel} has rooms at {price_per_night} per night (rated {rating}).",
         ["Find a hotel in {city} from {check_in} for {nights} nights.",
          "I need a room in {city}, checking in {check_in}, {nights} nights, max {max_price} a night.",
          "any hotels in {city}? {nights} nights starting {check_in}",
          "Search hotels: {city}, check-in {check_in}, {nights} nights."],
         ["{hotel} in {city} has a room from {check_in} at {price_per_night} per night, rated {rating}.",
          "I found {hotel}: {price_per_night} a night, rating {rating}."],
         "search for hotels",
         ("rating", ">=", "num:3.5:4.5:1",
          ["Is there a hotel in {city} rated at least {threshold} for {nights} nights from {check_in}?"],
          "Yes: {hotel} is rated {rating}, at {price_per_night} per night.",
          "No: the hotel found, {hotel}, is rated {rating}, below {threshold}.")),
    _fam("get_reservation booking_details", "hotel", "Details of a hotel reservation by its confirmation code.",
         [("confirmation", "code:HB-#####", "confirmation code")],
         "hotel=pool:hotel; check_in=date; status=pick:confirmed|pending|cancelled",
         "Reservation {confirmation} at {hotel} for {check_in} is {status}.",
         ["Is my booking {confirmation} confirmed?", "pull up reservation {confirmation}",
          "What hotel is booking {confirmation} for, and when do I check in?"],
         ["Booking {confirmation} is {status}: {hotel}, checking in {check_in}.",
          "Your reservation {confirmation} at {hotel} ({check_in}) is {status}."], "look up hotel reservations"),
    # government
    _fam("passport_application_status passport_status", "government", "Processing status of a passport application.",
         [("application_id", "code:PA-######", "application number")],
         "status=pick:received|in review|approved|printed|dispatched; expected_date=date",
         "Application {application_id} is {status}; expected by {expected_date}.",
         ["Where is my passport application {application_id}?", "status of passport application {application_id}?",
          "Has passport application {application_id} been approved yet?"],
         ["Passport application {application_id} is {status}, expected by {expected_date}.",
          "Your application {application_id} is {status}; the expected date is {expected_date}."],
         "track passport applications"),
    # finance
    _fam("get_account_balance account_balance", "finance", "Current balance of a bank account.",
         [("account_id", "code:AC-#####", "account number")], "balance=num:0:25000:2; pending=int:0:9",
         "Account {account_id} has a balance of {balance} with {pending} pending transactions.",
         ["What's the balance on account {account_id}?", "how much money is in {account_id}",
          "Check my balance please, account {account_id}."],
         ["Account {account_id} has a balance of {balance}, with {pending} pending transactions.",
          "The balance of {account_id} is {balance} ({pending} pending)."],
         "check bank balances",
         ("balance", ">=", "int:100:5000", ["Do I have at least {threshold} in account {account_id}?",
                                             "can I afford a {threshold} payment from {account_id}?"],
          "Yes: account {account_id} holds {balance}, enough for {threshold}.",
          "No: account {account_id} holds only {balance}, less than {threshold}.")),
    _fam("list_transactions recent_transactions", "finance", "Recent transactions on a bank account.",
         [("account_id", "code:AC-#####", "account number"),
          ("limit?", "int:3:50", "how many transactions to include")],
         "transactions=int:1:50; largest=num:5:2500:2; merchant=pool:merchant",
         "{transactions} transactions; the largest was {largest} at {merchant}.",
         ["Show the recent transactions on {account_id}.", "last {limit} transactions for account {account_id}?",
          "What have I spent on account {account_id} lately?"],
         ["Account {account_id} shows {transactions} recent transactions; the largest was {largest} at {merchant}.",
          "The biggest of {transactions} recent transactions on {account_id} was {largest} at {merchant}."],
         "list bank transactions"),
    _fam("get_credit_score credit_score_lookup", "finance", "A customer's current credit score.",
         [("customer_id", "int:1000:99999", "customer ID")], "score=int:300:850; updated=date",
         "Customer {customer_id} has a credit score of {score} (updated {updated}).",
         ["What's the credit score of customer {customer_id}?", "credit score for customer #{customer_id}",
          "Look up customer {customer_id}'s credit score."],
         ["Customer {customer_id} has a credit score of {score}, last updated {updated}.",
          "The credit score of customer {customer_id} is {score}."],
         "look up credit scores",
         ("score", ">=", "int:580:760", ["Does customer {customer_id} have a credit score of at least {threshold}?"],
          "Yes: customer {customer_id} scores {score}, at least {threshold}.",
          "No: customer {customer_id} scores {score}, below {threshold}.")),
    _fam("invoice_status get_invoice", "finance", "Payment status and amount due of an invoice.",
         [("invoice_id", "code:INV-#####", "invoice number")],
         "status=pick:unpaid|overdue|partially paid; amount_due=num:20:9000:2; due_date=date",
         "Invoice {invoice_id} is {status}: {amount_due} due on {due_date}.",
         ["Has invoice {invoice_id} been paid?", "what's outstanding on {invoice_id}",
          "Check the status of invoice {invoice_id}."],
         ["Invoice {invoice_id} is {status}, with {amount_due} due on {due_date}.",
          "{invoice_id} is {status}; {amount_due} is due by {due_date}."], "check invoices"),
    # customers, orders, shipping, retail
    _fam("find_customer lookup_customer customer_by_email", "commerce", "Find a customer record by email address.",
         [("email", "email", "the customer's email address")], "customer_id=int:1000:99999; name=nameof:email",
         "Customer {name} has ID {customer_id}.",
         ["Find the customer with email {email}.", "who is {email} in our customer records?",
          "Look up customer {email} and give me their ID."],
         ["The customer with email {email} is {name}, ID {customer_id}.",
          "{email} belongs to {name} (customer {customer_id})."],
         "look up customer records"),
    _fam("list_orders get_customer_orders", "commerce", "A customer's orders, optionally by status.",
         [("customer_id", "int:1000:99999", "customer ID"),
          ("status?", "enum:open|shipped|delivered|returned", "order status")],
         "order_count=int:1:25; latest_order=code:ORD-#####",
         "Customer {customer_id} has {order_count} orders; the latest is {latest_order}.",
         ["List the orders of customer {customer_id}.", "how many {status} orders does customer {customer_id} have",
          "Show me customer {customer_id}'s {status} orders."],
         ["Customer {customer_id} has {order_count} orders; the most recent is {latest_order}.",
          "There are {order_count} orders for customer {customer_id}, latest {latest_order}."], "list customer orders"),
    _fam("order_details get_order", "commerce", "Status, carrier and tracking number of an order.",
         [("order_id", "code:ORD-#####", "order number")],
         "status=pick:processing|shipped|out for delivery|delivered; carrier=pick:DHL|UPS|FedEx|PostNL; "
         "tracking_number=code:1Z########",
         "Order {order_id} is {status} with {carrier}, tracking {tracking_number}.",
         ["What's the status of order {order_id}?", "has {order_id} shipped yet?",
          "Give me the details of order {order_id}."],
         ["Order {order_id} is {status}; {carrier} is carrying it under tracking number {tracking_number}.",
          "{order_id} is {status} ({carrier}, tracking {tracking_number})."], "look up order details"),
    _fam("track_shipment shipment_tracking where_is_parcel", "commerce",
         "Current location and expected delivery of a parcel.",
         [("tracking_number", "code:1Z########", "carrier tracking number")], "location=pool:city; eta=date",
         "Parcel {tracking_number} is in {location}, expected {eta}.",
         ["Where is parcel {tracking_number}?", "track {tracking_number}",
          "When will my package {tracking_number} arrive?"],
         ["Parcel {tracking_number} is in {location} and should arrive on {eta}.",
          "Your package is currently in {location}; expected delivery is {eta}."], "track parcels"),
    _fam("shipping_quote get_shipping_rate", "commerce", "Price and transit time to ship a parcel to a postcode.",
         [("postcode", "code:#####", "destination postcode"), ("weight_kg", "num:0.2:30:1", "parcel weight in kg"),
          ("service?", "enum:standard|express|next_day", "shipping service")],
         "price=num:3:95:2; transit=int:1:9", "Shipping costs {price} and takes {transit} business days.",
         ["How much to ship a {weight_kg} kg parcel to {postcode}?",
          "{service} shipping quote, {weight_kg} kg to {postcode}",
          "I want to send {weight_kg} kg to postcode {postcode} by {service}. Price?"],
         ["Shipping {weight_kg} kg to {postcode} costs {price} and takes {transit} business days.",
          "It's {price} to send it to {postcode}, arriving in {transit} business days."],
         "quote shipping rates",
         ("transit", "<=", "int:2:5",
          ["Will a {weight_kg} kg parcel to {postcode} get there within {threshold} business days?"],
          "Yes: it takes {transit} business days and costs {price}.",
          "No: it takes {transit} business days, more than {threshold}; the price is {price}.")),
    _fam("check_inventory inventory_level warehouse_inventory", "commerce",
         "Units of a product available in a warehouse.",
         [("sku", "code:SKU-####", "product SKU"), ("warehouse?", "enum:north|south|east|west", "warehouse")],
         "units_available=int:0:500", "{units_available} units of {sku} are available.",
         ["How many units of {sku} do we have?", "check inventory for {sku} in the {warehouse} warehouse",
          "is {sku} available? how many?", "Inventory level of {sku} at {warehouse}, please."],
         ["There are {units_available} units of {sku} available.", "{sku}: {units_available} units on hand."],
         "check inventory",
         ("units_available", ">=", "int:5:300", ["We need {threshold} units of {sku}. Do we have enough?",
                                                 "can we fill an order of {threshold} x {sku}?"],
          "Yes: {units_available} units of {sku} are available, enough for {threshold}.",
          "No: only {units_available} units of {sku} are available, short of {threshold}.")),
    _fam("product_search search_products find_product", "commerce", "Search the product catalogue by keywords.",
         [("query", "pool:product", "search keywords"), ("max_price?", "int:10:500", "maximum price")],
         "sku=code:SKU-####; brand=pool:brand; price=num:5:480:2<max_price",
         "Top match: {brand} {query} ({sku}) at {price}.",
         ["Search the catalogue for {query}.", "do we sell a {query} under {max_price}?", "find me a {query}",
          "Look for {query} products, max price {max_price}."],
         ["The top match is the {brand} {query}, {sku}, at {price}.",
          "I found {sku}, a {brand} {query}, priced {price}."],
         "search the product catalogue"),
    _fam("price_lookup get_product_price", "commerce", "Current shelf price and discount of a product.",
         [("sku", "code:SKU-####", "product SKU")], "price=num:2:900:2; discount_percent=int:0:40",
         "{sku} sells for {price} with a {discount_percent}% discount.",
         ["What does {sku} cost?", "price of {sku}?", "Look up the current price of item {sku}."],
         ["{sku} costs {price}, with a {discount_percent}% discount.",
          "The price of {sku} is {price} ({discount_percent}% off)."],
         "look up product prices",
         ("price", "<=", "int:10:500", ["Is {sku} under {threshold}?", "can I get {sku} for {threshold} or less?"],
          "Yes: {sku} costs {price}, within {threshold}.", "No: {sku} costs {price}, more than {threshold}.")),
    _fam("supplier_info get_supplier", "procurement", "Name, lead time and contact of a supplier.",
         [("supplier_id", "code:SUP-###", "supplier ID")], "name=pool:company; lead_time=int:2:60; contact=email",
         "Supplier {supplier_id} is {name}: lead time {lead_time} days, contact {contact}.",
         ["Who is supplier {supplier_id}?", "lead time for supplier {supplier_id}?",
          "Get me the contact for {supplier_id}."],
         ["{supplier_id} is {name}, with a lead time of {lead_time} days; contact {contact}.",
          "Supplier {name} ({supplier_id}) delivers in {lead_time} days; reach them at {contact}."],
         "look up suppliers"),
    # HR
    _fam("employee_lookup find_employee", "hr", "Find an employee by full name.",
         [("name", "person", "employee's full name")], "employee_id=code:E####; department=pool:department",
         "{name} is employee {employee_id} in {department}.",
         ["Find employee {name}.", "what's {name}'s employee id?", "Which department is {name} in?"],
         ["{name} is employee {employee_id} in {department}.", "{name} works in {department} (ID {employee_id})."],
         "look up employees"),
    _fam("leave_balance get_leave_balance pto_balance", "hr", "Days of leave an employee has left.",
         [("employee_id", "code:E####", "employee ID"), ("leave_type?", "enum:annual|sick|parental", "kind of leave")],
         "days_remaining=int:0:30", "Employee {employee_id} has {days_remaining} days left.",
         ["How much leave does {employee_id} have left?", "{leave_type} leave balance for {employee_id}?",
          "Check the {leave_type} leave of employee {employee_id}."],
         ["Employee {employee_id} has {days_remaining} days of leave left.",
          "{employee_id} has {days_remaining} days remaining."],
         "check leave balances",
         ("days_remaining", ">=", "int:2:15", ["Can employee {employee_id} take {threshold} days off?"],
          "Yes: {employee_id} has {days_remaining} days left, enough for {threshold}.",
          "No: {employee_id} has only {days_remaining} days left, fewer than {threshold}.")),
    _fam("get_manager who_manages", "hr", "The manager of an employee.",
         [("employee_id", "code:E####", "employee ID")], "manager=person; manager_email=emailof:manager",
         "{manager} ({manager_email}) manages {employee_id}.",
         ["Who manages {employee_id}?", "who's the manager of employee {employee_id}",
          "Find the line manager for {employee_id}."],
         ["{employee_id} reports to {manager}, at {manager_email}.",
          "The manager of {employee_id} is {manager} ({manager_email})."],
         "look up managers"),
    _fam("job_openings list_open_positions", "hr", "Open job positions in a department.",
         [("department", "pool:department", "department"),
          ("remote_only?", "bool:remote|on-site or remote", "only remote roles")],
         "open_positions=int:0:15; newest=pool:job_title",
         "{department} has {open_positions} openings; newest: {newest}.",
         ["Any open jobs in {department}?", "list {remote_only} openings in {department}",
          "How many {remote_only} positions are open in {department}?"],
         ["{department} has {open_positions} open positions; the newest is {newest}.",
          "There are {open_positions} openings in {department}, the latest for a {newest}."], "list job openings"),
    # library
    _fam("search_catalogue library_search find_book", "library", "Search the library catalogue by title.",
         [("title", "pool:book_title", "book title"), ("format?", "enum:print|ebook|audiobook", "format")],
         "isbn=code:978##########; author=person; copies_available=int:0:6",
         "'{title}' by {author}, ISBN {isbn}: {copies_available} copies available.",
         ["Does the library have '{title}'?", "search the catalogue for {title} ({format})",
          "is '{title}' available as {format}?", "Find the book {title} for me."],
         ["'{title}' by {author} (ISBN {isbn}) has {copies_available} copies available.",
          "The library has '{title}' by {author}; {copies_available} copies are in, ISBN {isbn}."],
         "search the library catalogue"),
    _fam("reserve_book place_hold", "library", "Reserve a library book for a member.",
         [("isbn", "code:978##########", "ISBN"), ("member_id", "code:M#####", "library member ID")],
         "reservation_id=code:R######; pickup_date=date", "Reserved: {reservation_id}, ready on {pickup_date}.",
         ["Reserve ISBN {isbn} for member {member_id}.", "place a hold on {isbn} for {member_id} please",
          "Can member {member_id} reserve book {isbn}?"],
         ["Book {isbn} is reserved for {member_id} (reservation {reservation_id}), ready for pickup on {pickup_date}.",
          "Done: reservation {reservation_id}, pickup on {pickup_date}."], "reserve library books"),
    _fam("member_loans library_loans", "library", "Books a library member has on loan.",
         [("member_id", "code:M#####", "library member ID")], "books_on_loan=int:0:12; next_due=date",
         "{member_id} has {books_on_loan} books out; next due {next_due}.",
         ["What books does {member_id} have out?", "how many loans does member {member_id} have",
          "When is member {member_id}'s next book due?"],
         ["Member {member_id} has {books_on_loan} books on loan; the next is due {next_due}.",
          "{member_id} has {books_on_loan} loans, next due on {next_due}."], "check library loans"),
    # sports
    _fam("match_result get_match_score", "sports", "Final score of a team's match on a date.",
         [("team", "pool:team", "team name"), ("date", "date", "match " + _DATE)],
         "opponent=pool:team; score=code:#-#", "{team} vs {opponent} on {date}: {score}.",
         ["How did {team} do on {date}?", "score of the {team} game {date}?",
          "What was the result of {team}'s match on {date}?"],
         ["{team} played {opponent} on {date}; the score was {score}.",
          "On {date}, {team} vs {opponent} ended {score}."],
         "look up match results"),
    _fam("league_standings get_table_position", "sports", "A team's position and points in a league table.",
         [("league", "pool:league", "league name"), ("team", "pool:team", "team name")],
         "position=int:1:20; points=int:0:90", "{team}: position {position} with {points} points.",
         ["Where are {team} in the {league}?", "{team} league position in the {league}?",
          "How many points do {team} have in the {league}?"],
         ["{team} are in position {position} of the {league} with {points} points.",
          "In the {league}, {team} sit at number {position} on {points} points."],
         "look up league tables",
         ("position", "<=", "int:3:8", ["Are {team} in the top {threshold} of the {league}?"],
          "Yes: {team} are in position {position} with {points} points.",
          "No: {team} are in position {position}, outside the top {threshold}, with {points} points.")),
    _fam("player_stats get_player_stats", "sports", "A player's appearances and goals in a season.",
         [("player", "person", "player's full name"), ("season", "int:2015:2025", "season year")],
         "appearances=int:1:45; goals=int:0:40", "{player}, {season}: {appearances} appearances, {goals} goals.",
         ["How many goals did {player} score in {season}?", "{player} stats for the {season} season",
          "Show me {player}'s {season} numbers."],
         ["In {season}, {player} made {appearances} appearances and scored {goals} goals.",
          "{player} scored {goals} goals in {appearances} games in {season}."], "look up player statistics"),
    # food
    _fam("find_recipe search_recipes recipe_search", "food", "Find a recipe for a dish.",
         [("dish", "pool:dish", "dish name"), ("max_minutes?", "int:10:120", "maximum total minutes"),
          ("vegetarian?", "bool:vegetarian|non-vegetarian", "vegetarian only")],
         "recipe_id=code:RC-####; minutes=int:10:120<max_minutes; rating=num:3:5:1",
         "Recipe {recipe_id} for {dish} takes {minutes} minutes (rated {rating}).",
         ["Find me a {dish} recipe.", "i want a {vegetarian} {dish} recipe",
          "Any {dish} recipe under {max_minutes} minutes?",
          "Could you look up a recipe for {dish}?"],
         ["Recipe {recipe_id} for {dish} takes {minutes} minutes and is rated {rating}.",
          "I found a {dish} recipe ({recipe_id}): {minutes} minutes, rating {rating}."],
         "search for recipes",
         ("minutes", "<=", "int:20:60", ["Is there a {dish} recipe I can make in {threshold} minutes or less?"],
          "Yes: recipe {recipe_id} takes {minutes} minutes.",
          "Not quite: the recipe found, {recipe_id}, takes {minutes} minutes.")),
    _fam("recipe_ingredients get_ingredients", "food", "The ingredients of a recipe.",
         [("recipe_id", "code:RC-####", "recipe ID"), ("servings?", "int:1:12", "number of servings")],
         "ingredient_count=int:4:18; main_ingredient=pool:ingredient",
         "Recipe {recipe_id} has {ingredient_count} ingredients, mainly {main_ingredient}.",
         ["What's in recipe {recipe_id}?", "ingredients for {recipe_id}, {servings} servings",
          "List the ingredients of recipe {recipe_id}."],
         ["Recipe {recipe_id} needs {ingredient_count} ingredients, the main one being {main_ingredient}.",
          "{recipe_id} uses {ingredient_count} ingredients, mostly {main_ingredient}."], "list recipe ingredients"),
    _fam("nutrition_facts get_nutrition food_nutrients", "food", "Calories and protein in a portion of a food.",
         [("food", "pool:food", "food name"), ("grams", "int:50:500", "portion size in grams")],
         "calories=int:20:900; protein_g=num:0:60:1", "{grams} g of {food}: {calories} kcal, {protein_g} g protein.",
         ["How many calories are in {grams} g of {food}?", "nutrition for {grams} grams of {food}",
          "protein in {grams}g {food}?"],
         ["{grams} g of {food} has {calories} kcal and {protein_g} g of protein.",
          "A {grams} g portion of {food} gives {calories} calories and {protein_g} g protein."],
         "look up nutrition facts",
         ("calories", "<=", "int:100:600",
          ["I'm keeping a snack under {threshold} calories. Is {grams} g of {food} okay?"],
          "Yes: {grams} g of {food} has {calories} kcal, under {threshold}.",
          "No: {grams} g of {food} has {calories} kcal, over {threshold}.")),
    _fam("restaurant_search find_restaurant", "food", "Find a restaurant by cuisine in a city.",
         [("cuisine", "pool:cuisine", "type of cuisine"), ("city", "pool:city", "city")],
         "restaurant=pool:restaurant; rating=num:3:5:1; price_level=pick:cheap|moderate|upscale",
         "{restaurant} ({price_level}) is rated {rating}.",
         ["Find a {cuisine} restaurant in {city}.", "good {cuisine} food in {city}?",
          "Where can I eat {cuisine} in {city}?"],
         ["{restaurant} is a {price_level} {cuisine} place in {city}, rated {rating}.",
          "Try {restaurant}: rated {rating}, {price_level} prices."], "find restaurants"),
    _fam("book_table restaurant_reservation", "food", "Book a table at a restaurant.",
         [("restaurant", "pool:restaurant", "restaurant name"), ("date", "date", _DATE),
          ("time", "time", "time, HH:MM 24-hour"),
          ("party_size", "int:1:12", "number of people")],
         "confirmation=code:TB-#####; table=code:T##",
         "Booked {restaurant}, table {table}, confirmation {confirmation}.",
         ["Book a table for {party_size} at {restaurant} on {date} at {time}.",
          "can you reserve {restaurant} for {party_size} people, {date} {time}?",
          "Table at {restaurant}, {date}, {time}, party of {party_size}."],
         ["Your table for {party_size} at {restaurant} on {date} at {time} is booked, confirmation {confirmation}.",
          "Booked: {restaurant}, table {table}, confirmation {confirmation}."], "book restaurant tables"),
    # music
    _fam("search_tracks find_song music_search", "music", "Search songs by artist.",
         [("artist", "pool:artist", "artist name"), ("genre?", "enum:rock|jazz|pop|folk|electronic", "genre")],
         "track=pool:song; track_id=code:TR-#####; plays=int:1000:900000",
         "Top track by {artist}: {track} ({track_id}), {plays} plays.",
         ["What's the most played song by {artist}?", "find {genre} tracks by {artist}",
          "Search for songs by {artist}."],
         ["{artist}'s top track is {track} ({track_id}) with {plays} plays.",
          "I found {track} by {artist}, {plays} plays."],
         "search for music"),
    _fam("add_to_playlist playlist_add", "music", "Add a track to a playlist.",
         [("playlist", "pool:playlist", "playlist name"), ("track_id", "code:TR-#####", "track ID")],
         "playlist_length=int:2:150", "Added {track_id}; {playlist} now has {playlist_length} tracks.",
         ["Add {track_id} to my {playlist} playlist.", "put track {track_id} on '{playlist}'",
          "Please add {track_id} to the playlist {playlist}."],
         ["Added {track_id} to {playlist}, which now has {playlist_length} tracks.",
          "Done: {playlist} has {playlist_length} tracks now."], "edit playlists"),
    _fam("concert_dates find_concerts tour_dates", "music", "The next concert of an artist in a city.",
         [("artist", "pool:artist", "artist name"), ("city", "pool:city", "city")],
         "next_date=date; venue=pool:venue; tickets_left=int:0:800",
         "{artist} play {venue}, {city} on {next_date}; {tickets_left} tickets left.",
         ["When are {artist} playing in {city}?", "{artist} concert in {city}?", "Is {artist} touring {city} soon?"],
         ["{artist} play {venue} in {city} on {next_date}, with {tickets_left} tickets left.",
          "The next {artist} show in {city} is {next_date} at {venue}; {tickets_left} tickets remain."],
         "look up concerts",
         ("tickets_left", ">=", "int:2:10", ["Can I still get {threshold} tickets for {artist} in {city}?"],
          "Yes: {tickets_left} tickets are left for {venue} on {next_date}.",
          "No: only {tickets_left} tickets are left for {venue} on {next_date}.")),
    # geography
    _fam("postcode_lookup lookup_postal_code", "geo", "The town and region of a UK-style postcode.",
         [("postcode", "code:@@# #@@", "postcode")], "town=pool:town; region=pool:region",
         "{postcode} is in {town}, {region}.",
         ["Where is postcode {postcode}?", "which town is {postcode}", "Look up the postcode {postcode} for me."],
         ["{postcode} is in {town}, in the {region} region.", "Postcode {postcode}: {town}, {region}."],
         "look up postcodes"),
    _fam("elevation_at get_elevation", "geo", "Ground elevation at a latitude and longitude.",
         [("latitude", "num:-60:70:4", "latitude in degrees"), ("longitude", "num:-170:170:4", "longitude in degrees")],
         "elevation_m=int:0:4200", "The elevation at {latitude}, {longitude} is {elevation_m} m.",
         ["What's the elevation at {latitude}, {longitude}?",
          "how high is the ground at lat {latitude} lon {longitude}",
          "Elevation for coordinates {latitude},{longitude} please."],
         ["The ground at {latitude}, {longitude} is {elevation_m} m above sea level.",
          "Elevation there is {elevation_m} metres."],
         "look up elevations",
         ("elevation_m", ">=", "int:200:2000", ["Is the point {latitude}, {longitude} at least {threshold} m up?"],
          "Yes: it is at {elevation_m} m.", "No: it is at {elevation_m} m, below {threshold}.")),
    _fam("land_parcel_info parcel_registry", "geo", "Area and zoning of a registered land parcel.",
         [("parcel_id", "code:LP-####-##", "land parcel ID")],
         "area_ha=num:0.1:250:2; zoning=pick:residential|agricultural|commercial|industrial",
         "Parcel {parcel_id} covers {area_ha} ha, zoned {zoning}.",
         ["How big is land parcel {parcel_id}?", "zoning of parcel {parcel_id}?",
          "Look up parcel {parcel_id} in the registry."],
         ["Parcel {parcel_id} covers {area_ha} hectares and is zoned {zoning}.",
          "{parcel_id}: {area_ha} ha, {zoning} zoning."],
         "look up land parcels"),
    # science
    _fam("compound_properties lookup_compound", "chemistry",
         "Molar mass and boiling point of a compound by CAS number.",
         [("cas_number", "code:####-##-#", "CAS registry number")],
         "molar_mass=num:16:600:2; boiling_point_c=int:-50:400",
         "Compound {cas_number}: molar mass {molar_mass} g/mol, boils at {boiling_point_c} C.",
         ["What is the molar mass of CAS {cas_number}?", "boiling point of compound {cas_number}?",
          "Get the properties of {cas_number}."],
         ["CAS {cas_number} has a molar mass of {molar_mass} g/mol and boils at {boiling_point_c} C.",
          "{cas_number}: {molar_mass} g/mol, boiling point {boiling_point_c} C."], "look up chemical compounds"),
    _fam("lab_sample_status sample_status", "chemistry", "Processing status of a lab sample.",
         [("sample_id", "code:LS-#####", "sample ID")],
         "status=pick:received|queued|in analysis|complete; assay=pick:PCR|ELISA|HPLC|mass spec",
         "Sample {sample_id} ({assay}) is {status}.",
         ["Is sample {sample_id} done?", "status of lab sample {sample_id}", "Where is {sample_id} in the lab queue?"],
         ["Sample {sample_id} is {status}; the assay is {assay}.", "{sample_id} ({assay}) is {status}."],
         "track lab samples"),
    _fam("variant_lookup snp_info", "genomics", "Gene and clinical significance of a genetic variant.",
         [("rsid", "code:rs########", "variant rsID")],
         "gene=code:@@@@#; significance=pick:benign|likely benign|uncertain|likely pathogenic|pathogenic",
         "{rsid} is in {gene}; significance: {significance}.",
         ["What gene is {rsid} in?", "clinical significance of {rsid}?", "Look up variant {rsid}."],
         ["{rsid} lies in {gene} and is classed as {significance}.", "Variant {rsid} ({gene}) is {significance}."],
         "look up genetic variants"),
    _fam("sequence_stats gc_content", "genomics", "Length and GC content of a stored DNA sequence.",
         [("sequence_id", "code:SEQ-#####", "sequence ID")], "length_bp=int:200:50000; gc_percent=num:30:70:1",
         "{sequence_id}: {length_bp} bp, GC {gc_percent}%.",
         ["What's the GC content of {sequence_id}?", "how long is sequence {sequence_id}",
          "Stats for {sequence_id} please."],
         ["{sequence_id} is {length_bp} bp long with {gc_percent}% GC.",
          "Sequence {sequence_id}: {length_bp} bp, {gc_percent}% GC."],
         "analyse DNA sequences",
         ("gc_percent", ">=", "int:40:60", ["Is the GC content of {sequence_id} at least {threshold}%?"],
          "Yes: {sequence_id} has {gc_percent}% GC.", "No: {sequence_id} has {gc_percent}% GC, below {threshold}%.")),
    # calendar
    _fam("list_events calendar_events get_agenda", "calendar", "Events on a calendar for a day.",
         [("date", "date", _DATE), ("calendar?", "enum:work|personal|family", "which calendar")],
         "event_count=int:1:9; first_event=pool:meeting; first_start=time",
         "{event_count} events on {date}; first: {first_event} at {first_start}.",
         ["What's on my calendar on {date}?", "agenda for {date}", "What's on my {calendar} calendar for {date}?"],
         ["You have {event_count} events on {date}; the first is {first_event} at {first_start}.",
          "{date}: {event_count} events, starting with {first_event} at {first_start}."], "read calendars"),
    _fam("create_event add_calendar_event schedule_meeting", "calendar", "Create a calendar event.",
         [("title", "pool:meeting", "event title"), ("date", "date", _DATE),
          ("start", "time", "start time, HH:MM 24-hour"),
          ("duration_min?", "int:15:180", "length in minutes")],
         "event_id=code:EV-#####; status=pick:confirmed|tentative", "Created {event_id} ({status}).",
         ["Add '{title}' to my calendar on {date} at {start}.",
          "schedule {title} {date} {start} for {duration_min} minutes",
          "Put {title} in the calendar: {date}, {start}."],
         ["'{title}' is on your calendar for {date} at {start} ({event_id}, {status}).",
          "Created event {event_id} for {date} at {start}; it's {status}."], "create calendar events"),
    _fam("find_free_slot first_available_slot", "calendar", "First free slot in a person's calendar on a day.",
         [("person", "person", "whose calendar"), ("date", "date", _DATE),
          ("duration_min", "int:15:120", "meeting length in minutes")],
         "slot=time", "{person} is free at {slot} on {date}.",
         ["When is {person} free on {date} for {duration_min} minutes?",
          "find a {duration_min} min slot with {person} on {date}",
          "Can I get {duration_min} minutes with {person} on {date}?"],
         ["{person} is free at {slot} on {date}.",
          "The first free {duration_min}-minute slot with {person} on {date} is {slot}."],
         "find free calendar slots"),
    # files and code
    _fam("file_info stat_file get_file_metadata", "files", "Size, owner and modification date of a file.",
         [("path", "pool:path", "absolute file path")],
         "size_bytes=int:120:9000000; modified=date; owner=pool:username",
         "{path}: {size_bytes} bytes, owner {owner}, modified {modified}.",
         ["How big is {path}?", "when was {path} last modified", "Show me the metadata of {path}."],
         ["{path} is {size_bytes} bytes, owned by {owner}, last modified {modified}.",
          "The file {path} has {size_bytes} bytes and was modified on {modified}."],
         "inspect files",
         ("size_bytes", "<=", "int:1000000:5000000", ["Is {path} under {threshold} bytes, small enough to attach?"],
          "Yes: {path} is {size_bytes} bytes.", "No: {path} is {size_bytes} bytes, over {threshold}.")),
    _fam("search_files find_files", "files", "Find files matching a pattern under a directory.",
         [("pattern", "pool:glob", "glob pattern, e.g. *.csv"), ("directory", "pool:directory", "directory to search")],
         "matches=int:1:80; first_match=path_in:directory:pattern", "{matches} matches; first: {first_match}.",
         ["Find {pattern} files in {directory}.", "search {directory} for {pattern}",
          "Which {pattern} files are under {directory}?"],
         ["There are {matches} {pattern} files in {directory}; the first is {first_match}.",
          "Found {matches} matches, starting with {first_match}."], "search for files"),
    _fam("disk_usage check_disk_space", "files", "Used and free space on a mounted volume.",
         [("mount", "enum:/|/home|/var|/data", "mount point")], "used_percent=int:5:99; free_gb=num:0.5:900:1",
         "{mount} is {used_percent}% used, {free_gb} GB free.",
         ["How full is {mount}?", "disk space on {mount}?", "Check free space on the {mount} volume."],
         ["{mount} is {used_percent}% full with {free_gb} GB free.",
          "The {mount} volume has {free_gb} GB free ({used_percent}% used)."],
         "check disk space",
         ("free_gb", ">=", "int:5:200", ["Do I have at least {threshold} GB free on {mount}?"],
          "Yes: {mount} has {free_gb} GB free.", "No: {mount} has only {free_gb} GB free, less than {threshold}.")),
    _fam("list_pull_requests open_prs", "code", "Pull requests of a repository by state.",
         [("repo", "pool:repo", "repository, owner/name"), ("state?", "enum:open|closed|merged", "pull request state")],
         "pr_total=int:1:40; latest_pr=int:10:4000", "{repo} has {pr_total} pull requests; the latest is #{latest_pr}.",
         ["How many PRs are open in {repo}?", "list {state} pull requests for {repo}",
          "What's the latest {state} PR in {repo}?"],
         ["{repo} has {pr_total} pull requests; the newest is #{latest_pr}.",
          "The latest PR in {repo} is #{latest_pr} (of {pr_total})."],
         "list pull requests"),
    _fam("ci_status get_build_status check_ci", "code", "Continuous-integration status of a pull request.",
         [("repo", "pool:repo", "repository, owner/name"), ("pr_number", "int:10:4000", "pull request number")],
         "status=pick:passing|failing|running; failed_jobs=int:0:6",
         "CI for {repo}#{pr_number}: {status}, {failed_jobs} failed jobs.",
         ["Is CI green on {repo} PR {pr_number}?", "build status of #{pr_number} in {repo}",
          "Did the checks pass for {repo} pull request {pr_number}?"],
         ["CI on {repo}#{pr_number} is {status}, with {failed_jobs} failed jobs.",
          "PR {pr_number} in {repo}: {status} ({failed_jobs} jobs failed)."],
         "check CI builds"),
    _fam("latest_commit get_last_commit", "code", "The latest commit on a branch of a repository.",
         [("repo", "pool:repo", "repository, owner/name"), ("branch?", "pool:branch", "branch name")],
         "sha=hex:7; author=person; message=pool:commit_msg", "{sha} by {author}: {message}.",
         ["What's the last commit in {repo}?", "latest commit on {branch} in {repo}",
          "Who committed last to {repo} {branch}?"],
         ["The latest commit in {repo} is {sha} by {author}: \"{message}\".",
          "{author} made the last commit, {sha} ({message})."],
         "read commit history"),
    # support
    _fam("ticket_status get_ticket support_ticket_info", "support",
         "Status, assignee and priority of a support ticket.",
         [("ticket_id", "code:TCK-#####", "ticket ID")],
         "status=pick:open|pending|resolved|escalated; assignee=person; priority=pick:low|normal|high|urgent",
         "Ticket {ticket_id} is {status} ({priority}), assigned to {assignee}.",
         ["What's the status of ticket {ticket_id}?", "who has {ticket_id}?",
          "Any update on support ticket {ticket_id}?"],
         ["Ticket {ticket_id} is {status}, {priority} priority, assigned to {assignee}.",
          "{assignee} has ticket {ticket_id}; it's {status} with {priority} priority."], "look up support tickets"),
    _fam("create_ticket open_support_ticket", "support", "Open a new support ticket for a customer.",
         [("subject", "pool:issue", "short subject"), ("priority", "enum:low|normal|high|urgent", "priority"),
          ("customer_email", "email", "customer's email")],
         "ticket_id=code:TCK-#####; queue_position=int:1:40", "Opened {ticket_id}, queue position {queue_position}.",
         ["Open a {priority} ticket for {customer_email}: {subject}.",
          "new ticket, {priority} priority, '{subject}', customer {customer_email}",
          "Please log a {priority}-priority issue '{subject}' for {customer_email}."],
         ["Opened ticket {ticket_id} for {customer_email}; it's number {queue_position} in the queue.",
          "Ticket {ticket_id} is open ({priority}), position {queue_position}."], "open support tickets"),
    _fam("search_tickets tickets_for_customer", "support", "Support tickets of a customer.",
         [("customer_email", "email", "customer's email"), ("open_only?", "bool:open|all", "only open tickets")],
         "ticket_total=int:1:12; latest_ticket=code:TCK-#####",
         "{customer_email}: {ticket_total} tickets, latest {latest_ticket}.",
         ["What tickets does {customer_email} have?", "list {open_only} tickets for {customer_email}",
          "Find {customer_email}'s {open_only} support tickets."],
         ["{customer_email} has {ticket_total} tickets; the latest is {latest_ticket}.",
          "Found {ticket_total} tickets for {customer_email}, most recent {latest_ticket}."], "search support tickets"),
    # devices
    _fam("device_status get_device_state iot_device_status", "iot",
         "Connection state and battery of a smart-home device.",
         [("device_id", "code:DV-####", "device ID")], "state=pick:online|offline|sleeping; battery_percent=int:1:100",
         "Device {device_id} is {state}, battery {battery_percent}%.",
         ["Is device {device_id} online?", "battery level of {device_id}?", "Check the status of {device_id}."],
         ["Device {device_id} is {state} with {battery_percent}% battery.",
          "{device_id}: {state}, battery at {battery_percent}%."],
         "check smart-home devices",
         ("battery_percent", ">=", "int:15:60", ["Does {device_id} have at least {threshold}% battery left?"],
          "Yes: {device_id} is at {battery_percent}%.", "No: {device_id} is down to {battery_percent}%.")),
    _fam("set_light_level dim_lights", "iot", "Set the brightness of the lights in a room.",
         [("room", "pool:room", "room"), ("brightness", "int:0:100", "brightness in percent")],
         "lights_changed=int:1:8", "{lights_changed} lights in the {room} set to {brightness}%.",
         ["Set the {room} lights to {brightness}%.", "dim the {room} to {brightness} percent",
          "Lights in the {room} at {brightness}% please."],
         ["Done: {lights_changed} lights in the {room} are at {brightness}%.",
          "I set {lights_changed} {room} lights to {brightness}%."],
         "control lights"),
    _fam("find_device locate_device_id", "iot", "The ID of a smart-home device by room and type.",
         [("room", "pool:room", "room"),
          ("device_type", "enum:thermostat|camera|smoke_alarm|speaker|lock", "kind of device")],
         "device_id=code:DV-####", "The {device_type} in the {room} is {device_id}.",
         ["What's the ID of the {device_type} in the {room}?", "find the {room} {device_type}",
          "Which device is the {device_type} in the {room}?"],
         ["The {room} {device_type} is device {device_id}.", "That's {device_id}."], "find smart-home devices"),
    _fam("sensor_reading read_sensor", "iot", "Latest reading of an indoor air sensor.",
         [("sensor_id", "code:SN-####", "sensor ID"), ("metric", "enum:co2|noise|occupancy", "what to read")],
         "reading=int:0:1500; recorded_at=time", "Sensor {sensor_id} {metric}: {reading} (at {recorded_at}).",
         ["What's the {metric} reading on {sensor_id}?", "read {metric} from sensor {sensor_id}",
          "{sensor_id} {metric} level?"],
         ["Sensor {sensor_id} reads {reading} for {metric}.", "The latest {metric} value on {sensor_id} is {reading}."],
         "read sensors"),
    # astronomy and space
    _fam("moon_phase get_moon_phase", "astronomy", "Phase and illumination of the Moon on a date.",
         [("date", "date", _DATE)],
         "phase=pick:" + "|".join(_MOON) + "; illumination_percent=map:illumination_of:phase",
         "On {date} the Moon is a {phase}, {illumination_percent}% lit.",
         ["What phase is the moon on {date}?", "moon phase {date}?", "How much of the Moon is lit on {date}?"],
         ["On {date} the Moon is a {phase}, {illumination_percent}% illuminated.",
          "{date}: {phase}, {illumination_percent}% lit."],
         "look up moon phases"),
    _fam("star_lookup star_catalog_entry", "astronomy", "Catalogue entry of a star: constellation and magnitude.",
         [("designation", "code:HD ######", "HD catalogue designation")],
         "constellation=pool:constellation; magnitude=num:-1:12:2; spectral_type=pick:O|B|A|F|G|K|M",
         "{designation}: {constellation}, magnitude {magnitude}, type {spectral_type}.",
         ["Which constellation is {designation} in?", "how bright is star {designation}",
          "Look up {designation} in the star catalogue."],
         ["{designation} is in {constellation}, magnitude {magnitude}, spectral type {spectral_type}.",
          "Star {designation}: {constellation}, apparent magnitude {magnitude}."], "look up stars"),
    _fam("launch_schedule next_launch", "astronomy", "Next scheduled launch of a rocket.",
         [("rocket", "pool:rocket", "rocket name")], "launch_date=date; pad=code:LC-##",
         "{rocket} launches {launch_date} from {pad}.",
         ["When does {rocket} launch next?", "next {rocket} launch?", "Is there a {rocket} launch coming up?"],
         ["The next {rocket} launch is on {launch_date} from pad {pad}.",
          "{rocket} is scheduled for {launch_date} ({pad})."],
         "look up rocket launches"),
    # transit and parking
    _fam("next_departures transit_departures", "transit", "Next departure from a public transport stop.",
         [("stop_id", "code:ST-####", "stop ID"), ("mode?", "enum:bus|tram|metro", "transport mode")],
         "route=code:##; minutes=int:1:30", "Route {route} leaves {stop_id} in {minutes} minutes.",
         ["When's the next departure from {stop_id}?", "next {mode} from stop {stop_id}",
          "What leaves {stop_id} next?"],
         ["Route {route} leaves {stop_id} in {minutes} minutes.",
          "The next one from {stop_id} is route {route}, in {minutes} minutes."],
         "check transit departures",
         ("minutes", "<=", "int:5:15", ["Will something leave {stop_id} within {threshold} minutes?"],
          "Yes: route {route} leaves in {minutes} minutes.",
          "No: the next, route {route}, leaves in {minutes} minutes.")),
    _fam("find_stop nearest_stop", "transit", "The public transport stop nearest a street.",
         [("street", "pool:street", "street name")], "stop_id=code:ST-####; walk_min=int:1:12",
         "Nearest stop to {street}: {stop_id}, {walk_min} min walk.",
         ["What's the nearest stop to {street}?", "closest bus stop near {street}", "Find a stop near {street}."],
         ["The nearest stop to {street} is {stop_id}, a {walk_min}-minute walk.",
          "{stop_id} is {walk_min} minutes from {street}."],
         "find transit stops"),
    _fam("bike_availability bike_dock_status", "transit", "Bikes and free docks at a bike-share station.",
         [("station", "pool:station", "station name")], "bikes=int:0:30; free_docks=int:0:30",
         "{station}: {bikes} bikes, {free_docks} free docks.",
         ["Are there bikes at {station}?", "how many bikes at {station} station", "Bike share status for {station}."],
         ["{station} has {bikes} bikes and {free_docks} free docks.",
          "There are {bikes} bikes at {station} ({free_docks} docks free)."],
         "check bike-share stations",
         ("bikes", ">=", "int:2:6", ["We're {threshold} people. Are there enough bikes at {station}?"],
          "Yes: {station} has {bikes} bikes.", "No: {station} has only {bikes} bikes.")),
    _fam("parking_availability garage_spaces", "transit", "Free spaces and hourly rate at a car park.",
         [("garage", "pool:garage", "car park name")], "free_spaces=int:0:400; hourly_rate=num:1:9:2",
         "{garage}: {free_spaces} spaces free at {hourly_rate} per hour.",
         ["Is there parking at {garage}?", "free spaces in {garage}?",
          "How much is {garage} per hour, and is it full?"],
         ["{garage} has {free_spaces} free spaces at {hourly_rate} an hour.",
          "{free_spaces} spaces are free at {garage} ({hourly_rate}/hour)."],
         "check parking"),
    # vehicles
    _fam("vin_decode decode_vin", "vehicle", "Make, year and fuel type of a vehicle from its VIN.",
         [("vin", "vin", "17-character VIN")],
         "make=pick:Toyota|Ford|Volvo|Kia|Skoda|Mazda; year=int:2004:2025; fuel=pick:petrol|diesel|hybrid|electric",
         "VIN {vin}: {year} {make}, {fuel}.",
         ["Decode VIN {vin}.", "what car is vin {vin}?", "Which make and year is {vin}?"],
         ["VIN {vin} is a {year} {make} ({fuel}).", "That's a {fuel} {make} from {year}."], "decode VINs"),
    _fam("registration_lookup plate_lookup", "vehicle", "Registration record of a number plate.",
         [("plate", "code:@@## @@@", "number plate")], "vin=vin; registered=date",
         "Plate {plate}: VIN {vin}, registered {registered}.",
         ["Look up plate {plate}.", "who's registered under {plate}? I need the VIN",
          "Registration details for {plate}, please."],
         ["Plate {plate} has VIN {vin}, registered on {registered}.",
          "{plate} is VIN {vin} (registered {registered})."],
         "look up vehicle registrations"),
    _fam("recall_check open_recalls", "vehicle", "Open safety recalls for a vehicle.",
         [("vin", "vin", "17-character VIN")], "open_recalls=int:0:3; campaign=code:##V-###",
         "{vin}: {open_recalls} open recalls (latest {campaign}).",
         ["Does {vin} have any open recalls?", "recall check for vin {vin}", "Any safety recalls on {vin}?"],
         ["{vin} has {open_recalls} open recalls; the latest campaign is {campaign}.",
          "There are {open_recalls} open recalls for {vin} (campaign {campaign})."], "check vehicle recalls"),
    # property, health, education
    _fam("search_listings find_homes", "property", "Homes for sale in a city under a price.",
         [("city", "pool:city", "city"), ("max_price", "int:100000:900000", "maximum price"),
          ("bedrooms?", "int:1:5", "minimum bedrooms")],
         "listings=int:0:40; cheapest_listing=code:LST-#####", "{listings} homes found; cheapest: {cheapest_listing}.",
         ["Find homes in {city} under {max_price}.", "{bedrooms} bed houses in {city}, max {max_price}",
          "What's for sale in {city} below {max_price} with {bedrooms} bedrooms?"],
         ["There are {listings} homes in {city} under {max_price}; the cheapest is {cheapest_listing}.",
          "Found {listings} listings, cheapest {cheapest_listing}."], "search property listings"),
    _fam("property_listing listing_details", "property", "Price, bedrooms and status of a property listing.",
         [("listing_id", "code:LST-#####", "listing ID")],
         "price=int:90000:950000<max_price; bedrooms=int:1:6; status=pick:for sale|under offer|sold",
         "{listing_id}: {bedrooms} bedrooms, {price}, {status}.",
         ["Tell me about listing {listing_id}.", "price of {listing_id}?", "Is {listing_id} still for sale?"],
         ["Listing {listing_id} has {bedrooms} bedrooms, costs {price} and is {status}.",
          "{listing_id}: {price}, {bedrooms} bedrooms ({status})."], "look up property listings"),
    _fam("appointment_slots doctor_availability", "calendar", "Open appointment slots with a doctor on a day.",
         [("doctor", "person", "doctor's name"), ("date", "date", _DATE)], "open_slots=int:1:12; first_slot=time",
         "Dr {doctor} has {open_slots} slots on {date}, first at {first_slot}.",
         ["Can I see Dr {doctor} on {date}?", "appointments with {doctor} {date}?",
          "When is Dr {doctor} free on {date}?"],
         ["Dr {doctor} has {open_slots} open slots on {date}, the first at {first_slot}.",
          "The first opening with {doctor} on {date} is {first_slot} ({open_slots} in total)."],
         "book doctor appointments"),
    _fam("pet_vaccinations vet_records", "health", "A pet's last vaccine and next due date.",
         [("pet_id", "code:PET-####", "pet ID")],
         "last_vaccine=pick:rabies|distemper|parvovirus|leptospirosis; next_due=date",
         "{pet_id}: last {last_vaccine}, next due {next_due}.",
         ["When is {pet_id} due for shots?", "vaccination record of pet {pet_id}",
          "What vaccine did {pet_id} get last?"],
         ["{pet_id} last had {last_vaccine} and is next due on {next_due}.",
          "Next vaccination for {pet_id}: {next_due} (last: {last_vaccine})."],
         "read vet records"),
    _fam("course_info get_course", "education", "Title, credits and free seats of a course.",
         [("course_code", "code:@@@###", "course code")], "title=pool:course; credits=int:1:10; seats_left=int:0:60",
         "{course_code} {title}: {credits} credits, {seats_left} seats left.",
         ["What's course {course_code}?", "seats left in {course_code}?", "Tell me about {course_code}."],
         ["{course_code} is {title}, worth {credits} credits, with {seats_left} seats left.",
          "{title} ({course_code}) has {seats_left} seats left and gives {credits} credits."],
         "look up courses",
         ("seats_left", ">=", "int:1:5", ["Are there {threshold} seats left in {course_code} for me and my friends?"],
          "Yes: {course_code} has {seats_left} seats left.", "No: {course_code} has only {seats_left} seats left.")),
    _fam("student_grades get_gpa", "education", "A student's GPA for a term.",
         [("student_id", "code:S#######", "student ID"), ("term", "enum:fall|spring|summer", "term")],
         "gpa=num:1.5:4:2; credits_completed=int:6:30", "{student_id}, {term}: GPA {gpa}, {credits_completed} credits.",
         ["What's {student_id}'s GPA for {term}?", "{term} grades of student {student_id}",
          "How did {student_id} do in the {term} term?"],
         ["{student_id} has a {term} GPA of {gpa} over {credits_completed} credits.",
          "In {term}, {student_id} earned a {gpa} GPA."],
         "look up student grades"),
    # utilities, gaming, agriculture
    _fam("meter_reading energy_usage", "utilities", "Electricity used on a meter in a month.",
         [("meter_id", "code:MT-######", "meter ID"),
          ("month?", "enum:" + "|".join(m.lower() for m in _MONTHS), "month")],
         "kwh=int:50:1500; tariff=pick:standard|economy|green", "Meter {meter_id}: {kwh} kWh on the {tariff} tariff.",
         ["How much electricity did meter {meter_id} use?", "{month} usage for meter {meter_id}",
          "kWh on {meter_id} in {month}?"],
         ["Meter {meter_id} used {kwh} kWh on the {tariff} tariff.",
          "{meter_id} recorded {kwh} kWh ({tariff} tariff)."],
         "read energy meters",
         ("kwh", "<=", "int:200:900", ["Did meter {meter_id} stay under {threshold} kWh?"],
          "Yes: {meter_id} used {kwh} kWh.", "No: {meter_id} used {kwh} kWh, over {threshold}.")),
    _fam("game_server_status server_health", "gaming", "Players online and ping of a game region.",
         [("region", "enum:eu_west|us_east|asia|oceania", "server region")],
         "players_online=int:0:50000; ping_ms=int:8:250",
         "{region}: {players_online} players, {ping_ms} ms.",
         ["How busy is the {region} server?", "ping to {region}?", "Is the {region} game server up?"],
         ["The {region} server has {players_online} players online with {ping_ms} ms ping.",
          "{region}: {players_online} players, ping {ping_ms} ms."],
         "check game servers",
         ("ping_ms", "<=", "int:40:120", ["Is ping on {region} under {threshold} ms?"],
          "Yes: {region} is at {ping_ms} ms.", "No: {region} is at {ping_ms} ms.")),
    _fam("soil_moisture field_sensor", "agriculture", "Soil moisture of a farm field and advice.",
         [("field_id", "code:FLD-###", "field ID")],
         "moisture_percent=int:5:60; advice=pick:irrigate|hold|check drainage",
         "Field {field_id}: {moisture_percent}% moisture, advice: {advice}.",
         ["How wet is field {field_id}?", "soil moisture {field_id}?", "Should I water field {field_id}?"],
         ["Field {field_id} is at {moisture_percent}% moisture; advice: {advice}.",
          "{field_id} has {moisture_percent}% soil moisture, so {advice}."], "monitor farm fields"),
    # networking and messaging
    _fam("whois_lookup domain_registration", "network", "Registrar and expiry date of an internet domain.",
         [("domain", "pool:domain", "domain name")], "registrar=pool:registrar; expires=date",
         "{domain} is registered with {registrar} until {expires}.",
         ["Who is {domain} registered with?", "when does {domain} expire", "Whois for {domain}."],
         ["{domain} is registered with {registrar} and expires on {expires}.",
          "{domain}: {registrar}, expiring {expires}."],
         "look up domain registrations"),
    _fam("dns_lookup resolve_host", "network", "The IPv4 address a hostname resolves to.",
         [("hostname", "pool:hostname", "host name")], "ip=ip", "{hostname} resolves to {ip}.",
         ["What IP does {hostname} resolve to?", "resolve {hostname}", "DNS lookup for {hostname}."],
         ["{hostname} resolves to {ip}.", "The address of {hostname} is {ip}."], "resolve host names"),
    _fam("ip_owner ip_whois", "network", "The organisation and AS number that own an IP address.",
         [("ip", "ip", "IPv4 address")], "organisation=pool:company; asn=code:AS#####",
         "{ip} belongs to {organisation} ({asn}).",
         ["Who owns {ip}?", "owner of ip {ip}?", "Which network is {ip} on?"],
         ["{ip} belongs to {organisation}, {asn}.", "The IP {ip} is owned by {organisation} ({asn})."],
         "look up IP owners"),
    _fam("send_sms text_message", "messaging", "Send a text message to a phone number.",
         [("phone", "code:+44 7### ######", "phone number"), ("message", "pool:sms", "message text")],
         "message_id=code:SM-######; status=pick:queued|sent|delivered", "Message {message_id} {status}.",
         ["Text {phone}: {message}", "send '{message}' to {phone}", "Please SMS {phone} saying {message}."],
         ["Your message to {phone} is {status} (ID {message_id}).", "Sent: {message_id}, status {status}."],
         "send text messages"),
    # media
    _fam("news_headlines top_headlines", "media", "Top news headline on a topic.",
         [("topic", "pool:topic", "news topic"), ("limit?", "int:1:10", "how many headlines")],
         "headline=pool:headline; outlet=pool:outlet; published=date", "{outlet}, {published}: {headline}.",
         ["What's the top {topic} news?", "latest {topic} headlines, {limit} of them", "Any {topic} news today?"],
         ["The top {topic} story is \"{headline}\" from {outlet}, {published}.",
          "{outlet} leads with \"{headline}\" ({published})."],
         "fetch news"),
    _fam("podcast_episodes latest_episode", "media", "Latest episode of a podcast.",
         [("show", "pool:podcast", "podcast name")], "episode=pool:episode; minutes=int:15:120; published=date",
         "Latest {show}: \"{episode}\", {minutes} min, {published}.",
         ["What's the newest episode of {show}?", "latest {show} episode?", "Did {show} put out a new episode?"],
         ["The latest {show} episode is \"{episode}\", {minutes} minutes, published {published}.",
          "{show} released \"{episode}\" on {published} ({minutes} min)."], "look up podcasts"),
    _fam("warranty_status check_warranty", "electronics", "Warranty coverage of a device by serial number.",
         [("serial_number", "code:SN@@#######", "device serial number")],
         "covered_until=date; plan=pick:standard|extended|none",
         "{serial_number}: {plan} plan, covered until {covered_until}.",
         ["Is {serial_number} still under warranty?", "warranty for serial {serial_number}",
          "When does the warranty on {serial_number} end?"],
         ["{serial_number} has the {plan} plan, covered until {covered_until}.",
          "Warranty on {serial_number}: {plan}, until {covered_until}."],
         "check warranties"),
    _fam("class_schedule gym_classes", "fitness", "The first gym class of a type on a day and its free spots.",
         [("class_type", "enum:yoga|spin|pilates|boxing|hiit", "class type"), ("date", "date", _DATE)],
         "first_class=time; spots_left=int:0:25", "{class_type} on {date}: first at {first_class}, {spots_left} spots.",
         ["When is {class_type} on {date}?", "{class_type} classes {date}?",
          "Is there a {class_type} class on {date}?"],
         ["The first {class_type} class on {date} is at {first_class}, with {spots_left} spots left.",
          "{class_type} on {date} starts at {first_class}; {spots_left} spots free."],
         "check gym classes",
         ("spots_left", ">=", "int:1:4", ["Can {threshold} of us join {class_type} on {date}?"],
          "Yes: the {first_class} class has {spots_left} spots left.",
          "No: the {first_class} class has {spots_left} spots left.")),
    _fam("define_word dictionary_lookup", "dictionary", "The dictionary definition of an English word.",
         [("word", "pool:dict_word", "the word")], "definition=map:definition_of:word; part_of_speech=map:pos_of:word",
         "{word} ({part_of_speech}): {definition}.",
         ["What does '{word}' mean?", "define {word}", "Look up the meaning of the word {word}."],
         ["'{word}' is a {part_of_speech} meaning {definition}.", "{word} ({part_of_speech}): {definition}."],
         "look up word definitions"),
)
_BY_KEY = {f.key: f for f in _FAMILIES}

# ----------------------------------------------------------------------------------------------------------
# Chains: the first call's result gives the second call's argument


@dataclass(frozen=True)
class ChainPattern:
    """A two-call pattern: output `field` of `first`'s result is argument `param` of the `second` call
    (and arguments named in `same` are passed on unchanged). `first_names`/`second_names` are the tool
    names (aliases) the two families appear under."""

    first: str
    field: str
    second: str
    param: str
    asks: tuple[str, ...]
    same: tuple[str, ...] = ()

    @property
    def first_names(self) -> tuple[str, ...]:
        """Every name the first tool is offered under."""
        return _BY_KEY[self.first].names

    @property
    def second_names(self) -> tuple[str, ...]:
        """Every name the second tool is offered under."""
        return _BY_KEY[self.second].names


def _chain(link: str, asks: list[str], same: tuple[str, ...] = ()) -> ChainPattern:
    """`link` as "first.field -> second.param"."""
    a, b = (s.strip().split(".") for s in link.split("->"))
    return ChainPattern(a[0], a[1], b[0], b[1], tuple(asks), same)


CHAIN_PATTERNS: tuple[ChainPattern, ...] = (
    _chain("find_customer.customer_id -> list_orders.customer_id",
           ["Find the customer with email {email} and list their orders.",
            "How many orders does {email} have? Look up the customer first.",
            "get the customer id for {email}, then show their {status} orders"]),
    _chain("find_customer.customer_id -> get_credit_score.customer_id",
           ["What's the credit score of the customer with email {email}?",
            "Look up {email} and then check their credit score."]),
    _chain("list_orders.latest_order -> order_details.order_id",
           ["What's the status of the latest order of customer {customer_id}?",
            "Customer {customer_id}: find their most recent order and tell me if it has shipped."]),
    _chain("order_details.tracking_number -> track_shipment.tracking_number",
           ["Where is the parcel for order {order_id} right now?", "Track the shipment of order {order_id}.",
            "when will order {order_id} arrive? find its tracking number and track it"]),
    _chain("lookup_airport_code.code -> airport_delays.airport",
           ["Are there delays at the airport in {city}?", "how are departures from {city}'s airport doing today",
            "Find {city}'s airport code, then check its delays."]),
    _chain("lookup_airport_code.code -> search_flights.origin",
           ["Find me a flight from {city} to {destination} on {date}.",
            "I'm in {city} and need to get to {destination} on {date}, {cabin} class. Cheapest flight?"]),
    _chain("product_search.sku -> check_inventory.sku",
           ["Do we have any {query} in stock? Find the product, then check inventory.",
            "search for {query} and check how many units are in the {warehouse} warehouse"]),
    _chain("latest_commit.author -> employee_lookup.name",
           ["Who made the last commit to {repo}, and which department are they in?",
            "find the author of the latest commit on {branch} in {repo} and look them up in the staff directory"]),
    _chain("employee_lookup.employee_id -> leave_balance.employee_id",
           ["How much {leave_type} leave does {name} have left?", "Find {name} and check their leave balance."]),
    _chain("employee_lookup.employee_id -> get_manager.employee_id",
           ["Who is {name}'s manager?", "Find employee {name} and tell me who they report to."]),
    _chain("get_manager.manager -> find_free_slot.person",
           ["When can I meet the manager of {employee_id} for {duration_min} minutes on {date}?",
            "Find who manages {employee_id} and a {duration_min}-minute slot with them on {date}."]),
    _chain("search_catalogue.isbn -> reserve_book.isbn",
           ["Reserve '{title}' for member {member_id}.", "find the book {title} and place a hold for {member_id}"]),
    _chain("find_recipe.recipe_id -> recipe_ingredients.recipe_id",
           ["Find a {dish} recipe and tell me what goes in it.",
            "What ingredients do I need for a {vegetarian} {dish}?"]),
    _chain("search_tracks.track_id -> add_to_playlist.track_id",
           ["Add the top song by {artist} to my {playlist} playlist.",
            "find a {genre} track by {artist} and put it on {playlist}"]),
    _chain("search_files.first_match -> file_info.path",
           ["Find the first {pattern} file in {directory} and tell me how big it is.",
            "Search {directory} for {pattern} and show the metadata of the first match."]),
    _chain("list_pull_requests.latest_pr -> ci_status.pr_number",
           ["Is CI passing on the latest pull request in {repo}?",
            "check the build of the newest {state} PR in {repo}"],
           same=("repo",)),
    _chain("search_tickets.latest_ticket -> ticket_status.ticket_id",
           ["What's the status of {customer_email}'s most recent ticket?",
            "Find the latest {open_only} ticket of {customer_email} and tell me who's on it."]),
    _chain("find_device.device_id -> device_status.device_id",
           ["Is the {device_type} in the {room} online?", "What's the battery of the {room} {device_type}?"]),
    _chain("find_stop.stop_id -> next_departures.stop_id",
           ["When's the next departure from the stop nearest {street}?", "next {mode} near {street}?"]),
    _chain("registration_lookup.vin -> recall_check.vin",
           ["Does the car with plate {plate} have open recalls?", "Check plate {plate} for recalls."]),
    _chain("registration_lookup.vin -> vin_decode.vin",
           ["What make and year is the car with plate {plate}?", "plate {plate}: what kind of car is it?"]),
    _chain("restaurant_search.restaurant -> book_table.restaurant",
           ["Find a {cuisine} restaurant in {city} and book a table for {party_size} on {date} at {time}.",
            "Book us a {cuisine} place in {city}, {party_size} people, {date} {time}."]),
    _chain("search_listings.cheapest_listing -> property_listing.listing_id",
           ["Find the cheapest home in {city} under {max_price} and give me its details.",
            "What's the cheapest {bedrooms}-bedroom listing in {city} below {max_price}, and is it still for sale?"]),
    _chain("dns_lookup.ip -> ip_owner.ip", ["Who owns the IP that {hostname} resolves to?",
                                            "resolve {hostname} and tell me which network it's on"]),
)
_CHAIN_PAIRS = {(c.first, c.second) for c in CHAIN_PATTERNS}

# ----------------------------------------------------------------------------------------------------------
# Requests no tool fits

_CHITCHAT = (
    ("Hi there!", "Hello! How can I help you today?"), ("good morning", "Good morning! What can I do for you?"),
    ("How's it going?", "I'm doing well, thanks for asking. What can I help you with?"),
    ("Thanks, that's all for now.", "You're welcome! Have a great day."), ("thank you so much!", "Happy to help!"),
    ("Who are you?", "I'm an assistant that answers questions and uses tools when they help."),
    ("Can you tell me a joke?", "Why did the scarecrow win an award? Because he was outstanding in his field."),
    ("I'm bored.", "How about a short walk, a puzzle, or calling a friend?"),
    ("What's your favourite colour?", "I don't have one myself, but plenty of people pick green."),
    ("bye!", "Goodbye! Come back any time."), ("Are you a robot?", "I'm an AI assistant, so in a way, yes."),
    ("Nice to meet you.", "Nice to meet you too! How can I help?"), ("Good night", "Good night! Sleep well."),
    ("What can you do?", "I can answer questions and use the tools I'm given to look things up for you."),
    ("ok cool", "Great! Let me know if you need anything else."), ("sorry, wrong chat", "No problem! Have a good day."),
    ("I just passed my driving test!", "Congratulations! That's a big achievement."),
    ("hey, how are you doing today?", "I'm doing well, thank you! What can I help you with?"),
)
# (question, answer, domains whose tools might answer it: those are never offered with it)
_KNOWLEDGE: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("How many legs does a spider have?", "A spider has 8 legs.", ()),
    ("What gas do plants absorb from the air?", "Plants absorb carbon dioxide from the air.", ()),
    ("Who wrote 'Romeo and Juliet'?", "William Shakespeare wrote 'Romeo and Juliet'.", ("library",)),
    ("What is the largest planet in the solar system?", "Jupiter is the largest planet in the solar system.",
     ("astronomy",)),
    ("How many continents are there?", "There are seven continents.", ("geo",)),
    ("What is the chemical symbol for gold?", "The chemical symbol for gold is Au.", ("chemistry",)),
    ("Which keyword starts a for loop in Python?", "Python uses the 'for' keyword to loop over items.", ("code",)),
    ("What does HTML stand for?", "HTML stands for HyperText Markup Language.", ("code", "network")),
    ("What is the opposite of 'early'?", "The opposite of 'early' is 'late'.", ("dictionary",)),
    ("What colour do you get by mixing blue and yellow?", "Mixing blue and yellow gives green.", ()),
    ("Name a mammal that can fly.", "The bat is a mammal that can fly.", ()),
    ("How many sides does a hexagon have?", "A hexagon has 6 sides.", ()),
    ("Which ocean is the largest?", "The Pacific is the largest ocean.", ("geo",)),
    ("What is the tallest animal?", "The giraffe is the tallest animal.", ()),
    ("Who painted the Mona Lisa?", "Leonardo da Vinci painted the Mona Lisa.", ()),
    ("What language is mainly spoken in Brazil?", "Portuguese is the main language of Brazil.", ()),
    ("What do bees make?", "Bees make honey and beeswax.", ()),
    ("What is the main ingredient of guacamole?", "The main ingredient of guacamole is avocado.", ("food",)),
    ("How many players does a football team have on the pitch?", "Each side has 11 players on the pitch.", ("sports",)),
    ("Which planet is known as the Red Planet?", "Mars is known as the Red Planet.", ("astronomy",)),
    ("What is the plural of 'mouse'?", "The plural of 'mouse' is 'mice'.", ("dictionary",)),
    ("In what year did World War II end?", "World War II ended in 1945.", ()),
    ("What is the hardest natural substance?", "Diamond is the hardest natural substance.", ("chemistry",)),
    ("Which instrument has 88 keys?", "The piano has 88 keys.", ("music",)),
    ("What does DNA stand for?", "DNA stands for deoxyribonucleic acid.", ("genomics",)),
    ("Give me a synonym for 'happy'.", "A synonym for 'happy' is 'joyful'.", ("dictionary",)),
    ("What is the fastest land animal?", "The cheetah is the fastest land animal.", ()),
    ("Name a vegetable that is orange.", "The carrot is an orange vegetable.", ("food",)),
    ("What does CPU stand for?", "CPU stands for central processing unit.", ("code",)),
    ("How many strings does a standard guitar have?", "A standard guitar has 6 strings.", ("music",)),
    ("What is the largest desert in Africa?", "The Sahara is the largest desert in Africa.", ("geo",)),
    ("Who was the first person to walk on the Moon?", "Neil Armstrong, in 1969.", ("astronomy",)),
    ("Which organ pumps blood around the body?", "The heart pumps blood around the body.", ("health",)),
    ("What is the capital of Japan?", "The capital of Japan is Tokyo.", ("geo",)),
    ("capital of canada?", "The capital of Canada is Ottawa.", ("geo",)),
    ("Which city is the capital of Australia?", "Canberra is the capital of Australia.", ("geo",)),
    ("What's the capital of Kenya?", "The capital of Kenya is Nairobi.", ("geo",)),
    ("What is the capital city of Poland?", "Warsaw is the capital of Poland.", ("geo",)),
    ("what is the capital of south korea", "The capital of South Korea is Seoul.", ("geo",)),
    ("Which is the capital of Egypt?", "Cairo is the capital of Egypt.", ("geo",)),
    ("What is the largest mammal?", "The blue whale is the largest mammal.", ()),
    ("Which metal is liquid at room temperature?", "Mercury is a metal that is liquid at room temperature.",
     ("chemistry",)),
)
_CREATIVE = (
    ("Write a haiku about autumn.",
     "Crisp leaves drift and fall, / amber light on quiet paths, / the year breathes out slow."),
    ("Give me a short motivational line.", "Small steps every day add up to big changes."),
    ("Suggest a name for a grey cat.", "How about 'Smokey'?"),
    ("Write a one-line birthday message for my sister.", "Happy birthday, sis! Wishing you a year full of laughter."),
    ("Any advice for falling asleep faster?", "Keep a regular bedtime and put screens away half an hour before bed."),
    ("Write a two-line poem about coffee.", "Dark and warm, the morning cup, / the quiet spark that wakes me up."),
    ("Make up a title for a mystery novel.", "How about 'The Lantern at Hollow Creek'?"),
    ("Say something encouraging before my exam.",
     "You've prepared well: trust yourself and take it one question at a time."),
    ("Write a short slogan for a bakery.", "Fresh from our oven to your table, every morning."),
    ("Describe a rainbow in one sentence.",
     "A rainbow is an arc of colours that appears when sunlight shines through raindrops."),
)
_REFUSALS = (
    "Sorry, none of the tools I have can {task}, so I can't do that here.",
    "I don't have a tool to {task}, so I can't help with that one right now.",
    "That needs a tool to {task}, and none of the available tools does that.",
    "I can't {task} with the tools available to me here.",
)
_PREFIXES = ("Hi!", "Hey,", "Hello.", "Quick question:", "Hi there, quick one:", "Morning!", "I need some help.",
             "For a report I'm writing:", "Sorry to bother you.", "ok so")
_SUFFIXES = ("Thanks!", "thx", "Thank you.", "Cheers.", "Please.", "ty", "Appreciate it!", "asap please")
_JOINERS = ("{a} Also, {b}", "{a} And {b}", "Two things: {a} {b}", "{a} Then {b}", "{a} Plus, {b}", "{a}\n{b}")

# ----------------------------------------------------------------------------------------------------------
# Building conversations


@dataclass(frozen=True)
class ToolConversation:
    """One training conversation: the tools offered and the messages (user request, then the assistant's
    calls with their results, then its answer: in text, or as the call of a finishing tool, named in
    `final`, with its result)."""

    kind: str  # "single", "sequence", "use_result", "no_tool"
    tools: list[dict[str, Any]]
    messages: list[Message]
    final: tuple[str, ...] = ()  # the offered tools that finish the run (`@tool(final=True)`)


def _fields(template: str) -> list[str]:
    return [f for _, f, _, _ in string.Formatter().parse(template) if f]


def _typo(template: str, rng: random.Random) -> str:
    """Swap two letters of one word of a template's own text (never of a value)."""
    parts = re.split(r"(\{\w+\})", template)
    spots = [(i, m.start()) for i, part in enumerate(parts) if not part.startswith("{")
             for m in re.finditer(r"[A-Za-z]{5,}", part)]
    if not spots:
        return template
    i, start = rng.choice(spots)
    word = re.match(r"[A-Za-z]+", parts[i][start:])
    assert word is not None
    j = start + rng.randrange(1, len(word.group()) - 2)
    p = parts[i]
    parts[i] = p[:j] + p[j + 1] + p[j] + p[j + 2:]
    return "".join(parts)


def _dress(text: str, rng: random.Random, lower: bool = True) -> str:
    """How people type: a greeting or thanks around the request, no final mark, or (`lower`) all lower case."""
    if rng.random() < 0.1:
        text = text.rstrip("?.!")
    if rng.random() < 0.18:
        prefix = rng.choice(_PREFIXES)
        if prefix[-1] in ",:" and text[:1].isupper() and text[1:2].islower():
            text = text[0].lower() + text[1:]
        text = f"{prefix} {text}"
    if rng.random() < 0.15:
        text = f"{text} {rng.choice(_SUFFIXES)}"
    if rng.random() < 0.1 and lower:
        text = text.lower()
    return text


def _may_lower(*fams: _Family) -> bool:
    """Whether a request for these tools may be lower-cased (no free-text argument to copy exactly)."""
    return not any(p.gen in _VERBATIM for f in fams for p in f.params)


def _text(v: Any) -> str:
    return ("yes" if v else "no") if isinstance(v, bool) else str(v)


def _draw_args(fam: _Family, wanted: set[str], rng: random.Random, fixed: Mapping[str, Any] | None = None,
               ) -> tuple[dict[str, Any], dict[str, str]]:
    """Arguments (required ones, and the optional ones the request names) with their surface forms."""
    args: dict[str, Any] = dict(fixed or {})
    surfaces: dict[str, str] = {}
    for p in fam.params:
        if p.name in args or (p.optional and p.name not in wanted):
            continue
        for _ in range(5):  # two arguments from one pool (origin, destination) differ
            args[p.name], surfaces[p.name] = _value(p.gen, rng, args)
            if not any(q.gen == p.gen and args.get(q.name) == args[p.name] for q in fam.params if q is not p):
                break
    return args, surfaces


def _outputs(fam: _Family, args: Mapping[str, Any], rng: random.Random, context: Mapping[str, Any] | None = None,
             ) -> dict[str, Any]:
    """The result's values; `context` (the first call's arguments in a chain) bounds them like `args` do."""
    known: dict[str, Any] = {**(context or {}), **args}
    outs: dict[str, Any] = {}
    for name, gen in fam.outs:
        outs[name] = known[name] = _value(gen, rng, known)[0]
    return outs


def _result_text(fam: _Family, args: Mapping[str, Any], outs: Mapping[str, Any], rng: random.Random) -> str:
    """The tool's result: a JSON object, a plain sentence, "key: value" lines or (one output) the bare value."""
    r, single = rng.random(), len(outs) == 1
    if single and r < 0.45:
        return _text(next(iter(outs.values())))
    if r < (0.7 if single else 0.55):
        required = {p.name for p in fam.params if not p.optional}
        echo = {k: v for k, v in args.items() if k in required} if rng.random() < 0.4 else {}
        return json.dumps({**echo, **outs}, ensure_ascii=False)
    if not single and r < 0.7:
        return "\n".join(f"{k}: {_text(v)}" for k, v in outs.items())
    return fam.sentence.format(**{k: _text(v) for k, v in {**args, **outs}.items()})


def _check_args(spec: Mapping[str, Any], args: Mapping[str, Any]) -> None:
    """Assert `args` validate against the function spec's parameters (the types used here)."""
    params = spec["function"]["parameters"]
    assert not set(params["required"]) - set(args), (spec["function"]["name"], args)
    for k, v in args.items():
        prop = params["properties"][k]
        kind = prop["type"]
        ok = {"integer": type(v) is int, "number": type(v) in (int, float), "boolean": type(v) is bool,
              "string": type(v) is str}[kind]
        assert ok and ("enum" not in prop or v in prop["enum"]), (spec["function"]["name"], k, v)


_VERBS = ("get", "lookup", "find", "fetch", "check", "query", "search", "show", "retrieve", "read")
_SUFFIXES_NAME = ("", "", "", "_info", "_data", "_api", "_v2", "_tool", "_now", "_details")
_ACTIONS = frozenset({"add", "book", "send", "create", "cancel", "place", "dim", "set", "reserve", "schedule",
                      "open", "close", "update", "delete", "renew", "pay", "start", "stop", "turn", "register",
                      "submit", "assign", "order", "transfer", "log", "apply", "request", "rename", "move",
                      "remove", "lock", "unlock", "post", "play", "refund", "return", "enroll", "issue"})


class _Builder:
    def __init__(self, rng: random.Random, fresh_names: float = 0.0) -> None:
        self.rng = rng
        self.fresh_names = fresh_names

    def name(self, fam: _Family) -> str:
        """One of the family's names, or (with probability `fresh_names`) a new one made from its words, so
        that a model learns to read the offered tools rather than remember their names."""
        rng = self.rng
        name = rng.choice(fam.names)
        if not self.fresh_names or rng.random() >= self.fresh_names:
            return name
        words = [w for w in name.split("_") if w not in _VERBS]
        lead = [] if words and words[0] in _ACTIONS else [rng.choice(_VERBS)]  # add_x stays an action
        fresh = "_".join([*lead, *words]) + rng.choice(_SUFFIXES_NAME)
        if fresh in HELD_OUT_TOOLS or set(fresh.split("_")) & HELD_OUT_WORDS:
            return name
        if rng.random() < 0.2:  # camelCase, as some APIs name their tools
            head, *rest = fresh.split("_")
            fresh = head + "".join(w.capitalize() for w in rest)
        return fresh

    def call(self, fam: _Family, name: str, args: dict[str, Any]) -> ToolCall:
        _check_args(fam.spec(name), args)
        return ToolCall(id=f"call_{self.rng.getrandbits(40):010x}", name=name, arguments=args)

    def offer(self, needed: list[tuple[_Family, str]], lo: int, hi: int, avoid: Collection[str] = ()
              ) -> list[dict[str, Any]]:
        """Specs of the needed tools among distractors, shuffled; distractors from domains in `avoid` never."""
        rng, taken = self.rng, {f.key for f, _ in needed}
        pool = [f for f in _FAMILIES if f.key not in taken and f.domain not in avoid]
        k = rng.randint(max(lo, len(needed)), hi) - len(needed)
        chosen: list[_Family] = []
        siblings = [f for f in pool if needed and f.domain == needed[0][0].domain]
        if siblings and k and rng.random() < 0.4:  # a look-alike from the same domain
            chosen.append(rng.choice(siblings))
        chosen += rng.sample([f for f in pool if f not in chosen], k - len(chosen))
        offered = [*needed, *((f, self.name(f)) for f in chosen)]
        rng.shuffle(offered)
        return [f.spec(n) for f, n in offered]

    def ask(self, template: str) -> str:
        return _typo(template, self.rng) if self.rng.random() < 0.1 else template

    def single(self, fam: _Family, judged: bool = False) -> ToolConversation:
        """One call; with `judged`, a question on the result (is a value above/below the user's threshold?)."""
        rng, name, judge = self.rng, self.name(fam), fam.judge if judged else None
        template = self.ask(rng.choice(judge.asks if judge else fam.asks))
        args, surf = _draw_args(fam, set(_fields(template)), rng)
        extra: dict[str, Any] = {}
        if judge:
            extra["threshold"], surf["threshold"] = _value(judge.gen, rng, args)
        call = self.call(fam, name, args)
        outs = _outputs(fam, args, rng)
        values = {k: _text(v) for k, v in {**args, **outs, **extra}.items()}
        if judge:
            got, limit = outs[judge.field], extra["threshold"]
            answer = judge.yes if (got >= limit if judge.op == ">=" else got <= limit) else judge.no
        else:
            answer = rng.choice(fam.answers)
        messages = [Message.user(_dress(template.format(**surf), rng, _may_lower(fam))),
                    Message.assistant(tool_calls=[call]), Message.tool(call, _result_text(fam, args, outs, rng)),
                    Message.assistant(answer.format(**values))]
        return ToolConversation("use_result" if judge else "single", self.offer([(fam, name)], 2, 6), messages)

    def chained(self, chain: ChainPattern) -> ToolConversation:
        rng = self.rng
        a, b = _BY_KEY[chain.first], _BY_KEY[chain.second]
        name_a, name_b = self.name(a), self.name(b)
        template = self.ask(rng.choice(chain.asks))
        wanted = set(_fields(template))
        args_a, surf_a = _draw_args(a, wanted, rng)
        outs_a = _outputs(a, args_a, rng)
        fixed = {chain.param: outs_a[chain.field], **{k: args_a[k] for k in chain.same}}
        args_b, surf_b = _draw_args(b, wanted, rng, fixed)
        call_a, call_b = self.call(a, name_a, args_a), self.call(b, name_b, args_b)
        outs_b = _outputs(b, args_b, rng, args_a)
        answer_a = rng.choice(a.answers).format(**{k: _text(v) for k, v in {**args_a, **outs_a}.items()})
        answer_b = rng.choice(b.answers).format(**{k: _text(v) for k, v in {**args_b, **outs_b}.items()})
        messages = [Message.user(_dress(template.format(**surf_a, **surf_b), rng, _may_lower(a, b))),
                    Message.assistant(tool_calls=[call_a]), Message.tool(call_a, _result_text(a, args_a, outs_a, rng)),
                    Message.assistant(tool_calls=[call_b]), Message.tool(call_b, _result_text(b, args_b, outs_b, rng)),
                    Message.assistant(f"{answer_a} {answer_b}")]
        return ToolConversation("sequence", self.offer([(a, name_a), (b, name_b)], 2, 6), messages)

    def two_things(self) -> ToolConversation:
        rng = self.rng
        while True:
            a, b = rng.sample(_FAMILIES, 2)
            if (a.key, b.key) not in _CHAIN_PAIRS:
                break
        requests, calls, answers = [], [], []
        names = [self.name(a), self.name(b)]
        for fam, name in zip((a, b), names, strict=True):
            template = self.ask(rng.choice(fam.asks))
            args, surf = _draw_args(fam, set(_fields(template)), rng)
            outs = _outputs(fam, args, rng)
            call = self.call(fam, name, args)
            requests.append(template.format(**surf))
            calls += [Message.assistant(tool_calls=[call]), Message.tool(call, _result_text(fam, args, outs, rng))]
            answers.append(rng.choice(fam.answers).format(**{k: _text(v) for k, v in {**args, **outs}.items()}))
        joiner, second = rng.choice(_JOINERS), requests[1]
        if requests[0][-1] not in ".?!":
            requests[0] += "."
        if joiner.endswith((", {b}", "Then {b}")) and second[:1].isupper() and second[1:2].islower():
            second = second[0].lower() + second[1:]
        request = joiner.format(a=requests[0], b=second)
        messages = [Message.user(_dress(request, rng, _may_lower(a, b))), *calls, Message.assistant(" ".join(answers))]
        return ToolConversation("sequence", self.offer([(a, names[0]), (b, names[1])], 2, 6), messages)

    def no_tool(self, refusals: bool = True) -> ToolConversation:
        rng, r = self.rng, self.rng.random() * (1.0 if refusals else 0.7)
        avoid: tuple[str, ...] = ()
        if r < 0.25:
            request, answer = rng.choice(_CHITCHAT)
        elif r < 0.6:
            request, answer, near = rng.choice(_KNOWLEDGE)
            request, avoid = _dress(request, rng), near
        elif r < 0.7:
            request, answer = rng.choice(_CREATIVE)
        else:  # a request for a tool that is not offered
            fam = rng.choice(_FAMILIES)
            template = self.ask(rng.choice(fam.asks))
            request = _dress(template.format(**_draw_args(fam, set(_fields(template)), rng)[1]), rng)
            answer, avoid = rng.choice(_REFUSALS).format(task=fam.task), (fam.domain,)
        messages = [Message.user(request), Message.assistant(answer)]
        return ToolConversation("no_tool", self.offer([], 1, 5, avoid), messages)

    def finishing(self, conv: ToolConversation) -> ToolConversation:
        """`conv` with a tool that finishes the run among its tools, and its text answer given by calling
        it: as the answer (`final_answer(answer=...)`), or, after a call with one required argument, as that
        argument again (`submit_final(query=...)`, whose result is the call's; single lookups only, where that
        result is the whole answer)."""
        rng = self.rng
        *head, last = conv.messages  # a single lookup's head: the request, the call, its result
        taken = {t["function"]["name"] for t in conv.tools}
        echo_names = [n for n, _ in _ECHO_FINISHERS if n not in taken]
        answering, params = None, {}
        if conv.kind == "single" and rng.random() < 0.6:
            (answering,) = head[1].tool_calls
            params = next(t for t in conv.tools if t["function"]["name"] == answering.name)["function"]["parameters"]
        if answering is not None and len(params["required"]) == 1 and echo_names:
            (key,) = params["required"]
            name, words = rng.choice(echo_names), key.replace("_", " ")
            schema = {k: v for k, v in params["properties"][key].items() if k != "description"}
            spec = _finisher_spec(name, dict(_ECHO_FINISHERS)[name].format(param=words), key,
                                  {**schema, "description": f"the {words} that gave the answer"})
            args, result = {key: answering.arguments[key]}, head[-1].content
        else:
            name, doc, param, param_doc = rng.choice([f for f in _ANSWER_FINISHERS if f[0] not in taken])
            spec = _finisher_spec(name, doc, param, {"type": "string", "description": param_doc})
            args, result = {param: last.content}, rng.choice(_RECEIPTS)
        call = ToolCall(id=f"call_{rng.getrandbits(40):010x}", name=name, arguments=args)
        tools = list(conv.tools)
        tools.insert(rng.randrange(len(tools) + 1), spec)
        messages = [*head, Message.assistant(tool_calls=[call]), Message.tool(call, result)]
        return ToolConversation(conv.kind, tools, messages, final=(name,))


def _finisher_spec(name: str, doc: str, param: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": doc, "parameters": {
        "type": "object", "properties": {param: schema}, "required": [param]}}}


KIND_WEIGHTS: Mapping[str, float] = {"single": 40, "use_result": 15, "sequence": 25, "no_tool": 20}
"""The default mix of conversation kinds (percent)."""
_JUDGED = tuple(f for f in _FAMILIES if f.judge is not None)


def synthetic_conversations(n: int, seed: int = 0, *, weights: Mapping[str, float] | None = None,
                            refusals: bool = True, fresh_names: float = 0.0, finish: float = 0.0,
                            ) -> list[ToolConversation]:
    """`n` tool-use conversations drawn with `random.Random(seed)`: by default (`KIND_WEIGHTS`) about 40 %
    one call, 15 % one call whose result the answer must reason on, 25 % two calls in sequence, 20 % no
    call. `refusals=False` leaves out the no-call answers that say no offered tool can do the request;
    `fresh_names` is the share of tools renamed from their family's words (`get_x_info`, `queryX`);
    `finish` the share of conversations offered a tool that finishes the run, and ending with its call."""
    mix = dict(weights or KIND_WEIGHTS)
    if set(mix) - set(KIND_WEIGHTS) or not any(mix.values()):
        raise ValueError(f"weights name kinds of {sorted(KIND_WEIGHTS)}, at least one above 0")
    kinds, shares = list(mix), list(mix.values())
    rng = random.Random(seed)
    build = _Builder(rng, fresh_names)
    out: list[ToolConversation] = []
    for _ in range(n):
        kind = rng.choices(kinds, shares)[0]
        if kind == "single":
            conv = build.single(rng.choice(_FAMILIES))
        elif kind == "use_result":
            conv = build.single(rng.choice(_JUDGED), judged=True)
        elif kind == "sequence":
            conv = build.chained(rng.choice(CHAIN_PATTERNS)) if rng.random() < 0.65 else build.two_things()
        else:
            conv = build.no_tool(refusals)
        if finish and rng.random() < finish:  # no draw without: the same conversations as before
            conv = build.finishing(conv)
        assert not {t["function"]["name"] for t in conv.tools} & (HELD_OUT_TOOLS | FRAMEWORK_FINISHERS)
        out.append(conv)
    return out


def tool_names() -> list[str]:
    """Every tool name the generator may offer."""
    return [name for f in _FAMILIES for name in f.names]


def _check_tables() -> None:
    """Import-time checks of the literals above: names unique and clear of the held-out domains, every
    template naming only what it can fill and everything it must."""
    names = tool_names()
    assert len(names) == len(set(names)), "a tool name is used twice"
    for name in names:
        assert name not in HELD_OUT_TOOLS and not set(name.split("_")) & HELD_OUT_WORDS, name
    finishers = [f[0] for f in _ANSWER_FINISHERS] + [n for n, _ in _ECHO_FINISHERS]
    assert not set(finishers) & (set(names) | HELD_OUT_TOOLS | FRAMEWORK_FINISHERS), finishers
    for f in _FAMILIES:
        params = {p.name for p in f.params}
        required = {p.name for p in f.params if not p.optional}
        filled = required | {o for o, _ in f.outs}
        assert len(f.asks) >= 3 and len(f.answers) >= 2, f.key
        for t in f.asks:
            assert required <= set(_fields(t)) <= params, (f.key, t)
        for t in (f.sentence, *f.answers):
            assert set(_fields(t)) <= filled, (f.key, t)
        if f.judge:
            assert dict(f.outs)[f.judge.field].startswith(("int", "num")), f.key
            for t in f.judge.asks:
                assert required | {"threshold"} <= set(_fields(t)) <= params | {"threshold"}, (f.key, t)
            for t in (f.judge.yes, f.judge.no):
                assert set(_fields(t)) <= filled | {"threshold"}, (f.key, t)
    for c in CHAIN_PATTERNS:
        a, b = _BY_KEY[c.first], _BY_KEY[c.second]
        a_params = {p.name for p in a.params}
        b_params = {p.name for p in b.params} - {c.param, *c.same}
        assert c.field in dict(a.outs) and c.param in {p.name for p in b.params}, c
        assert not a_params & b_params, c
        a_req = {p.name for p in a.params if not p.optional}
        b_req = {p.name for p in b.params if not p.optional} - {c.param, *c.same}
        for t in c.asks:
            assert a_req | b_req <= set(_fields(t)) <= a_params | b_params, (c.first, c.second, t)


_check_tables()
