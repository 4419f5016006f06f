"""Values for synthetic tool calls: the pools arguments and results are drawn from, and how a user writes them.

A value spec names a kind and its range: `int:1:14`, `num:49:1200:2` (two decimals), `pick:a|b`, `enum:a|b`
(offered as a schema enum), `bool:yes-text|no-text`, `code:@@###` (letters and digits), `pool:city`,
`map:iata_of:city` (derived from a value drawn before), `person`, `email`, `nameof:email`, `emailof:name`,
`date`, `time`, `hex:7`, `ip`, `vin`, `path_in:directory:pattern`, `fn:energy_cost` (a result worked out from
the values drawn before by a fixed formula of `FORMULAS`, so that a tool gives the same result for the same
arguments); `<name` after a numeric range caps it by that value when it is known (`int:55:390<max_price`).
"""

from __future__ import annotations

import datetime as dt
import math
import random
import string
from collections.abc import Callable, Mapping
from typing import Any

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
MOON = {"new moon": "0", "waxing crescent": "24", "first quarter": "50", "waxing gibbous": "76",
         "full moon": "100", "waning gibbous": "77", "last quarter": "49", "waning crescent": "22"}
_TABLES: dict[str, dict[str, str]] = {
    "iata_of": _IATA, "definition_of": {w: d for w, (d, _) in _DEFINITIONS.items()},
    "pos_of": {w: p for w, (_, p) in _DEFINITIONS.items()}, "illumination_of": MOON,
}
POOLS: dict[str, tuple[str, ...]] = {k: tuple(v.split("|")) for k, v in {
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
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")
NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                "twelve")
TARIFF_RATES = {"standard": 0.28, "economy": 0.21, "green": 0.31}
"""The price of a kWh on each electricity tariff."""
BURN_RATES = {"walking": 4, "cycling": 8, "swimming": 9, "running": 11}
"""Calories burned per minute of each activity."""
MOISTURE_TARGET = 35
"""The soil moisture (percent) an irrigation plan brings a field up to when the user names no other."""


def _water_mm(known: Mapping[str, Any]) -> int:
    """Millimetres of water that bring the field's moisture up to the target: 2 mm per percentage point."""
    return 2 * max(0, int(known.get("target_percent", MOISTURE_TARGET)) - int(known["moisture_percent"]))


FORMULAS: dict[str, Callable[[Mapping[str, Any]], int | float]] = {
    "energy_cost": lambda k: round(k["kwh"] * TARIFF_RATES[k["tariff"]], 2),
    "boiling_c": lambda k: round(100 - 0.00335 * k["altitude_m"], 1),
    "pressure_kpa": lambda k: round(101.325 * (1 - 2.25577e-5 * k["altitude_m"]) ** 5.25588, 1),
    "moisture_target": lambda k: int(k.get("target_percent", MOISTURE_TARGET)),
    "water_mm": _water_mm,
    "irrigation_minutes": lambda k: 3 * _water_mm(k),
    "burn_minutes": lambda k: math.ceil(k["calories"] / BURN_RATES[k["activity"]]),
}
"""The formulas `fn:` results are worked out by, over the values drawn before them (arguments, then earlier
results)."""
_VIN_CHARS = "ABCDEFGHJKLMNPRSTUVWXYZ0123456789"
VERBATIM = frozenset({"pool:issue", "pool:sms", "pool:meeting"})  # free text: passed on exactly as written


def person(rng: random.Random) -> str:
    """A first and last name from the pools."""
    return f"{rng.choice(POOLS['first'])} {rng.choice(POOLS['last'])}"


def _email_of(name: str, rng: random.Random) -> str:
    return f"{name.lower().replace(' ', '.')}@{rng.choice(POOLS['mail_host'])}"


def value(spec: str, rng: random.Random, known: Mapping[str, Any]) -> tuple[Any, str]:
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
        return n, NUMBER_WORDS[n] if 0 < n <= 12 and rng.random() < 0.2 else str(n)
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
        v = rng.choice(POOLS[rest])
        return v, v.lower() if spec not in VERBATIM and rng.random() < 0.15 else v
    if kind == "map":
        table, key = rest.split(":")
        v = _TABLES[table][str(known[key])]
        return (int(v), v) if v.isdigit() else (v, v)
    if kind == "person":
        v = person(rng)
        return v, v.lower() if rng.random() < 0.15 else v
    if kind == "email":
        v = _email_of(person(rng), rng)
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
        month = MONTHS[day.month - 1]
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
    if kind == "fn":
        x = FORMULAS[rest](known)
        return x, str(x)
    if kind == "path_in":  # a file in the directory argument that matches the pattern argument
        folder, pattern = rest.split(":")
        v = f"{known[folder]}/{rng.choice(POOLS['file_stem'])}{str(known[pattern]).lstrip('*')}"
        return v, v
    raise ValueError(f"unknown value spec {spec!r}")


def schema_type(spec: str) -> dict[str, Any]:
    """The JSON-schema type of a parameter drawn from `spec` (an `enum:` spec lists its values)."""
    kind, _, rest = spec.partition(":")
    if kind == "enum":
        return {"type": "string", "enum": rest.split("|")}
    return {"type": {"int": "integer", "num": "number", "bool": "boolean"}.get(kind, "string")}
