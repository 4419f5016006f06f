"""People domains: blood donors, music school, hiring, permits, cycling, home care, grants, volunteers, gym, dentist."""

from agentkit.sql.taskgen.spec import Col, Domain, Table

BLOOD_DONATION = Domain(
    name="blood_donation",
    about="A regional blood service: donation centres, the nurses who work there, registered donors and their "
          "donations.",
    tables=(
        Table("donation_centre", "donation centre", (
            Col("name", "label", pool="place"),
            Col("city", "category", values=("Leeds", "Cork", "Ghent", "Tartu", "Brno")),
            Col("opened_on", "date", low=1985, high=2020, phrase="opening date"),
            Col("donor_beds", "measure", low=4, high=24, unit="int", phrase="number of donor beds"),
        ), rows=10),
        Table("nurse", "nurse", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("centre_id", "fk", ref="donation_centre", phrase="donation centre", optional_parent=0.1),
            Col("pay_band", "category", values=("Band 5", "Band 6", "Band 7"), phrase="pay band"),
            Col("hired_on", "date", low=2005, high=2024, phrase="hire date"),
            Col("birth_year", "birth_year", low=1962, high=2000),
        ), rows=28),
        Table("donor", "donor", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("blood_type", "category", values=("O+", "A+", "B+", "O-", "A-", "AB+"), phrase="blood type"),
            Col("birth_year", "birth_year", low=1955, high=2006),
            Col("registered_on", "date", low=2010, high=2024, phrase="registration date"),
            Col("weight_kg", "measure", low=50, high=115, unit="real", phrase="body weight in kilograms",
                additive=False),
            Col("phone", "text", pool="phone", null_rate=0.3, phrase="phone number"),
        ), rows=70),
        Table("donation", "donation", (
            Col("donor_id", "fk", ref="donor", phrase="donor"),
            Col("nurse_id", "fk", ref="nurse", phrase="nurse"),
            Col("donated_on", "date", low=2021, high=2024, phrase="donation date"),
            Col("kind", "category", values=("whole blood", "plasma", "platelets"), phrase="donation type"),
            Col("volume_ml", "measure", low=250, high=500, unit="int", phrase="volume in millilitres"),
        ), rows=140),
    ),
)

MUSIC_SCHOOL = Domain(
    name="music_school",
    about="A community music school: the instruments it teaches, its teachers, pupils and weekly lessons.",
    style="camel",
    tables=(
        Table("instrument", "instrument", (
            Col("instrument_name", "label", values=(
                "Piano", "Violin", "Cello", "Guitar", "Flute", "Clarinet", "Trumpet", "Drums", "Saxophone", "Harp",
                "Viola", "Oboe"), phrase="name"),
            Col("family", "category", values=("strings", "woodwind", "brass", "keyboard", "percussion"),
                phrase="instrument family"),
            Col("rental_fee", "measure", low=15, high=90, unit="money", phrase="monthly rental fee"),
        ), rows=12),
        Table("teacher", "teacher", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("instrument_id", "fk", ref="instrument", phrase="main instrument", optional_parent=0.25),
            Col("hired_on", "date", low=2008, high=2024, phrase="hire date"),
            Col("weekly_hours", "measure", low=4, high=38, unit="int", phrase="weekly teaching load in hours"),
            Col("hourly_rate", "measure", low=28, high=75, unit="money", phrase="hourly rate", additive=False),
            Col("birth_year", "birth_year", low=1958, high=1998),
        ), rows=20),
        Table("pupil", "pupil", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("birth_year", "birth_year", low=2004, high=2018),
            Col("practice_minutes", "measure", low=30, high=600, unit="int",
                phrase="weekly practice time in minutes"),
            Col("joined_on", "date", low=2016, high=2024, phrase="enrolment date"),
            Col("guardian_email", "text", pool="email", null_rate=0.35, phrase="guardian email"),
        ), rows=75),
        Table("lesson", "lesson", (
            Col("pupil_id", "fk", ref="pupil", phrase="pupil"),
            Col("teacher_id", "fk", ref="teacher", phrase="teacher"),
            Col("weekday", "category", values=("Monday", "Tuesday", "Wednesday", "Thursday", "Saturday")),
            Col("minutes", "measure", low=30, high=60, unit="int", phrase="lesson length in minutes"),
            Col("started_on", "date", low=2019, high=2024, phrase="start date"),
        ), rows=120),
    ),
)

RECRUITMENT = Domain(
    name="recruitment_pipeline",
    about="A company's hiring pipeline: its offices, the job openings they post, candidates and their interviews.",
    tables=(
        Table("office", "office", (
            Col("name", "label", pool="place"),
            Col("region", "category", values=("North", "South", "East", "West", "Central")),
            Col("opened_on", "date", low=1995, high=2021, phrase="opening date"),
            Col("desks", "measure", low=20, high=400, unit="int", phrase="number of desks"),
        ), rows=9),
        Table("job_opening", "job opening", (
            Col("title", "label", values=(
                "Data Analyst", "Backend Developer", "Frontend Developer", "Payroll Officer", "Sales Manager",
                "Warehouse Supervisor", "HR Business Partner", "Product Designer", "Accountant", "Legal Counsel",
                "Marketing Coordinator", "Customer Support Lead", "DevOps Engineer", "Procurement Specialist",
                "Office Manager", "Recruiter", "QA Engineer", "Financial Controller", "Content Writer",
                "Security Analyst", "Project Manager", "Logistics Planner", "Receptionist", "Data Engineer"),
                phrase="job title"),
            Col("office_id", "fk", ref="office", phrase="office", optional_parent=0.1),
            Col("contract", "category", values=("permanent", "fixed-term", "part-time", "internship"),
                case_variants=True, phrase="contract type"),
            Col("advertised_salary", "measure", low=32000, high=120000, unit="money", phrase="advertised salary",
                additive=False),
            Col("posted_on", "date", low=2022, high=2024, phrase="posting date"),
        ), rows=24),
        Table("candidate", "candidate", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("birth_year", "birth_year", low=1965, high=2003),
            Col("source", "category", values=("job board", "referral", "agency", "career fair", "company website"),
                phrase="application source"),
            Col("expected_salary", "measure", low=28000, high=110000, unit="money", phrase="expected salary",
                additive=False),
            Col("email", "text", pool="email", null_rate=0.3, phrase="email address"),
        ), rows=70),
        Table("interview", "interview", (
            Col("candidate_id", "fk", ref="candidate", phrase="candidate"),
            Col("job_opening_id", "fk", ref="job_opening", phrase="job opening"),
            Col("held_on", "date", low=2023, high=2024, phrase="interview date"),
            Col("stage", "category", values=("phone screen", "technical", "on-site", "final"),
                phrase="interview stage"),
            Col("duration_minutes", "measure", low=20, high=180, unit="int", phrase="interview length in minutes"),
            Col("rating", "measure", low=1, high=10, unit="int", phrase="interviewer rating", additive=False),
        ), rows=130),
    ),
)

BUILDING_PERMITS = Domain(
    name="building_permits",
    about="A city's building control office: districts, its inspectors, permit applications and site inspections.",
    tables=(
        Table("district", "district", (
            Col("name", "label", pool="place"),
            Col("population", "measure", low=8000, high=95000, unit="int"),
            Col("area_km2", "measure", low=2, high=60, unit="real", phrase="area in square kilometres"),
            Col("zoning", "category", values=("residential", "mixed", "industrial", "historic"),
                phrase="main zoning"),
        ), rows=12),
        Table("inspector", "inspector", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("district_id", "fk", ref="district", phrase="district", optional_parent=0.3),
            Col("speciality", "category", values=("structural", "electrical", "fire safety", "plumbing")),
            Col("hired_on", "date", low=2000, high=2024, phrase="hire date"),
            Col("birth_year", "birth_year", low=1960, high=1998),
        ), rows=18),
        Table("permit", "permit", (
            Col("permit_number", "label", pool="code", phrase="permit number"),
            Col("district_id", "fk", ref="district", phrase="district"),
            Col("work_type", "category", values=("renovation", "extension", "new build", "demolition",
                                                 "change of use"), phrase="work type"),
            Col("applied_on", "date", low=2020, high=2024, phrase="application date"),
            Col("fee", "measure", low=80, high=4500, unit="money", phrase="application fee"),
            Col("decided_on", "date", low=2021, high=2024, null_rate=0.3, phrase="decision date"),
        ), rows=90),
        Table("inspection", "inspection", (
            Col("permit_id", "fk", ref="permit", phrase="permit", optional_parent=0.3),
            Col("inspector_id", "fk", ref="inspector", phrase="inspector"),
            Col("inspected_on", "date", low=2021, high=2024, phrase="inspection date"),
            Col("outcome", "category", values=("passed", "failed", "deferred"), case_variants=True),
        ), rows=140),
    ),
)

CYCLING = Domain(
    name="pro_cycling",
    about="A professional cycling season: teams, their riders, the one-day races and each rider's result.",
    tables=(
        Table("team", "team", (
            Col("name", "label", pool="company"),
            Col("home_country", "category", values=("France", "Italy", "Belgium", "Spain", "Netherlands"),
                phrase="home country"),
            Col("annual_budget", "measure", low=2_000_000, high=40_000_000, unit="money", phrase="annual budget"),
            Col("founded_on", "date", low=1975, high=2020, phrase="founding date"),
        ), rows=12),
        Table("rider", "rider", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("team_id", "fk", ref="team", phrase="team", optional_parent=0.1),
            Col("nationality", "category", values=("French", "Italian", "Belgian", "Spanish", "Dutch", "Danish",
                                                   "Colombian")),
            Col("birth_year", "birth_year", low=1985, high=2004),
            Col("career_wins", "measure", low=0, high=40, unit="int", phrase="number of career wins"),
            Col("weight_kg", "measure", low=55, high=82, unit="real", phrase="weight in kilograms", additive=False),
            Col("turned_pro_on", "date", low=2005, high=2023, phrase="professional debut date"),
        ), rows=60),
        Table("race", "race", (
            Col("name", "label", values=(
                "Tour of the Fjords", "Grand Prix of Lyon", "Alpine Classic", "Coastal Sprint",
                "Three Valleys Challenge", "Harbour Criterium", "Ardennes Loop", "Iron Hill Classic",
                "Baltic Coast Race", "Seville Circuit", "Northern Cobbles", "Golden Coast Trophy",
                "Misty Mountain Climb", "Lakeside Time Trial", "Pine Ridge Classic", "Danube Cup"), phrase="name"),
            Col("terrain", "category", values=("flat", "hilly", "mountain", "cobbled", "time trial")),
            Col("distance_km", "measure", low=12, high=260, unit="real", phrase="distance in kilometres"),
            Col("held_on", "date", low=2022, high=2024, phrase="race date"),
            Col("prize_money", "measure", low=20000, high=800000, unit="money", phrase="prize fund"),
        ), rows=16),
        Table("race_result", "result", (
            Col("rider_id", "fk", ref="rider", phrase="rider"),
            Col("race_id", "fk", ref="race", phrase="race"),
            Col("points", "measure", low=0, high=120, unit="int", phrase="points tally"),
            Col("gap_seconds", "measure", low=0, high=1800, unit="int", null_rate=0.25,
                phrase="time gap in seconds", additive=False),
        ), rows=150),
    ),
)

HOME_CARE = Domain(
    name="home_care",
    about="Home care for older people: care agencies, their caregivers, clients and the visits made to them.",
    tables=(
        Table("agency", "agency", (
            Col("name", "label", values=(
                "Helping Hands Care", "Silver Years Homecare", "Kind Hearts Care", "Hearthside Home Care",
                "Meadow View Care", "Comfort at Home", "Evergreen Care Services", "Brightday Carers",
                "Willow Lane Care", "Harbour Home Support")),
            Col("region", "category", values=("North", "South", "Coast", "Valley")),
            Col("registered_on", "date", low=1995, high=2020, phrase="registration date"),
            Col("inspection_score", "measure", low=40, high=100, unit="int", phrase="inspection score", additive=False),
        ), rows=9),
        Table("caregiver", "caregiver", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("agency_id", "fk", ref="agency", phrase="agency", optional_parent=0.1),
            Col("qualification", "category", values=("care certificate", "level 2 diploma", "level 3 diploma",
                                                     "registered nurse")),
            Col("birth_year", "birth_year", low=1962, high=2002),
            Col("weekly_hours", "measure", low=8, high=45, unit="int", phrase="weekly workload in hours"),
            Col("hourly_rate", "measure", low=12.5, high=26, unit="money", phrase="hourly rate", additive=False),
            Col("started_on", "date", low=2012, high=2024, phrase="start date"),
        ), rows=40),
        Table("client", "client", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("birth_year", "birth_year", low=1928, high=1962),
            Col("care_level", "category", values=("low", "medium", "high", "complex"), case_variants=True,
                phrase="care level"),
            Col("weekly_hours", "measure", low=2, high=30, unit="int", phrase="weekly care allowance in hours"),
            Col("allergy", "text", values=("penicillin", "nuts", "latex", "shellfish", "aspirin", "pollen"),
                null_rate=0.45, phrase="known allergy"),
        ), rows=55),
        Table("visit", "visit", (
            Col("caregiver_id", "fk", ref="caregiver", phrase="caregiver"),
            Col("client_id", "fk", ref="client", phrase="client"),
            Col("visited_on", "date", low=2023, high=2024, phrase="visit date"),
            Col("minutes", "measure", low=15, high=90, unit="int", phrase="visit length in minutes"),
            Col("task", "category", values=("personal care", "meals", "medication", "companionship",
                                            "housekeeping"), phrase="main task"),
        ), rows=150),
    ),
)

RESEARCH_AWARDS = Domain(
    name="research_awards",
    about="Research funding: funders, their programmes, the awards they make and the researchers on each award.",
    style="camel",
    tables=(
        Table("funder", "funder", (
            Col("funder_name", "label", values=(
                "National Science Council", "Northern Health Trust", "Coastal Research Foundation",
                "Alpine Innovation Fund", "Green Climate Fund", "Royal Academy Fund", "Free Knowledge Trust",
                "Baltic Research Council", "Urban Futures Trust", "Marine Life Foundation"), phrase="name"),
            Col("sector", "category", values=("public", "charity", "industry")),
            Col("established_on", "date", low=1950, high=2015, phrase="founding date"),
        ), rows=10),
        Table("programme", "programme", (
            Col("title", "label", values=(
                "Early Career Fellowships", "Clean Energy Futures", "Healthy Ageing", "Ocean Observation",
                "Digital Humanities", "Quantum Technologies", "Rare Diseases", "Smart Cities", "Food Security",
                "Antimicrobial Resistance", "Biodiversity Recovery", "Space Sciences", "Mental Health Research",
                "Advanced Materials", "Water for All", "Frontier Mathematics"), phrase="title"),
            Col("funder_id", "fk", ref="funder", phrase="funder", optional_parent=0.1),
            Col("launched_on", "date", low=2012, high=2023, phrase="launch date"),
            Col("total_budget", "measure", low=1_000_000, high=50_000_000, unit="money", phrase="programme budget"),
        ), rows=16),
        Table("award", "award", (
            Col("award_code", "label", pool="code", phrase="award code"),
            Col("programme_id", "fk", ref="programme", phrase="programme"),
            Col("field", "category", values=("biology", "physics", "chemistry", "medicine", "engineering",
                                             "social science"), phrase="research field"),
            Col("amount", "measure", low=40000, high=1_500_000, unit="money", phrase="award amount"),
            Col("started_on", "date", low=2018, high=2024, phrase="start date"),
            Col("final_report_on", "date", low=2021, high=2025, null_rate=0.4, phrase="final report date"),
        ), rows=70),
        Table("researcher", "researcher", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("birth_year", "birth_year", low=1955, high=1996),
            Col("employer", "category", values=("university", "hospital", "institute", "company"),
                phrase="employer type"),
            Col("h_index", "measure", low=2, high=85, unit="int", phrase="citation h-index", additive=False),
        ), rows=60),
        Table("team_membership", "team membership", (
            Col("award_id", "fk", ref="award", phrase="award"),
            Col("researcher_id", "fk", ref="researcher", phrase="researcher"),
            Col("role", "category", values=("co-investigator", "principal investigator", "postdoc",
                                            "PhD student")),
            Col("weekly_hours", "measure", low=2, high=40, unit="int", phrase="time commitment in hours per week",
                additive=False),
        ), rows=150),
    ),
)

VOLUNTEERING = Domain(
    name="volunteer_events",
    about="Volunteering: local charities, the events they run, volunteers and who signed up to help at which "
          "event.",
    tables=(
        Table("charity", "charity", (
            Col("name", "label", values=(
                "Shelter Together", "Green Streets", "Paws and Claws", "Harbour Food Bank", "Silver Friends",
                "Youth Sail Club", "River Guardians", "Open Kitchen", "Books for All", "Hillside Hospice",
                "Clean Coast Trust"), phrase="name"),
            Col("cause", "category", values=("environment", "food", "animals", "elderly", "youth")),
            Col("registered_on", "date", low=1980, high=2020, phrase="registration date"),
            Col("annual_income", "measure", low=40000, high=2_500_000, unit="money", phrase="annual income"),
        ), rows=11),
        Table("event", "event", (
            Col("title", "label", values=(
                "Beach Clean-up", "Winter Coat Drive", "Park Tree Planting", "Charity Fun Run", "Soup Kitchen Night",
                "Book Sale", "River Litter Pick", "Pet Adoption Day", "Tea Dance", "Food Collection Weekend",
                "Bake Sale", "Garden Makeover", "Toy Appeal", "Coding Club", "Quiz Night", "Hedge Planting",
                "Sailing Taster Day", "Christmas Hamper Packing", "Library Reading Hour", "Cycle Repair Cafe",
                "Bird Count", "Community Lunch", "Charity Auction", "Warm Spaces Evening", "Sponsored Walk",
                "Wildflower Sowing"), phrase="title"),
            Col("charity_id", "fk", ref="charity", phrase="charity", optional_parent=0.1),
            Col("kind", "category", values=("clean-up", "collection", "fundraiser", "social", "workshop"),
                phrase="event type"),
            Col("held_on", "date", low=2023, high=2024, phrase="event date"),
            Col("volunteers_needed", "measure", low=5, high=60, unit="int", phrase="number of volunteers needed"),
        ), rows=26),
        Table("volunteer", "volunteer", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("birth_year", "birth_year", low=1950, high=2007),
            Col("city", "category", values=("Porto", "Lisbon", "Bilbao", "Nantes", "Cork")),
            Col("joined_on", "date", low=2015, high=2024, phrase="join date"),
            Col("phone", "text", pool="phone", null_rate=0.3, phrase="phone number"),
        ), rows=60),
        Table("signup", "sign-up", (
            Col("volunteer_id", "fk", ref="volunteer", phrase="volunteer"),
            Col("event_id", "fk", ref="event", phrase="event"),
            Col("role", "category", values=("helper", "team leader", "driver", "first aider")),
            Col("hours", "measure", low=1, high=8, unit="real", phrase="time worked in hours"),
        ), rows=150),
    ),
)

GYM = Domain(
    name="fitness_gym",
    about="A fitness gym: membership plans, members, trainers, the group classes they lead and class bookings.",
    style="camel",
    tables=(
        Table("membership_plan", "membership plan", (
            Col("plan_name", "label", values=("Basic", "Plus", "Premium", "Student", "Senior", "Family",
                                              "Off-Peak", "Corporate"), phrase="name"),
            Col("access_type", "category", values=("all hours", "off-peak", "weekends only"), phrase="access type"),
            Col("monthly_fee", "measure", low=19, high=89, unit="money", phrase="monthly fee", additive=False),
            Col("min_months", "measure", low=1, high=24, unit="int", phrase="contract length in months",
                additive=False),
        ), rows=8),
        Table("trainer", "trainer", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("specialty", "category", values=("strength", "yoga", "spin", "pilates", "boxing"),
                case_variants=True),
            Col("birth_year", "birth_year", low=1970, high=2002),
            Col("certified_on", "date", low=2008, high=2024, phrase="certification date"),
            Col("hourly_rate", "measure", low=20, high=65, unit="money", phrase="hourly rate", additive=False),
        ), rows=14),
        Table("member", "member", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("membership_plan_id", "fk", ref="membership_plan", phrase="membership plan", optional_parent=0.1),
            Col("birth_year", "birth_year", low=1955, high=2007),
            Col("joined_on", "date", low=2018, high=2024, phrase="join date"),
            Col("email", "text", pool="email", null_rate=0.25, phrase="email address"),
        ), rows=70),
        Table("fitness_class", "class", (
            Col("class_name", "label", values=(
                "Morning Spin", "Power Yoga", "Core Blast", "Box Fit", "Evening Pilates", "Kettlebell Burn",
                "Stretch and Relax", "HIIT Express", "Lunchtime Spin", "Barbell Club", "Aqua Fit", "Zumba Party",
                "Mobility Flow", "Circuit Training", "Sunrise Yoga", "Boxing Basics", "Step Cardio",
                "Strength Foundations", "Weekend Bootcamp", "Reformer Pilates"), phrase="name"),
            Col("trainer_id", "fk", ref="trainer", phrase="trainer", optional_parent=0.15),
            Col("weekday", "category", values=("Monday", "Tuesday", "Wednesday", "Thursday", "Friday",
                                               "Saturday")),
            Col("capacity", "measure", low=8, high=30, unit="int", phrase="capacity", additive=False),
            Col("duration_minutes", "measure", low=30, high=75, unit="int", phrase="duration in minutes"),
        ), rows=20, plural="classes"),
        Table("booking", "booking", (
            Col("member_id", "fk", ref="member", phrase="member"),
            Col("fitness_class_id", "fk", ref="fitness_class", phrase="class"),
            Col("booked_on", "date", low=2023, high=2024, phrase="booking date"),
            Col("attended", "flag"),
        ), rows=150),
    ),
)

DENTAL = Domain(
    name="dental_practice",
    about="A dental practice: its clinicians, the treatments it offers, registered patients and the treatments "
          "each patient received.",
    tables=(
        Table("clinician", "clinician", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("role", "category", values=("dentist", "hygienist", "dental therapist")),
            Col("qualified_on", "date", low=1990, high=2020, phrase="qualification date"),
            Col("birth_year", "birth_year", low=1960, high=1996),
        ), rows=10),
        Table("treatment", "treatment", (
            Col("name", "label", values=(
                "Check-up", "Scale and Polish", "Filling", "Root Canal", "Crown", "Extraction", "Whitening",
                "Implant", "X-ray", "Veneer", "Bridge", "Fissure Sealant"), phrase="name"),
            Col("kind", "category", values=("preventive", "restorative", "cosmetic", "surgical"),
                phrase="treatment type"),
            Col("price", "measure", low=25, high=2400, unit="money", additive=False),
            Col("duration_minutes", "measure", low=15, high=120, unit="int", phrase="duration in minutes"),
        ), rows=12),
        Table("patient", "patient", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("clinician_id", "fk", ref="clinician", phrase="registered clinician", optional_parent=0.1),
            Col("birth_year", "birth_year", low=1940, high=2018),
            Col("cover", "category", values=("public", "private", "insurance plan"), phrase="payment cover"),
            Col("registered_on", "date", low=2005, high=2024, phrase="registration date"),
            Col("phone", "text", pool="phone", null_rate=0.3, phrase="phone number"),
        ), rows=70),
        Table("treatment_record", "treatment record", (
            Col("patient_id", "fk", ref="patient", phrase="patient"),
            Col("treatment_id", "fk", ref="treatment", phrase="treatment"),
            Col("performed_on", "date", low=2022, high=2024, phrase="treatment date"),
            Col("amount_paid", "measure", low=0, high=1800, unit="money", phrase="amount paid"),
            Col("note", "text", pool="note", null_rate=0.5),
        ), rows=140),
    ),
)

DOMAINS = (BLOOD_DONATION, MUSIC_SCHOOL, RECRUITMENT, BUILDING_PERMITS, CYCLING, HOME_CARE, RESEARCH_AWARDS,
           VOLUNTEERING, GYM, DENTAL)
