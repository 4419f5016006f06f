"""What computing with results asks: formulas over looked-up values, two lookups of one tool side by side, and
sums whose numbers the user gives.

- `ComputePattern`: one lookup (or a chain of them), then a formula over its values and numbers the user
  gives ("what would 3 nights there cost?": price_per_night * 3), worked out by the arithmetic tool.
- `PairPattern`: the same tool called twice in one reply for two values of one parameter (two teams, two
  stations), then both answered, one picked by a value (`compare`), or the two values added or subtracted
  by the arithmetic tool (`combine`).
- `WORD_PROBLEMS`: a sum in everyday words, every number in the request, for the arithmetic tool.

A formula is written with `{field}` placeholders for the lookups' values (the last lookup's first) and the
user's numbers (`extras`: name and value spec, a spec's `<field` capping it by a looked-up value).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ComputePattern:
    """Lookups along `keys` (one family, or a chain), then `formula` over their values and the `extras`."""

    keys: tuple[str, ...]
    formula: str
    extras: tuple[tuple[str, str], ...]
    asks: tuple[str, ...]  # the whole request: the lookups' arguments and the extras
    follows: tuple[str, ...]  # in a chat, after a turn that made the lookups: the extras only
    answers: tuple[str, ...]  # {result}, the lookups' values and the extras


def _compute(keys: str, formula: str, extras: str, asks: list[str], follows: list[str], answers: list[str],
             ) -> ComputePattern:
    """A pattern from literals: `keys` space-separated, `extras` as "name=spec; name=spec" (or "")."""
    pairs = tuple((n.strip(), g.strip()) for n, g in (e.split("=", 1) for e in extras.split(";") if e.strip()))
    return ComputePattern(tuple(keys.split()), formula, pairs, tuple(asks), tuple(follows), tuple(answers))


COMPUTE_PATTERNS: tuple[ComputePattern, ...] = (
    _compute("search_hotels", "{price_per_night} * {nights}", "",
             ["Find a hotel in {city} from {check_in} for {nights} nights and tell me what the whole stay costs.",
              "What would {nights} nights in a {city} hotel from {check_in} cost me altogether?"],
             ["What would the whole stay come to?", "So what's the total for all the nights?"],
             ["{hotel} is {price_per_night} a night, so {nights} nights come to {result}.",
              "The stay at {hotel} costs {result} in total ({nights} nights at {price_per_night})."]),
    _compute("car_rental_quote", "{total_price} / {days}", "",
             ["How much per day is a {car_class} in {city} for {days} days?",
              "Get me a {car_class} rental quote in {city} for {days} days and work out the daily rate."],
             ["What does that work out to per day?", "And per day, that's how much?"],
             ["{company} quotes {total_price} for {days} days, which is {result} per day.",
              "That's {result} a day ({total_price} from {company} over {days} days)."]),
    _compute("get_account_balance", "{balance} - {bill}", "bill=num:20:900:2<balance",
             ["If I pay a {bill} bill from account {account_id}, how much will be left?",
              "Account {account_id}: what remains after a payment of {bill}?"],
             ["And if I pay a {bill} bill from it, what's left?", "What would remain after paying {bill}?"],
             ["Account {account_id} holds {balance}; after paying {bill} it would have {result} left.",
              "{result} would be left in {account_id} ({balance} minus {bill})."]),
    _compute("invoice_status", "{amount_due} / {parts}", "parts=int:2:6",
             ["Invoice {invoice_id}: if we split it into {parts} equal payments, how much is each?",
              "How much would each of {parts} equal instalments be for invoice {invoice_id}?"],
             ["If we pay it in {parts} equal instalments, how much is each one?"],
             ["Invoice {invoice_id} has {amount_due} due; in {parts} equal payments that is {result} each.",
              "Each of the {parts} payments would be {result} (of {amount_due} due)."]),
    _compute("price_lookup", "{price} * (100 - {discount_percent}) / 100", "",
             ["What does {sku} cost once its discount is taken off?", "price of {sku} after the discount?"],
             ["So what's the price after the discount?", "What do I actually pay once the discount is off?"],
             ["{sku} is {price} with {discount_percent}% off, so you pay {result}.",
              "After the {discount_percent}% discount, {sku} costs {result}."]),
    _compute("price_lookup", "{price} * {quantity}", "quantity=int:2:40",
             ["How much would {quantity} units of {sku} cost at the list price?",
              "Look up {sku} and tell me what {quantity} of them come to."],
             ["What would {quantity} of them cost?", "And {quantity} units at that price?"],
             ["At {price} each, {quantity} units of {sku} cost {result}.",
              "{quantity} x {sku} comes to {result}."]),
    _compute("check_inventory", "{units_available} - {shipping}", "shipping=int:1:200<units_available",
             ["If we ship {shipping} units of {sku} from the {warehouse} warehouse, how many stay in stock?",
              "How many {sku} would be left after an order of {shipping} goes out?"],
             ["How many would be left after we send out {shipping}?"],
             ["There are {units_available} units of {sku}; after shipping {shipping}, {result} remain.",
              "{result} units of {sku} would stay in stock."]),
    _compute("nutrition_facts", "{calories} * {portions}", "portions=int:2:7",
             ["How many calories are in {portions} portions of {grams} g of {food}?",
              "I eat {grams} g of {food} {portions} times a week. How many calories is that in total?"],
             ["And for {portions} portions of that?", "What's that over {portions} servings?"],
             ["{grams} g of {food} has {calories} kcal, so {portions} portions have {result} kcal.",
              "That's {result} kcal in total ({calories} per portion)."]),
    _compute("player_stats", "{goals} / {appearances}", "",
             ["What was {player}'s goals-per-game rate in {season}?",
              "Work out how many goals per appearance {player} managed in the {season} season."],
             ["What's that per appearance?", "So how many goals per game is that?"],
             ["{player} scored {goals} goals in {appearances} appearances in {season}: {result} per game.",
              "That's {result} goals per appearance."]),
    _compute("parking_availability", "{hourly_rate} * {hours}", "hours=int:2:10",
             ["What would {hours} hours at {garage} cost?", "How much is parking at {garage} for {hours} hours?"],
             ["How much would {hours} hours there cost me?"],
             ["{garage} charges {hourly_rate} an hour, so {hours} hours cost {result}.",
              "{hours} hours at {garage} come to {result}."]),
    _compute("shipping_quote", "{price} * {parcels}", "parcels=int:2:12",
             ["Sending {parcels} parcels of {weight_kg} kg each to {postcode} by {service}: what's the total?",
              "What would {parcels} parcels of {weight_kg} kg to {postcode} cost altogether?"],
             ["What would sending {parcels} of those cost?"],
             ["One parcel costs {price}, so {parcels} come to {result}.",
              "{parcels} parcels to {postcode} cost {result} in total."]),
    _compute("meter_reading", "{kwh} * {rate}", "rate=num:0.1:0.6:2",
             ["Meter {meter_id} in {month}: at {rate} per kWh, what's the bill?",
              "Work out the electricity cost of meter {meter_id} at {rate} a kWh."],
             ["At {rate} per kWh, what does that usage cost?"],
             ["Meter {meter_id} used {kwh} kWh; at {rate} per kWh that is {result}.",
              "That usage costs {result} ({kwh} kWh at {rate})."]),
    _compute("disk_usage", "{free_gb} - {backup_gb}", "backup_gb=num:0.5:300:1<free_gb",
             ["If I copy a {backup_gb} GB backup onto {mount}, how much free space is left?",
              "Would {mount} still have room after a {backup_gb} GB backup? How much?"],
             ["How much space would remain after a {backup_gb} GB backup?"],
             ["{mount} has {free_gb} GB free; after {backup_gb} GB, {result} GB remain.",
              "{result} GB would still be free on {mount}."]),
    _compute("concert_dates", "{tickets_left} * {ticket_price}", "ticket_price=int:25:120",
             ["If {artist}'s remaining {city} tickets sell at {ticket_price} each, how much would they bring in?",
              "{artist} in {city}: what are the unsold tickets worth at {ticket_price} apiece?"],
             ["At {ticket_price} a ticket, what would the rest bring in?"],
             ["{tickets_left} tickets are left for {venue}; at {ticket_price} each that is {result}.",
              "The remaining tickets would bring in {result}."]),
    _compute("sequence_stats", "{length_bp} * {gc_percent} / 100", "",
             ["How many G or C bases does {sequence_id} have, going by its GC content?",
              "Estimate the GC base count of sequence {sequence_id}."],
             ["So how many bases is that GC share?"],
             ["{sequence_id} is {length_bp} bp at {gc_percent}% GC: about {result} G or C bases.",
              "About {result} of its bases are G or C."]),
    _compute("land_parcel_info", "{area_ha} * {price_per_ha}", "price_per_ha=int:2000:30000",
             ["At {price_per_ha} per hectare, what is parcel {parcel_id} worth?",
              "Value parcel {parcel_id} at {price_per_ha} a hectare."],
             ["At {price_per_ha} a hectare, what's it worth?"],
             ["Parcel {parcel_id} is {area_ha} ha; at {price_per_ha} per hectare that is {result}.",
              "It would be worth {result}."]),
    _compute("search_flights", "{fare} * {travellers}", "travellers=int:2:6",
             ["What would the cheapest flight from {origin} to {destination} on {date} cost for {travellers} people?",
              "{travellers} of us want to fly {origin} to {destination} on {date}. Cheapest total?"],
             ["How much for {travellers} of us on that flight?"],
             ["{flight} costs {fare} per person, so {travellers} people pay {result}.",
              "For {travellers} travellers, {flight} comes to {result}."]),
    _compute("student_grades", "{credits_needed} - {credits_completed}", "credits_needed=int:31:60",
             ["Student {student_id} needs {credits_needed} credits. How many are still missing after {term}?",
              "how many more credits does {student_id} need to reach {credits_needed}, as of the {term} term?"],
             ["How many more does the student need to reach {credits_needed}?"],
             ["{student_id} has completed {credits_completed} credits; {result} more are needed to reach "
              "{credits_needed}.", "{result} credits are still missing."]),
    _compute("leave_balance", "{days_remaining} - {planned}", "planned=int:1:12<days_remaining",
             ["Employee {employee_id} wants {planned} days of {leave_type} leave. How many would they have left?",
              "If {employee_id} takes {planned} days off, what's left of their leave?"],
             ["And if they take {planned} days off, how many remain?"],
             ["{employee_id} has {days_remaining} days of leave; after {planned} they would have {result} left.",
              "{result} days would be left."]),
    # a chain, then the formula
    _compute("product_search price_lookup", "{price} * (100 - {discount_percent}) / 100", "",
             ["Find a {query} and tell me what it costs after any discount.",
              "What would I pay for the top {query} match once its discount is applied?"],
             [], ["{sku} is listed at {price} with {discount_percent}% off: you pay {result}.",
                  "The {query} ({sku}) costs {result} after its discount."]),
    _compute("lookup_airport_code search_flights", "{fare} * {travellers}", "travellers=int:2:5",
             ["What would it cost {travellers} of us to fly from {city} to {destination} on {date}, cheapest option?",
              "Cheapest total for {travellers} people from {city} to {destination} on {date}?"],
             [], ["The cheapest is {flight} at {fare} each, so {travellers} people pay {result}.",
                  "{flight} from {origin}: {result} for {travellers} travellers."]),
    _compute("search_listings property_listing", "{price} * {deposit_percent} / 100", "deposit_percent=int:5:25",
             ["What's a {deposit_percent}% deposit on the cheapest home in {city} under {max_price}?",
              "Find the cheapest listing in {city} below {max_price} and work out a {deposit_percent}% deposit."],
             [], ["The cheapest, {listing_id}, costs {price}; a {deposit_percent}% deposit is {result}.",
                  "A {deposit_percent}% deposit on {listing_id} would be {result}."]),
    _compute("employee_lookup leave_balance", "{days_remaining} - {planned}", "planned=int:1:10<days_remaining",
             ["If {name} takes {planned} days of {leave_type} leave, how many will they have left?",
              "{name} is planning {planned} days off. How much leave remains after that?"],
             [], ["{name} ({employee_id}) has {days_remaining} days; after {planned} there are {result} left.",
                  "{result} days would remain for {name}."]),
)
"""Formulas over looked-up values."""


@dataclass(frozen=True)
class Compare:
    """Pick one of the two lookups by output `field`: the larger (`more`) or the smaller."""

    field: str
    more: bool
    asks: tuple[str, ...]
    answer: str  # {a}: the winner (its varied value), {va}; {b}, {vb}: the other
    tie: str  # {a}, {b}, {va}


@dataclass(frozen=True)
class Combine:
    """Add the two lookups' output `field`, or take the smaller from the larger (`add` False)."""

    field: str
    add: bool
    asks: tuple[str, ...]
    answer: str  # {x_1}, {v_1}, {x_2}, {v_2}, {result}


@dataclass(frozen=True)
class PairPattern:
    """The same family called twice in one reply, for two values of parameter `vary` ({vary_1}, {vary_2} in
    the requests); `both` asks for the two results as they are."""

    key: str
    vary: str
    both: tuple[str, ...]
    compare: Compare | None = None
    combine: Combine | None = None


def _pair(key: str, vary: str, both: list[str], compare: tuple[str, bool, list[str], str, str] | None = None,
          combine: tuple[str, bool, list[str], str] | None = None) -> PairPattern:
    c = Compare(compare[0], compare[1], tuple(compare[2]), compare[3], compare[4]) if compare else None
    s = Combine(combine[0], combine[1], tuple(combine[2]), combine[3]) if combine else None
    return PairPattern(key, vary, tuple(both), c, s)


PAIR_PATTERNS: tuple[PairPattern, ...] = (
    _pair("league_standings", "team", ["Where are {team_1} and {team_2} in the {league} table?"],
          ("points", True, ["Which has more points in the {league}, {team_1} or {team_2}?"],
           "{a} has more points: {va}, against {vb} for {b}.", "{a} and {b} are level on {va} points."),
          ("points", False, ["How many points separate {team_1} and {team_2} in the {league}?"],
           "{x_1} has {v_1} points and {x_2} has {v_2}: {result} points apart.")),
    _pair("bike_availability", "station", ["How many bikes are at {station_1} and at {station_2} right now?"],
          ("bikes", True, ["Where can I find more bikes, {station_1} or {station_2}?"],
           "{a} has more bikes: {va}, against {vb} at {b}.", "{a} and {b} both have {va} bikes."),
          ("bikes", True, ["How many bikes are free at {station_1} and {station_2} together?"],
           "{x_1} has {v_1} bikes and {x_2} has {v_2}: {result} in all.")),
    _pair("parking_availability", "garage", ["Check free spaces at {garage_1} and {garage_2}."],
          ("free_spaces", True, ["Which has more free spaces right now, {garage_1} or {garage_2}?"],
           "{a} has more room: {va} free spaces, against {vb} at {b}.", "{a} and {b} both have {va} spaces free."),
          ("free_spaces", True, ["How many parking spaces are free across {garage_1} and {garage_2}?"],
           "{x_1} has {v_1} free and {x_2} has {v_2}: {result} spaces together.")),
    _pair("game_server_status", "region", ["How are the {region_1} and {region_2} servers doing?"],
          ("ping_ms", False, ["Which region has the lower ping right now, {region_1} or {region_2}?"],
           "{a} has the lower ping: {va} ms, against {vb} ms in {b}.", "{a} and {b} both ping {va} ms."),
          ("players_online", True, ["How many players are online in {region_1} and {region_2} combined?"],
           "{x_1} has {v_1} players and {x_2} has {v_2}: {result} online together.")),
    _pair("check_inventory", "warehouse", ["Stock of {sku} in the {warehouse_1} and {warehouse_2} warehouses?"],
          ("units_available", True, ["Which warehouse has more {sku}, {warehouse_1} or {warehouse_2}?"],
           "The {a} warehouse has more: {va} units, against {vb} in {b}.", "{a} and {b} both hold {va} units."),
          ("units_available", True, ["How many {sku} do the {warehouse_1} and {warehouse_2} warehouses hold "
                                     "between them?"],
           "{x_1} has {v_1} and {x_2} has {v_2}: {result} units in total.")),
    _pair("course_info", "course_code", ["Tell me about courses {course_code_1} and {course_code_2}."],
          ("seats_left", True, ["Which course has more seats left, {course_code_1} or {course_code_2}?"],
           "{a} has more seats left: {va}, against {vb} in {b}.", "{a} and {b} both have {va} seats left."),
          ("credits", True, ["How many credits would {course_code_1} plus {course_code_2} give me?"],
           "{x_1} is worth {v_1} credits and {x_2} {v_2}: {result} credits together.")),
    _pair("player_stats", "player", ["Show me the {season} stats of {player_1} and {player_2}."],
          ("goals", True, ["Who scored more goals in {season}, {player_1} or {player_2}?"],
           "{a} scored more: {va} goals, against {vb} for {b}.", "{a} and {b} both scored {va} goals."),
          ("goals", True, ["How many goals did {player_1} and {player_2} score between them in {season}?"],
           "{x_1} scored {v_1} and {x_2} {v_2}: {result} goals together.")),
    _pair("star_lookup", "designation", ["Look up the stars {designation_1} and {designation_2}."],
          ("magnitude", False, ["Which looks brighter in the sky, {designation_1} or {designation_2}?"],
           "{a} is brighter: magnitude {va}, against {vb} for {b}.", "{a} and {b} are equally bright ({va}).")),
    _pair("disk_usage", "mount", ["How full are {mount_1} and {mount_2}?"],
          ("used_percent", True, ["Which is fuller, {mount_1} or {mount_2}?"],
           "{a} is fuller: {va}% used, against {vb}% on {b}.", "{a} and {b} are both {va}% used."),
          ("free_gb", True, ["How much free space do {mount_1} and {mount_2} have together?"],
           "{x_1} has {v_1} GB free and {x_2} has {v_2} GB: {result} GB in all.")),
    _pair("meter_reading", "month", ["Readings for meter {meter_id} in {month_1} and {month_2}?"],
          ("kwh", True, ["Did meter {meter_id} use more in {month_1} or in {month_2}?"],
           "More in {a}: {va} kWh, against {vb} kWh in {b}.", "The same in {a} and {b}: {va} kWh."),
          ("kwh", False, ["How much more did meter {meter_id} use in one of {month_1} and {month_2} than the "
                          "other?"],
           "{x_1}: {v_1} kWh, {x_2}: {v_2} kWh, a difference of {result} kWh.")),
    _pair("nutrition_facts", "food", ["Nutrition facts for {grams} g of {food_1} and of {food_2}?"],
          ("protein_g", True, ["Which has more protein per {grams} g, {food_1} or {food_2}?"],
           "{a} has more protein: {va} g, against {vb} g in {b}.", "{a} and {b} both have {va} g of protein."),
          ("calories", True, ["If I eat {grams} g of {food_1} and {grams} g of {food_2}, how many calories is "
                              "that?"],
           "{x_1} has {v_1} kcal and {x_2} {v_2} kcal: {result} kcal together.")),
    _pair("class_schedule", "class_type", ["When are the {class_type_1} and {class_type_2} classes on {date}?"],
          ("spots_left", True, ["Which class has more spots left on {date}, {class_type_1} or {class_type_2}?"],
           "{a} has more room: {va} spots, against {vb} for {b}.", "{a} and {b} both have {va} spots left.")),
    _pair("soil_moisture", "field_id", ["Check the soil in {field_id_1} and {field_id_2}."],
          ("moisture_percent", False, ["Which field is drier, {field_id_1} or {field_id_2}?"],
           "{a} is drier: {va}% moisture, against {vb}% in {b}.", "{a} and {b} both read {va}% moisture.")),
    _pair("get_account_balance", "account_id", ["What are the balances of {account_id_1} and {account_id_2}?"],
          ("balance", True, ["Which account holds more, {account_id_1} or {account_id_2}?"],
           "{a} holds more: {va}, against {vb} in {b}.", "{a} and {b} both hold {va}."),
          ("balance", True, ["What's the combined balance of {account_id_1} and {account_id_2}?"],
           "{x_1} holds {v_1} and {x_2} holds {v_2}: {result} together.")),
    _pair("device_status", "device_id", ["Are devices {device_id_1} and {device_id_2} online?"],
          ("battery_percent", False, ["Which needs charging first, {device_id_1} or {device_id_2}?"],
           "{a} has less battery: {va}%, against {vb}% for {b}.", "{a} and {b} are both at {va}%.")),
    _pair("get_flight_status", "flight", ["What are the gates of flights {flight_1} and {flight_2}?",
                                          "Are {flight_1} and {flight_2} on time?"]),
    _pair("order_details", "order_id", ["Where are orders {order_id_1} and {order_id_2} at?",
                                        "Status of {order_id_1} and {order_id_2}, please."]),
    _pair("employee_lookup", "name", ["Which departments are {name_1} and {name_2} in?"]),
)
"""The same tool twice in one reply."""


@dataclass(frozen=True)
class WordProblem:
    """A sum in everyday words: every number is in the request."""

    formula: str
    extras: tuple[tuple[str, str], ...]
    asks: tuple[str, ...]
    answers: tuple[str, ...]


def _problem(formula: str, extras: str, asks: list[str], answers: list[str]) -> WordProblem:
    pairs = tuple((n.strip(), g.strip()) for n, g in (e.split("=", 1) for e in extras.split(";")))
    return WordProblem(formula, pairs, tuple(asks), tuple(answers))


WORD_PROBLEMS: tuple[WordProblem, ...] = (
    _problem("{per_box} * {boxes}", "per_box=int:6:48; boxes=int:13:240",
             ["A carton holds {per_box} tins. How many tins fit in {boxes} cartons?",
              "We're packing {boxes} cartons with {per_box} tins each. How many tins is that?"],
             ["That's {result} tins.", "{boxes} cartons hold {result} tins."]),
    _problem("{laps} * {lap_m}", "laps=int:6:60; lap_m=int:250:1200",
             ["I ran {laps} laps of a {lap_m} m loop. How many metres is that?"],
             ["{laps} laps of {lap_m} m make {result} m.", "That's {result} metres."]),
    _problem("{a} + {b} + {c}", "a=num:5:400:2; b=num:5:400:2; c=num:5:400:2",
             ["I spent {a}, {b} and {c} on the move. What's the total?",
              "Receipts from the weekend: {a}, {b} and {c}. Add them up for me?"],
             ["Together that's {result}.", "The total is {result}."]),
    _problem("{km} / {litres}", "km=int:180:900; litres=num:12:70:1",
             ["My van did {km} km on {litres} litres. How many km per litre is that?"],
             ["That's {result} km per litre.", "{km} km on {litres} litres is {result} km/l."]),
    _problem("{ppm} * {minutes}", "ppm=int:12:60; minutes=int:15:240",
             ["The office printer does {ppm} pages a minute. How many pages in {minutes} minutes?"],
             ["It prints {result} pages in {minutes} minutes.", "That's {result} pages."]),
    _problem("{price} / {count}", "price=num:4:60:2; count=int:4:48",
             ["A pack of {count} batteries costs {price}. What does one battery cost?"],
             ["Each battery costs {result}.", "That's {result} per battery."]),
    _problem("{monthly} * {months}", "monthly=int:25:900; months=int:7:36",
             ["If I put {monthly} aside every month for {months} months, how much will I have saved?"],
             ["You'd have saved {result}.", "{months} months at {monthly} makes {result}."]),
    _problem("{capacity} - {used}", "capacity=int:800:20000; used=int:100:790",
             ["The rain barrel holds {capacity} litres and we've drawn off {used}. How much is left in it?"],
             ["{result} litres are left.", "There are {result} litres left."]),
    _problem("{kg} / {n}", "kg=num:6:40:1; n=int:6:30",
             ["A crate of {n} bottles weighs {kg} kg. How heavy is one bottle?"],
             ["Each bottle weighs {result} kg.", "That's {result} kg per bottle."]),
    _problem("{h1} + {h2} + {h3}", "h1=num:2:60:1; h2=num:2:60:1; h3=num:2:60:1",
             ["Our volunteers logged {h1}, {h2} and {h3} hours this week. How many hours in total?"],
             ["That's {result} hours in total.", "They logged {result} hours."]),
    _problem("{grams} * {loaves}", "grams=int:350:900; loaves=int:3:40",
             ["Each loaf takes {grams} g of flour. How much flour do {loaves} loaves need?"],
             ["{loaves} loaves need {result} g of flour.", "You'll need {result} g."]),
    _problem("{seats} * {rows}", "seats=int:12:48; rows=int:9:60",
             ["The hall has {rows} rows of {seats} chairs. How many chairs is that?"],
             ["There are {result} chairs.", "{rows} rows of {seats} make {result} chairs."]),
    _problem("{start} - {sold}", "start=int:300:5000; sold=int:40:290",
             ["We printed {start} flyers and handed out {sold}. How many are left?"],
             ["{result} flyers are left.", "You have {result} left."]),
)
"""Sums in everyday words."""
