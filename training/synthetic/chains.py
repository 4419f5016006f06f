"""Chains of calls: the result of one call gives the next call's argument, an id or name to look up next
(a customer id, then their orders) or a measured number to work with (a meter's kWh, then what that usage
costs).

A `ChainPattern` links two families: output `field` of the first call's result is argument `param` of the
second call. The user names only what the first call needs (and the second call's other arguments), so
the linked value can only come from the first result; a linked number is never one the request writes.
Its `follows` ask for the second call later in a chat, after a turn that made the first ("And their
orders?", "What does that usage cost?"). A `LongChain` runs three or four linked calls.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentkit.training.synthetic.families import BY_KEY


@dataclass(frozen=True)
class ChainPattern:
    """A two-call pattern: output `field` of `first`'s result is argument `param` of the `second` call
    (and the first call's arguments or result values named in `same` are passed on unchanged, such as a
    meter's tariff). `first_names`/`second_names` are the tool names (aliases) the two families appear under;
    `follows` ask for the second call in a later chat turn, naming only the second call's other arguments."""

    first: str
    field: str
    second: str
    param: str
    asks: tuple[str, ...]
    same: tuple[str, ...] = ()
    follows: tuple[str, ...] = ()

    def passed(self, args: Mapping[str, Any], outs: Mapping[str, Any]) -> dict[str, Any]:
        """The second call's arguments that the first call (its `args`, its result's `outs`) gives: the linked
        result value, and each `same` value (the first call's argument of that name, else its result's)."""
        return {self.param: outs[self.field], **{k: args[k] if k in args else outs[k] for k in self.same}}

    @property
    def first_names(self) -> tuple[str, ...]:
        """Every name the first tool is offered under."""
        return BY_KEY[self.first].names

    @property
    def second_names(self) -> tuple[str, ...]:
        """Every name the second tool is offered under."""
        return BY_KEY[self.second].names


def _chain(link: str, asks: list[str], same: tuple[str, ...] = (), follows: tuple[str, ...] = ()) -> ChainPattern:
    """`link` as "first.field -> second.param"."""
    a, b = (s.strip().split(".") for s in link.split("->"))
    return ChainPattern(a[0], a[1], b[0], b[1], tuple(asks), same, follows)


VALUE_CHAINS: tuple[ChainPattern, ...] = (
    _chain("meter_reading.kwh -> energy_cost.kwh",
           ["What did the electricity on meter {meter_id} cost? Read the meter, then price the usage.",
            "Read meter {meter_id} for {month} and tell me what that usage costs on its tariff.",
            "get the kWh for meter {meter_id}, then work out the cost",
            "How much is the {month} electricity bill for meter {meter_id}?"],
           same=("tariff",),
           follows=("What does that usage cost?", "And how much is that on its tariff?",
                    "ok, and what will that cost?")),
    _chain("soil_moisture.moisture_percent -> irrigation_plan.moisture_percent",
           ["Check the soil moisture in field {field_id}, then tell me how much water it needs.",
            "How much should I irrigate {field_id}? Read its moisture sensor first.",
            "read the sensor in {field_id} and plan the irrigation to bring it up to {target_percent}%",
            "Field {field_id}: get the soil moisture and make an irrigation plan to reach {target_percent}%."],
           same=("field_id",),
           follows=("How much water does it need?", "Plan the irrigation for that field.",
                    "Make an irrigation plan to get it to {target_percent}%.")),
    _chain("elevation_at.elevation_m -> boiling_point_at.altitude_m",
           ["What's the boiling point of water at {latitude}, {longitude}? Look up the elevation first.",
            "find the ground elevation at {latitude},{longitude} and tell me where water boils up there",
            "I'm camping at {latitude}, {longitude}. Check the elevation, then how low the boiling point is there.",
            "At lat {latitude} lon {longitude}, what's the air pressure and the boiling point of water?"],
           follows=("And at what point does water boil up there?", "What's the boiling point at that altitude?")),
    _chain("nutrition_facts.calories -> calorie_burn.calories",
           ["How many minutes of {activity} burn off {grams} g of {food}?",
            "Look up the calories in {grams} g of {food}, then tell me how long it takes to burn them off {activity}.",
            "{grams}g of {food}: find the calories and how many minutes of {activity} that is",
            "If I eat {grams} grams of {food}, how long do I have to go {activity} to burn it off?"],
           follows=("How long would I need to spend {activity} to burn that off?",
                    "And how many minutes of {activity} is that?")),
    _chain("package_info.weight_kg -> shipping_quote.weight_kg",
           ["What would it cost to ship the parcel of order {order_id} to {postcode}?",
            "Find how heavy order {order_id}'s parcel is, then get a {service} shipping quote to {postcode}.",
            "look up the package weight for {order_id} and quote shipping it to {postcode} by {service}",
            "How much to send order {order_id}'s parcel to postcode {postcode}, and how long will it take?"],
           follows=("How much to ship it to {postcode}?", "Get me a {service} quote to {postcode} for that parcel.")),
)
"""The chains that pass a measured number (a usage, a moisture, an elevation, calories, a weight) from the first
result to the second call, a tool that works something out from it."""
CHAIN_PATTERNS: tuple[ChainPattern, ...] = (
    _chain("find_customer.customer_id -> list_orders.customer_id",
           ["Find the customer with email {email} and list their orders.",
            "How many orders does {email} have? Look up the customer first.",
            "get the customer id for {email}, then show their {status} orders"],
           follows=("And how many {status} orders do they have?", "ok, and their orders?",
                    "Show me that customer's orders.")),
    _chain("find_customer.customer_id -> get_credit_score.customer_id",
           ["What's the credit score of the customer with email {email}?",
            "Look up {email} and then check their credit score."],
           follows=("What's their credit score?", "and the credit score for that customer?")),
    _chain("list_orders.latest_order -> order_details.order_id",
           ["What's the status of the latest order of customer {customer_id}?",
            "Customer {customer_id}: find their most recent order and tell me if it has shipped."],
           follows=("Has the most recent one shipped?", "What's the status of that latest order?")),
    _chain("order_details.tracking_number -> track_shipment.tracking_number",
           ["Where is the parcel for order {order_id} right now?", "Track the shipment of order {order_id}.",
            "when will order {order_id} arrive? find its tracking number and track it"],
           follows=("Where's that parcel right now?", "Can you track it for me?")),
    _chain("lookup_airport_code.code -> airport_delays.airport",
           ["Are there delays at the airport in {city}?", "how are departures from {city}'s airport doing today",
            "Find {city}'s airport code, then check its delays."],
           follows=("Any delays there at the moment?", "How are departures at that airport doing?")),
    _chain("lookup_airport_code.code -> search_flights.origin",
           ["Find me a flight from {city} to {destination} on {date}.",
            "I'm in {city} and need to get to {destination} on {date}, {cabin} class. Cheapest flight?"],
           follows=("Find me the cheapest flight from there to {destination} on {date}.",)),
    _chain("product_search.sku -> check_inventory.sku",
           ["Do we have any {query} in stock? Find the product, then check inventory.",
            "search for {query} and check how many units are in the {warehouse} warehouse"],
           follows=("How many of those are in the {warehouse} warehouse?", "Do we have that one in stock?")),
    _chain("latest_commit.author -> employee_lookup.name",
           ["Who made the last commit to {repo}, and which department are they in?",
            "find the author of the latest commit on {branch} in {repo} and look them up in the staff directory"],
           follows=("Which department is that person in?", "Look the author up in the staff directory.")),
    _chain("employee_lookup.employee_id -> leave_balance.employee_id",
           ["How much {leave_type} leave does {name} have left?", "Find {name} and check their leave balance."],
           follows=("How much {leave_type} leave do they have left?", "And their leave balance?")),
    _chain("employee_lookup.employee_id -> get_manager.employee_id",
           ["Who is {name}'s manager?", "Find employee {name} and tell me who they report to."],
           follows=("Who do they report to?", "Who's their manager?")),
    _chain("get_manager.manager -> find_free_slot.person",
           ["When can I meet the manager of {employee_id} for {duration_min} minutes on {date}?",
            "Find who manages {employee_id} and a {duration_min}-minute slot with them on {date}."],
           follows=("Find me a {duration_min}-minute slot with that manager on {date}.",)),
    _chain("search_catalogue.isbn -> reserve_book.isbn",
           ["Reserve '{title}' for member {member_id}.", "find the book {title} and place a hold for {member_id}"],
           follows=("Put it on hold for member {member_id}, please.", "Reserve it for {member_id}.")),
    _chain("find_recipe.recipe_id -> recipe_ingredients.recipe_id",
           ["Find a {dish} recipe and tell me what goes in it.",
            "What ingredients do I need for a {vegetarian} {dish}?"],
           follows=("What goes into it?", "What ingredients does it need for {servings} people?")),
    _chain("search_tracks.track_id -> add_to_playlist.track_id",
           ["Add the top song by {artist} to my {playlist} playlist.",
            "find a {genre} track by {artist} and put it on {playlist}"],
           follows=("Add it to my {playlist} playlist.", "Put that track on {playlist}.")),
    _chain("search_files.first_match -> file_info.path",
           ["Find the first {pattern} file in {directory} and tell me how big it is.",
            "Search {directory} for {pattern} and show the metadata of the first match."],
           follows=("How big is the first match?", "Who owns that first file?")),
    _chain("list_pull_requests.latest_pr -> ci_status.pr_number",
           ["Is CI passing on the latest pull request in {repo}?",
            "check the build of the newest {state} PR in {repo}"],
           same=("repo",),
           follows=("Is CI green on the newest one?", "And the build status of the latest PR?")),
    _chain("search_tickets.latest_ticket -> ticket_status.ticket_id",
           ["What's the status of {customer_email}'s most recent ticket?",
            "Find the latest {open_only} ticket of {customer_email} and tell me who's on it."],
           follows=("Who's working on the latest one?", "What's the status of the most recent ticket?")),
    _chain("find_device.device_id -> device_status.device_id",
           ["Is the {device_type} in the {room} online?", "What's the battery of the {room} {device_type}?"],
           follows=("Is it online?", "How's its battery?")),
    _chain("find_stop.stop_id -> next_departures.stop_id",
           ["When's the next departure from the stop nearest {street}?", "next {mode} near {street}?"],
           follows=("When's the next {mode} from that stop?", "What leaves from there next?")),
    _chain("registration_lookup.vin -> recall_check.vin",
           ["Does the car with plate {plate} have open recalls?", "Check plate {plate} for recalls."],
           follows=("Any open recalls on it?", "Check that VIN for recalls.")),
    _chain("registration_lookup.vin -> vin_decode.vin",
           ["What make and year is the car with plate {plate}?", "plate {plate}: what kind of car is it?"],
           follows=("What make and year is it?", "Decode that VIN for me.")),
    _chain("restaurant_search.restaurant -> book_table.restaurant",
           ["Find a {cuisine} restaurant in {city} and book a table for {party_size} on {date} at {time}.",
            "Book us a {cuisine} place in {city}, {party_size} people, {date} {time}."],
           follows=("Book it for {party_size} on {date} at {time}.",
                    "Great, get us a table there for {party_size}, {date} at {time}.")),
    _chain("search_listings.cheapest_listing -> property_listing.listing_id",
           ["Find the cheapest home in {city} under {max_price} and give me its details.",
            "What's the cheapest {bedrooms}-bedroom listing in {city} below {max_price}, and is it still for sale?"],
           follows=("Tell me more about the cheapest one.", "Is the cheapest one still for sale?")),
    _chain("dns_lookup.ip -> ip_owner.ip", ["Who owns the IP that {hostname} resolves to?",
                                            "resolve {hostname} and tell me which network it's on"],
           follows=("Who owns that address?", "Which network is that IP on?")),
    _chain("search_flights.flight -> get_flight_status.flight",
           ["Find the cheapest flight from {origin} to {destination} on {date} and tell me its gate.",
            "Is the cheapest {origin}-{destination} flight on {date} on time?"],
           same=("date",), follows=("What gate does that flight leave from?", "Is that flight on time?")),
    _chain("ticket_status.assignee -> employee_lookup.name",
           ["Which department is the person handling ticket {ticket_id} in?",
            "Who is assigned ticket {ticket_id}, and what's their employee ID?"],
           follows=("Which department is that person in?", "Look up whoever is assigned in the staff directory.")),
    _chain("product_search.sku -> price_lookup.sku",
           ["Find a {query} and check whether it's discounted.", "what does the top {query} match cost right now?"],
           follows=("Is there a discount on it?", "What's its current price?")),
    _chain("list_orders.latest_order -> package_info.order_id",
           ["How heavy is the latest order of customer {customer_id}?",
            "Customer {customer_id}: find their most recent {status} order and tell me how big its parcel is."],
           follows=("How heavy is the parcel of the latest one?", "What's packed in that latest order?")),
    *VALUE_CHAINS,
)
"""Every two-call chain: the ones that pass an id or a name, then `VALUE_CHAINS`."""
CHAIN_PAIRS = {(c.first, c.second) for c in CHAIN_PATTERNS}
"""The (first, second) family keys of every chain."""
LINKS = {(c.first, c.second): c for c in CHAIN_PATTERNS}
"""Each chain by its (first, second) family keys."""


@dataclass(frozen=True)
class LongChain:
    """Three or four calls in a row, each taking an argument from the result before it (`keys`: the
    families in order, each consecutive pair a `ChainPattern`). The user names only the first call's
    arguments and the later calls' unlinked ones."""

    keys: tuple[str, ...]
    asks: tuple[str, ...]

    @property
    def links(self) -> tuple[ChainPattern, ...]:
        """The chain of each consecutive pair of calls."""
        return tuple(LINKS[pair] for pair in itertools.pairwise(self.keys))


LONG_CHAINS: tuple[LongChain, ...] = tuple(LongChain(tuple(keys.split()), tuple(asks)) for keys, asks in (
    ("find_customer list_orders order_details",
     ["What's the status of the most recent {status} order of {email}?",
      "Has the latest order from the customer with email {email} shipped yet?",
      "customer {email}: which carrier has their newest order?"]),
    ("list_orders order_details track_shipment",
     ["Where is the latest order of customer {customer_id} right now?",
      "When will customer {customer_id}'s most recent order arrive?"]),
    ("find_customer list_orders order_details track_shipment",
     ["Where's the most recent order of {email} at the moment?",
      "The customer {email} is asking when their last order arrives. Can you find out?"]),
    ("latest_commit employee_lookup get_manager",
     ["Who manages the person who made the last commit to {repo}?",
      "find who pushed the latest commit on {branch} in {repo}, and tell me their manager's email"]),
    ("latest_commit employee_lookup leave_balance",
     ["How much {leave_type} leave does the author of the latest commit on {branch} in {repo} have left?",
      "Is whoever made the last commit to {repo} out of leave days?"]),
    ("employee_lookup get_manager find_free_slot",
     ["Find a {duration_min}-minute slot on {date} with {name}'s manager.",
      "I need {duration_min} minutes with the person {name} reports to on {date}. When are they free?"]),
    ("search_tickets ticket_status employee_lookup",
     ["Which department is handling the latest ticket from {customer_email}?",
      "Who is working on {customer_email}'s most recent ticket, and what's their employee ID?"]),
    ("ticket_status employee_lookup get_manager",
     ["Who's the manager of whoever is assigned ticket {ticket_id}?",
      "Ticket {ticket_id} is stuck. Who does its assignee report to?"]),
    ("list_orders package_info shipping_quote",
     ["Customer {customer_id}'s latest order has to go to postcode {postcode}. What would shipping it cost?",
      "What would it cost to ship customer {customer_id}'s most recent {status} order to {postcode} by {service}?"]),
    ("find_customer list_orders package_info shipping_quote",
     ["The customer {email} wants their latest order sent on to postcode {postcode}. What would that cost?",
      "How much would {service} shipping to {postcode} be for the most recent {status} order of {email}?"]),
    ("lookup_airport_code search_flights get_flight_status",
     ["I'm taking the cheapest flight from {city} to {destination} on {date}. Which gate does it leave from?",
      "Is the cheapest {cabin} flight from {city} to {destination} on {date} on time?"]),
))
"""Three- and four-call chains (the last link of the `package_info shipping_quote` ones passes a weight)."""
