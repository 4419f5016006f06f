"""Place domains: rail delays, air crews, hotels, lettings, vineyards, power plants, camping, water, weather, a port."""

from agentkit.sql.taskgen.spec import Col, Domain, Table

RAIL_DELAYS = Domain(
    name="rail_delays",
    about="A regional railway: its lines, the stations on each line and the delays reported at stations.",
    tables=(
        Table("rail_line", "line", (
            Col("line_name", "label", values=(
                "Coastal Line", "Valley Line", "Northern Loop", "Harbour Branch", "Airport Link", "Forest Line",
                "Lakeside Line", "Mountain Line", "Cross-City Line", "Orchard Branch"), phrase="name"),
            Col("train_operator", "category", values=("Regional Rail", "Metro Trains", "Coastal Railways"),
                phrase="operator"),
            Col("length_km", "measure", low=12, high=180, unit="real", phrase="route length in kilometres"),
            Col("electrified", "flag"),
        ), rows=10),
        Table("station", "station", (
            Col("station_name", "label", pool="place", phrase="name"),
            Col("line_id", "fk", ref="rail_line", phrase="line", optional_parent=0.1),
            Col("fare_zone", "category", values=("Zone 1", "Zone 2", "Zone 3", "Zone 4"), phrase="fare zone"),
            Col("opened_on", "date", low=1860, high=2020, phrase="opening date"),
            Col("platforms", "measure", low=1, high=8, unit="int", phrase="number of platforms"),
            Col("daily_passengers", "measure", low=200, high=45000, unit="int",
                phrase="average number of daily passengers"),
        ), rows=45),
        Table("delay_report", "delay report", (
            Col("station_id", "fk", ref="station", phrase="station", optional_parent=0.25),
            Col("reported_on", "date", low=2023, high=2024, phrase="report date"),
            Col("minutes_late", "measure", low=2, high=180, unit="int", phrase="delay in minutes"),
            Col("cause", "category", values=("signal fault", "weather", "staff shortage", "track works",
                                             "train fault"), case_variants=True),
            Col("remark", "text", pool="note", null_rate=0.4),
        ), rows=150),
    ),
)

AIRLINE_CREW = Domain(
    name="airline_crew",
    about="A short-haul airline's crew rostering: crew bases, crew members, flight legs and who was rostered on "
          "which leg.",
    style="camel",
    tables=(
        Table("crew_base", "crew base", (
            Col("base_name", "label", values=(
                "Lisbon", "Porto", "Lyon", "Bergen", "Krakow", "Seville", "Basel", "Cork", "Aarhus", "Bilbao"),
                phrase="name"),
            Col("opened_on", "date", low=1995, high=2022, phrase="opening date"),
            Col("aircraft_stands", "measure", low=4, high=30, unit="int", phrase="number of aircraft stands"),
        ), rows=10),
        Table("crew_member", "crew member", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("crew_base_id", "fk", ref="crew_base", phrase="home base", optional_parent=0.1),
            Col("crew_rank", "category", values=("cabin attendant", "purser", "first officer", "captain"),
                phrase="rank"),
            Col("birth_year", "birth_year", low=1962, high=2001),
            Col("hired_on", "date", low=2000, high=2024, phrase="hire date"),
            Col("flight_hours", "measure", low=300, high=22000, unit="int", phrase="logged flight time in hours"),
        ), rows=60),
        Table("flight_leg", "flight leg", (
            Col("flight_number", "label", pool="code", phrase="flight number"),
            Col("aircraft_type", "category", values=("A320", "A321", "B737-800", "E190", "ATR 72"),
                phrase="aircraft type"),
            Col("departs_on", "date", low=2023, high=2024, phrase="departure date"),
            Col("distance_km", "measure", low=180, high=3200, unit="int", phrase="distance in kilometres"),
            Col("passengers", "measure", low=40, high=220, unit="int", phrase="number of passengers"),
            Col("delay_minutes", "measure", low=1, high=240, unit="int", null_rate=0.4,
                phrase="departure delay in minutes"),
        ), rows=60),
        Table("crew_assignment", "crew assignment", (
            Col("crew_member_id", "fk", ref="crew_member", phrase="crew member"),
            Col("flight_leg_id", "fk", ref="flight_leg", phrase="flight leg"),
            Col("duty", "category", values=("operating", "positioning", "training"), phrase="duty type"),
        ), rows=150),
    ),
)

HOTEL_HOUSEKEEPING = Domain(
    name="hotel_housekeeping",
    about="Housekeeping at a small hotel group: hotels, their rooms and housekeepers, and every room cleaning.",
    tables=(
        Table("hotel", "hotel", (
            Col("name", "label", pool="place"),
            Col("city", "category", values=("Lisbon", "Seville", "Lyon", "Turin", "Split")),
            Col("stars", "measure", low=2, high=5, unit="int", phrase="star rating", additive=False),
            Col("opened_on", "date", low=1970, high=2021, phrase="opening date"),
        ), rows=8),
        Table("room", "room", (
            Col("room_number", "label", phrase="room number",
                values=tuple(f"{floor}{n:02d}" for floor in range(1, 8) for n in range(1, 13))),
            Col("hotel_id", "fk", ref="hotel", phrase="hotel", optional_parent=0.1),
            Col("room_type", "category", values=("double", "twin", "single", "suite", "family"),
                phrase="room type"),
            Col("floor_area", "measure", low=12, high=65, unit="real", phrase="floor area in square metres"),
            Col("nightly_rate", "measure", low=60, high=420, unit="money", phrase="nightly rate", additive=False),
            Col("refurbished_on", "date", low=2010, high=2024, null_rate=0.35, phrase="last refurbishment date"),
        ), rows=60),
        Table("housekeeper", "housekeeper", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("hotel_id", "fk", ref="hotel", phrase="hotel", optional_parent=0.1),
            Col("shift", "category", values=("early", "late", "night")),
            Col("birth_year", "birth_year", low=1965, high=2004),
            Col("weekly_hours", "measure", low=12, high=40, unit="int", phrase="weekly workload in hours"),
            Col("hourly_wage", "measure", low=11, high=19, unit="money", phrase="hourly wage", additive=False),
        ), rows=30),
        Table("cleaning", "cleaning", (
            Col("room_id", "fk", ref="room", phrase="room"),
            Col("housekeeper_id", "fk", ref="housekeeper", phrase="housekeeper"),
            Col("cleaned_on", "date", low=2023, high=2024, phrase="cleaning date"),
            Col("minutes", "measure", low=12, high=60, unit="int", phrase="time taken in minutes"),
            Col("kind", "category", values=("daily service", "checkout clean", "deep clean"),
                phrase="cleaning type"),
        ), rows=150),
    ),
)

LETTINGS = Domain(
    name="letting_agency",
    about="A letting agency: branches, their agents, the homes they manage, tenants and tenancy leases.",
    tables=(
        Table("branch", "branch", (
            Col("name", "label", pool="place"),
            Col("town", "category", values=("Leeds", "Cork", "Utrecht", "Ghent", "Aarhus")),
            Col("opened_on", "date", low=1990, high=2020, phrase="opening date"),
        ), rows=8),
        Table("agent", "agent", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("branch_id", "fk", ref="branch", phrase="branch", optional_parent=0.1),
            Col("birth_year", "birth_year", low=1965, high=2001),
            Col("hired_on", "date", low=2008, high=2024, phrase="hire date"),
            Col("base_salary", "measure", low=1900, high=4200, unit="money", phrase="monthly base salary",
                additive=False),
        ), rows=20),
        Table("property", "property", (
            Col("address", "label", pool="street"),
            Col("agent_id", "fk", ref="agent", phrase="managing agent", optional_parent=0.15),
            Col("property_type", "category", values=("flat", "terraced house", "semi-detached house", "studio",
                                                     "maisonette"), phrase="property type"),
            Col("bedrooms", "measure", low=1, high=5, unit="int", phrase="number of bedrooms"),
            Col("floor_area", "measure", low=25, high=180, unit="real", phrase="floor area in square metres"),
            Col("energy_rating", "category", values=("C", "D", "B", "E", "A"), phrase="energy rating"),
            Col("listed_on", "date", low=2015, high=2024, phrase="listing date"),
        ), rows=70, plural="properties"),
        Table("tenant", "tenant", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("birth_year", "birth_year", low=1950, high=2004),
            Col("occupation", "category", values=("employed", "student", "self-employed", "retired"),
                phrase="employment status"),
            Col("annual_income", "measure", low=15000, high=120000, unit="money", phrase="annual income"),
            Col("email", "text", pool="email", null_rate=0.3, phrase="email address"),
        ), rows=70),
        Table("lease", "lease", (
            Col("property_id", "fk", ref="property", phrase="property"),
            Col("tenant_id", "fk", ref="tenant", phrase="tenant"),
            Col("starts_on", "date", low=2019, high=2024, phrase="start date"),
            Col("monthly_rent", "measure", low=550, high=2800, unit="money", phrase="monthly rent"),
            Col("deposit", "measure", low=600, high=4000, unit="money", phrase="deposit"),
            Col("ended_on", "date", low=2020, high=2025, null_rate=0.45, phrase="end date"),
        ), rows=110),
    ),
)

VINEYARDS = Domain(
    name="vineyard_harvest",
    about="Grape harvests: vineyards, their parcels of vines, seasonal pickers and each picker's shifts on a "
          "parcel.",
    tables=(
        Table("vineyard", "vineyard", (
            Col("name", "label", pool="place"),
            Col("region", "category", values=("Douro", "Rioja", "Alsace", "Piedmont", "Mosel")),
            Col("founded_on", "date", low=1850, high=2010, phrase="founding date"),
            Col("cellar_capacity", "measure", low=20000, high=900000, unit="int",
                phrase="cellar capacity in litres", additive=False),
            Col("organic", "flag"),
        ), rows=10),
        Table("parcel", "parcel", (
            Col("parcel_code", "label", pool="code", phrase="parcel code"),
            Col("vineyard_id", "fk", ref="vineyard", phrase="vineyard", optional_parent=0.1),
            Col("grape", "category", values=("Riesling", "Tempranillo", "Touriga Nacional", "Nebbiolo",
                                             "Pinot Noir", "Chardonnay"), phrase="grape variety"),
            Col("area_ha", "measure", low=0.3, high=6.5, unit="real", phrase="area in hectares"),
            Col("planted_on", "date", low=1965, high=2020, phrase="planting date"),
        ), rows=50),
        Table("picker", "picker", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("birth_year", "birth_year", low=1960, high=2006),
            Col("home_country", "category", values=("Portugal", "Spain", "France", "Poland", "Italy"),
                phrase="home country"),
            Col("daily_wage", "measure", low=70, high=140, unit="money", phrase="daily wage", additive=False),
            Col("phone", "text", pool="phone", null_rate=0.35, phrase="phone number"),
        ), rows=40),
        Table("harvest_shift", "harvest shift", (
            Col("picker_id", "fk", ref="picker", phrase="picker"),
            Col("parcel_id", "fk", ref="parcel", phrase="parcel"),
            Col("worked_on", "date", low=2022, high=2024, phrase="work date"),
            Col("kg_picked", "measure", low=150, high=1200, unit="int", phrase="weight picked in kilograms"),
        ), rows=150),
    ),
)

POWER_PLANTS = Domain(
    name="power_plants",
    about="Electricity generation: power companies, their power plants, outages at the plants and engineers' "
          "maintenance visits.",
    tables=(
        Table("power_company", "power company", (
            Col("name", "label", values=(
                "Nordvind Power", "Iberia Renewables", "Alpine Hydro", "Baltic Grid Energy", "Sunfield Power",
                "Fjord Kraft", "Tagus Energia", "Danube Power", "Northsea Wind", "Green Valley Utilities",
                "Atlantic Generation", "Meseta Solar")),
            Col("country", "category", values=("Norway", "Spain", "Denmark", "Portugal", "Austria")),
            Col("listed_on", "date", low=1985, high=2020, phrase="stock listing date", null_rate=0.3),
        ), rows=10),
        Table("power_plant", "power plant", (
            Col("plant_name", "label", pool="place", phrase="name"),
            Col("power_company_id", "fk", ref="power_company", phrase="operating company", optional_parent=0.1),
            Col("source", "category", values=("wind", "solar", "hydro", "gas", "biomass"),
                phrase="energy source"),
            Col("capacity_mw", "measure", low=5, high=900, unit="real", phrase="capacity in megawatts", additive=False),
            Col("commissioned_on", "date", low=1975, high=2023, phrase="commissioning date"),
        ), rows=30),
        Table("engineer", "engineer", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("discipline", "category", values=("electrical", "mechanical", "control systems", "civil")),
            Col("birth_year", "birth_year", low=1962, high=2000),
            Col("certified_on", "date", low=2000, high=2024, phrase="certification date"),
        ), rows=25),
        Table("maintenance_visit", "maintenance visit", (
            Col("engineer_id", "fk", ref="engineer", phrase="engineer"),
            Col("power_plant_id", "fk", ref="power_plant", phrase="power plant"),
            Col("visited_on", "date", low=2022, high=2024, phrase="visit date"),
            Col("hours_on_site", "measure", low=1, high=12, unit="real", phrase="time on site in hours"),
        ), rows=120),
        Table("outage", "outage", (
            Col("power_plant_id", "fk", ref="power_plant", phrase="power plant", optional_parent=0.3),
            Col("began_on", "date", low=2022, high=2024, phrase="start date"),
            Col("duration_hours", "measure", low=0.5, high=72, unit="real", phrase="duration in hours"),
            Col("cause", "category", values=("equipment failure", "grid fault", "storm", "planned maintenance",
                                             "fuel supply")),
        ), rows=80),
    ),
)

CAMPGROUNDS = Domain(
    name="park_campgrounds",
    about="Camping in nature parks: the parks, their pitches, campers and pitch reservations.",
    style="camel",
    tables=(
        Table("park", "park", (
            Col("park_name", "label", pool="place", phrase="name"),
            Col("region", "category", values=("Highlands", "Coast", "Lakes", "Forest")),
            Col("area_km2", "measure", low=2, high=480, unit="real", phrase="area in square kilometres"),
            Col("established_on", "date", low=1950, high=2015, phrase="establishment date"),
        ), rows=9),
        Table("pitch", "pitch", (
            Col("pitch_code", "label", pool="code", phrase="pitch code"),
            Col("park_id", "fk", ref="park", phrase="park", optional_parent=0.1),
            Col("pitch_type", "category", values=("tent", "caravan", "motorhome", "cabin", "yurt"),
                case_variants=True, phrase="pitch type"),
            Col("max_guests", "measure", low=2, high=8, unit="int", phrase="guest limit", additive=False),
            Col("nightly_price", "measure", low=12, high=140, unit="money", phrase="nightly price", additive=False),
            Col("electric_hookup", "flag"),
        ), rows=60, plural="pitches"),
        Table("camper", "camper", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("birth_year", "birth_year", low=1948, high=2006),
            Col("home_country", "category", values=("Netherlands", "Germany", "France", "Denmark", "Belgium"),
                phrase="home country"),
            Col("first_visit_on", "date", low=2010, high=2024, phrase="first visit date"),
            Col("email", "text", pool="email", null_rate=0.3, phrase="email address"),
        ), rows=60),
        Table("reservation", "reservation", (
            Col("camper_id", "fk", ref="camper", phrase="camper"),
            Col("pitch_id", "fk", ref="pitch", phrase="pitch"),
            Col("arrives_on", "date", low=2023, high=2024, phrase="arrival date"),
            Col("nights", "measure", low=1, high=14, unit="int", phrase="number of nights"),
            Col("party_size", "measure", low=1, high=8, unit="int", phrase="party size"),
        ), rows=140),
    ),
)

WATER_MAINS = Domain(
    name="water_mains",
    about="A water utility's network: treatment plants, the water mains they feed, repair crews and leak reports.",
    tables=(
        Table("treatment_plant", "treatment plant", (
            Col("name", "label", pool="place"),
            Col("water_source", "category", values=("river", "reservoir", "groundwater", "lake"),
                phrase="water source"),
            Col("capacity_ml", "measure", low=5, high=400, unit="real", phrase="capacity in megalitres per day",
                additive=False),
            Col("built_on", "date", low=1930, high=2015, phrase="construction date"),
        ), rows=8),
        Table("water_main", "water main", (
            Col("asset_code", "label", pool="code", phrase="asset code"),
            Col("treatment_plant_id", "fk", ref="treatment_plant", phrase="treatment plant", optional_parent=0.1),
            Col("material", "category", values=("ductile iron", "PVC", "cast iron", "polyethylene", "steel"),
                phrase="pipe material"),
            Col("length_m", "measure", low=100, high=4000, unit="int", phrase="length in metres"),
            Col("diameter_mm", "measure", low=75, high=900, unit="int", phrase="diameter in millimetres",
                additive=False),
            Col("laid_on", "date", low=1920, high=2020, phrase="installation date"),
        ), rows=60),
        Table("repair_crew", "repair crew", (
            Col("crew_name", "label", values=(
                "North Crew", "South Crew", "East Crew", "West Crew", "River Crew", "Hill Crew", "Night Crew",
                "Harbour Crew", "Valley Crew", "Central Crew"), phrase="name"),
            Col("depot", "category", values=("Main Depot", "Riverside Depot", "Airport Depot")),
            Col("crew_size", "measure", low=3, high=8, unit="int", phrase="crew size"),
        ), rows=10),
        Table("leak_report", "leak report", (
            Col("water_main_id", "fk", ref="water_main", phrase="water main", optional_parent=0.3),
            Col("repair_crew_id", "fk", ref="repair_crew", phrase="repair crew"),
            Col("reported_on", "date", low=2022, high=2024, phrase="report date"),
            Col("loss_lph", "measure", low=20, high=5000, unit="real", phrase="water loss in litres per hour",
                additive=False),
            Col("severity", "category", values=("minor", "moderate", "major"), case_variants=True),
            Col("repaired_on", "date", low=2022, high=2024, null_rate=0.3, phrase="repair date"),
        ), rows=130),
    ),
)

WEATHER = Domain(
    name="weather_network",
    about="A network of weather stations: regions, stations, the volunteer observers at each station and daily "
          "observations.",
    style="camel",
    tables=(
        Table("region", "region", (
            Col("region_name", "label", values=(
                "Western Isles", "Central Plain", "High Plateau", "River Delta", "Northern Fells", "South Coast",
                "Lake District", "Eastern Hills"), phrase="name"),
            Col("climate", "category", values=("oceanic", "continental", "alpine", "mediterranean"),
                phrase="climate type"),
        ), rows=8),
        Table("station", "station", (
            Col("station_name", "label", pool="place", phrase="name"),
            Col("region_id", "fk", ref="region", phrase="region", optional_parent=0.1),
            Col("upkeep_cost", "measure", low=800, high=15000, unit="money", phrase="annual upkeep cost"),
            Col("elevation_m", "measure", low=0, high=2800, unit="int", phrase="elevation in metres", additive=False),
            Col("installed_on", "date", low=1950, high=2020, phrase="installation date"),
            Col("automated", "flag"),
        ), rows=24),
        Table("observer", "observer", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("station_id", "fk", ref="station", phrase="station", optional_parent=0.3),
            Col("birth_year", "birth_year", low=1945, high=2000),
            Col("joined_on", "date", low=1995, high=2024, phrase="start date"),
            Col("email", "text", pool="email", null_rate=0.25, phrase="email address"),
        ), rows=30),
        Table("observation", "observation", (
            Col("station_id", "fk", ref="station", phrase="station", optional_parent=0.15),
            Col("observed_on", "date", low=2023, high=2024, phrase="observation date"),
            Col("rainfall_mm", "measure", low=0.2, high=60, unit="real", null_rate=0.25,
                phrase="rainfall in millimetres"),
            Col("max_temp_c", "measure", low=-8, high=36, unit="real", phrase="daily maximum temperature in Celsius",
                additive=False),
            Col("wind_kmh", "measure", low=0, high=110, unit="int", phrase="gust speed in km/h", additive=False),
            Col("sky", "category", values=("partly cloudy", "overcast", "clear", "rain", "fog", "snow"),
                phrase="sky condition"),
        ), rows=150),
    ),
)

CONTAINER_PORT = Domain(
    name="container_port",
    about="A container port: shipping lines, their vessels, the port's berths and each vessel's calls at a berth.",
    style="camel",
    tables=(
        Table("shipping_line", "shipping line", (
            Col("line_name", "label", values=(
                "Nordic Star Line", "Blue Anchor Shipping", "Meridian Container Lines", "Atlas Ocean Carriers",
                "Coral Bay Shipping", "Polar Express Lines", "Harbor Crest Maritime", "Trident Box Lines",
                "Silver Wake Shipping", "Eastwind Container Line", "Compass Rose Lines", "Iron Keel Maritime"),
                phrase="name"),
            Col("headquarters", "category", values=("Denmark", "Switzerland", "France", "Germany", "Norway"),
                phrase="headquarters country"),
            Col("fleet_size", "measure", low=8, high=600, unit="int", phrase="fleet size"),
        ), rows=10),
        Table("vessel", "vessel", (
            Col("vessel_name", "label", pool="place", phrase="name"),
            Col("shipping_line_id", "fk", ref="shipping_line", phrase="shipping line", optional_parent=0.1),
            Col("flag_state", "category", values=("Panama", "Liberia", "Malta", "Marshall Islands", "Singapore"),
                phrase="flag state"),
            Col("gross_tonnage", "measure", low=8000, high=220000, unit="int", phrase="gross tonnage"),
            Col("built_on", "date", low=1998, high=2023, phrase="delivery date"),
        ), rows=40),
        Table("berth", "berth", (
            Col("berth_name", "label", values=tuple(f"Berth {n}" for n in range(1, 13)), phrase="name"),
            Col("terminal", "category", values=("North Terminal", "South Terminal", "Bulk Terminal")),
            Col("depth_m", "measure", low=9, high=18, unit="real", phrase="water depth in metres", additive=False),
            Col("cranes", "measure", low=1, high=6, unit="int", phrase="number of cranes"),
        ), rows=12),
        Table("port_call", "port call", (
            Col("vessel_id", "fk", ref="vessel", phrase="vessel"),
            Col("berth_id", "fk", ref="berth", phrase="berth"),
            Col("arrived_on", "date", low=2023, high=2024, phrase="arrival date"),
            Col("containers", "measure", low=50, high=4500, unit="int", phrase="number of containers handled"),
            Col("hours_alongside", "measure", low=6, high=96, unit="real", phrase="time alongside in hours"),
            Col("delay_hours", "measure", low=1, high=48, unit="real", null_rate=0.4,
                phrase="waiting time at anchor in hours"),
        ), rows=130),
    ),
)

DOMAINS = (RAIL_DELAYS, AIRLINE_CREW, HOTEL_HOUSEKEEPING, LETTINGS, VINEYARDS, POWER_PLANTS, CAMPGROUNDS, WATER_MAINS,
           WEATHER, CONTAINER_PORT)
