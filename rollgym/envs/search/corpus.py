"""Rendering the knowledge graph into encyclopaedia articles.

One article per entity: a title line, an infobox, a lead paragraph, a history
section of generic prose with incidental links (noise that a reader must skip),
a later section, and a connections section where other entities' facts about
this one are stated. Links are written ``[[Title]]``; ``open`` accepts a title
as well as a document id.

Each fact is rendered with one of several templates (picked per fact from the
world seed) in the place its placement says (see :mod:`rollgym.envs.search.world`).
The same templates, compiled by :func:`fact_patterns`, let a scripted reader
recognise a fact in text; they are public knowledge about the corpus' style, not
answers.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from rollgym.core.seeding import stable_int
from rollgym.envs.search.world import Entity, World, get_world

PAGE_CHARS = 1200

# forward templates: stated in the subject's article. {s} subject name, {o} object link, {y} year,
# {P}/{p} subject pronoun, {q} possessive pronoun.
FORWARD: dict[str, tuple[str, ...]] = {
    "region": ("{s} lies in the region of {o}.", "Administratively, {s} belongs to {o}.",
               "{s} is a town of {o}."),
    "born_in": ("{s} was born in {o}.", "A native of {o}, {s} spent {q} early years there.",
                "The birthplace of {s} was {o}."),
    "employer": ("In {y}, {s} joined {o}.", "{s} worked for {o}, which {p} joined in {y}.",
                 "{s} took a post at {o} in {y}."),
    "mentor": ("{s} studied under {o}.", "{s} was a pupil of {o}.", "{o} was the mentor of {s}."),
    "headquarters": ("{s} is headquartered in {o}.", "The headquarters of {s} stand in {o}.",
                     "{s} has its seat in {o}."),
    "founder": ("{s} was founded by {o}.", "{o} established {s}.", "The founder of {s} was {o}."),
    "author": ("{s} was written by {o}.", "{o} wrote {s}.", "{s} is the work of {o}."),
    "publisher": ("{s} was published by {o}.", "{o} brought out {s}.",
                  "The first edition of {s} appeared under the imprint of {o}."),
    "location": ("{s} took place in {o}.", "{s} was held in {o}.", "The venue of {s} was {o}."),
    "organiser": ("{s} was organised by {o}.", "{o} organised {s}.", "Arrangements for {s} were made by {o}."),
    "city_founded": ("{s} was founded in {y}.", "The first records of {s} date from {y}."),
    "birth_year": ("{s} was born in the year {y}.", "The year of {s}'s birth was {y}."),
    "founded": ("{s} was founded in {y}.", "{s} dates its foundation to {y}."),
    "published": ("{s} was first published in {y}.", "{s} appeared in print in {y}."),
    "held": ("{s} was held in the year {y}.", "{s} took place in {y}."),
}
# inverse templates: stated in the object's article. {s} subject link, {o} object name (the article's title).
INVERSE: dict[str, tuple[str, ...]] = {
    "region": ("{s} is one of the towns of {o}.", "The town of {s} lies within {o}."),
    "born_in": ("{s} was born in {o}.", "{o} is the birthplace of {s}."),
    "employer": ("{s} joined {o} in {y}.", "In {y}, {o} hired {s}."),
    "mentor": ("{o} taught {s}.", "Among the pupils of {o} was {s}."),
    "headquarters": ("{s} has its headquarters in {o}.", "{o} is home to the headquarters of {s}."),
    "founder": ("{o} founded {s}.", "{o} is remembered as the founder of {s}."),
    "author": ("{o} wrote {s}.", "Among the works of {o} is {s}."),
    "publisher": ("{o} published {s}.", "The catalogue of {o} includes {s}."),
    "location": ("{s} took place in {o}.", "{o} hosted {s}."),
    "organiser": ("{o} organised {s}.", "{s} was organised by {o}."),
}
INFOBOX_LABELS = {
    "region": "Region", "born_in": "Birthplace", "employer": "Employer", "mentor": "Mentor",
    "headquarters": "Headquarters", "founder": "Founder", "author": "Author", "publisher": "Publisher",
    "location": "Location", "organiser": "Organiser", "city_founded": "Founded", "birth_year": "Born",
    "founded": "Founded", "published": "Published", "held": "Year",
}
SECTIONS = {"region": ("Geography", "Later history", "Towns"), "city": ("History", "Modern era", "People and places"),
            "person": ("Early life", "Career", "Legacy"), "organisation": ("History", "Organisation", "Associations"),
            "work": ("Background", "Publication", "Reception"), "event": ("Background", "Proceedings", "Aftermath")}
TOPICS = ("tidal charts", "glass lenses", "river trade", "folk songs", "salt marshes", "clockwork", "star atlases",
          "winter crops", "dye works", "grammar", "shipbuilding", "ballads", "canal locks", "copper mines",
          "herbal remedies", "weaving looms", "weather records", "stone bridges", "printing presses", "orchards",
          "lighthouses", "bell founding", "paper making", "beekeeping", "tide mills", "coastal maps")
ADJECTIVES = ("modest", "steady", "patchy", "celebrated", "contested", "lasting", "brief", "remarkable", "quiet",
              "prolonged", "careful", "bold", "slow", "lively", "sober", "thorough")
# generic prose: (template, kind of the unrelated entity linked as {x}); these never state a graph fact
NOISE: dict[str, tuple[tuple[str, str], ...]] = {
    "person": (("{P} corresponded with {x} for many years.", "person"), ("In {y}, {p} travelled to {x}.", "city"),
               ("{P} wrote a {a} essay on {t}.", ""), ("Contemporaries compared {q} style with that of {x}.", "person"),
               ("{P} spent a {a} season studying {t}.", ""), ("{P} once lectured at {x}.", "organisation"),
               ("Letters from {q} years in {x} survive.", "city"), ("{P} kept notebooks on {t}.", ""),
               ("A portrait of {S} hangs in {x}.", "organisation"), ("{P} admired the work of {x}.", "person"),
               ("Friends recalled {q} {a} manner.", ""), ("{P} later revised {q} views on {t}.", "")),
    "city": (("{S} is twinned with {x}.", "city"), ("Traders from {x} came to {S} for its {t}.", "city"),
             ("The {a} growth of {S} owed much to {t}.", ""), ("A road to {x} was built in {y}.", "city"),
             ("Visitors still remark on the {t} of {S}.", ""), ("A fire in {y} destroyed part of the old quarter.", ""),
             ("The town council once sent envoys to {x}.", "city"), ("Its market is known for {t}.", ""),
             ("A bridge across the river was rebuilt in {y}.", ""), ("{x} keeps a branch office in {S}.",
                                                                       "organisation")),
    "region": (("{S} borders the lands around {x}.", "region"), ("The economy of {S} rests on {t}.", ""),
               ("A {a} dispute with {x} ended in {y}.", "region"), ("Much of {S} is given over to {t}.", ""),
               ("Its largest fair is held each autumn.", ""), ("Its hills are known for {t}.", "")),
    "organisation": (("{S} partnered with {x} in {y}.", "organisation"), ("Its early work concerned {t}.", ""),
                     ("{S} kept a {a} archive on {t}.", ""), ("A delegation from {x} visited {S} in {y}.", "city"),
                     ("In {y} it opened a reading room.", ""), ("Its members met monthly to discuss {t}.", ""),
                     ("{x} gave a lecture to its members.", "person"), ("It later sponsored research on {t}.", "")),
    "work": (("A critic writing for {x} called it {a}.", "organisation"), ("The text dwells on {t}.", ""),
             ("A translation was commissioned by {x}.", "organisation"),
             ("Scholars have compared it with {x}.", "work"),
             ("Its opening pages describe {t}.", ""), ("{x} praised its {a} structure.", "person"),
             ("Early readers found it {a}.", ""), ("Parts of it are set among {t}.", "")),
    "event": (("Delegates from {x} attended.", "organisation"), ("The agenda turned on {t}.", ""),
              ("A {a} report followed in {y}.", ""), ("Observers sent by {x} kept notes.", "organisation"),
              ("{x} gave the closing address.", "person"), ("Disputes over {t} delayed the final session.", ""),
              ("Accounts of the proceedings differ.", ""), ("Pamphlets about {t} were handed out.", "")),
}
LEADS = {
    "region": "{S} is a {u} whose towns have long traded with one another.",
    "city": "{S} is a {u} known for its {t}.",
    "person": "{S} was a {u} remembered for work on {t}.",
    "organisation": "{S} is an {u} whose interests have included {t}.",
    "work": "{S} is a {u} that has been read as a study of {t}.",
    "event": "{S} was a gathering whose records are kept among local archives.",
}


@dataclass(frozen=True)
class Document:
    """One article: id, title, kind, full text, its pages (whole lines) and a one-sentence summary."""

    doc_id: str
    title: str
    kind: str
    text: str
    pages: tuple[str, ...]
    summary: str


@dataclass
class Corpus:
    """Every article of a world, by id and by lower-cased title or alias."""

    world: World
    docs: list[Document]
    by_id: dict[str, Document]
    by_title: dict[str, str]

    def resolve(self, doc_ref: str) -> Document | None:
        """The document with this id, title or alias (case-insensitive), or ``None``."""
        ref = doc_ref.strip()
        if ref.startswith("[[") and ref.endswith("]]"):
            ref = ref[2:-2]
        doc = self.by_id.get(ref) or self.by_id.get(ref.lower())
        if doc is None and ref.lower() in self.by_title:
            doc = self.by_id[self.by_title[ref.lower()]]
        return doc


_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z\[])")


def sentences(text: str) -> list[str]:
    """The sentences of an article, line by line (infobox lines count as sentences)."""
    return [s for line in text.split("\n") if line.strip() for s in _SENTENCE_SPLIT.split(line)]


def link(ent: Entity) -> str:
    """How an article links to ``ent``."""
    return f"[[{ent.name}]]"


def _pronouns(ent: Entity) -> dict[str, str]:
    p = ent.pronoun
    q = {"he": "his", "she": "her"}.get(p, "its")
    return {"p": p, "P": p.capitalize(), "q": q}


def paginate(lines: list[str], page_chars: int = PAGE_CHARS) -> tuple[str, ...]:
    """Group whole lines into pages of at most ``page_chars`` characters (a longer line gets its own page)."""
    pages: list[str] = []
    current: list[str] = []
    size = 0
    for line in lines:
        extra = len(line) + 1
        if current and size + extra > page_chars:
            pages.append("\n".join(current))
            current, size = [], 0
        current.append(line)
        size += extra
    if current:
        pages.append("\n".join(current))
    return tuple(pages)


def _fact_sentence(world: World, ent: Entity, fact: str, rng: random.Random) -> str:
    template = rng.choice(FORWARD[fact])
    values = {"s": ent.name, **_pronouns(ent)}
    if fact in ent.rels:
        values["o"] = link(world.entity(ent.rels[fact]))
        if fact == "employer":
            values["y"] = str(ent.attrs["joined"])
    else:
        values["y"] = str(ent.attrs[fact])
    return _capitalise(template.format(**values))


def _capitalise(sentence: str) -> str:
    return sentence[0].upper() + sentence[1:] if sentence else sentence


def _noise(world: World, ent: Entity, rng: random.Random) -> Iterator[str]:
    """Endless generic sentences about ``ent``, cycling through its kind's templates in a shuffled order."""
    templates = list(NOISE[ent.kind])
    rng.shuffle(templates)
    pronouns = _pronouns(ent)
    draw = rng.random
    i = 0
    while True:
        template, kind = templates[i % len(templates)]
        i += 1
        values = {"S": ent.name, **pronouns}
        if "{y}" in template:
            values["y"] = str(1700 + int(draw() * 300))
        if "{t}" in template:
            values["t"] = TOPICS[int(draw() * len(TOPICS))]
        if "{a}" in template:
            values["a"] = ADJECTIVES[int(draw() * len(ADJECTIVES))]
        if kind:
            pool = world.by_kind[kind]
            other = pool[int(draw() * len(pool))]
            values["x"] = link(world.entities[other]) if other != ent.id else "its neighbours"
        yield _capitalise(template.format(**values))


def render_article(world: World, ent: Entity) -> Document:
    """The article of one entity, deterministic in the world seed and the entity id."""
    rng = random.Random(stable_int(f"article/{world.seed}/{ent.id}"))
    facts = [f for f in (*ent.rels, *ent.attrs) if f != "joined"]
    lead_facts = [f for f in facts if ent.placement.get(f, 0) == 0]
    body_facts = [f for f in facts if ent.placement.get(f, 0) == 1]
    lines = [ent.name, f"Type: {ent.kind} ({ent.subtype})"]
    for fact in lead_facts:
        if fact in ent.rels:
            value = link(world.entity(ent.rels[fact]))
            if fact == "employer":
                value += f" (from {ent.attrs['joined']})"
        else:
            value = str(ent.attrs[fact])
        lines.append(f"{INFOBOX_LABELS[fact]}: {value}")
    if ent.aliases and ent.kind == "city":
        lines.append(f"Former name: {ent.aliases[0]}")
    lines.append("")
    lead = [LEADS[ent.kind].format(S=ent.name, u=ent.subtype, t=rng.choice(TOPICS))]
    lead += [_fact_sentence(world, ent, f, rng) for f in lead_facts]
    lines.append(" ".join(lead))
    first, second, third = SECTIONS[ent.kind]
    lines += ["", f"== {first} =="]
    noise = _noise(world, ent, rng)
    used = sum(len(x) + 1 for x in lines)
    while used <= PAGE_CHARS:  # body facts must start past the first page
        lines.append(" ".join((next(noise), next(noise), next(noise))))
        used += len(lines[-1]) + 1
    lines += ["", f"== {second} =="]
    body = [_fact_sentence(world, ent, f, rng) for f in body_facts] + [next(noise), next(noise)]
    rng.shuffle(body)
    lines.append(" ".join(body))
    inverse = _inverse_sentences(world, ent, rng)
    if inverse:
        lines += ["", f"== {third} =="]
        for start in range(0, len(inverse), 4):
            lines.append(" ".join(inverse[start : start + 4]))
    return Document(ent.id, ent.name, ent.kind, "\n".join(lines), paginate(lines), lead[0])


def _inverse_sentences(world: World, ent: Entity, rng: random.Random) -> list[str]:
    sentences = []
    for relation in INVERSE:
        for subject_id in world.subjects(relation, ent.id):
            subject = world.entity(subject_id)
            values = {"s": link(subject), "o": ent.name}
            if relation == "employer":
                values["y"] = str(subject.attrs["joined"])
            sentences.append(_capitalise(rng.choice(INVERSE[relation]).format(**values)))
    return sentences


def build_corpus(world: World) -> Corpus:
    """Render every article of ``world``."""
    docs = [render_article(world, ent) for ent in world.entities.values()]
    by_title: dict[str, str] = {}
    for ent in world.entities.values():
        for name in (ent.name, *ent.aliases):
            by_title[name.lower()] = ent.id
    return Corpus(world, docs, {d.doc_id: d for d in docs}, by_title)


@lru_cache(maxsize=4)
def get_corpus(size: int, seed: int = 0) -> Corpus:
    """The cached corpus of the world ``(size, seed)``."""
    return build_corpus(get_world(size, seed))


def _compile(template: str, subject: str | None, obj: str | None) -> re.Pattern[str]:
    parts = re.split(r"(\{[a-zA-Z]\})", template)
    out = []
    for part in parts:
        if part == "{s}":
            out.append(re.escape(subject) if subject is not None else r"\[\[(?P<s>[^\]]+)\]\]")
        elif part == "{o}":
            out.append(re.escape(obj) if obj is not None else r"\[\[(?P<o>[^\]]+)\]\]")
        elif part == "{y}":
            out.append(r"(?P<y>\d{4})")
        elif part in ("{p}", "{P}"):
            out.append(r"(?:[Hh]e|[Ss]he|[Ii]t)")
        elif part == "{q}":
            out.append(r"(?:his|her|its)")
        else:
            out.append(re.escape(part))
    return re.compile("".join(out), re.IGNORECASE)


def fact_patterns(fact: str, subject: str, *, inverse_title: str | None = None) -> list[re.Pattern[str]]:
    """Regexes that find ``fact`` about ``subject`` in text.

    Forward (``inverse_title=None``): in the subject's own article; group ``o`` is
    the object's title, group ``y`` a year (``joined`` uses the employer sentences).
    Inverse: in the article titled ``inverse_title``, the subject appears as a link;
    a match proves the fact with that article as the object.

    Example:
        >>> fact_patterns("born_in", "Ana Vel")[0].search("Ana Vel was born in [[Kor]].").group("o")
        'Kor'
    """
    fact = "employer" if fact == "joined" else fact
    if inverse_title is None:
        return [_compile(t, subject, None) for t in FORWARD[fact]]
    return [_compile(t, f"[[{subject}]]", inverse_title) for t in INVERSE[fact]]


def subject_patterns(fact: str, object_title: str) -> list[re.Pattern[str]]:
    """Regexes that find, in the article titled ``object_title``, every subject of ``fact`` that points at it.

    Group ``s`` is the subject's title.

    Example:
        >>> subject_patterns("born_in", "Kor")[0].search("[[Ana Vel]] was born in Kor.").group("s")
        'Ana Vel'
    """
    return [_compile(t, None, object_title) for t in INVERSE[fact]]
