"""Culture domains: museum, music festival, film, library, board games, theatre, lab, choir, newsroom, podcasts."""

from agentkit.sql.taskgen.spec import Col, Domain, Table

MUSEUM = Domain(
    name="museum_collection",
    about="An art museum: its curators, galleries, artists, the artworks on display and the artworks lent to "
          "exhibitions elsewhere.",
    tables=(
        Table("curator", "curator", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("birth_year", "birth_year", low=1955, high=1996),
            Col("specialism", "category", values=("paintings", "sculpture", "photography", "textiles")),
            Col("appointed_on", "date", low=2004, high=2023, phrase="appointment date"),
        ), rows=10),
        Table("gallery", "gallery", (
            Col("gallery_name", "label", values=(
                "East Hall", "Garden Court", "Long Gallery", "Octagon Room", "Print Room", "Sculpture Court",
                "Tower Gallery", "Blue Salon", "North Wing", "Lantern Room", "Cloister Gallery", "Modern Wing",
                "Red Salon"), phrase="name"),
            Col("curator_id", "fk", ref="curator", phrase="curator", optional_parent=0.2),
            Col("floor", "category", values=("ground", "first", "second")),
            Col("floor_area", "measure", low=60, high=900, unit="int", phrase="floor area in square meters"),
            Col("refurbished_on", "date", low=2000, high=2024, null_rate=0.3, phrase="refurbishment date"),
        ), rows=12),
        Table("artist", "artist", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("nationality", "category", values=("Dutch", "French", "Spanish", "Italian", "Norwegian", "Japanese")),
            Col("movement", "category", values=("Impressionism", "Baroque", "Modernism", "Realism", "Abstraction")),
        ), rows=20),
        Table("artwork", "artwork", (
            Col("title", "label", pool="title"),
            Col("artist_id", "fk", ref="artist", phrase="artist"),
            Col("gallery_id", "fk", ref="gallery", phrase="gallery", optional_parent=0.1),
            Col("medium", "category", values=("oil on canvas", "watercolour", "bronze", "marble", "photograph"),
                case_variants=True),
            Col("insured_value", "measure", low=5000, high=2500000, unit="money", phrase="insured value"),
            Col("height_cm", "measure", low=10, high=400, unit="real", phrase="height in centimeters"),
            Col("acquired_on", "date", low=1955, high=2024, phrase="acquisition date"),
            Col("provenance", "text", values=("gift", "bequest", "purchase at auction", "transfer"), null_rate=0.4),
        ), rows=90),
        Table("exhibition", "exhibition", (
            Col("exhibition_title", "label", pool="title", phrase="title"),
            Col("host_city", "category", values=("Lyon", "Turin", "Basel", "Leeds", "Krakow"), phrase="host city"),
            Col("opens_on", "date", low=2018, high=2024, phrase="opening date"),
            Col("visitors", "measure", low=4000, high=250000, unit="int", null_rate=0.2,
                phrase="number of visitors"),
        ), rows=14),
        Table("artwork_loan", "loan", (
            Col("artwork_id", "fk", ref="artwork", phrase="artwork", optional_parent=0.4),
            Col("exhibition_id", "fk", ref="exhibition", phrase="exhibition"),
            Col("shipped_on", "date", low=2018, high=2024, phrase="shipping date"),
            Col("insurance_fee", "measure", low=200, high=40000, unit="money", phrase="insurance fee"),
        ), rows=80),
    ),
)

FESTIVAL = Domain(
    name="music_festival",
    about="A summer music festival: booking agencies, stages, the acts, their performances on each stage and "
          "the volunteers who work the stages.",
    tables=(
        Table("agency", "booking agency", (
            Col("agency_name", "label", pool="company", phrase="name"),
            Col("country", "category", values=("England", "Netherlands", "Sweden", "Spain", "Belgium")),
            Col("commission_rate", "measure", low=5, high=20, unit="real", phrase="commission rate in percent",
                additive=False),
            Col("signed_on", "date", low=2012, high=2023, phrase="contract date"),
        ), rows=10),
        Table("stage", "stage", (
            Col("stage_name", "label", values=(
                "Main Stage", "Forest Stage", "Big Top", "Lakeside", "Club Dome", "Acoustic Barn", "Sunset Deck",
                "Hangar", "Orchard Tent"), phrase="name"),
            Col("stage_type", "category", values=("open air", "tent", "indoor"), phrase="stage type"),
            Col("capacity", "measure", low=500, high=40000, unit="int", phrase="capacity", additive=False),
            Col("sponsor", "text", pool="company", null_rate=0.4),
        ), rows=9),
        Table("act", "act", (
            Col("act_name", "label", pool="title", phrase="name"),
            Col("agency_id", "fk", ref="agency", phrase="booking agency", optional_parent=0.1),
            Col("genre", "category", values=("rock", "electronic", "folk", "hip hop", "jazz", "pop")),
            Col("home_country", "category", values=("England", "Netherlands", "Sweden", "Spain", "Belgium",
                                                    "Ireland"), phrase="home country"),
            Col("fee", "measure", low=2000, high=250000, unit="money", phrase="booking fee"),
            Col("members", "measure", low=1, high=9, unit="int", phrase="number of members"),
        ), rows=40),
        Table("performance", "performance", (
            Col("act_id", "fk", ref="act", phrase="act"),
            Col("stage_id", "fk", ref="stage", phrase="stage", optional_parent=0.0),
            Col("performed_on", "date", low=2022, high=2024, phrase="performance date"),
            Col("set_minutes", "measure", low=30, high=120, unit="int", phrase="set length in minutes"),
            Col("crowd_estimate", "measure", low=200, high=35000, unit="int", null_rate=0.3,
                phrase="estimated crowd size"),
        ), rows=110),
        Table("volunteer", "volunteer", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("stage_id", "fk", ref="stage", phrase="stage", optional_parent=0.1),
            Col("birth_year", "birth_year", low=1960, high=2006),
            Col("task", "category", values=("bar", "security", "cleaning", "info desk", "first aid"),
                case_variants=True),
            Col("shifts_worked", "measure", low=1, high=8, unit="int", phrase="number of shifts worked"),
        ), rows=50),
    ),
)

FILM = Domain(
    name="film_production",
    about="An independent film producer: studios, the films they make, performers cast in them and the "
          "location shoots.",
    tables=(
        Table("studio", "studio", (
            Col("studio_name", "label", pool="company", phrase="name"),
            Col("country", "category", values=("France", "Italy", "Ireland", "Denmark", "Czechia")),
            Col("soundstages", "measure", low=1, high=14, unit="int", phrase="number of soundstages"),
        ), rows=10),
        Table("film", "film", (
            Col("title", "label", pool="title"),
            Col("studio_id", "fk", ref="studio", phrase="studio", optional_parent=0.1),
            Col("genre", "category", values=("drama", "comedy", "thriller", "documentary", "animation", "horror")),
            Col("budget", "measure", low=500000, high=120000000, unit="money"),
            Col("shoot_start", "date", low=2015, high=2024, phrase="shooting start date"),
            Col("runtime_minutes", "measure", low=80, high=180, unit="int", null_rate=0.3,
                phrase="runtime in minutes"),
        ), rows=30),
        Table("performer", "performer", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("birth_year", "birth_year", low=1940, high=2005),
            Col("union_membership", "category", values=("Equity", "SAG-AFTRA", "none"), phrase="union"),
            Col("agent_name", "text", pool="person", null_rate=0.3, phrase="agent"),
        ), rows=20),
        Table("casting", "casting", (
            Col("film_id", "fk", ref="film", phrase="film"),
            Col("performer_id", "fk", ref="performer", phrase="performer"),
            Col("role_size", "category", values=("supporting", "lead", "cameo", "voice"), phrase="role size"),
            Col("fee", "measure", low=2000, high=900000, unit="money", null_rate=0.2),
            Col("signed_on", "date", low=2014, high=2024, phrase="signing date"),
        ), rows=100),
        Table("location_shoot", "location shoot", (
            Col("film_id", "fk", ref="film", phrase="film"),
            Col("shot_on", "date", low=2015, high=2024, phrase="shooting date"),
            Col("location", "category", values=("Dublin", "Prague", "Seville", "Copenhagen", "Trieste")),
            Col("hours", "measure", low=4, high=16, unit="real", phrase="number of hours on set"),
            Col("crew_size", "measure", low=8, high=120, unit="int", phrase="crew size"),
        ), rows=100),
    ),
)

LIBRARY = Domain(
    name="public_library",
    about="A city's public library: its branches, the patrons registered at each, the catalogue items and the "
          "loans of items to patrons.",
    tables=(
        Table("branch", "branch", (
            Col("branch_name", "label", pool="place", phrase="name"),
            Col("district", "category", values=("Centre", "Riverside", "Northgate", "Eastfield")),
            Col("opened_on", "date", low=1960, high=2019, phrase="opening date"),
            Col("weekly_hours", "measure", low=20, high=70, unit="int", phrase="number of opening hours per week",
                additive=False),
        ), rows=8),
        Table("patron", "patron", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("branch_id", "fk", ref="branch", phrase="home branch", optional_parent=0.0),
            Col("birth_year", "birth_year", low=1940, high=2016),
            Col("membership", "category", values=("adult", "child", "senior", "student"),
                phrase="membership type"),
            Col("joined_on", "date", low=2005, high=2024, phrase="join date"),
            Col("email", "text", pool="email", null_rate=0.35),
        ), rows=60),
        Table("catalog_item", "item", (
            Col("title", "label", pool="title"),
            Col("item_format", "category", values=("book", "audiobook", "DVD", "magazine", "e-book"),
                phrase="format"),
            Col("pages", "measure", low=24, high=900, unit="int", null_rate=0.3, phrase="number of pages"),
            Col("replacement_cost", "measure", low=4, high=85, unit="money", phrase="replacement cost"),
            Col("acquired_on", "date", low=2000, high=2024, phrase="acquisition date"),
        ), rows=20),
        Table("loan", "loan", (
            Col("patron_id", "fk", ref="patron", phrase="patron", optional_parent=0.3),
            Col("catalog_item_id", "fk", ref="catalog_item", phrase="item"),
            Col("borrowed_on", "date", low=2022, high=2024, phrase="borrowing date"),
            Col("days_kept", "measure", low=1, high=60, unit="int", phrase="number of days kept"),
            Col("renewals", "measure", low=0, high=3, unit="int", phrase="number of renewals"),
        ), rows=120),
    ),
)

BOARD_GAMES = Domain(
    name="board_game_club",
    about="A board-game club: game publishers, the games on its shelves, its members and the play sessions "
          "with their winners.",
    style="camel",
    tables=(
        Table("publisher", "publisher", (
            Col("publisher_name", "label", pool="company", phrase="name"),
            Col("country", "category", values=("Germany", "France", "Poland", "Italy", "Czechia")),
            Col("games_in_print", "measure", low=5, high=220, unit="int", phrase="number of games in print"),
        ), rows=10),
        Table("board_game", "game", (
            Col("title", "label", pool="title"),
            Col("publisher_id", "fk", ref="publisher", phrase="publisher", optional_parent=0.1),
            Col("mechanic", "category", values=("worker placement", "deck building", "area control",
                                                "cooperative", "party game"), phrase="main mechanic"),
            Col("play_minutes", "measure", low=15, high=240, unit="int", phrase="playing time in minutes"),
            Col("complexity", "measure", low=1.0, high=4.8, unit="real", phrase="complexity rating", additive=False),
            Col("bought_on", "date", low=2012, high=2024, phrase="purchase date"),
        ), rows=30),
        Table("member", "member", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("birth_year", "birth_year", low=1960, high=2008),
            Col("experience", "category", values=("regular", "beginner", "veteran"), phrase="experience level"),
            Col("joined_on", "date", low=2012, high=2024, phrase="joining date"),
            Col("phone", "text", pool="phone", null_rate=0.3, phrase="phone number"),
        ), rows=20),
        Table("play_session", "play session", (
            Col("board_game_id", "fk", ref="board_game", phrase="game"),
            Col("member_id", "fk", ref="member", phrase="winner"),
            Col("played_on", "date", low=2022, high=2024, phrase="play date"),
            Col("player_count", "measure", low=2, high=6, unit="int", phrase="number of players"),
            Col("duration_minutes", "measure", low=10, high=300, unit="int", null_rate=0.25,
                phrase="duration in minutes"),
            Col("venue", "category", values=("club room", "cafe", "online")),
        ), rows=140),
    ),
)

THEATRE = Domain(
    name="theatre_company",
    about="A touring theatre company: playwrights, venues, the plays it stages, its actors, who is cast in "
          "which play and every performance.",
    style="camel",
    tables=(
        Table("playwright", "playwright", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("nationality", "category", values=("Irish", "British", "French", "Norwegian", "Polish")),
            Col("birth_year", "birth_year", low=1935, high=1995),
        ), rows=12),
        Table("venue", "venue", (
            Col("venue_name", "label", pool="place", phrase="name"),
            Col("city", "category", values=("Cork", "Leeds", "Bergen", "Nantes")),
            Col("seats", "measure", low=120, high=1800, unit="int", phrase="seating capacity", additive=False),
        ), rows=8),
        Table("play", "play", (
            Col("title", "label", pool="title"),
            Col("playwright_id", "fk", ref="playwright", phrase="playwright", optional_parent=0.2),
            Col("genre", "category", values=("drama", "comedy", "musical", "tragedy")),
            Col("running_minutes", "measure", low=70, high=190, unit="int", phrase="running time in minutes"),
            Col("premiered_on", "date", low=1995, high=2024, phrase="premiere date"),
        ), rows=30),
        Table("actor", "actor", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("birth_year", "birth_year", low=1950, high=2004),
            Col("training", "category", values=("drama school", "conservatory", "self-taught")),
            Col("agent_phone", "text", pool="phone", null_rate=0.35, phrase="agent's phone number"),
        ), rows=20),
        Table("casting", "casting", (
            Col("actor_id", "fk", ref="actor", phrase="actor"),
            Col("play_id", "fk", ref="play", phrase="play"),
            Col("part", "category", values=("ensemble", "supporting", "lead", "understudy")),
            Col("weekly_fee", "measure", low=400, high=3500, unit="money", phrase="weekly fee"),
            Col("signed_on", "date", low=2018, high=2024, phrase="contract date"),
        ), rows=80),
        Table("performance", "performance", (
            Col("play_id", "fk", ref="play", phrase="play", optional_parent=0.3),
            Col("venue_id", "fk", ref="venue", phrase="venue", optional_parent=0.0),
            Col("performed_on", "date", low=2022, high=2024, phrase="performance date"),
            Col("tickets_sold", "measure", low=50, high=1800, unit="int", phrase="number of tickets sold"),
            Col("box_office", "measure", low=900, high=72000, unit="money", phrase="box office takings"),
            Col("audience_rating", "measure", low=2.0, high=5.0, unit="real", null_rate=0.3,
                phrase="audience rating", additive=False),
        ), rows=140),
    ),
)

LAB = Domain(
    name="research_lab",
    about="A research institute: its teams, scientists, shared instruments, the experiments run on them and "
          "the analyses of each experiment's samples.",
    tables=(
        Table("research_team", "team", (
            Col("team_name", "label", values=(
                "Catalysis", "Soil Microbiology", "Protein Folding", "Optics", "Battery Materials",
                "Neuroimaging", "Polymer Chemistry", "Marine Ecology", "Quantum Sensors", "Genomics"),
                phrase="name"),
            Col("building", "category", values=("Building A", "Building B", "Annex")),
            Col("funded_since", "date", low=2008, high=2022, phrase="funding start date"),
            Col("annual_budget", "measure", low=150000, high=2500000, unit="money", phrase="annual budget"),
        ), rows=10),
        Table("scientist", "scientist", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("research_team_id", "fk", ref="research_team", phrase="team", optional_parent=0.0),
            Col("birth_year", "birth_year", low=1955, high=2000),
            Col("career_stage", "category", values=("PhD student", "postdoc", "staff scientist", "group leader"),
                phrase="career stage"),
            Col("started_on", "date", low=2008, high=2024, phrase="start date"),
        ), rows=35),
        Table("instrument", "instrument", (
            Col("instrument_name", "label", values=(
                "Orbitrap MS-1", "Orbitrap MS-2", "Confocal Scope C1", "Confocal Scope C2", "Cryo-EM Titan",
                "NovaSeq 6000", "MiSeq Bench", "HPLC Line 1", "HPLC Line 2", "Ultracentrifuge U4",
                "Raman Rig", "FTIR Bench", "Plate Reader P3", "GC-MS Unit", "X-Ray Diffractometer"),
                phrase="name"),
            Col("instrument_type", "category", values=("spectrometer", "microscope", "sequencer", "centrifuge",
                                                       "chromatograph"), phrase="instrument type"),
            Col("purchased_on", "date", low=2010, high=2024, phrase="purchase date"),
            Col("cost_per_hour", "measure", low=15, high=400, unit="money", phrase="cost per hour", additive=False),
        ), rows=14),
        Table("experiment", "experiment", (
            Col("experiment_code", "label", pool="code", phrase="experiment code"),
            Col("scientist_id", "fk", ref="scientist", phrase="lead scientist"),
            Col("instrument_id", "fk", ref="instrument", phrase="instrument", optional_parent=0.1),
            Col("started_on", "date", low=2021, high=2024, phrase="start date"),
            Col("duration_hours", "measure", low=1, high=96, unit="real", phrase="duration in hours"),
            Col("sample_count", "measure", low=3, high=96, unit="int", phrase="number of samples"),
            Col("outcome", "category", values=("success", "partial", "failed", "inconclusive"), case_variants=True),
            Col("lab_note", "text", pool="note", null_rate=0.4, phrase="lab note"),
        ), rows=120),
        Table("analysis", "analysis", (
            Col("experiment_id", "fk", ref="experiment", phrase="experiment", optional_parent=0.3),
            Col("method", "category", values=("PCR", "imaging", "titration", "mass spectrometry", "sequencing")),
            Col("run_on", "date", low=2021, high=2024, phrase="analysis date"),
            Col("run_minutes", "measure", low=5, high=240, unit="int", phrase="run time in minutes"),
            Col("measured_value", "measure", low=0, high=100, unit="real", null_rate=0.3, phrase="measured value"),
        ), rows=140, plural="analyses"),
    ),
)

ENSEMBLE = Domain(
    name="choir_and_orchestra",
    about="A community choir and orchestra: its sections, musicians and singers, conductors, concerts and who "
          "appeared in each concert.",
    tables=(
        Table("ensemble_section", "section", (
            Col("section_name", "label", values=(
                "Strings", "Woodwinds", "Brass", "Percussion", "Keyboards", "Sopranos", "Altos", "Tenors",
                "Basses"), phrase="name"),
            Col("ensemble", "category", values=("orchestra", "choir")),
            Col("rehearsal_day", "category", values=("Tuesday", "Wednesday", "Thursday"), phrase="rehearsal day"),
        ), rows=9),
        Table("musician", "musician", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("ensemble_section_id", "fk", ref="ensemble_section", phrase="section", optional_parent=0.0),
            Col("birth_year", "birth_year", low=1945, high=2007),
            Col("joined_on", "date", low=1998, high=2024, phrase="joining date"),
            Col("annual_dues", "measure", low=60, high=240, unit="money", phrase="annual dues"),
            Col("email", "text", pool="email", null_rate=0.3),
        ), rows=45),
        Table("conductor", "conductor", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("birth_year", "birth_year", low=1948, high=1992),
            Col("nationality", "category", values=("Belgian", "Dutch", "German", "Finnish")),
        ), rows=8),
        Table("concert", "concert", (
            Col("concert_title", "label", pool="title", phrase="title"),
            Col("conductor_id", "fk", ref="conductor", phrase="conductor", optional_parent=0.1),
            Col("venue_city", "category", values=("Ghent", "Utrecht", "Aarhus", "Tartu"), phrase="city"),
            Col("performed_on", "date", low=2019, high=2024, phrase="concert date"),
            Col("tickets_sold", "measure", low=80, high=1400, unit="int", phrase="number of tickets sold"),
            Col("ticket_price", "measure", low=8, high=65, unit="money", phrase="ticket price", additive=False),
        ), rows=16),
        Table("appearance", "appearance", (
            Col("musician_id", "fk", ref="musician", phrase="musician", optional_parent=0.1),
            Col("concert_id", "fk", ref="concert", phrase="concert", optional_parent=0.0),
            Col("rehearsal_hours", "measure", low=2, high=30, unit="real", null_rate=0.25,
                phrase="number of rehearsal hours"),
            Col("travel_allowance", "measure", low=0, high=120, unit="money", phrase="travel allowance"),
        ), rows=150),
    ),
)

_HEADLINES = tuple(f"{subject} {event}" for subject in (
    "Harbour", "City Council", "Old Town", "University", "Rail Line", "Hospital", "Stadium", "Museum",
    "Bridge", "Market", "Airport") for event in (
    "Plan Approved", "Faces Delays", "Reopens", "Budget Cut", "Wins Award", "Under Review", "Expands",
    "Sees Record Crowds", "Closes Early", "Gets New Director"))

NEWSROOM = Domain(
    name="city_newsroom",
    about="A city newspaper's newsroom: desks, reporters, the articles they publish and the corrections printed "
          "afterwards.",
    style="camel",
    tables=(
        Table("desk", "desk", (
            Col("desk_name", "label", values=(
                "Politics", "Business", "Sport", "Culture", "Science", "Local", "World", "Opinion",
                "Technology"), phrase="name"),
            Col("edition", "category", values=("print and web", "web only")),
            Col("founded_on", "date", low=1985, high=2020, phrase="founding date"),
            Col("freelance_budget", "measure", low=5000, high=90000, unit="money", phrase="freelance budget"),
        ), rows=9),
        Table("reporter", "reporter", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("desk_id", "fk", ref="desk", phrase="desk", optional_parent=0.0),
            Col("birth_year", "birth_year", low=1958, high=2002),
            Col("contract", "category", values=("staff", "freelance", "intern"), phrase="contract type"),
            Col("hired_on", "date", low=2000, high=2024, phrase="hire date"),
        ), rows=30),
        Table("article", "article", (
            Col("headline", "label", values=_HEADLINES),
            Col("reporter_id", "fk", ref="reporter", phrase="reporter", optional_parent=0.1),
            Col("published_on", "date", low=2022, high=2024, phrase="publication date"),
            Col("word_count", "measure", low=250, high=3500, unit="int", phrase="word count"),
            Col("page_views", "measure", low=500, high=400000, unit="int", null_rate=0.2,
                phrase="number of page views"),
            Col("placement", "category", values=("inside pages", "web only", "front page")),
        ), rows=100),
        Table("correction", "correction", (
            Col("article_id", "fk", ref="article", phrase="article", optional_parent=0.6),
            Col("issued_on", "date", low=2022, high=2024, phrase="correction date"),
            Col("error_type", "category", values=("typo", "wrong name", "factual error", "legal"),
                phrase="error type"),
        ), rows=40),
    ),
)

PODCASTS = Domain(
    name="podcast_network",
    about="A podcast network: hosts, their podcasts, the episodes released, advertisers and their sponsorships "
          "of podcasts.",
    style="camel",
    tables=(
        Table("host", "host", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("birth_year", "birth_year", low=1965, high=2002),
            Col("city", "category", values=("Lisbon", "Leeds", "Oslo", "Turin", "Cork")),
        ), rows=16),
        Table("podcast", "podcast", (
            Col("podcast_title", "label", pool="title", phrase="title"),
            Col("host_id", "fk", ref="host", phrase="host", optional_parent=0.1),
            Col("genre", "category", values=("true crime", "comedy", "news", "science", "business", "history")),
            Col("launched_on", "date", low=2014, high=2024, phrase="launch date"),
            Col("subscribers", "measure", low=800, high=400000, unit="int", phrase="number of subscribers"),
        ), rows=30),
        Table("episode", "episode", (
            Col("episode_title", "label", pool="title", phrase="title"),
            Col("podcast_id", "fk", ref="podcast", phrase="podcast", optional_parent=0.1),
            Col("released_on", "date", low=2020, high=2024, phrase="release date"),
            Col("length_minutes", "measure", low=12, high=140, unit="int", phrase="length in minutes"),
            Col("downloads", "measure", low=200, high=90000, unit="int", phrase="number of downloads"),
            Col("guest_name", "text", pool="person", null_rate=0.5, phrase="guest"),
        ), rows=140),
        Table("advertiser", "advertiser", (
            Col("advertiser_name", "label", pool="company", phrase="name"),
            Col("industry", "category", values=("software", "beverages", "finance", "travel", "fitness")),
        ), rows=12),
        Table("sponsorship", "sponsorship", (
            Col("advertiser_id", "fk", ref="advertiser", phrase="advertiser"),
            Col("podcast_id", "fk", ref="podcast", phrase="podcast"),
            Col("started_on", "date", low=2020, high=2024, phrase="start date"),
            Col("monthly_fee", "measure", low=300, high=12000, unit="money", phrase="monthly fee"),
            Col("ad_slot", "category", values=("mid-roll", "pre-roll", "post-roll"), phrase="ad slot"),
        ), rows=45),
    ),
)

DOMAINS = (MUSEUM, FESTIVAL, FILM, LIBRARY, BOARD_GAMES, THEATRE, LAB, ENSEMBLE, NEWSROOM, PODCASTS)
