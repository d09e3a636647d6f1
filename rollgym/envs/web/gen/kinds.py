"""Domain kinds of the generated websites: what a shop, a forum, a booking site, a wiki, ... hold and let users do.

A :class:`Kind` is data, not code: the item collection (its fields, categories and
name patterns), the per-user records the site keeps (orders, replies, reservations,
loans, ...), the favourites list, who may edit, and the task templates that make
sense on it (:class:`TemplateSpec`, implemented once per mechanism in
:mod:`rollgym.envs.web.gen.mechanisms`). :mod:`rollgym.envs.web.gen.domain` turns a
kind plus a seed into a database; :mod:`rollgym.envs.web.gen.site` serves it.

Category names marked ``{P}`` and every item name contain a *proper word* (an
invented name such as ``Brelon``); proper words are split into a train and a
held-out vocabulary (:func:`rollgym.envs.web.gen.words.proper_words`), which is how
``test_unseen`` sites share no content with training sites.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

FieldType = Literal["money", "int", "rating", "enum", "date", "text"]


@dataclass(frozen=True)
class FieldSpec:
    """One column of a kind's items.

    Attributes:
        key: Column name, e.g. ``"price"``.
        label: What pages call it, e.g. ``"Price"``.
        type: ``money`` (stored in cents), ``int``, ``rating`` (one decimal, 1.0 to 5.0), ``enum``, ``date``
            (ISO) or ``text``.
        lo, hi: Range of numbers (dollars for money), or of day offsets for dates.
        choices: Values of an ``enum``; ``("{P}",)`` draws them from proper words, ``("{PERSON}",)`` from names.
        unit: Shown after int values, e.g. ``"min"``.
        sort: Listings can be sorted by it.
        filter: Listings can be filtered by it (enums).
        editable: Editors can change it on the item page.
        lookup: Varied enough to be the answer of a lookup task.
        create: The new-item form asks for it (editable, money, enum and text fields are always asked).
        words: The superlatives of sorting by it, ``(lowest first, highest first)``, e.g. ``("cheapest", ...)``.
    """

    key: str
    label: str
    type: FieldType
    lo: int = 0
    hi: int = 0
    choices: tuple[str, ...] = ()
    unit: str = ""
    sort: bool = False
    filter: bool = False
    editable: bool = False
    lookup: bool = False
    words: tuple[str, str] = ("lowest", "highest")
    create: bool = False


@dataclass(frozen=True)
class RecordSpec:
    """What users keep on a site about items: orders, replies, reservations, loans, ...

    Attributes:
        table_label: ``(singular, plural)``, e.g. ``("order", "orders")``.
        verb: The button that creates one on an item's page, e.g. ``"Buy now"``.
        phrase: How a goal says it, e.g. ``"order"`` in "order 2 of X".
        fields: Extra columns the creation form asks for (int, date or text fields).
        total: ``(item money field, record int field or "")``: the record's total is their product.
        initial: Status of a new record; ``cancelled``: status after cancelling; ``history``: other seeded statuses.
        cancel: The button that cancels one.
        public: Records are shown on the item's page (replies, reviews, comments).
        update: The record field an owner can change afterwards, if any.
        consumes: ``(item int field, record int field or "")``: a new record takes that many from the item's
            field (one when the record field is ``""``) and cancelling gives them back (shop stock, library copies).
    """

    table_label: tuple[str, str]
    verb: str
    phrase: str
    fields: tuple[FieldSpec, ...] = ()
    total: tuple[str, str] | None = None
    initial: str = "active"
    cancelled: str = "cancelled"
    history: tuple[str, ...] = ()
    cancel: str = "Cancel"
    public: bool = False
    update: str | None = None
    consumes: tuple[str, str] | None = None


@dataclass(frozen=True)
class TemplateSpec:
    """A task template of a kind: a mechanism with its options, e.g. ``("cheapest", "extreme", field="price")``."""

    name: str
    mechanism: str
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Kind:
    """A domain kind; see the module docstring."""

    key: str
    site_words: tuple[str, ...]
    item: tuple[str, str]
    category_label: str
    categories: dict[str, tuple[str, ...]]
    name_patterns: tuple[str, ...]
    adjectives: tuple[str, ...]
    code_label: str
    code_prefix: str
    fields: tuple[FieldSpec, ...]
    record: RecordSpec
    favorites: tuple[str, str, str]
    roles: tuple[str, str]
    editor_can: tuple[str, ...] = ("edit", "archive", "create")
    members_create: bool = False
    tagline: str = ""
    templates: tuple[TemplateSpec, ...] = ()

    def field(self, key: str) -> FieldSpec:
        """The item field ``key``."""
        for f in self.fields:
            if f.key == key:
                return f
        raise KeyError(f"{self.key} items have no field {key!r}")

    def record_field(self, key: str) -> FieldSpec:
        """The record field ``key``."""
        for f in self.record.fields:
            if f.key == key:
                return f
        raise KeyError(f"{self.key} records have no field {key!r}")

    @property
    def singular(self) -> str:
        """The item noun, e.g. ``"product"``."""
        return self.item[0]

    @property
    def plural(self) -> str:
        """The item noun in the plural, e.g. ``"products"``."""
        return self.item[1]


def T(name: str, mechanism: str, **options: Any) -> TemplateSpec:
    """A :class:`TemplateSpec`."""
    return TemplateSpec(name, mechanism, options)


def _common(kind_fields: dict[str, Any]) -> tuple[TemplateSpec, ...]:
    """Templates every kind has: finding by code, favourites, the owner's own records and profile."""
    return (
        T("find_by_code", "find_by_code"),
        T("my_record_date", "my_record_value", value="created"),
        T("add_favorite", "favorite_add"),
        T("remove_favorite", "favorite_remove"),
        T("create_record", "create_record"),
        T("cancel_record", "cancel_record"),
        T("cancel_all_in_category", "bulk_cancel"),
        T("change_email", "profile_update", field="email"),
        T("change_display_name", "profile_update", field="full_name"),
        *kind_fields.get("extra", ()),
    )


def _kind(**kw: Any) -> Kind:
    extra = kw.pop("templates", ())
    return Kind(templates=(*_common({"extra": extra}),), **kw)


# -- the kinds ---------------------------------------------------------------------------------------------------

SHOP = _kind(
    key="shop", site_words=("Market", "Goods", "Supply", "Store"), item=("product", "products"),
    category_label="Department",
    categories={
        "Kitchen": ("Kettle", "Toaster", "Blender", "Skillet", "Grinder"),
        "Electronics": ("Headphones", "Speaker", "Charger", "Webcam", "Keyboard"),
        "Outdoor": ("Tent", "Backpack", "Headlamp", "Stove", "Hammock"),
        "Home": ("Lamp", "Blanket", "Clock", "Shelf", "Rug"),
        "Sports": ("Yoga Mat", "Dumbbell", "Racket", "Helmet", "Jump Rope"),
        "Toys": ("Puzzle", "Kite", "Robot", "Train Set", "Plush"),
        "Garden": ("Watering Can", "Shears", "Hose", "Planter", "Trowel"),
        "Office": ("Stapler", "Notebook", "Desk Chair", "Monitor Arm", "Pen Set"),
        "Bath": ("Towel", "Bath Mat", "Soap Dish", "Mirror", "Robe"),
        "Pets": ("Dog Bed", "Cat Tree", "Leash", "Feeder", "Pet Brush"),
        "Travel": ("Suitcase", "Neck Pillow", "Packing Cube", "Luggage Tag", "Travel Mug"),
        "Crafts": ("Easel", "Sketchbook", "Yarn Kit", "Glue Gun", "Paint Set"),
    },
    name_patterns=("{P} {A} {N}", "{P} {N} {A}"), adjectives=("Classic", "Pro", "Compact", "Deluxe", "Eco", "Ultra"),
    code_label="SKU", code_prefix="SKU",
    fields=(
        FieldSpec("price", "Price", "money", 3, 400, sort=True, editable=True, lookup=True,
                  words=("cheapest", "most expensive")),
        FieldSpec("rating", "Rating", "rating", sort=True, words=("lowest-rated", "best-rated")),
        FieldSpec("stock", "In stock", "int", 1, 250, unit="units", sort=True, editable=True,
                  words=("least-stocked", "best-stocked")),
        FieldSpec("sold", "Units sold", "int", 30, 9000, sort=True, lookup=True,
                  words=("least-sold", "best-selling")),
        FieldSpec("brand", "Brand", "enum", choices=("{P}",), filter=True),
    ),
    record=RecordSpec(("order", "orders"), "Buy now", "order",
                      fields=(FieldSpec("qty", "Quantity", "int", 1, 5),), total=("price", "qty"),
                      initial="pending", history=("shipped", "delivered"), cancel="Cancel order", update="qty",
                      consumes=("stock", "qty")),
    favorites=("wishlist", "Add to wishlist", "Remove from wishlist"), roles=("customer", "manager"),
    tagline="Everyday things, fairly priced",
    templates=(
        T("cheapest_in_department", "extreme", field="price", order="asc"),
        T("best_seller_in_department", "extreme", field="sold", order="desc"),
        T("kth_cheapest", "kth", field="price", order="asc"),
        T("price_of", "lookup", field="price"),
        T("units_sold_of", "lookup", field="sold"),
        T("sku_of_best_rated", "chain_code", field="rating", order="desc"),
        T("order_total", "my_record_value", value="total"),
        T("buy_cheapest", "create_record_extreme", field="price", order="asc"),
        T("change_order_quantity", "update_record"),
        T("reprice_product", "edit_item", field="price"),
        T("restock_product", "edit_item", field="stock"),
        T("discontinue_product", "archive_item"),
        T("add_product", "create_item"),
    ),
)

FORUM = _kind(
    key="forum", site_words=("Commons", "Forum", "Boards", "Exchange"), item=("thread", "threads"),
    category_label="Board",
    categories={
        "Gardening": ("tomato blight", "raised beds", "compost heat", "pruning roses"),
        "Cycling": ("tubeless tyres", "gear indexing", "winter riding", "saddle height"),
        "Cooking": ("sourdough starter", "cast iron care", "knife sharpening", "stock reduction"),
        "Photography": ("long exposure", "lens cleaning", "raw editing", "night skies"),
        "Woodworking": ("dovetail joints", "finishing oil", "chisel honing", "wood glue"),
        "Astronomy": ("planet spotting", "telescope collimation", "meteor showers", "star charts"),
        "Birding": ("feeder placement", "owl calls", "migration counts", "field guides"),
        "Running": ("interval plans", "trail shoes", "race pacing", "shin splints"),
        "Chess": ("opening traps", "endgame drills", "blitz nerves", "puzzle rush"),
        "Aquariums": ("nitrogen cycle", "plant lighting", "algae control", "shrimp tanks"),
        "Knitting": ("cable stitches", "yarn weights", "blocking lace", "sock heels"),
        "Hiking": ("trail maps", "blister care", "pack weight", "ridge routes"),
    },
    name_patterns=("{A} question about {N} ({P})", "{P} and {N}: {A} notes", "{A} tips on {N} from {P}"),
    adjectives=("Quick", "Beginner", "Honest", "Odd", "Urgent", "Long"),
    code_label="Thread ID", code_prefix="T",
    fields=(
        FieldSpec("summary", "Opening post", "text", editable=True),
        FieldSpec("views", "Views", "int", 40, 30000, sort=True, lookup=True, words=("least-viewed", "most-viewed")),
        FieldSpec("score", "Score", "int", 0, 900, sort=True, lookup=True, words=("lowest-scored", "top-scored")),
        FieldSpec("started", "Started on", "date", -700, -1, sort=True, lookup=True, words=("oldest", "newest")),
        FieldSpec("tag", "Tag", "enum", choices=("question", "discussion", "guide", "showcase"), filter=True,
                  editable=True),
    ),
    record=RecordSpec(("reply", "replies"), "Post reply", "reply to",
                      fields=(FieldSpec("body", "Your reply", "text"),), initial="posted", cancelled="deleted",
                      cancel="Delete reply", public=True, update="body"),
    favorites=("followed threads", "Follow thread", "Unfollow thread"), roles=("member", "moderator"),
    members_create=True, tagline="Ask, answer, and keep the good threads",
    templates=(
        T("most_viewed_on_board", "extreme", field="views", order="desc"),
        T("oldest_on_board", "extreme", field="started", order="asc"),
        T("kth_top_scored", "kth", field="score", order="desc"),
        T("views_of", "lookup", field="views"),
        T("start_date_of", "lookup", field="started"),
        T("id_of_newest", "chain_code", field="started", order="desc"),
        T("reply_to_top_scored", "create_record_extreme", field="score", order="desc"),
        T("edit_reply", "update_record"),
        T("retag_thread", "edit_item", field="tag"),
        T("archive_thread", "archive_item"),
        T("start_thread", "create_item"),
    ),
)

BOOKING = _kind(
    key="booking", site_words=("Stays", "Rooms", "Lodging", "Inns"), item=("room", "rooms"),
    category_label="Hotel",
    categories={f"{{P}} {w}": ("Room",) for w in ("Hotel", "Lodge", "Inn", "Suites", "House", "Resort")},
    name_patterns=("{P} {A} {N}", "{A} {N} {P}"),
    adjectives=("Garden", "Corner", "Harbour", "Attic", "Family", "Deluxe", "Quiet", "Tower"),
    code_label="Room code", code_prefix="RM",
    fields=(
        FieldSpec("rate", "Nightly rate", "money", 40, 600, sort=True, editable=True, lookup=True,
                  words=("cheapest", "most expensive")),
        FieldSpec("rating", "Guest rating", "rating", sort=True, words=("lowest-rated", "highest-rated")),
        FieldSpec("capacity", "Sleeps", "int", 1, 6, sort=True, words=("smallest", "largest")),
        FieldSpec("size", "Floor area", "int", 12, 95, unit="m²", sort=True, lookup=True,
                  words=("smallest", "most spacious")),
        FieldSpec("view", "View", "enum", choices=("sea", "garden", "city", "courtyard", "mountain"), filter=True),
    ),
    record=RecordSpec(("reservation", "reservations"), "Reserve", "reserve",
                      fields=(FieldSpec("check_in", "Check-in", "date", 30, 150),
                              FieldSpec("nights", "Nights", "int", 1, 7)),
                      total=("rate", "nights"), initial="confirmed", history=("completed",),
                      cancel="Cancel reservation", update="nights"),
    favorites=("shortlist", "Add to shortlist", "Remove from shortlist"), roles=("guest", "staff"),
    editor_can=("edit", "archive"),
    tagline="Rooms worth waking up in",
    templates=(
        T("cheapest_in_hotel", "extreme", field="rate", order="asc"),
        T("most_spacious_in_hotel", "extreme", field="size", order="desc"),
        T("kth_cheapest", "kth", field="rate", order="asc"),
        T("rate_of", "lookup", field="rate"),
        T("area_of", "lookup", field="size"),
        T("code_of_best_rated", "chain_code", field="rating", order="desc"),
        T("reservation_total", "my_record_value", value="total"),
        T("check_in_date", "my_record_value", value="check_in"),
        T("reserve_cheapest", "create_record_extreme", field="rate", order="asc"),
        T("change_nights", "update_record"),
        T("reprice_room", "edit_item", field="rate"),
        T("close_room", "archive_item"),
    ),
)

WIKI = _kind(
    key="wiki", site_words=("Wiki", "Encyclopedia", "Atlas", "Compendium"), item=("article", "articles"),
    category_label="Portal",
    categories={
        "History": ("Treaty", "Uprising", "Dynasty", "Charter"),
        "Geography": ("River", "Plateau", "Archipelago", "Valley"),
        "Science": ("Theorem", "Effect", "Reaction", "Constant"),
        "Music": ("Quartet", "Festival", "Symphony", "Ballad"),
        "Sport": ("Derby", "Cup", "Marathon", "Regatta"),
        "Transport": ("Railway", "Canal", "Bridge", "Airfield"),
        "Food": ("Stew", "Cheese", "Pastry", "Cider"),
        "Architecture": ("Cathedral", "Tower", "Library", "Arcade"),
        "Biology": ("Beetle", "Orchid", "Heron", "Fern"),
        "Literature": ("Saga", "Almanac", "Chronicle", "Sonnets"),
        "Space": ("Crater", "Comet", "Nebula", "Observatory"),
        "Film": ("Studio", "Premiere", "Trilogy", "Newsreel"),
    },
    name_patterns=("{P} {N}", "The {P} {N}", "{N} of {P}"), adjectives=(),
    code_label="Page ID", code_prefix="PG",
    fields=(
        FieldSpec("summary", "Summary", "text", editable=True),
        FieldSpec("words", "Length", "int", 120, 14000, unit="words", sort=True, lookup=True,
                  words=("shortest", "longest")),
        FieldSpec("updated", "Last edited", "date", -900, -1, sort=True, lookup=True,
                  words=("least recently edited", "most recently edited")),
        FieldSpec("views", "Page views", "int", 100, 90000, sort=True, lookup=True,
                  words=("least-read", "most-read")),
        FieldSpec("quality", "Quality", "enum", choices=("stub", "start", "good", "featured"), filter=True,
                  editable=True),
    ),
    record=RecordSpec(("comment", "talk comments"), "Add comment", "comment on",
                      fields=(FieldSpec("body", "Comment", "text"),), initial="posted", cancelled="withdrawn",
                      cancel="Withdraw comment", public=True, update="body"),
    favorites=("watchlist", "Watch this page", "Stop watching"), roles=("reader", "editor"),
    members_create=True, tagline="The free reference anyone can edit",
    templates=(
        T("longest_in_portal", "extreme", field="words", order="desc"),
        T("most_read_in_portal", "extreme", field="views", order="desc"),
        T("kth_longest", "kth", field="words", order="desc"),
        T("length_of", "lookup", field="words"),
        T("last_edit_of", "lookup", field="updated"),
        T("id_of_most_recently_edited", "chain_code", field="updated", order="desc"),
        T("comment_on_longest", "create_record_extreme", field="words", order="desc"),
        T("edit_comment", "update_record"),
        T("rewrite_summary", "edit_item", field="summary"),
        T("grade_article", "edit_item", field="quality"),
        T("archive_article", "archive_item"),
        T("create_article", "create_item"),
    ),
)

ADMIN = _kind(
    key="admin", site_words=("Console", "Admin", "Control Panel", "Directory"), item=("account", "accounts"),
    category_label="Team",
    categories={t: ("",) for t in ("Engineering", "Sales", "Support", "Finance", "Legal", "Design", "Marketing",
                                   "Research", "Operations", "Security", "Data", "Facilities")},
    name_patterns=("{F} {P}",), adjectives=(),
    code_label="Employee ID", code_prefix="EMP",
    fields=(
        FieldSpec("role", "Role", "enum", choices=("viewer", "editor", "admin", "owner"), filter=True,
                  editable=True),
        FieldSpec("status", "Status", "enum", choices=("active", "suspended", "invited"), filter=True,
                  editable=True),
        FieldSpec("quota", "Storage quota", "int", 5, 2000, unit="GB", sort=True, editable=True, lookup=True,
                  words=("smallest-quota", "largest-quota")),
        FieldSpec("last_login", "Last sign-in", "date", -400, -1, sort=True, lookup=True,
                  words=("longest-idle", "most recently active")),
        FieldSpec("joined", "Joined", "date", -3000, -401, sort=True, lookup=True, words=("earliest", "latest")),
    ),
    record=RecordSpec(("ticket", "tickets"), "Open ticket", "open a ticket about",
                      fields=(FieldSpec("body", "Describe the problem", "text"),), initial="open",
                      cancelled="closed", history=("resolved",), cancel="Close ticket", update="body"),
    favorites=("pinned accounts", "Pin account", "Unpin account"), roles=("staff", "admin"),
    tagline="Accounts, teams and access in one place",
    templates=(
        T("largest_quota_in_team", "extreme", field="quota", order="desc"),
        T("longest_idle_in_team", "extreme", field="last_login", order="asc"),
        T("kth_earliest_joiner", "kth", field="joined", order="asc"),
        T("quota_of", "lookup", field="quota"),
        T("last_sign_in_of", "lookup", field="last_login"),
        T("id_of_latest_joiner", "chain_code", field="joined", order="desc"),
        T("ticket_for_idle_account", "create_record_extreme", field="last_login", order="asc"),
        T("edit_ticket", "update_record"),
        T("change_role", "edit_item", field="role"),
        T("suspend_account", "edit_item", field="status"),
        T("set_quota", "edit_item", field="quota"),
        T("remove_account", "archive_item"),
        T("add_account", "create_item"),
    ),
)

LIBRARY = _kind(
    key="library", site_words=("Library", "Reading Room", "Books", "Lending"), item=("book", "books"),
    category_label="Genre",
    categories={
        "Mystery": ("Secret", "Alibi", "Key", "Witness"), "Poetry": ("Verses", "Hymns", "Odes", "Songs"),
        "History": ("Empire", "Harbour", "Siege", "Republic"), "Science": ("Atoms", "Tides", "Genes", "Orbits"),
        "Travel": ("Roads", "Islands", "Coasts", "Passes"), "Biography": ("Life", "Letters", "Years", "Diaries"),
        "Children": ("Dragon", "Puppy", "Moon", "Treehouse"), "Philosophy": ("Reason", "Virtue", "Mind", "Doubt"),
        "Cooking": ("Kitchen", "Bread", "Spices", "Table"), "Nature": ("Forest", "Marsh", "Fox", "Glacier"),
        "Art": ("Colour", "Line", "Canvas", "Studio"), "Economics": ("Markets", "Money", "Trade", "Prices"),
    },
    name_patterns=("The {A} {N} of {P}", "{P}'s {A} {N}", "{N} over {P}"),
    adjectives=("Silent", "Last", "Hidden", "Golden", "Small", "Northern", "Burning"),
    code_label="Catalogue no.", code_prefix="CAT",
    fields=(
        FieldSpec("author", "Author", "enum", choices=("{PERSON}",), filter=True),
        FieldSpec("year", "Published", "int", 1850, 2025, sort=True, lookup=True, create=True,
                  words=("oldest", "newest")),
        FieldSpec("pages", "Pages", "int", 60, 1400, sort=True, lookup=True, create=True,
                  words=("shortest", "longest")),
        FieldSpec("copies", "Copies", "int", 1, 14, sort=True, editable=True, words=("rarest", "most-stocked")),
    ),
    record=RecordSpec(("loan", "loans"), "Borrow", "borrow",
                      fields=(FieldSpec("due", "Due back", "date", 7, 60),), initial="on loan", cancelled="returned",
                      history=("overdue",), cancel="Return book", update="due",
                      consumes=("copies", "")),
    favorites=("reading list", "Add to reading list", "Remove from reading list"), roles=("patron", "librarian"),
    tagline="Borrow, read, return, repeat",
    templates=(
        T("oldest_in_genre", "extreme", field="year", order="asc"),
        T("longest_in_genre", "extreme", field="pages", order="desc"),
        T("kth_newest", "kth", field="year", order="desc"),
        T("pages_of", "lookup", field="pages"),
        T("year_of", "lookup", field="year"),
        T("number_of_longest", "chain_code", field="pages", order="desc"),
        T("due_date_of_loan", "my_record_value", value="due"),
        T("borrow_oldest", "create_record_extreme", field="year", order="asc"),
        T("renew_loan", "update_record"),
        T("set_copies", "edit_item", field="copies"),
        T("withdraw_book", "archive_item"),
        T("add_book", "create_item"),
    ),
)

EVENTS = _kind(
    key="events", site_words=("Events", "Tickets", "Live", "Happenings"), item=("event", "events"),
    category_label="Venue",
    categories={f"{{P}} {w}": ("Concert", "Talk", "Workshop", "Screening", "Comedy Night", "Quiz")
                for w in ("Hall", "Arena", "Theatre", "Pavilion", "Club", "Forum")},
    name_patterns=("{P} {A} {N}", "{A} {N} with {P}"),
    adjectives=("Spring", "Late", "Open", "Grand", "Acoustic", "Family", "Midweek"),
    code_label="Event code", code_prefix="EV",
    fields=(
        FieldSpec("date", "Date", "date", 10, 300, sort=True, lookup=True, create=True, words=("soonest", "latest")),
        FieldSpec("price", "Ticket price", "money", 5, 250, sort=True, editable=True, lookup=True,
                  words=("cheapest", "most expensive")),
        FieldSpec("capacity", "Capacity", "int", 20, 5000, sort=True, editable=True, lookup=True,
                  words=("smallest", "largest")),
        FieldSpec("organizer", "Organiser", "enum", choices=("{PERSON}",), filter=True),
    ),
    record=RecordSpec(("registration", "registrations"), "Register", "register for",
                      fields=(FieldSpec("tickets", "Tickets", "int", 1, 6),), total=("price", "tickets"),
                      initial="registered", history=("attended",), cancel="Cancel registration", update="tickets"),
    favorites=("interested list", "Mark as interested", "Not interested"), roles=("attendee", "organiser"),
    tagline="What's on, and who's going",
    templates=(
        T("soonest_at_venue", "extreme", field="date", order="asc"),
        T("cheapest_at_venue", "extreme", field="price", order="asc"),
        T("kth_largest", "kth", field="capacity", order="desc"),
        T("date_of", "lookup", field="date"),
        T("ticket_price_of", "lookup", field="price"),
        T("code_of_latest", "chain_code", field="date", order="desc"),
        T("registration_total", "my_record_value", value="total"),
        T("register_for_soonest", "create_record_extreme", field="date", order="asc"),
        T("change_tickets", "update_record"),
        T("reprice_event", "edit_item", field="price"),
        T("resize_event", "edit_item", field="capacity"),
        T("archive_event", "archive_item"),
        T("add_event", "create_item"),
    ),
)

JOBS = _kind(
    key="jobs", site_words=("Careers", "Jobs", "Hiring", "Work"), item=("job", "jobs"),
    category_label="Field",
    categories={
        "Engineering": ("Backend Engineer", "Site Reliability Engineer", "QA Engineer"),
        "Design": ("Product Designer", "Illustrator", "UX Researcher"),
        "Sales": ("Account Executive", "Sales Lead", "Partner Manager"),
        "Finance": ("Accountant", "Financial Analyst", "Payroll Officer"),
        "Healthcare": ("Nurse", "Pharmacist", "Care Coordinator"),
        "Education": ("Tutor", "Curriculum Writer", "Teaching Assistant"),
        "Logistics": ("Warehouse Lead", "Dispatcher", "Fleet Planner"),
        "Legal": ("Paralegal", "Contracts Counsel", "Compliance Officer"),
        "Marketing": ("Copywriter", "SEO Specialist", "Brand Manager"),
        "Hospitality": ("Chef", "Front Desk Agent", "Events Host"),
        "Research": ("Lab Technician", "Data Scientist", "Field Researcher"),
        "Media": ("Video Editor", "Podcast Producer", "Photo Editor"),
    },
    name_patterns=("{A} {N} at {P}", "{N} ({A}), {P}"), adjectives=("Junior", "Senior", "Lead", "Remote", "Part-time"),
    code_label="Posting ID", code_prefix="JOB",
    fields=(
        FieldSpec("salary", "Salary", "money", 28000, 240000, sort=True, editable=True, lookup=True,
                  words=("lowest-paid", "best-paid")),
        FieldSpec("posted", "Posted on", "date", -120, -1, sort=True, lookup=True, words=("oldest", "newest")),
        FieldSpec("openings", "Openings", "int", 1, 9, sort=True, editable=True,
                  words=("fewest-openings", "most-openings")),
        FieldSpec("location", "Location", "enum", choices=("{P}",), filter=True),
    ),
    record=RecordSpec(("application", "applications"), "Apply", "apply for",
                      fields=(FieldSpec("note", "Cover note", "text"),), initial="submitted", cancelled="withdrawn",
                      history=("interviewing", "declined"), cancel="Withdraw application", update="note"),
    favorites=("saved jobs", "Save job", "Unsave job"), roles=("candidate", "recruiter"),
    tagline="Work you will want to show up for",
    templates=(
        T("best_paid_in_field", "extreme", field="salary", order="desc"),
        T("newest_in_field", "extreme", field="posted", order="desc"),
        T("kth_best_paid", "kth", field="salary", order="desc"),
        T("salary_of", "lookup", field="salary"),
        T("posting_date_of", "lookup", field="posted"),
        T("id_of_oldest", "chain_code", field="posted", order="asc"),
        T("apply_to_best_paid", "create_record_extreme", field="salary", order="desc"),
        T("edit_cover_note", "update_record"),
        T("change_salary", "edit_item", field="salary"),
        T("close_posting", "archive_item"),
        T("post_job", "create_item"),
    ),
)

RECIPES = _kind(
    key="recipes", site_words=("Kitchen", "Recipes", "Cookbook", "Table"), item=("recipe", "recipes"),
    category_label="Course",
    categories={
        "Breakfast": ("Pancakes", "Granola", "Omelette"), "Soups": ("Lentil Soup", "Chowder", "Broth"),
        "Salads": ("Slaw", "Grain Bowl", "Panzanella"), "Mains": ("Stew", "Roast", "Curry"),
        "Desserts": ("Tart", "Crumble", "Custard"), "Baking": ("Loaf", "Scones", "Focaccia"),
        "Drinks": ("Lemonade", "Chai", "Smoothie"), "Snacks": ("Fritters", "Dip", "Crackers"),
        "Pasta": ("Ragu", "Pesto Pasta", "Lasagne"), "Seafood": ("Fish Pie", "Mussels", "Prawn Skewers"),
        "Vegan": ("Dal", "Tofu Bowl", "Chickpea Stew"), "Grill": ("Kebabs", "Burgers", "Corn Ribs"),
    },
    name_patterns=("{P} {A} {N}", "{A} {N} à la {P}"), adjectives=("Smoky", "Crispy", "Easy", "Spiced", "Sunday"),
    code_label="Recipe no.", code_prefix="RC",
    fields=(
        FieldSpec("minutes", "Total time", "int", 5, 240, unit="min", sort=True, editable=True, lookup=True,
                  words=("quickest", "slowest")),
        FieldSpec("calories", "Calories", "int", 60, 1500, unit="kcal", sort=True, editable=True, lookup=True,
                  words=("lightest", "richest")),
        FieldSpec("rating", "Rating", "rating", sort=True, words=("lowest-rated", "top-rated")),
        FieldSpec("cuisine", "Cuisine", "enum",
                  choices=("Italian", "Indian", "Mexican", "Nordic", "Japanese", "Greek", "Ethiopian"), filter=True),
    ),
    record=RecordSpec(("review", "reviews"), "Post review", "review",
                      fields=(FieldSpec("body", "Your review", "text"),), initial="published", cancelled="deleted",
                      cancel="Delete review", public=True, update="body"),
    favorites=("cookbook", "Save to cookbook", "Remove from cookbook"), roles=("cook", "editor"),
    members_create=True, tagline="Recipes cooked and rated by readers",
    templates=(
        T("quickest_in_course", "extreme", field="minutes", order="asc"),
        T("lightest_in_course", "extreme", field="calories", order="asc"),
        T("kth_richest", "kth", field="calories", order="desc"),
        T("time_of", "lookup", field="minutes"),
        T("calories_of", "lookup", field="calories"),
        T("number_of_top_rated", "chain_code", field="rating", order="desc"),
        T("review_quickest", "create_record_extreme", field="minutes", order="asc"),
        T("edit_review", "update_record"),
        T("correct_calories", "edit_item", field="calories"),
        T("unpublish_recipe", "archive_item"),
        T("submit_recipe", "create_item"),
    ),
)

RENTALS = _kind(
    key="rentals", site_words=("Homes", "Lettings", "Rentals", "Keys"), item=("home", "homes"),
    category_label="Neighbourhood",
    categories={f"{{P}} {w}": ("Flat", "Loft", "Cottage", "Studio", "Townhouse")
                for w in ("Heights", "Quarter", "Park", "Docks", "Hill", "Green")},
    name_patterns=("{A} {N} on {P} Street", "{P} {A} {N}"),
    adjectives=("Bright", "Cosy", "Modern", "Top-floor", "Quiet", "Corner"),
    code_label="Listing ref", code_prefix="LST",
    fields=(
        FieldSpec("rent", "Monthly rent", "money", 450, 6500, sort=True, editable=True, lookup=True,
                  words=("cheapest", "most expensive")),
        FieldSpec("area", "Floor area", "int", 18, 260, unit="m²", sort=True, lookup=True, create=True,
                  words=("smallest", "largest")),
        FieldSpec("available", "Available from", "date", 3, 200, sort=True, lookup=True, create=True,
                  words=("soonest available", "latest available")),
        FieldSpec("bedrooms", "Bedrooms", "int", 0, 5, sort=True, create=True,
                  words=("fewest-bedroom", "most-bedroom")),
        FieldSpec("furnishing", "Furnishing", "enum", choices=("furnished", "unfurnished", "part-furnished"),
                  filter=True),
    ),
    record=RecordSpec(("viewing", "viewings"), "Request viewing", "request a viewing of",
                      fields=(FieldSpec("day", "Preferred day", "date", 2, 40),), initial="requested",
                      history=("done",), cancel="Cancel viewing", update="day"),
    favorites=("saved homes", "Save home", "Unsave home"), roles=("renter", "agent"),
    tagline="Find a place, book a viewing",
    templates=(
        T("cheapest_in_area", "extreme", field="rent", order="asc"),
        T("largest_in_area", "extreme", field="area", order="desc"),
        T("kth_cheapest", "kth", field="rent", order="asc"),
        T("rent_of", "lookup", field="rent"),
        T("availability_of", "lookup", field="available"),
        T("ref_of_largest", "chain_code", field="area", order="desc"),
        T("viewing_day", "my_record_value", value="day"),
        T("view_cheapest", "create_record_extreme", field="rent", order="asc"),
        T("move_viewing", "update_record"),
        T("change_rent", "edit_item", field="rent"),
        T("mark_let", "archive_item"),
        T("list_home", "create_item"),
    ),
)

COURSES = _kind(
    key="courses", site_words=("Academy", "School", "Learning", "Classes"), item=("course", "courses"),
    category_label="Subject",
    categories={
        "Mathematics": ("Statistics", "Algebra", "Geometry"), "Languages": ("Spanish", "Japanese", "Latin"),
        "Programming": ("Python", "Databases", "Web Basics"), "Art": ("Watercolour", "Life Drawing", "Printmaking"),
        "Music": ("Piano", "Music Theory", "Songwriting"), "Business": ("Bookkeeping", "Negotiation", "Marketing"),
        "Writing": ("Short Fiction", "Copy Editing", "Memoir"), "Photography": ("Portraits", "Darkroom", "Lighting"),
        "Science": ("Chemistry", "Astronomy", "Botany"), "Crafts": ("Pottery", "Bookbinding", "Weaving"),
        "History": ("Ancient Rome", "Maritime History", "Archaeology"), "Fitness": ("Pilates", "Rowing", "Climbing"),
    },
    name_patterns=("{A} {N} with {P}", "{P} {A} {N}"), adjectives=("Intro to", "Applied", "Weekend", "Evening"),
    code_label="Course code", code_prefix="CRS",
    fields=(
        FieldSpec("fee", "Fee", "money", 20, 1900, sort=True, editable=True, lookup=True,
                  words=("cheapest", "most expensive")),
        FieldSpec("hours", "Length", "int", 2, 160, unit="hours", sort=True, lookup=True, create=True,
                  words=("shortest", "longest")),
        FieldSpec("starts", "Starts on", "date", 5, 220, sort=True, lookup=True, create=True,
                  words=("soonest", "latest")),
        FieldSpec("level", "Level", "enum", choices=("beginner", "intermediate", "advanced"), filter=True,
                  editable=True),
    ),
    record=RecordSpec(("enrolment", "enrolments"), "Enrol", "enrol in",
                      fields=(FieldSpec("sessions", "Sessions per week", "int", 1, 5),), total=("fee", ""),
                      initial="enrolled", cancelled="dropped", history=("completed",), cancel="Drop course",
                      update="sessions"),
    favorites=("watchlist", "Watch course", "Unwatch course"), roles=("student", "instructor"),
    tagline="Learn something new this term",
    templates=(
        T("cheapest_in_subject", "extreme", field="fee", order="asc"),
        T("longest_in_subject", "extreme", field="hours", order="desc"),
        T("kth_soonest", "kth", field="starts", order="asc"),
        T("fee_of", "lookup", field="fee"),
        T("start_of", "lookup", field="starts"),
        T("code_of_longest", "chain_code", field="hours", order="desc"),
        T("enrolment_fee", "my_record_value", value="total"),
        T("enrol_in_soonest", "create_record_extreme", field="starts", order="asc"),
        T("change_sessions", "update_record"),
        T("change_fee", "edit_item", field="fee"),
        T("change_level", "edit_item", field="level"),
        T("archive_course", "archive_item"),
        T("add_course", "create_item"),
    ),
)

KINDS: dict[str, Kind] = {k.key: k for k in (SHOP, FORUM, BOOKING, WIKI, ADMIN, LIBRARY, EVENTS, JOBS, RECIPES,
                                              RENTALS, COURSES)}
"""Every domain kind, by key."""
