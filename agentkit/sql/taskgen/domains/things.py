"""Work domains: factory lines, warehouse, car rental, insurance, loans, helpdesk, kitchen, print, bugs, repair."""

from agentkit.sql.taskgen.spec import Col, Domain, Table

FACTORY = Domain(
    name="valve_factory",
    about="A maker of pumps and valves: its plants, production lines, machine operators, who works which "
          "line, and the production runs.",
    tables=(
        Table("plant", "plant", (
            Col("plant_name", "label", pool="place", phrase="name"),
            Col("region", "category", values=("North", "South", "East", "West")),
            Col("opened_on", "date", low=1978, high=2016, phrase="opening date"),
            Col("floor_area", "measure", low=4000, high=60000, unit="int", phrase="floor area in square meters"),
        ), rows=8),
        Table("production_line", "production line", (
            Col("line_code", "label", pool="code", phrase="line code"),
            Col("plant_id", "fk", ref="plant", phrase="plant", optional_parent=0.1),
            Col("product_family", "category", values=("valves", "pumps", "brackets", "housings", "gears"),
                phrase="product family"),
            Col("capacity_per_hour", "measure", low=40, high=900, unit="int", phrase="capacity per hour",
                additive=False),
            Col("commissioned_on", "date", low=2005, high=2023, phrase="commissioning date"),
        ), rows=18),
        Table("operator", "operator", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("birth_year", "birth_year", low=1962, high=2004),
            Col("shift", "category", values=("early", "late", "night")),
            Col("hired_on", "date", low=2008, high=2024, phrase="hire date"),
            Col("forklift_licence", "text", values=("yes", "expired"), null_rate=0.4, phrase="forklift licence"),
        ), rows=20),
        Table("line_assignment", "line assignment", (
            Col("production_line_id", "fk", ref="production_line", phrase="production line"),
            Col("operator_id", "fk", ref="operator", phrase="operator"),
            Col("assigned_on", "date", low=2019, high=2024, phrase="assignment date"),
            Col("hours_per_week", "measure", low=8, high=40, unit="int", phrase="hours per week", additive=False),
        ), rows=70),
        Table("production_run", "production run", (
            Col("production_line_id", "fk", ref="production_line", phrase="production line"),
            Col("run_date", "date", low=2022, high=2024, phrase="run date"),
            Col("units_produced", "measure", low=200, high=9000, unit="int", phrase="number of units produced"),
            Col("defect_count", "measure", low=0, high=140, unit="int", null_rate=0.3, phrase="number of defects"),
            Col("outcome", "category", values=("completed", "stopped early", "rework needed")),
        ), rows=120),
    ),
)

WAREHOUSE = Domain(
    name="parts_warehouse",
    about="A spare-parts distributor: its warehouses, suppliers, the stock items kept on the shelves and the "
          "shipments sent out.",
    tables=(
        Table("warehouse", "warehouse", (
            Col("warehouse_name", "label", pool="place", phrase="name"),
            Col("city", "category", values=("Malmo", "Aarhus", "Brno", "Krakow", "Utrecht")),
            Col("opened_on", "date", low=1995, high=2020, phrase="opening date"),
            Col("dock_doors", "measure", low=4, high=40, unit="int", phrase="number of dock doors"),
        ), rows=10),
        Table("supplier", "supplier", (
            Col("company_name", "label", pool="company", phrase="company name"),
            Col("country", "category", values=("Germany", "Poland", "China", "Italy", "Turkey", "Mexico")),
            Col("contract_start", "date", low=2012, high=2023, phrase="contract start date"),
            Col("lead_time_days", "measure", low=2, high=45, unit="int", phrase="lead time in days"),
        ), rows=14),
        Table("stock_item", "stock item", (
            Col("sku", "label", pool="code", phrase="SKU"),
            Col("supplier_id", "fk", ref="supplier", phrase="supplier"),
            Col("warehouse_id", "fk", ref="warehouse", phrase="warehouse", optional_parent=0.1),
            Col("hazard_class", "category", values=("general", "flammable", "corrosive", "toxic"),
                case_variants=True, phrase="hazard class"),
            Col("quantity_on_hand", "measure", low=0, high=2400, unit="int", phrase="quantity on hand"),
            Col("unit_weight", "measure", low=0.1, high=48, unit="real", phrase="unit weight in kilograms"),
            Col("bin_location", "text", pool="code", null_rate=0.25, phrase="bin location"),
        ), rows=60),
        Table("shipment", "shipment", (
            Col("stock_item_id", "fk", ref="stock_item", phrase="stock item", optional_parent=0.3),
            Col("shipped_on", "date", low=2022, high=2024, phrase="ship date"),
            Col("quantity", "measure", low=1, high=300, unit="int"),
            Col("carrier", "category", values=("DHL", "UPS", "DB Schenker", "GLS", "PostNord")),
            Col("freight_cost", "measure", low=12, high=950, unit="money", phrase="freight cost"),
            Col("delivered_on", "date", low=2022, high=2024, null_rate=0.3, phrase="delivery date"),
        ), rows=130),
    ),
)

CAR_RENTAL = Domain(
    name="car_rental",
    about="A car rental firm: branches, the cars based at each, the drivers who rent them and the rentals.",
    style="camel",
    tables=(
        Table("branch", "branch", (
            Col("branch_name", "label", pool="place", phrase="name"),
            Col("city", "category", values=("Lisbon", "Porto", "Seville", "Bilbao", "Nantes")),
            Col("opened_on", "date", low=2001, high=2021, phrase="opening date"),
            Col("parking_spaces", "measure", low=20, high=260, unit="int", phrase="number of parking spaces"),
        ), rows=9),
        Table("car", "car", (
            Col("plate", "label", pool="code", phrase="licence plate"),
            Col("branch_id", "fk", ref="branch", phrase="home branch", optional_parent=0.1),
            Col("make", "category", values=("Toyota", "Volkswagen", "Renault", "Skoda", "Ford", "Kia")),
            Col("car_class", "category", values=("economy", "compact", "SUV", "van", "luxury"),
                phrase="car class"),
            Col("daily_rate", "measure", low=25, high=180, unit="money", phrase="daily rate", additive=False),
            Col("odometer_km", "measure", low=5000, high=180000, unit="int", phrase="mileage in kilometers"),
            Col("registered_on", "date", low=2016, high=2024, phrase="registration date"),
        ), rows=45),
        Table("driver", "driver", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("birth_year", "birth_year", low=1950, high=2004),
            Col("licence_country", "category", values=("Portugal", "Spain", "France", "England", "Germany"),
                phrase="licence country"),
            Col("email", "text", pool="email", null_rate=0.3),
        ), rows=20),
        Table("rental", "rental", (
            Col("car_id", "fk", ref="car", phrase="car"),
            Col("driver_id", "fk", ref="driver", phrase="driver"),
            Col("picked_up_on", "date", low=2022, high=2024, phrase="pickup date"),
            Col("rental_days", "measure", low=1, high=21, unit="int", phrase="rental length in days"),
            Col("total_charge", "measure", low=40, high=2600, unit="money", phrase="total charge"),
            Col("fuel_option", "category", values=("full to full", "prepaid", "electric"), phrase="fuel option"),
        ), rows=130),
    ),
)

INSURANCE = Domain(
    name="insurance_claims",
    about="An insurer: agents, the policyholders they look after, their policies and the claims made on them.",
    tables=(
        Table("agent", "agent", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("office", "category", values=("Cork", "Leeds", "Ghent", "Tartu")),
            Col("birth_year", "birth_year", low=1960, high=1998),
            Col("hired_on", "date", low=2005, high=2023, phrase="hire date"),
        ), rows=12),
        Table("policyholder", "policyholder", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("agent_id", "fk", ref="agent", phrase="agent"),
            Col("birth_year", "birth_year", low=1940, high=2003),
            Col("city", "category", values=("Cork", "Leeds", "Ghent", "Tartu", "Basel", "Graz")),
            Col("phone", "text", pool="phone", null_rate=0.3, phrase="phone number"),
        ), rows=40),
        Table("policy", "policy", (
            Col("policy_number", "label", pool="code", phrase="policy number"),
            Col("policyholder_id", "fk", ref="policyholder", phrase="policyholder"),
            Col("cover_type", "category", values=("home", "motor", "travel", "pet", "life"), phrase="cover type"),
            Col("annual_premium", "measure", low=120, high=3200, unit="money", phrase="annual premium"),
            Col("start_date", "date", low=2015, high=2024, phrase="start date"),
        ), rows=60),
        Table("claim", "claim", (
            Col("policy_id", "fk", ref="policy", phrase="policy", optional_parent=0.3),
            Col("filed_on", "date", low=2019, high=2024, phrase="filing date"),
            Col("amount_claimed", "measure", low=200, high=45000, unit="money", phrase="amount claimed"),
            Col("amount_paid", "measure", low=100, high=40000, unit="money", null_rate=0.35, phrase="amount paid"),
            Col("claim_status", "category", values=("open", "approved", "rejected", "under review"),
                case_variants=True, phrase="status"),
        ), rows=120),
    ),
)

LOANS = Domain(
    name="loan_book",
    about="A savings bank's lending: branches, loan officers, borrowers, the loans granted and their repayments.",
    style="camel",
    tables=(
        Table("bank_branch", "branch", (
            Col("branch_name", "label", pool="place", phrase="name"),
            Col("region", "category", values=("Coast", "Capital", "Highlands", "Lakes")),
            Col("opened_on", "date", low=1970, high=2015, phrase="opening date"),
        ), rows=10),
        Table("loan_officer", "loan officer", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("bank_branch_id", "fk", ref="bank_branch", phrase="branch", optional_parent=0.1),
            Col("birth_year", "birth_year", low=1962, high=1999),
            Col("grade", "category", values=("junior", "senior", "lead")),
            Col("lending_limit", "measure", low=50000, high=500000, unit="money", phrase="lending limit",
                additive=False),
        ), rows=20),
        Table("borrower", "borrower", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("birth_year", "birth_year", low=1948, high=2004),
            Col("employment", "category", values=("employed", "self-employed", "retired", "student"),
                phrase="employment status"),
            Col("annual_income", "measure", low=12000, high=150000, unit="money", phrase="annual income"),
            Col("credit_score", "measure", low=450, high=850, unit="int", null_rate=0.2, phrase="credit score",
                additive=False),
        ), rows=20),
        Table("loan", "loan", (
            Col("borrower_id", "fk", ref="borrower", phrase="borrower"),
            Col("loan_officer_id", "fk", ref="loan_officer", phrase="loan officer"),
            Col("principal", "measure", low=2000, high=350000, unit="money", phrase="principal amount"),
            Col("interest_rate", "measure", low=1.5, high=12, unit="real", phrase="interest rate", additive=False),
            Col("term_months", "measure", low=12, high=360, unit="int", phrase="term in months"),
            Col("issued_on", "date", low=2016, high=2024, phrase="issue date"),
            Col("purpose", "category", values=("mortgage", "car", "business", "education", "renovation")),
        ), rows=60),
        Table("repayment", "repayment", (
            Col("loan_id", "fk", ref="loan", phrase="loan", optional_parent=0.3),
            Col("paid_on", "date", low=2020, high=2024, phrase="payment date"),
            Col("amount", "measure", low=80, high=4500, unit="money", phrase="amount paid"),
            Col("days_late", "measure", low=1, high=90, unit="int", null_rate=0.6, phrase="number of days late"),
        ), rows=150),
    ),
)

HELPDESK = Domain(
    name="it_helpdesk",
    about="A company's IT helpdesk: support teams, their technicians, the staff who raise tickets and the "
          "tickets themselves.",
    tables=(
        Table("support_team", "support team", (
            Col("team_name", "label", values=(
                "Network", "Desktop Support", "Identity", "Cloud", "Security", "Printing", "Telephony",
                "Databases", "Applications", "Onboarding"), phrase="name"),
            Col("site", "category", values=("headquarters", "remote", "data centre")),
            Col("formed_on", "date", low=2010, high=2022, phrase="formation date"),
        ), rows=9),
        Table("technician", "technician", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("support_team_id", "fk", ref="support_team", phrase="team", optional_parent=0.1),
            Col("birth_year", "birth_year", low=1965, high=2003),
            Col("tier", "category", values=("tier 1", "tier 2", "tier 3"), phrase="support tier"),
            Col("hired_on", "date", low=2012, high=2024, phrase="hire date"),
        ), rows=28),
        Table("staff_member", "staff member", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("department", "category", values=("Finance", "Sales", "HR", "Legal", "Marketing", "Operations")),
            Col("laptop_model", "text", values=("ThinkPad T14", "MacBook Air", "Latitude 5440", "EliteBook 840"),
                null_rate=0.3, phrase="laptop model"),
        ), rows=20),
        Table("ticket", "ticket", (
            Col("staff_member_id", "fk", ref="staff_member", phrase="requester"),
            Col("technician_id", "fk", ref="technician", phrase="technician"),
            Col("opened_on", "date", low=2023, high=2024, phrase="opening date"),
            Col("priority", "category", values=("low", "medium", "high", "critical"), case_variants=True),
            Col("channel", "category", values=("email", "portal", "phone", "walk-in")),
            Col("minutes_to_resolve", "measure", low=5, high=2400, unit="int", null_rate=0.3,
                phrase="resolution time in minutes"),
        ), rows=140),
    ),
)

KITCHEN = Domain(
    name="kitchen_inventory",
    about="A restaurant kitchen: its vendors, the ingredients they deliver, the dishes on the menu, what goes "
          "into each dish and the weekly stock counts.",
    style="camel",
    tables=(
        Table("vendor", "vendor", (
            Col("vendor_name", "label", values=(
                "Harbour Fish Co", "Green Valley Farm", "Old Mill Flour", "Alpine Dairy", "Sunny Orchard Produce",
                "Coastal Seafood", "Royal Spice Traders", "Meadow Butchers", "Wild Herb Growers",
                "Iron Bridge Wines", "Northern Poultry", "Little Oak Grocers"), phrase="name"),
            Col("delivery_day", "category", values=("Monday", "Tuesday", "Wednesday", "Thursday", "Friday"),
                phrase="delivery day"),
            Col("since", "date", low=2012, high=2023, phrase="first delivery date"),
        ), rows=10),
        Table("ingredient", "ingredient", (
            Col("ingredient_name", "label", values=(
                "Butter", "Double Cream", "Plain Flour", "Arborio Rice", "Shallots", "Garlic", "Thyme", "Lemons",
                "Salmon Fillet", "Chicken Thighs", "Beef Short Rib", "Eggs", "Parmesan", "Olive Oil", "Sea Salt",
                "Black Pepper", "Potatoes", "Carrots", "Leeks", "Chickpeas", "Tahini", "Dark Chocolate",
                "Caster Sugar", "Vanilla Pods", "Pistachios", "Mussels", "White Wine", "Basil", "Tomatoes",
                "Mozzarella", "Puff Pastry", "Honey", "Capers", "Spinach"), phrase="name"),
            Col("vendor_id", "fk", ref="vendor", phrase="vendor", optional_parent=0.1),
            Col("storage", "category", values=("fridge", "dry store", "freezer"), phrase="storage area"),
            Col("weekly_usage", "measure", low=0.2, high=45, unit="real", phrase="weekly usage in kilograms"),
            Col("unit_cost", "measure", low=0.5, high=60, unit="money", phrase="cost per kilogram", additive=False),
            Col("shelf_life_days", "measure", low=2, high=720, unit="int", phrase="shelf life in days", additive=False),
        ), rows=30),
        Table("dish", "dish", (
            Col("dish_name", "label", values=(
                "Mushroom Risotto", "Seared Salmon", "Braised Short Rib", "Chicken Pie", "Moules Frites",
                "Hummus Plate", "Tomato Salad", "Leek Soup", "Chocolate Fondant", "Pistachio Tart",
                "Lemon Posset", "Spinach Gnocchi", "Caprese Toast", "Honey Roast Carrots", "Fish Stew",
                "Vanilla Panna Cotta", "Steak Frites", "Garlic Prawns", "Potato Gratin", "Basil Pesto Pasta",
                "Onion Tart", "Chickpea Curry"), phrase="name"),
            Col("course", "category", values=("main", "starter", "dessert", "side")),
            Col("menu_price", "measure", low=6, high=38, unit="money", phrase="menu price", additive=False),
            Col("introduced_on", "date", low=2019, high=2024, phrase="introduction date"),
        ), rows=20),
        Table("recipe_line", "recipe line", (
            Col("dish_id", "fk", ref="dish", phrase="dish", optional_parent=0.0),
            Col("ingredient_id", "fk", ref="ingredient", phrase="ingredient"),
            Col("grams", "measure", low=5, high=400, unit="int", phrase="quantity in grams"),
        ), rows=90),
        Table("stock_count", "stock count", (
            Col("ingredient_id", "fk", ref="ingredient", phrase="ingredient"),
            Col("counted_on", "date", low=2023, high=2024, phrase="count date"),
            Col("kilograms_left", "measure", low=0, high=40, unit="real", phrase="kilograms left"),
            Col("waste_kg", "measure", low=0.1, high=6, unit="real", null_rate=0.4, phrase="waste in kilograms"),
        ), rows=100),
    ),
)

PRINT_SHOP = Domain(
    name="print_shop",
    about="A commercial print shop: its clients, printing presses, print jobs and the proofs sent for approval.",
    tables=(
        Table("client", "client", (
            Col("company_name", "label", pool="company", phrase="name"),
            Col("sector", "category", values=("retail", "education", "events", "non-profit", "hospitality")),
            Col("account_opened", "date", low=2010, high=2024, phrase="account opening date"),
            Col("email", "text", pool="email", null_rate=0.3, phrase="contact email"),
        ), rows=16),
        Table("press", "press", (
            Col("press_name", "label", values=(
                "Heidelberg Speedmaster", "Heidelberg Versafire", "Konica Minolta C14000", "Xerox Iridesse",
                "Epson SureColor", "HP Indigo 7K", "Riso ComColor", "Canon imagePRESS", "Ricoh Pro C9500"),
                phrase="name"),
            Col("technology", "category", values=("digital", "offset", "wide-format")),
            Col("installed_on", "date", low=2012, high=2023, phrase="installation date"),
            Col("sheets_per_hour", "measure", low=1200, high=18000, unit="int",
                phrase="printing speed in sheets per hour", additive=False),
        ), rows=8),
        Table("print_job", "print job", (
            Col("job_code", "label", pool="code", phrase="job code"),
            Col("client_id", "fk", ref="client", phrase="client"),
            Col("press_id", "fk", ref="press", phrase="press", optional_parent=0.0),
            Col("product_type", "category", values=("flyer", "poster", "business card", "booklet", "banner"),
                case_variants=True, phrase="product type"),
            Col("copies", "measure", low=50, high=20000, unit="int", phrase="number of copies"),
            Col("price", "measure", low=35, high=4800, unit="money", additive=False),
            Col("paper_gsm", "measure", low=80, high=350, unit="int", phrase="paper weight in gsm", additive=False),
            Col("due_on", "date", low=2023, high=2024, phrase="due date"),
        ), rows=110),
        Table("proof", "proof", (
            Col("print_job_id", "fk", ref="print_job", phrase="print job", optional_parent=0.3),
            Col("sent_on", "date", low=2023, high=2024, phrase="sending date"),
            Col("verdict", "category", values=("approved", "changes requested", "rejected")),
            Col("revision_note", "text", pool="note", null_rate=0.5, phrase="revision note"),
        ), rows=120),
    ),
)

SOFTWARE = Domain(
    name="software_bugs",
    about="A software company: its projects, the versions it ships, its developers and the bug reports filed "
          "against each version and assigned to a developer.",
    tables=(
        Table("project", "project", (
            Col("project_name", "label", values=(
                "Atlas", "Beacon", "Cobalt", "Driftwood", "Ember", "Fathom", "Granite", "Halyard", "Juniper",
                "Kestrel", "Lumen", "Meridian"), phrase="name"),
            Col("language", "category", values=("Python", "Go", "Rust", "Java", "TypeScript"),
                phrase="main language"),
            Col("started_on", "date", low=2012, high=2022, phrase="start date"),
            Col("licence", "category", values=("proprietary", "MIT", "Apache-2.0", "GPL-3.0")),
        ), rows=10),
        Table("software_version", "version", (
            Col("version_tag", "label", values=tuple(f"v{major}.{minor}.0" for major in range(1, 6)
                                                     for minor in range(12)), phrase="version tag"),
            Col("project_id", "fk", ref="project", phrase="project", optional_parent=0.1),
            Col("shipped_on", "date", low=2019, high=2024, phrase="ship date"),
            Col("channel", "category", values=("stable", "beta", "nightly"), phrase="release channel"),
            Col("download_count", "measure", low=300, high=250000, unit="int", null_rate=0.25,
                phrase="number of downloads"),
        ), rows=40),
        Table("developer", "developer", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("birth_year", "birth_year", low=1968, high=2003),
            Col("seniority", "category", values=("mid", "senior", "junior", "principal")),
            Col("country", "category", values=("Estonia", "Portugal", "Poland", "Spain", "Ireland")),
            Col("joined_on", "date", low=2014, high=2024, phrase="joining date"),
        ), rows=20),
        Table("bug_report", "bug report", (
            Col("software_version_id", "fk", ref="software_version", phrase="version"),
            Col("developer_id", "fk", ref="developer", phrase="assignee"),
            Col("reported_on", "date", low=2020, high=2024, phrase="report date"),
            Col("severity", "category", values=("minor", "major", "critical", "blocker")),
            Col("hours_to_fix", "measure", low=0.5, high=60, unit="real", null_rate=0.3, phrase="fix time in hours"),
        ), rows=140),
    ),
)

REPAIR = Domain(
    name="appliance_repair",
    about="A household appliance repair workshop: brands, appliance models, the repairers and the repair jobs "
          "they take in.",
    tables=(
        Table("brand", "brand", (
            Col("brand_name", "label", values=(
                "Aurelia", "Frostmark", "Hauswerk", "Kaldera", "Lumina Home", "Norrvik", "Polaris Home", "Quell",
                "Sanvo", "Tessaro", "Vellmann", "Zephyra", "Brava"), phrase="name"),
            Col("country", "category", values=("Germany", "Sweden", "Italy", "South Korea", "Japan")),
            Col("warranty_years", "measure", low=1, high=5, unit="int", phrase="warranty length in years",
                additive=False),
        ), rows=12),
        Table("appliance_model", "appliance model", (
            Col("model_name", "label", pool="product", phrase="model name"),
            Col("brand_id", "fk", ref="brand", phrase="brand", optional_parent=0.1),
            Col("appliance_type", "category", values=("washing machine", "dishwasher", "fridge", "oven", "dryer"),
                phrase="appliance type"),
            Col("list_price", "measure", low=180, high=2400, unit="money", phrase="list price", additive=False),
            Col("launched_on", "date", low=2010, high=2023, phrase="launch date"),
        ), rows=30),
        Table("repairer", "repairer", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("birth_year", "birth_year", low=1958, high=2002),
            Col("specialty", "category", values=("electrical", "mechanical", "refrigeration")),
            Col("rate_per_hour", "measure", low=22, high=68, unit="money", phrase="rate per hour", additive=False),
        ), rows=12),
        Table("repair_job", "repair job", (
            Col("appliance_model_id", "fk", ref="appliance_model", phrase="appliance model"),
            Col("repairer_id", "fk", ref="repairer", phrase="repairer", optional_parent=0.0),
            Col("received_on", "date", low=2022, high=2024, phrase="intake date"),
            Col("labour_hours", "measure", low=0.5, high=9, unit="real", phrase="number of labour hours"),
            Col("parts_cost", "measure", low=5, high=420, unit="money", null_rate=0.3, phrase="parts cost"),
            Col("outcome", "category", values=("fixed", "waiting for parts", "not repairable", "returned unfixed")),
        ), rows=130),
    ),
)

DOMAINS = (FACTORY, WAREHOUSE, CAR_RENTAL, INSURANCE, LOANS, HELPDESK, KITCHEN, PRINT_SHOP, SOFTWARE, REPAIR)
