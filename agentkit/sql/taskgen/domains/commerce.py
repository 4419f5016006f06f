"""Domains of trade: a bike shop, a bakery chain's orders, a second-hand bookshop."""

from agentkit.sql.taskgen.spec import Col, Domain, Table

BIKE_SHOP = Domain(
    name="bike_shop",
    about="A bicycle shop: brands, the bikes it stocks, customers and their purchases.",
    tables=(
        Table("brand", "brand", (
            Col("name", "label", pool="company"),
            Col("country", "category", values=("Italy", "Germany", "Japan", "Taiwan", "USA")),
            Col("founded", "measure", low=1890, high=2015, unit="int", phrase="founding year", additive=False),
        ), rows=12),
        Table("bike", "bike", (
            Col("model", "label", pool="product", phrase="model name"),
            Col("brand_id", "fk", ref="brand", phrase="brand"),
            Col("kind", "category", values=("road", "mountain", "city", "gravel", "electric"), phrase="type"),
            Col("price", "measure", low=300, high=6500, unit="money", additive=False),
            Col("weight_kg", "measure", low=7, high=25, unit="real", phrase="weight in kilograms"),
            Col("released_on", "date", low=2016, high=2024, phrase="release date"),
        ), rows=36),
        Table("customer", "customer", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("city", "category", values=("Lyon", "Graz", "Ghent", "Basel", "Turin")),
            Col("birth_year", "birth_year", low=1950, high=2006),
            Col("email", "text", pool="email", null_rate=0.25),
        ), rows=40),
        Table("purchase", "purchase", (
            Col("customer_id", "fk", ref="customer", phrase="customer"),
            Col("bike_id", "fk", ref="bike", phrase="bike"),
            Col("bought_on", "date", low=2019, high=2024, phrase="purchase date"),
            Col("payment", "category", values=("card", "cash", "invoice"), case_variants=True,
                phrase="payment method"),
            Col("discount", "measure", low=0, high=25, unit="int", phrase="discount percent", null_rate=0.3,
                additive=False),
        ), rows=90),
    ),
)

BAKERY = Domain(
    name="bakery_orders",
    about="A chain of bakeries: shops, products, staff and daily orders.",
    style="camel",
    tables=(
        Table("shop", "shop", (
            Col("shop_name", "label", pool="place", phrase="name"),
            Col("district", "category", values=("Old Town", "Harbour", "University", "Station", "Hillside")),
            Col("opened_on", "date", low=1998, high=2022, phrase="opening date"),
            Col("seats", "measure", low=0, high=60, unit="int", phrase="number of seats"),
        ), rows=10),
        Table("product", "product", (
            Col("product_name", "label", values=(
                "Sourdough Loaf", "Rye Bread", "Croissant", "Pain au Chocolat", "Cinnamon Roll", "Bagel",
                "Baguette", "Focaccia", "Apple Tart", "Cheesecake", "Brownie", "Lemon Muffin", "Pretzel",
                "Carrot Cake", "Seeded Roll", "Olive Ciabatta", "Almond Croissant", "Fruit Scone"),
                phrase="name"),
            Col("category", "category", values=("bread", "pastry", "cake", "snack")),
            Col("unit_price", "measure", low=1.2, high=28, unit="money", phrase="unit price", additive=False),
            Col("vegan", "flag"),
        ), rows=18),
        Table("employee", "employee", (
            Col("full_name", "label", pool="person", phrase="name"),
            Col("shop_id", "fk", ref="shop", phrase="shop", optional_parent=0.1),
            Col("role", "category", values=("baker", "cashier", "manager", "driver")),
            Col("hourly_wage", "measure", low=11, high=32, unit="money", phrase="hourly wage", additive=False),
            Col("birth_year", "birth_year", low=1960, high=2005),
        ), rows=34),
        Table("order_line", "order line", (
            Col("shop_id", "fk", ref="shop", phrase="shop"),
            Col("product_id", "fk", ref="product", phrase="product"),
            Col("quantity", "measure", low=1, high=40, unit="int"),
            Col("ordered_on", "date", low=2023, high=2024, phrase="order date"),
            Col("channel", "category", values=("counter", "phone", "app"), case_variants=True),
        ), rows=140),
    ),
)

BOOKSHOP = Domain(
    name="used_books",
    about="A second-hand bookshop: authors, books, sellers who bring books in, and sales.",
    tables=(
        Table("author", "author", (
            Col("name", "label", pool="person"),
            Col("nationality", "category", values=("British", "French", "Italian", "Polish", "Irish", "Spanish")),
            Col("birth_year", "birth_year", low=1820, high=1990),
        ), rows=20),
        Table("book", "book", (
            Col("title", "label", pool="title"),
            Col("author_id", "fk", ref="author", phrase="author"),
            Col("genre", "category", values=("novel", "poetry", "history", "travel", "crime", "science")),
            Col("published_year", "measure", low=1900, high=2023, unit="int", phrase="publication year",
                additive=False),
            Col("condition", "category", values=("good", "fair", "poor", "like new")),
            Col("price", "measure", low=2, high=120, unit="money", additive=False),
        ), rows=45),
        Table("sale", "sale", (
            Col("book_id", "fk", ref="book", phrase="book", optional_parent=0.35),
            Col("sold_on", "date", low=2020, high=2024, phrase="sale date"),
            Col("paid", "measure", low=2, high=120, unit="money", phrase="amount paid"),
            Col("buyer_note", "text", pool="note", null_rate=0.6, phrase="buyer note"),
        ), rows=60),
    ),
)

DOMAINS = (BIKE_SHOP, BAKERY, BOOKSHOP)
