"""The vocabulary the app generator draws from: 32 business domains, each a party, a catalogue and a record type.

A :class:`Domain` names the three roles every generated app is built around and
the words of its workflow:

* the **party** (a member, patient, guest...): a person from the shared people pool;
* the **item** (a book, treatment, room type...): a catalogue entry, with a category
  and numbers, one of which may be a counter that the workflow draws down;
* the **record** (a loan, appointment, booking...): links a party to an item, carries
  an amount, a date, a note, a category, a precondition flag and a status that moves
  ``initial -> active -> done`` or to ``cancelled`` through three domain actions.

:mod:`rollgym.envs.tools.generated.schema` turns a domain and a variant number into
one concrete schema (which fields, constraints, actions and preconditions are in).
Nothing here is random; the words are data.
"""

from __future__ import annotations

from dataclasses import dataclass

Number = tuple[str, str, int, int]
"""``(field, kind, low, high)`` with kind ``"int"`` or ``"money"`` (whole dollars for the bounds)."""


@dataclass(frozen=True)
class Domain:
    """One business domain's words. See the module docstring for the roles."""

    key: str
    noun: str
    party: tuple[str, str]
    item: tuple[str, str, str]
    item_names: tuple[str, ...]
    category: tuple[str, tuple[str, ...]]
    item_numbers: tuple[Number, ...]
    counter: str | None
    record: tuple[str, str, str]
    statuses: tuple[str, str, str, str]
    verbs: tuple[str, str, str]
    flag: str
    quantity: str
    record_numbers: tuple[Number, ...]
    date: str
    text: str
    kind: tuple[str, tuple[str, ...]]


def _d(key: str, noun: str, party: str, item: str, names: str, category: str, item_numbers: str,
       counter: str | None, record: str, statuses: str, verbs: str, flag: str, quantity: str, record_numbers: str,
       date: str, text: str, kind: str) -> Domain:
    """A domain from compact strings: ``"a/b"`` pairs, ``"name: v1, v2"`` enums, ``"f int 1 9; g money 5 60"``."""

    def pair(text: str) -> tuple[str, str]:
        a, b = text.split("/")
        return a, b

    def enum(text: str) -> tuple[str, tuple[str, ...]]:
        name, values = text.split(":")
        return name.strip(), tuple(v.strip() for v in values.split(","))

    def numbers(text: str) -> tuple[Number, ...]:
        out = []
        for part in text.split(";"):
            name, kind, low, high = part.split()
            out.append((name, kind, int(low), int(high)))
        return tuple(out)

    item_single, item_plural, label = item.split("/")
    record_single, record_plural, prefix = record.split("/")
    s = tuple(x.strip() for x in statuses.split(","))
    v = tuple(x.strip() for x in verbs.split(","))
    return Domain(key, noun, pair(party), (item_single, item_plural, label),
                  tuple(n.strip() for n in names.split(",")), enum(category), numbers(item_numbers), counter,
                  (record_single, record_plural, prefix), (s[0], s[1], s[2], s[3]), (v[0], v[1], v[2]), flag,
                  quantity, numbers(record_numbers), date, text, enum(kind))


DOMAINS: tuple[Domain, ...] = (
    _d("library", "Library", "member/members", "book/books/title",
       "Atlas of Islands, The Quiet Garden, Learning SQL, Night Train Stories, Cooking with Grains, A Short History "
       "of Maps, The Glass Harbour, Field Guide to Moths, River of Stars, The Last Orchard, Winter Recipes, Bridges "
       "of Prague, The Clockmaker, Songs of the Tide",
       "genre: fiction, history, science, poetry, travel, children", "copies int 2 12; replacement_fee money 5 60",
       "copies", "loan/loans/LN", "reserved, checked_out, returned, cancelled", "check_out, return, cancel",
       "card_verified", "quantity", "late_fee money 1 40; deposit money 5 50", "due_on", "notes",
       "channel: desk, online, phone, kiosk"),
    _d("clinic", "Clinic", "patient/patients", "treatment/treatments/name",
       "Annual check-up, Blood test, Flu vaccine, Physiotherapy session, Allergy test, X-ray, Dental cleaning, "
       "Eye exam, Hearing test, Nutrition consult, Skin check, ECG",
       "department: general, cardiology, dermatology, orthopedics, pediatrics",
       "duration_minutes int 10 120; price money 20 400", None, "appointment/appointments/AP",
       "requested, confirmed, completed, cancelled", "confirm, complete, cancel", "insurance_checked", "sessions",
       "fee money 20 400; copay money 5 80", "scheduled_on", "notes", "room: A1, A2, B1, B2, C3"),
    _d("hotel", "Hotel", "guest/guests", "room_type/room_types/name",
       "Garden single, Harbour double, Family suite, Loft studio, Penthouse, Courtyard twin, Attic single, "
       "Deluxe king, Accessible double, Budget bunk", "wing: north, south, east, west",
       "rooms_free int 2 30; nightly_rate money 60 600", "rooms_free", "stay/stays/BK",
       "reserved, checked_in, checked_out, cancelled", "check_in, check_out, cancel", "deposit_paid", "rooms",
       "total money 100 3000; minibar money 5 120", "arrival_on", "special_requests",
       "source: website, phone, agency, walk_in"),
    _d("car_rental", "Car Rental", "driver/drivers", "vehicle/vehicles/model",
       "Compact hatchback, City EV, Family estate, Seven-seat van, Pickup truck, Convertible, Cargo van, Hybrid "
       "sedan, Off-road SUV, Luxury coupe", "vehicle_class: economy, compact, premium, van, suv",
       "available int 1 15; daily_rate money 25 250", "available", "rental/rentals/RN",
       "reserved, picked_up, returned, cancelled", "pick_up, return, cancel", "license_checked", "vehicles",
       "deposit money 50 900; fuel_charge money 10 120", "pickup_on", "notes",
       "branch: airport, downtown, station, harbour"),
    _d("gym", "Gym", "athlete/athletes", "class/classes/name",
       "Morning yoga, Spin express, Boxing basics, Pilates core, HIIT lunch, Aqua fit, Strength lab, Stretch and "
       "breathe, Trail running club, Kettlebell flow", "level: beginner, intermediate, advanced",
       "spots_left int 3 30; price money 8 40", "spots_left", "enrollment/enrollments/EN",
       "pending, active, finished, cancelled", "activate, finish, cancel", "waiver_signed", "spots",
       "amount_due money 8 200; locker_fee money 2 30", "starts_on", "goals",
       "payment_plan: monthly, quarterly, yearly, drop_in"),
    _d("restaurant", "Restaurant", "diner/diners", "table/tables/name",
       "Window two-top, Garden terrace, Bar counter, Private room, Fireside booth, Patio four, Chef's table, Corner "
       "booth, Mezzanine six, Courtyard eight", "area: indoor, outdoor, bar, private",
       "seats int 2 12; minimum_spend money 20 300", None, "reservation/reservations/RS",
       "booked, seated, closed, cancelled", "seat, close, cancel", "phone_confirmed", "tables",
       "bill money 30 900; tip money 2 120", "reserved_for", "notes",
       "occasion: birthday, business, anniversary, casual"),
    _d("bakery", "Bakery", "customer/customers", "product/products/name",
       "Sourdough loaf, Rye bread, Croissant box, Cinnamon buns, Lemon tart, Carrot cake, Baguette pair, Seeded "
       "rolls, Chocolate eclairs, Fruit scones, Wedding cake tier, Almond biscotti",
       "category: bread, pastry, cake, cookies", "in_stock int 5 60; price money 3 90", "in_stock",
       "order/orders/BO", "placed, baked, collected, cancelled", "bake, collect, cancel", "paid", "quantity",
       "total money 5 400; delivery_fee money 2 25", "pickup_on", "inscription", "channel: shop, phone, website"),
    _d("ticketing", "Tickets", "attendee/attendees", "event/events/title",
       "Jazz on the Pier, Harbour Film Night, Spring Book Fair, Robotics Expo, Folk Festival, Comedy Cellar, "
       "Open-air Opera, Street Food Market, Chess Championship, Winter Lights Walk",
       "genre: music, film, fair, sport, theatre", "tickets_left int 20 400; ticket_price money 10 150",
       "tickets_left", "ticket_order/ticket_orders/TK", "reserved, issued, used, refunded", "issue, redeem, refund",
       "payment_cleared", "seats", "amount money 10 900; booking_fee money 1 15", "purchased_on", "seat_notes",
       "delivery: email, app, box_office"),
    _d("school", "School", "student/students", "course/courses/title",
       "Algebra I, World History, Creative Writing, Biology Lab, Spanish A2, Music Theory, Intro to Coding, Art and "
       "Design, Economics, Public Speaking", "faculty: science, arts, languages, humanities",
       "seats_open int 5 40; tuition money 100 1500", "seats_open", "registration/registrations/RG",
       "applied, enrolled, graduated, withdrawn", "enroll, graduate, withdraw", "transcript_received", "seats",
       "fees_due money 50 1500; lab_fee money 10 90", "start_on", "advisor_notes",
       "term: spring, summer, autumn, winter"),
    _d("veterinary", "Vets", "pet_owner/pet_owners", "service/services/name",
       "Vaccination, Dental scaling, Microchipping, Nail trim, Spay surgery, Allergy panel, Checkup, Grooming bath, "
       "X-ray scan, Blood panel", "species: dog, cat, rabbit, bird", "price money 15 600; duration_minutes int 10 180",
       None, "visit/visits/VV", "booked, checked_in, discharged, cancelled", "check_in, discharge, cancel",
       "consent_signed", "pets", "bill money 20 900; medication money 5 150", "visit_on", "symptoms",
       "pet_kind: dog, cat, rabbit, parrot, hamster"),
    _d("coworking", "Cowork", "tenant/tenants", "space/spaces/name",
       "Hot desk A, Hot desk B, Fixed desk 12, Meeting room Oak, Meeting room Pine, Phone booth 3, Studio loft, "
       "Quiet pod, Board room, Window desk 7", "floor: ground, first, second, rooftop",
       "capacity int 1 14; hourly_rate money 5 80", None, "space_booking/space_bookings/DB",
       "requested, approved, completed, declined", "approve, complete, decline", "id_verified", "desks",
       "charge money 5 600; printing money 1 40", "booked_for", "purpose", "plan: flex, dedicated, team, day_pass"),
    _d("bike_repair", "Bike Repair", "cyclist/cyclists", "part/parts/name",
       "Brake pads, Inner tube, Chain, Cassette, Tyre 700c, Saddle, Handlebar tape, Derailleur, Spoke set, Pedals, "
       "Cable kit, Bottom bracket", "part_group: brakes, drivetrain, wheels, cockpit",
       "in_stock int 2 50; price money 4 180", "in_stock", "repair_job/repair_jobs/RJ",
       "received, repaired, collected, cancelled", "repair, hand_over, cancel", "quote_accepted", "parts_used",
       "labour money 10 300; parts_cost money 4 250", "due_on", "fault",
       "bike_type: road, mountain, city, cargo, kids"),
    _d("insurance", "Insurance", "policyholder/policyholders", "plan/plans/name",
       "Home basic, Home plus, Car third party, Car comprehensive, Travel single, Travel annual, Pet cover, Gadget "
       "cover, Life term, Bike cover", "line: home, motor, travel, pet, life",
       "premium money 5 200; excess money 50 1000", None, "claim/claims/CL", "filed, approved, paid_out, rejected",
       "approve, pay_out, reject", "documents_complete", "items", "claimed_amount money 100 8000; payout money 50 6000",
       "incident_on", "description", "cause: theft, water, fire, accident, storm"),
    _d("real_estate", "Realty", "client/clients", "property/properties/address",
       "12 Elm Row, 4 Quay Street, 88 Hill Terrace, 7 Mill Lane, 21 Orchard Close, 3 Beacon Way, 15 Canal Walk, "
       "9 Fern Avenue, 40 Station Road, 2 Cliff View", "kind: flat, house, studio, cottage",
       "bedrooms int 1 6; asking_price money 90000 900000", None, "viewing/viewings/VW",
       "requested, scheduled, done, cancelled", "schedule, complete, cancel", "id_checked", "visitors",
       "offer money 80000 900000; holding_fee money 100 2000", "viewing_on", "feedback",
       "agent: ames, baker, cole, diaz"),
    _d("freight", "Freight", "shipper/shippers", "route/routes/name",
       "Lisbon to Porto, Hamburg to Oslo, Lyon to Milan, Gdansk to Riga, Valencia to Marseille, Antwerp to Leeds, "
       "Vienna to Prague, Bilbao to Bordeaux, Turku to Tallinn, Cork to Bristol", "mode: road, rail, sea, air",
       "capacity_left int 5 80; rate money 100 3000", "capacity_left", "shipment/shipments/SH",
       "booked, dispatched, delivered, cancelled", "dispatch, deliver, cancel", "customs_cleared", "pallets",
       "freight_charge money 200 9000; insurance_fee money 10 300", "ship_on", "handling",
       "priority: standard, express, economy"),
    _d("pharmacy", "Pharmacy", "patient/patients", "medicine/medicines/name",
       "Amoxicillin 500mg, Ibuprofen 200mg, Cetirizine 10mg, Omeprazole 20mg, Salbutamol inhaler, Vitamin D drops, "
       "Metformin 850mg, Paracetamol 500mg, Loratadine 10mg, Insulin pen", "form: tablet, syrup, inhaler, injection, "
       "drops", "in_stock int 5 120; price money 2 90", "in_stock", "prescription/prescriptions/RX",
       "received, filled, picked_up, voided", "fill, hand_out, void", "doctor_verified", "packs",
       "copay money 1 60; delivery_fee money 2 15", "issued_on", "instructions",
       "prescriber: dr_ames, dr_baker, dr_cole, dr_diaz"),
    _d("helpdesk", "Helpdesk", "employee/employees", "asset/assets/name",
       "Laptop L-204, Monitor M-77, Phone P-310, Printer PR-9, Tablet T-55, Dock D-18, Headset H-42, Router R-3, "
       "Desktop D-701, Projector J-12", "asset_type: laptop, monitor, phone, printer, network",
       "age_months int 1 72; value money 50 3000", None, "ticket/tickets/IT", "open, in_progress, resolved, rejected",
       "start, resolve, reject", "manager_approved", "devices", "cost money 5 900; parts money 5 400", "reported_on",
       "summary", "severity: low, medium, high, critical"),
    _d("recruiting", "Careers", "candidate/candidates", "job/jobs/title",
       "Backend engineer, Data analyst, Sales lead, Product designer, Support agent, Nurse, Warehouse lead, "
       "Accountant, Chef de partie, Electrician", "department: engineering, sales, operations, finance, care",
       "openings int 1 6; salary money 28000 140000", None, "application/applications/JA",
       "submitted, shortlisted, hired, rejected", "shortlist, hire, reject", "references_checked", "roles",
       "expected_salary money 25000 150000; relocation money 500 9000", "applied_on", "cover_note",
       "source: referral, job_board, agency, website"),
    _d("grants", "Grants", "applicant/applicants", "program/programs/name",
       "Arts Seed Fund, Green Streets, Youth Coding, Rural Broadband, Heritage Repairs, Community Kitchens, Clean "
       "Rivers, Small Venues, Makers Grant, Reading Buddies", "theme: culture, environment, education, community",
       "max_award money 1000 50000; rounds_per_year int 1 4", None, "grant_application/grant_applications/GA",
       "submitted, approved, funded, declined", "approve, fund, decline", "budget_attached", "phases",
       "requested money 500 50000; match_funding money 100 9000", "deadline_on", "summary",
       "region: north, south, east, west, central"),
    _d("museum", "Museum", "visitor/visitors", "tour/tours/name",
       "Ancient Egypt, Impressionists, Dinosaur Hall, Modern Sculpture, Maritime Wing, Roman Coins, Textiles, Space "
       "Gallery, Photography, Rooftop Garden", "language: english, spanish, german, french",
       "spaces_left int 5 40; price money 5 45", "spaces_left", "tour_booking/tour_bookings/TB",
       "booked, checked_in, finished, cancelled", "check_in, finish, cancel", "tickets_paid", "guests",
       "total money 5 400; audio_guide money 2 12", "visit_on", "access_needs",
       "group_type: school, family, adult, senior"),
    _d("theatre", "Theatre", "patron/patrons", "performance/performances/title",
       "Hamlet matinee, Hamlet evening, The Seagull, Comedy of Errors, Pirates of Penzance, A Doll's House, Swan "
       "Lake, Carmen, The Nutcracker, Our Town", "stage: main, studio, garden",
       "seats_left int 10 300; price money 15 120", "seats_left", "seat_order/seat_orders/SO",
       "held, confirmed, attended, released", "confirm, attend, release", "card_authorised", "seats",
       "amount money 15 900; programme money 3 15", "show_on", "seating_notes",
       "section: stalls, circle, balcony, box"),
    _d("florist", "Florist", "buyer/buyers", "bouquet/bouquets/name",
       "Spring tulips, Red roses dozen, Wildflower jar, Peony bunch, Sunflower trio, Orchid pot, Lily arrangement, "
       "Dried lavender, Wedding posy, Sympathy wreath", "occasion: birthday, wedding, sympathy, romance, thanks",
       "in_stock int 2 40; price money 15 220", "in_stock", "delivery/deliveries/FD",
       "ordered, out_for_delivery, delivered, cancelled", "dispatch, deliver, cancel", "address_confirmed", "bunches",
       "total money 15 700; vase_fee money 5 40", "deliver_on", "card_message", "zone: central, north, south, suburbs"),
    _d("catering", "Catering", "host/hosts", "menu/menus/name",
       "Canape selection, Buffet classic, Vegan feast, BBQ grill, Afternoon tea, Mezze table, Pasta station, Tapas "
       "spread, Breakfast board, Dessert bar", "cuisine: mediterranean, british, asian, vegan",
       "per_head money 8 90; min_guests int 10 80", None, "event_order/event_orders/CE",
       "quoted, confirmed, served, cancelled", "confirm, serve, cancel", "deposit_paid", "menus",
       "quote money 300 20000; staffing money 100 3000", "event_on", "dietary_notes",
       "venue_type: office, home, hall, outdoor"),
    _d("print_shop", "Print", "designer/designers", "stock/stocks/name",
       "A4 matte, A3 gloss, Business cards, Poster 50x70, Vinyl banner, Letterhead, Postcard stock, Recycled A4, "
       "Canvas print, Sticker sheet", "finish: matte, gloss, satin, textured",
       "packs_left int 10 200; unit_price money 1 40", "packs_left", "print_job/print_jobs/PJ",
       "queued, printed, collected, cancelled", "print, collect, cancel", "proof_approved", "packs",
       "total money 10 900; rush_fee money 5 60", "due_on", "instructions", "colour_mode: colour, greyscale, spot"),
    _d("laundry", "Laundry", "household/households", "program/programs/name",
       "Everyday wash, Delicates, Duvet clean, Shirt press, Dry clean suit, Curtain clean, Wool care, Sports kit, "
       "Rug wash, Express same-day", "care: wash, dry_clean, press", "price money 4 60; turnaround_hours int 4 96",
       None, "laundry_order/laundry_orders/LO", "dropped_off, cleaned, returned, cancelled",
       "clean, hand_back, cancel", "tags_checked", "bags", "total money 5 200; stain_fee money 2 30", "ready_on",
       "stains", "bag_colour: blue, green, red, yellow"),
    _d("tutoring", "Tutors", "learner/learners", "subject/subjects/name",
       "Calculus, Physics, Chemistry, Essay writing, French, Piano theory, Statistics, Biology, Latin, Geography",
       "level: primary, secondary, university", "hourly_rate money 15 90; max_students int 1 8", None,
       "session/sessions/TS", "requested, scheduled, held, cancelled", "schedule, mark_held, cancel",
       "parent_consent", "hours", "fee money 15 300; materials money 2 40", "session_on", "topic",
       "mode: online, in_person, hybrid"),
    _d("storage", "Storage", "renter/renters", "unit_size/unit_sizes/name",
       "Locker S, Locker M, Room 25, Room 50, Garage 100, Container 20ft, Wine cellar, Archive shelf, Climate room, "
       "Vehicle bay", "climate: standard, heated, cooled", "units_free int 1 25; monthly_rent money 20 400",
       "units_free", "lease/leases/SU", "pending, active, ended, cancelled", "activate, end, cancel",
       "insurance_proof", "units", "deposit money 50 800; lock_fee money 5 30", "move_in_on", "contents",
       "access: all_hours, business_hours, weekends"),
    _d("camping", "Camping", "camper/campers", "pitch/pitches/name",
       "Lakeside 1, Lakeside 2, Forest A, Forest B, Meadow 5, Hilltop 3, Riverside 9, Glamping yurt, Cabin Birch, "
       "Cabin Pine", "kind: tent, caravan, cabin, yurt", "nightly_fee money 15 140; max_guests int 2 8", None,
       "site_booking/site_bookings/CB", "reserved, arrived, departed, cancelled", "arrive, depart, cancel",
       "deposit_paid", "pitches", "total money 30 1200; firewood money 5 30", "arrive_on", "requests",
       "vehicle: none, car, van, motorbike"),
    _d("music_school", "Music School", "pupil/pupils", "course/courses/name",
       "Piano grade 1, Piano grade 5, Violin beginners, Guitar basics, Drum kit, Singing, Cello, Saxophone, Ukulele "
       "club, Music theory", "family: keys, strings, percussion, voice, wind", "slots_left int 1 20; price money 15 80",
       "slots_left", "lesson_plan/lesson_plans/ML", "trial, enrolled, completed, dropped", "enrol, complete, drop",
       "instrument_ready", "slots", "term_fee money 80 900; exam_fee money 20 120", "first_lesson_on",
       "teacher_notes", "day: monday, tuesday, wednesday, thursday, friday, saturday"),
    _d("equipment", "Plant Hire", "contractor/contractors", "machine/machines/name",
       "Mini digger, Concrete mixer, Scissor lift, Pressure washer, Floor sander, Generator 5kW, Tile cutter, "
       "Scaffold tower, Chainsaw, Plate compactor", "size: small, medium, large",
       "units_available int 1 10; daily_rate money 20 400", "units_available", "hire/hires/EH",
       "booked, on_hire, returned, cancelled", "send_out, take_back, cancel", "site_checked", "units",
       "deposit money 50 1500; delivery_charge money 20 200", "start_on", "site_address",
       "delivery: collect, van, flatbed"),
    _d("wine_club", "Wine Club", "subscriber/subscribers", "wine/wines/name",
       "Rioja Reserva, Sancerre, Barolo, Malbec, Prosecco, Riesling, Chianti Classico, Douro Red, Pinot Noir, "
       "Gruner Veltliner, Albarino, Shiraz", "colour: red, white, sparkling, rose",
       "bottles_left int 6 120; price money 8 90", "bottles_left", "case_order/case_orders/WC",
       "pending, packed, shipped, cancelled", "pack, ship, cancel", "age_verified", "bottles",
       "total money 40 900; shipping money 5 40", "ship_on", "gift_message", "courier: dhl, ups, local, pickup"),
    _d("travel", "Travel", "traveller/travellers", "package/packages/name",
       "Lisbon city break, Alps ski week, Greek island hop, Kyoto culture tour, Iceland road trip, Safari lodge, "
       "Nile cruise, Scottish highlands, Andes trek, Caribbean sail", "season: spring, summer, autumn, winter",
       "places_left int 2 40; price money 300 6000", "places_left", "trip/trips/TR",
       "provisional, confirmed, completed, cancelled", "confirm, complete, cancel", "passport_checked", "travellers",
       "balance_due money 100 9000; insurance_fee money 20 300", "depart_on", "dietary_needs",
       "insurance: none, basic, full"),
)
"""Every domain, in a fixed order (the order is part of the app pool: append new domains at the end)."""

BRANDS = ("Maple", "Harbor", "Cedar", "Summit", "Riverside", "Oak", "Bluebird", "Northwind", "Granite", "Willow",
          "Lantern", "Copper", "Meadow", "Beacon", "Juniper", "Aurora")
"""Name prefixes of generated apps ("Maple Library"); each domain's variants take distinct ones."""

CITIES = ("Porto", "Leeds", "Riga", "Lyon", "Malmo", "Ghent", "Turin", "Cork", "Graz", "Utrecht")
TIERS = ("basic", "silver", "gold", "platinum")
METHODS = ("card", "cash", "transfer", "cheque")
AUTHORS = ("front_desk", "manager", "technician", "accounts")
PHRASES = ("call before arriving", "prefers mornings", "needs a receipt", "bring the blue folder",
           "ask for the side entrance", "allergic to nuts", "pay on collection", "second visit this year",
           "wheelchair access", "quiet corner please", "leave with the neighbour", "urgent", "gift for a friend",
           "repeat of last order", "use the loading bay", "text when ready")
"""Note fragments; a note is two of them and a number, so that a note is rarely guessable."""
