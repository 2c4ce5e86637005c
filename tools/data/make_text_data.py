#!/usr/bin/env python3
# SPDX-License-Identifier: CC0-1.0
"""Generate the small built-in text datasets that ship with garden.

The generated files and this script were written for the garden project and
are dedicated to the public domain (CC0-1.0). All people, towns, regions,
companies, clubs, species and events in the texts are invented; real
country and city names are used only as ordinary place names.

Standard library only and deterministic: every dataset uses its own seeded
``random.Random``, so running the script again writes byte-identical files.

    python tools/data/make_text_data.py            # writes next to this file
    python tools/data/make_text_data.py --out DIR  # writes somewhere else

Files (see docs/data.md):

    sst2_like.jsonl           {"sentence", "label"}                SST-2 / GLUE
    conll_like.jsonl          {"tokens", "ner_tags"}              CoNLL-2003 (IOB2)
    squad_like.json           SQuAD v1.1 nested JSON
    summaries.jsonl           {"document", "summary"}             CNN/DM, XSum
    translation_en_fr.jsonl   {"translation": {"en", "fr"}}       WMT
    french_sentences.jsonl    {"sentence", "label"}                French reviews
    lm_corpus.txt             one English sentence per line
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re

SEED = 20240611
#: where the shipped data lives: garden's built-in tasks read it from the installed package
HERE = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "garden", "tasks", "data"))


def rng(name: str) -> random.Random:
    # str seeds are hashed with SHA-512 by random.Random: stable across runs
    # and independent of PYTHONHASHSEED.
    return random.Random(f"garden:{SEED}:{name}")


def cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def a_an(word: str) -> str:
    w = word.lower()
    if w.startswith(("unique", "unit", "univers", "usual", "use", "one", "eu")):
        return "a"
    if w.startswith(("hour", "honest", "heir")):
        return "an"
    if w[:1].isdigit():
        return "an" if w.startswith(("8", "11", "18")) else "a"
    return "an" if w[:1] in "aeiou" else "a"


def with_article(phrase: str) -> str:
    return f"{a_an(phrase)} {phrase}"


NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven",
                "eight", "nine", "ten", "eleven", "twelve"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday",
        "Sunday"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July",
          "August", "September", "October", "November", "December"]

# Invented people: first names and surnames from many languages.
FIRST_M = ["James", "Rahul", "Tomas", "Kenji", "Omar", "Lukas", "Mateo",
           "Daniel", "Samuel", "Viktor", "Ibrahim", "Marco", "Erik", "Pavel",
           "Hugo", "Arjun", "Felix", "Kwame", "Andre", "Leon", "Jonas",
           "Diego", "Yusuf", "Henrik", "Oscar", "Nikolai", "Ravi", "Tobias"]
FIRST_F = ["Anna", "Sofia", "Amara", "Ingrid", "Mei", "Fatima", "Clara",
           "Elena", "Priya", "Hanna", "Lucia", "Nadia", "Yuki", "Maria",
           "Grace", "Aisha", "Julia", "Ruth", "Selma", "Laila", "Marta",
           "Irene", "Zara", "Esther", "Noor", "Camille", "Petra", "Rosa"]
LAST = ["Keller", "Mehta", "Marquez", "Berg", "Okafor", "Watanabe",
        "Halvorsen", "Ribeiro", "Novak", "Haddad", "Lindqvist", "Moreau",
        "Costa", "Fischer", "Adeyemi", "Kowalski", "Tanaka", "Petrov", "Rossi",
        "Jensen", "Quinn", "Dubois", "Sato", "Alvarez", "Brennan", "Nakamura",
        "Osei", "Varga", "Holm", "Castillo", "Iversen", "Farrell", "Strand",
        "Yilmaz", "Wright", "Hughes", "Lindgren", "Barros", "Kader", "Ferris",
        "Moretti", "Anand", "Sandoval", "Mwangi", "Olsen", "Horvath"]

# Invented places.
PLACE_A = ["Ash", "Bram", "Cor", "Dun", "Elder", "Fen", "Glen", "Hart", "Kel",
           "Lark", "Mar", "Nor", "Oak", "Pen", "Rook", "Sil", "Thorn",
           "Wester", "Wil", "Bright", "Cold", "Hol", "Red", "Whit", "Brom",
           "Lang", "Mill", "Ros", "Stone", "Tarn", "Wren", "Hazel"]
PLACE_B = ["ford", "field", "bridge", "mere", "haven", "wick", "stead", "by",
           "ton", "moor", "dale", "holm", "bury", "well", "combe", "brook"]
REGIONS = ["Estria", "Valmora", "Kessland", "Orvania", "Lindmark",
           "Carrowmere", "Brevonia", "Aldmoor", "Salvenne", "Dorvik",
           "Merrowdale", "Istrand", "Calvaro", "Tessany", "Vornholt"]
RIVERS = ["Sela", "Ander", "Morwen", "Isel", "Corra", "Vell", "Brenna",
          "Oster", "Varn", "Tamsin", "Elda", "Rusk", "Lorne", "Whistle"]
LAKES = ["Lake Vorn", "Lake Ellery", "Lake Maren", "the Grey Sea",
         "Lake Saddow", "the Bay of Kell", "Lake Orrin", "the Northern Sea"]


def person(r: random.Random, gender: str | None = None) -> tuple[str, str]:
    g = gender or r.choice("mf")
    first = r.choice(FIRST_M if g == "m" else FIRST_F)
    return f"{first} {r.choice(LAST)}", g


def town_name(r: random.Random) -> str:
    return r.choice(PLACE_A) + r.choice(PLACE_B)


def unique(r: random.Random, make, used: set):
    for _ in range(1000):
        v = make(r)
        if v not in used:
            used.add(v)
            return v
    raise RuntimeError("ran out of unique values")


# ---------------------------------------------------------------------------
# 1. SST-2-like sentiment sentences
# ---------------------------------------------------------------------------

POS_ADJ = ["wonderful", "brilliant", "excellent", "superb", "remarkable",
           "delightful", "impressive", "engaging", "beautiful", "memorable",
           "moving", "clever", "charming", "inventive", "gripping",
           "thoughtful", "stunning", "fresh", "confident", "satisfying",
           "terrific", "lovely", "sharp", "assured", "touching", "witty"]
NEG_ADJ = ["dull", "tedious", "clumsy", "lifeless", "predictable", "boring",
           "messy", "shallow", "forgettable", "tiresome", "flat", "pointless",
           "bland", "awkward", "confusing", "dreary", "lazy", "pretentious",
           "sloppy", "stale", "uninspired", "hollow", "weak", "dreadful",
           "terrible", "muddled"]
SST_NOUNS = [("the film", 0), ("this movie", 0), ("the plot", 0),
             ("the script", 0), ("the story", 0), ("the direction", 0),
             ("the dialogue", 0), ("the cinematography", 0),
             ("the soundtrack", 0), ("the ending", 0),
             ("the lead performance", 0), ("the cast", 0), ("the pacing", 0),
             ("the editing", 0), ("the humour", 0), ("the screenplay", 0),
             ("the performances", 1), ("the characters", 1), ("the jokes", 1),
             ("the action scenes", 1), ("the visual effects", 1),
             ("the songs", 1), ("the battle sequences", 1),
             ("the final scenes", 1)]
GENRES = ["comedy", "thriller", "drama", "romance", "documentary", "western",
          "family film", "war film", "ghost story", "musical",
          "coming-of-age story", "road movie", "science fiction film",
          "crime drama", "animated feature", "horror film", "period piece",
          "adventure", "mystery", "satire"]
GENRES_PL = ["comedies", "thrillers", "dramas", "romances", "documentaries",
             "westerns", "war films", "ghost stories", "musicals",
             "road movies", "horror films", "mysteries", "costume dramas"]
ADVS = ["", "", "very ", "truly ", "genuinely ", "remarkably ",
        "surprisingly ", "consistently ", "thoroughly ", "quite "]
# Adjectives that do not take "very"/"quite": only these adverbs.
EXTREME = {"wonderful", "brilliant", "excellent", "superb", "remarkable",
           "stunning", "terrific", "dreadful", "terrible", "pointless"}
EXTREME_ADVS = ["", "", "truly ", "simply ", "absolutely "]


def adv_adj(r: random.Random, adjs: list[str]) -> str:
    a = r.choice(adjs)
    return r.choice(EXTREME_ADVS if a in EXTREME else ADVS) + a
DIRECTORS = ["the director", "the filmmaker", "the first-time director",
             "the veteran filmmaker", "the young director", "the writer"]
ROLES = ["a retired detective", "a lonely pianist", "the reluctant hero",
         "a small-town teacher", "a grieving father", "a ship's captain",
         "an ambitious young lawyer", "a famous chef", "a village doctor",
         "a runaway teenager", "an ageing boxer", "a struggling painter"]
BARE_NP = [("a script", 0), ("a story", 0), ("dialogue", 0),
           ("a soundtrack", 0), ("performances", 1), ("characters", 1),
           ("jokes", 1), ("images", 1), ("action scenes", 1)]
ENDS = {
    1: ["stays with you long after the credits roll",
        "never loses its sense of wonder", "rewards patient viewers",
        "earns every one of its tears", "you will want to see twice",
        "finds real beauty in ordinary lives", "keeps you guessing until "
        "the very last scene", "feels both timeless and new"],
    0: ["overstays its welcome", "never finds its footing",
        "feels much longer than it is", "goes nowhere",
        "you will forget by morning", "wastes a promising idea",
        "mistakes noise for excitement", "runs out of ideas in the first "
        "half hour"],
}
STOCK = {
    1: ["One of the best films of the year.", "I loved every minute of it.",
        "A must-see for anyone who loves cinema.",
        "It is the kind of film that reminds you why you go to the movies.",
        "I left the theatre smiling.", "Worth every penny of the ticket price.",
        "A small triumph.", "I would happily watch it again tomorrow.",
        "It earns its happy ending.", "Funny, warm and wise.",
        "Highly recommended.", "The audience cheered at the end."],
    0: ["One of the worst films of the year.", "I wanted my money back.",
        "Skip it.", "I checked my watch every ten minutes.",
        "A waste of a talented cast.",
        "It is the kind of film that makes you wonder why anyone made it.",
        "I nearly walked out halfway through.",
        "Two hours I will never get back.", "A complete misfire.",
        "Nothing in it works.", "Not recommended.",
        "Half the audience left before the end."],
}
EVEN = {
    1: ["a few slow scenes", "a rather thin plot", "one weak subplot",
        "a slightly rushed ending", "some clumsy dialogue"],
    0: ["a strong cast", "a fine score", "two charming leads",
        "some beautiful photography", "a clever premise"],
}


def sst_sentence(r: random.Random, label: int) -> str:
    good = POS_ADJ if label else NEG_ADJ
    bad = NEG_ADJ if label else POS_ADJ

    def be(n):
        return "are" if n[1] else "is"

    t = r.randrange(13)
    if t in (0, 1):
        n = r.choice(SST_NOUNS)
        s = f"{n[0]} {be(n)} {adv_adj(r, good)}."
    elif t == 2:
        n = r.choice(SST_NOUNS)
        a1, a2 = r.sample(good, 2)
        s = f"{n[0]} {be(n)} {a1} and {a2}."
    elif t == 3:
        a1, a2 = r.sample(good, 2)
        s = f"{with_article(a1)}, {a2} {r.choice(GENRES)}."
    elif t == 4:
        s = (f"{r.choice(DIRECTORS)} has made {with_article(r.choice(good))} "
             f"{r.choice(GENRES)} that {r.choice(ENDS[label])}.")
    elif t == 5:
        n1, n2 = r.sample(SST_NOUNS, 2)
        s = f"{n1[0]} {be(n1)} {r.choice(bad)}, but {n2[0]} {be(n2)} {r.choice(good)}."
    elif t == 6:
        n1, n2 = r.sample(SST_NOUNS, 2)
        s = (f"although {n1[0]} {be(n1)} {r.choice(bad)}, {n2[0]} {be(n2)} "
             f"{adv_adj(r, good)}.")
    elif t == 7:
        if label:
            s = (f"even {r.choice(EVEN[1])} cannot spoil such "
                 f"{with_article(r.choice(good))} {r.choice(GENRES)}.")
        else:
            s = (f"not even {r.choice(EVEN[0])} can save this "
                 f"{r.choice(good)} {r.choice(GENRES)}.")
    elif t == 8:
        n = r.choice(SST_NOUNS)
        first = f"{cap(n[0])} {be(n)} {adv_adj(r, good)}."
        s = f"{first} {r.choice(STOCK[label])}" if r.random() < 0.7 else r.choice(STOCK[label])
    elif t == 9:
        name, _ = person(r)
        s = (f"{name} gives {with_article(r.choice(good))} performance as "
             f"{r.choice(ROLES)}.")
    elif t == 10:
        verb = "will love this one" if label else "will be disappointed by this one"
        a = r.choice(good)
        s = f"fans of {r.choice(GENRES_PL)} {verb}, because it is {a} from start to finish."
        if r.random() < 0.5:
            s = f"fans of {r.choice(GENRES_PL)} {verb}."
    elif t == 11:
        np_, pl = r.choice(BARE_NP)
        s = (f"the film is {adv_adj(r, good)}, with {np_} that "
             f"{'are' if pl else 'is'} {r.choice(good)} and {r.choice(good)}.")
        if s.count(" and ") == 1:
            a, b = s.rsplit(" and ", 1)
            if a.split()[-1] == b[:-1]:
                s = a + "."
    else:
        if label:
            mins = r.choice([84, 88, 92, 95, 99, 104, 110])
            tail = r.choice(["it never outstays its welcome",
                             "it feels exactly the right length",
                             "not a single scene is wasted"])
        else:
            mins = r.choice([128, 135, 142, 150, 158, 165])
            tail = r.choice(["it is far too long",
                             "it drags badly in the middle",
                             "it tests the patience of even loyal fans"])
        s = f"at {mins} minutes, {tail}."
    return cap(s)


def make_sst2() -> list[dict]:
    r = rng("sst2")
    per_label = 300
    seen, rows = set(), []
    for label in (1, 0):
        count = 0
        while count < per_label:
            s = sst_sentence(r, label)
            if s not in seen:
                seen.add(s)
                rows.append({"sentence": s, "label": label})
                count += 1
    r.shuffle(rows)
    return rows


# ---------------------------------------------------------------------------
# 2. CoNLL-2003-like NER
# ---------------------------------------------------------------------------

COUNTRIES = ["Germany", "France", "Brazil", "Japan", "Kenya", "Canada",
             "Mexico", "Norway", "India", "Egypt", "Argentina", "Poland",
             "Italy", "Spain", "Nigeria", "Australia", "Chile", "Turkey",
             "Sweden", "Portugal", "Ghana", "South Africa", "New Zealand",
             "South Korea", "Peru", "Vietnam", "Morocco", "Ireland", "Hungary",
             "Denmark", "Colombia", "Indonesia"]
NATIONALITIES = ["German", "French", "Brazilian", "Japanese", "Kenyan",
                 "Canadian", "Mexican", "Norwegian", "Indian", "Egyptian",
                 "Argentine", "Polish", "Italian", "Spanish", "Nigerian",
                 "Australian", "Chilean", "Turkish", "Swedish", "Portuguese",
                 "Ghanaian", "South African", "Irish", "Hungarian", "Peruvian",
                 "Moroccan", "Danish", "Colombian"]
CITIES = ["Berlin", "Paris", "London", "Tokyo", "Nairobi", "Toronto",
          "Madrid", "Rome", "Lisbon", "Oslo", "Cairo", "Lagos", "Sydney",
          "Mumbai", "Warsaw", "Vienna", "Budapest", "Dublin", "Lima",
          "Santiago", "Istanbul", "Stockholm", "Accra", "New York",
          "Buenos Aires", "Cape Town", "Rio de Janeiro", "Hong Kong",
          "Los Angeles", "Kuala Lumpur", "Sao Paulo", "Mexico City",
          "Frankfurt", "Geneva", "Marseille", "Osaka", "Melbourne",
          "Casablanca", "Copenhagen", "Bogota"]
COMPANIES = ["Northwind Energy", "Bluehill Bank", "Apex Motors",
             "Meridian Telecom", "Stellar Foods", "Harbor Pharmaceuticals",
             "Crestline Steel", "Silverline Insurance", "Granite Holdings",
             "Orion Software", "Pinecrest Paper", "Westbrook Chemicals",
             "Lumen Electronics", "Redwood Logistics", "Cobalt Mining Corp",
             "Sunfield Group", "Atlas Shipping", "Evergreen Retail",
             "Horizon Media", "Keystone Cement", "Polaris Bank",
             "Marigold Textiles"]
AIRLINES = ["Crestline Airways", "Vantage Airlines", "Skyway Air",
            "Polar Air", "Coastal Airlines"]
CLUBS = ["Riverside United", "Northbridge Rovers", "FC Aldenburg",
         "Eastport City", "Sporting Vale", "Hollow Park Rangers",
         "Westfield Athletic", "Kingsport Wanderers", "Union Marlow",
         "Dynamo Kresk", "Atletico Sur", "Harbour Town"]
PAPERS = ["Daily Courier", "Morning Herald", "National Gazette",
          "Evening Post", "City Tribune"]
MINISTRIES = ["Foreign Ministry", "Interior Ministry", "Finance Ministry",
              "Health Ministry", "Defence Ministry", "Trade Ministry"]
UNIVERSITIES = ["Northfield University", "Eastbrook Institute of Technology",
                "Kingsbridge University", "Lakeshore College",
                "Western Medical School"]
PARTIES = ["Green Party", "Labour Party", "Liberal Party", "Unity Party",
           "People 's Party", "Democratic Alliance"]
EVENTS = ["World Cup", "Olympic Games", "Asian Games", "Commonwealth Games",
          "European Championship", "World Athletics Championships",
          "Pan American Games"]
CONLL_TEMPLATES = [
    "{PER} , the chief executive of {COMPANY} , said on {DAY} that the company would open a new office in {CITY} .",
    "Shares in {COMPANY} rose {PCT} percent in {CITY} on {DAY} after the company reported strong results .",
    "{COUNTRY} beat {COUNTRY} {SCORE} in a friendly international in {CITY} on {DAY} .",
    "{LAST} scored twice as {CLUB} beat {CLUB} {SCORE} on {DAY} .",
    "The {NAT} government said on {DAY} it would send a trade delegation to {COUNTRY} next month .",
    "{PER} of {COUNTRY} won the 400 metres at the {EVENT} in {CITY} .",
    "{COMPANY} said in a statement that {PER} would replace {PER} as chairman in {MONTH} .",
    "Police in {CITY} arrested two men on {DAY} , a spokesman for the {MINISTRY} said .",
    "{PER} , a {NAT} diplomat , arrived in {CITY} on {DAY} for talks with {PER} .",
    "The {EVENT} will be held in {CITY} in {YEAR} , organisers said on {DAY} .",
    "{LAST} told the {PAPER} that the negotiations in {CITY} had been difficult but useful .",
    "{COMPANY} , which is based in {CITY} , reported a net profit of {NUM} million dollars for the first half of the year .",
    "The {NAT} striker {PER} joined {CLUB} on a three-year contract on {DAY} .",
    "Heavy rain caused flooding in parts of {CITY} on {DAY} , local officials said .",
    "{PER} will visit {COUNTRY} and {COUNTRY} next week , a spokeswoman for the {MINISTRY} said .",
    "{COUNTRY} 's foreign minister , {PER} , said the two countries would sign the agreement in {CITY} .",
    "1. {PER} ( {COUNTRY} ) {TIME}",
    "{NAT} tennis player {PER} beat {PER} 6-4 6-3 in the second round on {DAY} .",
    "{COMPANY} and {COMPANY} agreed on {DAY} to merge in a deal worth {NUM} million dollars .",
    "Flights between {CITY} and {CITY} were cancelled on {DAY} because of heavy snow , {AIRLINE} said .",
    "The {NAT} central bank left interest rates unchanged on {DAY} .",
    "{PER} , who coaches {CLUB} , said the team had played well despite the defeat .",
    "About {BIG} people took part in a march through central {CITY} on {DAY} , organisers said .",
    "{PER} , a professor at {UNIVERSITY} , said the new study was the largest of its kind in {COUNTRY} .",
    "{LAST} , {AGE} , has played for {CLUB} since {YEAR} .",
    "{COMPANY} said on {DAY} it would cut {NUM} jobs at its plant near {CITY} .",
    "{PER} of the {PARTY} won the election in {CITY} with {WIN} percent of the vote .",
    "{NAT} and {NAT} officials met in {CITY} on {DAY} to discuss fishing rights .",
    "{PER} told reporters in {CITY} that {COMPANY} had no plans to leave {COUNTRY} .",
    "{CLUB} manager {PER} was sent off in the second half of the match against {CLUB} .",
    "The {PAPER} reported on {DAY} that {COMPANY} was in talks to buy a rival firm in {COUNTRY} .",
    "{PER} , speaking in {NAT} , thanked the fans in {CITY} for their support .",
    "{AIRLINE} will start direct flights from {CITY} to {CITY} in {MONTH} .",
    "The {EVENT} team from {COUNTRY} arrived in {CITY} on {DAY} .",
    "{CLUB} {GOALS} {CLUB} {GOALS}",
    "Scorers : {LAST} {MIN} , {LAST} {MIN}",
    "{CITY} {DATE}",
]
CONLL_ENTITY = {
    "PER": "PER", "LAST": "PER", "COUNTRY": "LOC", "CITY": "LOC",
    "COMPANY": "ORG", "AIRLINE": "ORG", "CLUB": "ORG", "PAPER": "ORG",
    "MINISTRY": "ORG", "UNIVERSITY": "ORG", "PARTY": "ORG",
    "NAT": "MISC", "EVENT": "MISC",
}
CONLL_POOLS = {
    "COUNTRY": COUNTRIES, "CITY": CITIES, "COMPANY": COMPANIES,
    "AIRLINE": AIRLINES, "CLUB": CLUBS, "PAPER": PAPERS,
    "MINISTRY": MINISTRIES, "UNIVERSITY": UNIVERSITIES, "PARTY": PARTIES,
    "NAT": NATIONALITIES, "EVENT": EVENTS, "DAY": DAYS, "MONTH": MONTHS,
}


def conll_fill(r: random.Random, slot: str, used: set) -> str:
    for _ in range(100):
        if slot == "PER":
            v = person(r)[0]
        elif slot == "LAST":
            v = r.choice(LAST)
        elif slot in CONLL_POOLS:
            v = r.choice(CONLL_POOLS[slot])
        elif slot == "SCORE":
            a = r.randint(1, 4)
            v = f"{a}-{r.randint(0, a - 1)}"
        elif slot == "PCT":
            v = f"{r.randint(1, 9)}.{r.randint(0, 9)}"
        elif slot == "NUM":
            v = str(r.choice([12, 45, 80, 120, 250, 340, 600, 900, 1200]))
        elif slot == "BIG":
            v = f"{r.randint(2, 60) * 1000:,}"
        elif slot == "YEAR":
            v = str(r.randint(2010, 2030))
        elif slot == "AGE":
            v = str(r.randint(19, 36))
        elif slot == "WIN":
            v = str(r.randint(41, 72))
        elif slot == "GOALS":
            v = str(r.randint(0, 4))
        elif slot == "MIN":
            v = str(r.randint(2, 90))
        elif slot == "DATE":
            v = f"{r.randint(2015, 2024)}-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}"
        elif slot == "TIME":
            v = f"{r.randint(43, 49)}.{r.randint(10, 99)}"
        else:
            raise KeyError(slot)
        if v not in used or slot not in CONLL_ENTITY:
            used.add(v)
            return v
    raise RuntimeError(slot)


def conll_sentence(r: random.Random, template: str) -> tuple[list, list]:
    tokens, tags, used = [], [], set()
    for piece in template.split():
        if piece.startswith("{") and piece.endswith("}"):
            slot = piece[1:-1]
            value = conll_fill(r, slot, used).split()
            kind = CONLL_ENTITY.get(slot)
            for i, tok in enumerate(value):
                tokens.append(tok)
                tags.append("O" if kind is None else ("B-" if i == 0 else "I-") + kind)
        else:
            tokens.append(piece)
            tags.append("O")
    return tokens, tags


def make_conll() -> list[dict]:
    r = rng("conll")
    rows, seen = [], set()
    while len(rows) < 400:
        template = CONLL_TEMPLATES[len(rows) % len(CONLL_TEMPLATES)]
        tokens, tags = conll_sentence(r, template)
        key = " ".join(tokens)
        if key in seen:
            continue
        seen.add(key)
        rows.append({"tokens": tokens, "ner_tags": tags})
    r.shuffle(rows)
    return rows


def detokenize(tokens: list[str]) -> str:
    s = " ".join(tokens)
    for a, b in ((" ,", ","), (" .", "."), (" 's", "'s"), ("( ", "("),
                 (" )", ")"), (" --", " -")):
        s = s.replace(a, b)
    return s


# ---------------------------------------------------------------------------
# 3. SQuAD v1.1-like reading comprehension
# ---------------------------------------------------------------------------

class Para:
    """A paragraph built from text pieces, remembering where answers are."""

    def __init__(self):
        self.text = ""
        self.spans: dict[str, tuple[str, int]] = {}
        self.questions: list[tuple[str, str]] = []

    def add(self, *parts, qs=()):
        if self.text:
            self.text += " "
        for p in parts:
            if isinstance(p, tuple):
                key, value = p
                self.spans[key] = (value, len(self.text))
                self.text += value
            else:
                self.text += p
        self.questions.extend(qs)


def squad_town(r: random.Random, used: set):
    t = unique(r, town_name, used)
    region = r.choice(REGIONS)
    river = r.choice(RIVERS)
    lake = r.choice(LAKES)
    year = r.randint(1320, 1780)
    founder, _ = person(r, "m")
    group = r.choice(["a group of wool merchants", "a community of fishermen",
                      "a small order of monks", "a band of farmers",
                      "a family of salt traders", "a company of miners"])
    disaster = r.choice(["a great fire", "a flood", "an earthquake",
                         "a violent storm"])
    year2 = year + r.randint(60, 200)
    size = r.choice(["small", "quiet", "busy", "historic"])
    dir_ = r.choice(["north", "south", "east", "west", "northern hills",
                     "southern plain"])
    p1 = Para()
    p1.add(f"{t} is a {size} town in the {dir_} of ", ("region", region), ".",
           qs=[(f"In which region is {t}?", "region")])
    p1.add("It was founded in ", ("year", str(year)), " by ", ("group", group),
           " led by ", ("founder", founder), ".",
           qs=[(f"When was {t} founded?", "year"),
               (f"Who led the group that founded {t}?", "founder"),
               (f"Who founded {t}?", "group")])
    p1.add("The town lies on the ", ("river", f"{river} River"),
           ", which flows into ", ("lake", lake), ".",
           qs=[(f"On which river does {t} lie?", "river"),
               (f"Into what does the {river} River flow?", "lake")])
    p1.add("In ", ("year2", str(year2)), ", ", ("disaster", disaster),
           " destroyed much of the old town, and the centre was rebuilt in stone.",
           qs=[(f"What destroyed much of {t} in {year2}?", "disaster"),
               (f"In what year was much of the old town of {t} destroyed?", "year2")])
    pop = f"{r.randint(3, 90) * 100 + r.randint(0, 9) * 10:,}"
    industry = r.choice(["cheese making", "fishing", "wool weaving",
                         "glass blowing", "apple growing", "boat building",
                         "timber", "pottery"])
    festival, season = r.choice([
        ("Lantern Festival", "autumn"), ("Harvest Fair", "autumn"),
        ("River Parade", "summer"), ("Festival of Bells", "spring"),
        ("Midsummer Market", "summer"), ("Winter Light Festival", "winter"),
        ("Blossom Fair", "spring"), ("Snow Market", "winter")])
    landmark = r.choice(["the old clock tower", "the town hall",
                         "the stone bridge", "the church of Saint Anselm",
                         "the covered market", "the old mill"])
    year3 = year2 + r.randint(10, 90)
    other = unique(r, town_name, used)
    year4 = r.randint(1840, 1910)
    p2 = Para()
    p2.add(f"Today {t} has a population of about ", ("pop", pop), " people.",
           qs=[(f"About how many people live in {t}?", "pop")])
    p2.add("Its economy depends mainly on ", ("industry", industry),
           ", although tourism has grown in recent years.",
           qs=[(f"What does the economy of {t} mainly depend on?", "industry")])
    p2.add(f"Every ", ("season", season), ", the town hosts the ",
           ("festival", festival), f", which attracts visitors from across {region}.",
           qs=[(f"Which festival does {t} host?", "festival"),
               (f"In which season is the {festival} in {t} held?", "season")])
    p2.add("The most famous building in the town is ", ("landmark", landmark),
           ", completed in ", ("year3", str(year3)), ".",
           qs=[(f"What is the most famous building in {t}?", "landmark"),
               (f"When was {landmark} in {t} completed?", "year3")])
    p2.add(f"A railway line to the neighbouring town of ", ("other", other),
           " opened in ", ("year4", str(year4)), ".",
           qs=[(f"Which neighbouring town is linked to {t} by railway?", "other"),
               (f"When did the railway line from {t} to {other} open?", "year4")])
    return t, [p1, p2]


PROFESSIONS = [
    # profession, known for, verb, work, field, subject, institutions
    ("botanist", "her studies of mountain ferns", "published",
     "The Flora of the High Passes", "botany", "natural history",
     ["the Botanical Garden", "the Institute of Natural Sciences"]),
    ("astronomer", "discovering a faint comet", "published",
     "Notes on the Southern Sky", "astronomy", "mathematics",
     ["the Observatory of Saint Clair", "the Royal Academy"]),
    ("engineer", "designing iron bridges", "published",
     "A Treatise on Bridges", "engineering", "mechanics",
     ["the Harbour Works", "the State Railway Company"]),
    ("composer", "choral music", "completed",
     "the Winter Cantata", "music", "music",
     ["the Cathedral of Saint Anselm", "the Royal Opera"]),
    ("painter", "landscapes of coastal villages", "completed",
     "The Harbour at Dawn", "painting", "drawing",
     ["the Royal Academy", "the School of Fine Arts"]),
    ("chemist", "work on natural dyes", "published",
     "On the Colours of Plants", "chemistry", "chemistry",
     ["the Institute of Natural Sciences", "the National Laboratory"]),
    ("geographer", "the first accurate maps of the northern coast",
     "published", "An Atlas of the Northern Coast", "geography", "surveying",
     ["the National Museum", "the Royal Geographical Society"]),
    ("physician", "early work on public hygiene", "published",
     "Clean Water and the Health of Towns", "medicine", "medicine",
     ["the City Hospital", "the Hospital of Saint Clair"]),
]
AWARDS = ["Golden Quill Medal", "Royal Society Prize", "Aldmoor Medal",
          "Order of the Lantern", "Vellum Prize"]


def squad_person(r: random.Random, used: set):
    name, g = unique(r, lambda rr: person(rr), used)
    pr, pos = ("he", "his") if g == "m" else ("she", "her")
    prof, known, verb, work, field, subject, insts = r.choice(PROFESSIONS)
    if g == "m":
        known = known.replace("her ", "his ")
    by = r.randint(1740, 1880)
    age = r.randint(55, 89)
    dy = by + age
    region = r.choice(REGIONS)
    village = unique(r, town_name, used)
    k = r.randint(3, 9)
    order = r.choice(["eldest", "youngest", "second"])
    uni = r.choice(UNIVERSITIES)
    mentor, _ = person(r)
    y1 = by + r.randint(25, 45)
    k2 = r.randint(5, 20)
    inst = r.choice(insts)
    city = r.choice(CITIES)
    award = r.choice(AWARDS)
    y2 = min(dy - 1, y1 + r.randint(5, 20))
    dcity = r.choice(CITIES)
    p1 = Para()
    p1.add(f"{name} ({by}–{dy}) was {a_an(prof)} ", ("prof", prof), " from ", ("region", region),
           " best known for ", ("known", known), ".",
           qs=[(f"What was {name}'s profession?", "prof"),
               (f"Where was {name} from?", "region"),
               (f"What is {name} best known for?", "known")])
    p1.add(f"{cap(pr)} was born in ", ("by", str(by)), " in the village of ",
           ("village", village), f" and was the {order} of ",
           ("k", NUMBER_WORDS[k]), " children.",
           qs=[(f"In which year was {name} born?", "by"),
               (f"In which village was {name} born?", "village"),
               (f"How many children were in {name}'s family?", "k")])
    p1.add(f"{cap(pr)} studied ", ("subject", subject), " at ", ("uni", uni),
           f", where {pr} was taught by ", ("mentor", mentor), ".",
           qs=[(f"What did {name} study?", "subject"),
               (f"Where did {name} study {subject}?", "uni"),
               (f"Who taught {name} at {uni}?", "mentor")])
    p2 = Para()
    p2.add("In ", ("y1", str(y1)), f", {name.split()[-1]} {verb} ", ("work", work),
           f", which made {pos} name across the country.",
           qs=[(f"What did {name} {'publish' if verb == 'published' else 'complete'} in {y1}?", "work"),
               (f"When did {name} {'publish' if verb == 'published' else 'complete'} {work}?", "y1")])
    p2.add(f"{cap(pr)} later worked for ", ("k2", f"{k2} years"), " at ",
           ("inst", inst), " in ", ("city", city), ".",
           qs=[(f"How long did {name} work at {inst}?", "k2"),
               (f"In which city is {inst} where {name} worked?", "city")])
    p2.add("In ", ("y2", str(y2)), f", {pr} received the ", ("award", award),
           f" for {pos} contributions to {field}.",
           qs=[(f"Which award did {name} receive?", "award"),
               (f"When did {name} receive the {award}?", "y2")])
    p2.add(f"{cap(pr)} died in ", ("dcity", dcity), " at the age of ",
           ("age", str(age)), ".",
           qs=[(f"Where did {name} die?", "dcity"),
               (f"How old was {name} when {pr} died?", "age")])
    return name, [p1, p2]


ANIMALS = [
    # class, base names, feature, (len lo, hi) cm, (weight lo, hi) g, eggs,
    # foods, habitats, predators, what its nickname comes from
    ("songbird", ["warbler", "finch", "thrush", "wren"], "crest",
     (11, 28), (15, 120), (3, 6),
     ["insects", "seeds and berries", "small spiders", "caterpillars"],
     ["wet forests", "high meadows", "pine woods", "reed beds"],
     ["owls and snakes", "hawks", "crows and weasels"], "its unusual song"),
    ("frog", ["tree frog", "reed frog"], "belly", (3, 9), (4, 45), (200, 900),
     ["flies and beetles", "small insects", "ants"],
     ["wet forests", "reed beds", "mountain streams"],
     ["herons", "snakes", "otters"], "its loud evening call"),
    ("lizard", ["skink", "gecko"], "tail", (9, 35), (12, 260), (2, 8),
     ["crickets", "beetles", "snails", "ripe fruit and insects"],
     ["rocky hillsides", "coastal dunes", "pine woods"],
     ["hawks", "foxes and hawks", "snakes"], "the way it moves its tail"),
    ("freshwater turtle", ["mud turtle", "pond turtle"], "shell", (14, 32),
     (400, 2600), (6, 18), ["water plants", "snails", "small fish"],
     ["slow rivers", "reed beds", "shallow lakes"],
     ["otters", "foxes", "herons"], "the pattern on its shell"),
    ("freshwater fish", ["minnow", "darter", "loach"], "dorsal fin", (6, 30),
     (10, 700), (300, 1500), ["insect larvae", "algae", "tiny shrimp"],
     ["slow rivers", "mountain streams", "shallow lakes"],
     ["herons", "larger fish", "otters"], "the colour of its fins"),
    ("beetle", ["ground beetle", "leaf beetle"], "back", (2, 5), (2, 9),
     (20, 80), ["fallen leaves", "rotting wood", "aphids"],
     ["pine woods", "wet forests", "high meadows"],
     ["birds", "shrews and birds", "lizards"], "its shining back"),
]
ANIMAL_PREFIX = ["silver", "copper", "amber", "dusky", "golden", "spotted",
                 "striped", "marsh", "highland", "lesser", "greater",
                 "painted", "crested", "speckled", "river", "mossy"]
COLOURS = ["bright orange", "pale blue", "deep red", "yellow", "olive green",
           "black with white spots", "silver grey", "copper brown"]
STATUSES = ["vulnerable", "endangered", "near threatened", "of least concern"]


def squad_animal(r: random.Random, used: set):
    (cls, bases, feature, (llo, lhi), (wlo, whi), (elo, ehi), foods,
     habitats, predators, reason) = r.choice(ANIMALS)
    a = unique(r, lambda rr: f"{rr.choice(ANIMAL_PREFIX)} {rr.choice(bases)}", used)
    title = cap(a)
    habitat = r.choice(habitats)
    region = r.choice(REGIONS)
    L = r.randint(llo, lhi)
    # heavier when longer: weight grows with the cube of the length
    frac = ((L - llo + 1) / (lhi - llo + 1)) ** 3
    W = max(wlo, int(wlo + (whi - wlo) * frac * r.uniform(0.8, 1.0)))
    colour = r.choice(COLOURS)
    y = r.randint(1790, 1930)
    naturalist, _ = person(r)
    food = r.choice(foods)
    season = r.choice(["spring", "early summer", "late summer", "the rainy season"])
    e1 = r.randint(elo, (elo + ehi) // 2)
    e2 = r.randint(e1 + 1, ehi)
    pred = r.choice(predators)
    status = r.choice(STATUSES)
    nick = r.choice(["little lantern", "water ghost", "stone hopper",
                     "marsh bell", "evening spark", "red coat"])
    p1 = Para()
    p1.add(f"The {a} is a species of ", ("cls", cls), " found in the ",
           ("habitat", habitat), " of ", ("region", region), ".",
           qs=[(f"What kind of animal is the {a}?", "cls"),
               (f"In what kind of habitat is the {a} found?", "habitat"),
               (f"In which region does the {a} live?", "region")])
    p1.add("Adults grow to about ", ("L", f"{L} centimetres"),
           " in length and weigh up to ", ("W", f"{W:,} grams"), ".",
           qs=[(f"How long does an adult {a} grow?", "L"),
               (f"How much can an adult {a} weigh?", "W")])
    p1.add(f"Its {feature} is ", ("colour", colour),
           ", which makes it easy to recognise.",
           qs=[(f"What colour is the {feature} of the {a}?", "colour")])
    p1.add("The species was first described in ", ("y", str(y)),
           " by the naturalist ", ("naturalist", naturalist), ".",
           qs=[(f"Who first described the {a}?", "naturalist"),
               (f"When was the {a} first described?", "y")])
    p2 = Para()
    p2.add(f"The {a} feeds mainly on ", ("food", food), ".",
           qs=[(f"What does the {a} mainly feed on?", "food")])
    p2.add("Breeding takes place in ", ("season", season),
           ", when each female lays ", ("eggs", f"between {e1} and {e2}"), " eggs.",
           qs=[(f"When does the {a} breed?", "season"),
               (f"How many eggs does a female {a} lay?", "eggs")])
    p2.add("Its main predators are ", ("pred", pred), ".",
           qs=[(f"What are the main predators of the {a}?", "pred")])
    why = ("The species is still common and is listed as "
           if status == "of least concern" else
           "Because its habitat is shrinking, the species is now listed as ")
    p2.add(why, ("status", status), ".",
           qs=[(f"What is the conservation status of the {a}?", "status")])
    p2.add("Local people call it the ", ("nick", nick),
           f" because of {reason}.",
           qs=[(f"What do local people call the {a}?", "nick")])
    return title, [p1, p2]


INDUSTRIES = [
    ("furniture", ["Oak Chair", "Hearth Table", "Nest Shelf"], "a folding chair"),
    ("bicycles", ["Swift 3", "Trailrunner", "City Lark"], "a light touring bicycle"),
    ("wooden toys", ["Tinker Train", "Puzzle Tower", "Kite Kit"], "a wooden building set"),
    ("pots and pans", ["Copper Pot", "Everpan", "Stew Master"], "a heavy iron pan"),
    ("clocks", ["Bell Tower", "Pocket Star", "Night Owl"], "an alarm clock"),
    ("sailing boats", ["Heron", "Sea Swift", "Little Gull"], "a small sailing boat"),
    ("radios", ["Wave One", "Home Signal", "Portable 7"], "a portable radio"),
    ("shoes and boots", ["Walker", "Cloud Step", "Hill Boot"], "a waterproof walking boot"),
]
CO_SUFFIX = ["Works", "& Sons", "Company", "Brothers", "Industries", "Ltd"]
SHOPS = ["bakery", "bookshop", "tailor's shop", "bicycle repair shop",
         "hardware store", "flower shop"]


def squad_company(r: random.Random, used: set):
    industry, products, desc = r.choice(INDUSTRIES)
    c = unique(r, lambda rr: f"{rr.choice(LAST)} {rr.choice(CO_SUFFIX)}", used)
    city = unique(r, town_name, used)
    y = r.randint(1850, 1960)
    f1, _ = person(r)
    f2, _ = person(r)
    job = r.choice(["schoolteachers", "railway workers", "sailors",
                    "carpenters", "soldiers", "shop assistants"])
    shop = r.choice(SHOPS)
    n = f"{r.randint(2, 95) * 100:,}"
    k = r.randint(4, 60)
    prod = r.choice(products)
    y2 = y + r.randint(5, 30)
    y3 = y2 + r.randint(3, 30)
    city2 = unique(r, town_name, used)
    ceo, _ = person(r)
    y4 = r.randint(2005, 2023)
    p1 = Para()
    p1.add(f"{c} is a company headquartered in ", ("city", city), " that makes ",
           ("industry", industry), ".",
           qs=[(f"Where is {c} headquartered?", "city"),
               (f"What does {c} make?", "industry")])
    p1.add("It was founded in ", ("y", str(y)), " by ", ("founders", f"{f1} and {f2}"),
           ", two former ", ("job", job), ".",
           qs=[(f"When was {c} founded?", "y"),
               (f"Who founded {c}?", "founders"),
               (f"What did the founders of {c} do before starting the company?", "job")])
    p1.add("The company started in a small workshop above a ", ("shop", shop),
           " and sold its first products at local markets.",
           qs=[(f"The workshop where {c} started was above what?", "shop")])
    p2 = Para()
    p2.add(f"Today {c} employs around ", ("n", n), " people and sells its products in ",
           ("k", str(k)), " countries.",
           qs=[(f"How many people does {c} employ?", "n"),
               (f"In how many countries does {c} sell its products?", "k")])
    p2.add("Its best-known product is the ", ("prod", prod), f", {desc} first released in ",
           ("y2", str(y2)), ".",
           qs=[(f"What is the best-known product of {c}?", "prod"),
               (f"When was the {prod} first released?", "y2")])
    p2.add("In ", ("y3", str(y3)), ", the company opened a second factory in ",
           ("city2", city2), ".",
           qs=[(f"Where did {c} open its second factory?", "city2"),
               (f"When did {c} open its second factory?", "y3")])
    p2.add("The current chief executive is ", ("ceo", ceo), ", who took over in ",
           ("y4", str(y4)), ".",
           qs=[(f"Who is the chief executive of {c}?", "ceo"),
               (f"When did the current chief executive of {c} take over?", "y4")])
    return c, [p1, p2]


LANDMARKS = [
    # kind, title word, dimension, materials
    ("lighthouse", "Lighthouse", "tall", ["white granite", "red brick"]),
    ("clock tower", "Clock Tower", "tall", ["sandstone", "red brick"]),
    ("stone bridge", "Bridge", "long", ["local limestone", "grey granite"]),
    ("windmill", "Windmill", "tall", ["oak timber", "brick and timber"]),
    ("observatory", "Observatory", "tall", ["limestone", "brick and iron"]),
    ("covered market", "Market Hall", "long", ["cast iron and glass", "timber"]),
]


def squad_landmark(r: random.Random, used: set):
    kind, word, dim, materials = r.choice(LANDMARKS)
    town = unique(r, town_name, used)
    title = f"{town} {word}"
    used.add(title)
    region = r.choice(REGIONS)
    arch, _ = person(r)
    y = r.randint(1700, 1900)
    h = r.randint(18, 60) if dim == "tall" else r.randint(40, 220)
    material = r.choice(materials)
    y2 = y + r.randint(20, 110)
    disaster = r.choice(["a storm", "a fire", "an earthquake", "a flood"])
    k = r.randint(2, 9)
    payer = r.choice(["the people of the town", "a local merchant",
                      "the regional government", "a public subscription"])
    use = r.choice(["a museum", "a concert hall", "a visitor centre",
                    "a school for local artists", "a café and gallery"])
    v = f"{r.randint(4, 120) * 1000:,}"
    p1 = Para()
    p1.add(f"The {title} is a ", ("kind", kind), " in the town of ", ("town", town),
           ", in ", ("region", region), ".",
           qs=[(f"What kind of structure is the {title}?", "kind"),
               (f"In which region is the {title}?", "region")])
    p1.add("It was designed by the architect ", ("arch", arch),
           " and completed in ", ("y", str(y)), ".",
           qs=[(f"Who designed the {title}?", "arch"),
               (f"When was the {title} completed?", "y")])
    p1.add("The structure is ", ("h", f"{h} metres"), f" {dim} and was built from ",
           ("material", material), ".",
           qs=[(f"How {dim} is the {title}?", "h"),
               (f"What was the {title} built from?", "material")])
    p2 = Para()
    p2.add("In ", ("y2", str(y2)), f", the {word.lower()} was badly damaged by ",
           ("disaster", disaster), ".",
           qs=[(f"What damaged the {title} in {y2}?", "disaster"),
               (f"When was the {title} badly damaged?", "y2")])
    p2.add("Repairs took ", ("k", f"{NUMBER_WORDS[k]} years"), " and were paid for by ",
           ("payer", payer), ".",
           qs=[(f"How long did the repairs to the {title} take?", "k"),
               (f"Who paid for the repairs to the {title}?", "payer")])
    p2.add("Today the building is used as ", ("use", use), " and receives about ",
           ("v", v), " visitors each year.",
           qs=[(f"What is the {title} used as today?", "use"),
               (f"How many visitors does the {title} receive each year?", "v")])
    return title, [p1, p2]


def make_squad() -> dict:
    r = rng("squad")
    makers = [squad_town, squad_person, squad_animal, squad_company, squad_landmark]
    used: set = set()
    data = []
    for i in range(40):
        title, paras = makers[i % len(makers)](r, used)
        out_paras = []
        for p in paras:
            qs = list(p.questions)
            r.shuffle(qs)
            n = min(len(qs), r.choice([3, 4, 4, 4, 5]))
            qas = []
            for question, key in qs[:n]:
                text, start = p.spans[key]
                assert p.text[start:start + len(text)] == text, (question, text)
                qid = hashlib.sha1(f"{title}|{question}".encode()).hexdigest()[:24]
                qas.append({"id": qid, "question": question,
                            "answers": [{"text": text, "answer_start": start}]})
            out_paras.append({"context": p.text, "qas": qas})
        data.append({"title": title, "paragraphs": out_paras})
    ids = [qa["id"] for a in data for p in a["paragraphs"] for qa in p["qas"]]
    assert len(ids) == len(set(ids)), "duplicate question ids"
    return {"version": "1.1", "data": data}


# ---------------------------------------------------------------------------
# 4. News-style documents with one-sentence summaries
# ---------------------------------------------------------------------------

def money(r, lo, hi):
    return f"{r.randint(int(lo * 10), int(hi * 10)) / 10:.1f}"


def doc_council(r):
    town = town_name(r)
    day = r.choice(DAYS[:5])
    project, short = r.choice([
        ("a new public library", "library"),
        ("a new swimming pool", "swimming pool"),
        ("a cycle path along the river", "cycle path"),
        ("a new primary school", "primary school"),
        ("a new bus station", "bus station"),
        ("a park on the site of an old factory", "park"),
        ("a new sports hall", "sports hall"),
        ("a covered market in the town centre", "covered market"),
    ])
    cost = money(r, 1.5, 7.9)
    vf = r.randint(12, 25)
    va = r.randint(1, vf - 6)
    year = r.randint(2025, 2029)
    mayor, _ = person(r)
    n = r.randint(8, 60) * 1000
    lead = [f"The town council of {town} voted {vf} to {va} on {day} to approve {project}.",
            f"The project will cost {cost} million euros and is expected to be finished in {year}."]
    extra = [f"Mayor {mayor} said the {short} would serve more than {n:,} residents.",
             f"Construction will begin next spring on a site near the old railway station.",
             f"Some residents had argued that the money should be spent on road repairs instead.",
             f"The council will hold a public meeting about the plans next month.",
             f"Part of the cost will be covered by a grant from the regional government."]
    summary = r.choice([
        f"{town} council has approved {project} costing {cost} million euros, due to be finished in {year}.",
        f"Councillors in {town} voted {vf} to {va} to approve {with_article(cost)} million euro {short}.",
        f"A {cost} million euro {short} for {town} was approved by the town council on {day}.",
    ])
    return lead, extra, summary


def doc_company(r):
    company = r.choice(COMPANIES)
    city = r.choice(CITIES)
    day = r.choice(DAYS[:5])
    up = r.random() < 0.5
    pct = r.randint(3, 40)
    amt = r.randint(20, 900)
    year = r.randint(2019, 2024)
    ceo, g = person(r)
    pr = "he" if g == "m" else "she"
    n = f"{r.randint(2, 30) * 50:,}"
    if up:
        lead = [f"{company}, which is based in {city}, said on {day} that its profit rose {pct} percent to {amt} million euros in {year}.",
                f"Chief executive {ceo} said the company would hire {n} new staff over the next year."]
        summary = r.choice([
            f"{company}'s profit rose {pct} percent to {amt} million euros in {year}, and it plans to hire {n} people.",
            f"{company} reported a {pct} percent rise in profit and said it would take on {n} new staff.",
        ])
        extra = [f"Sales grew strongly, helped by high demand in Asia and South America.",
                 f"Shares in the company rose {r.randint(2, 9)} percent in early trading.",
                 f"Analysts had expected a smaller increase.",
                 f"{cap(pr)} added that the company would open two new offices next year."]
    else:
        lead = [f"{company}, which is based in {city}, said on {day} that its profit fell {pct} percent to {amt} million euros in {year}.",
                f"Chief executive {ceo} said the company would cut {n} jobs to reduce costs."]
        summary = r.choice([
            f"{company}'s profit fell {pct} percent to {amt} million euros in {year}, and it will cut {n} jobs.",
            f"{company} reported a {pct} percent drop in profit and announced {n} job cuts.",
        ])
        extra = [f"Sales were hit by weak demand and higher energy prices.",
                 f"Shares in the company fell {r.randint(2, 9)} percent in early trading.",
                 f"Trade unions said they would oppose the job cuts.",
                 f"{cap(pr)} said {pr} expected business to improve in the second half of next year."]
    return lead, extra, summary


def doc_match(r):
    a, b = r.sample(CLUBS, 2)
    ga = r.randint(1, 5)
    gb = r.randint(0, ga - 1)
    day = r.choice(["Saturday", "Sunday", "Wednesday"])
    crowd = r.randint(8, 60) * 1000
    player, _ = person(r, "m")
    minute = r.randint(60, 89)
    pos = r.choice(["first", "second", "third", "fourth"])
    k = r.randint(2, 6)
    lead = [f"{a} beat {b} {ga}-{gb} on {day} in front of {crowd:,} fans.",
            f"{player} scored twice for {a}, including the winning goal in the {minute}th minute."
            if ga - gb == 1 else
            f"{player} scored twice for {a}, who were in control from the first minute."]
    extra = [f"The result moves {a} up to {pos} place in the league.",
             f"{b} have now lost {NUMBER_WORDS[k]} matches in a row.",
             f"The {b} coach said the team had not been good enough in defence.",
             f"{a} play their next match away from home on {r.choice(DAYS)}."]
    summary = r.choice([
        f"{a} beat {b} {ga}-{gb}, with {player} scoring twice.",
        f"Two goals from {player} helped {a} to a {ga}-{gb} win over {b}.",
    ])
    return lead, extra, summary


def doc_storm(r):
    region = r.choice(REGIONS)
    town = town_name(r)
    day = r.choice(DAYS)
    wind = r.randint(8, 16) * 10
    homes = r.randint(2, 80) * 1000
    day2 = DAYS[(DAYS.index(day) + 2) % 7]
    lead = [f"A storm brought heavy rain and winds of up to {wind} kilometres per hour to {region} on {day}.",
            f"About {homes:,} homes lost power, and several roads near {town} were closed by fallen trees."]
    extra = ["No injuries were reported.",
             f"The electricity company said power should be restored to all homes by {day2}.",
             "Forecasters expect calmer weather later in the week.",
             f"Schools in {town} will stay closed until the roads are cleared.",
             "Train services were also delayed across the region."]
    summary = r.choice([
        f"A storm with winds of up to {wind} km/h left about {homes:,} homes in {region} without power on {day}.",
        f"About {homes:,} homes in {region} lost power when a storm hit the region on {day}.",
    ])
    return lead, extra, summary


def doc_rescue(r):
    n = r.randint(2, 9)
    mountain = f"Mount {r.choice(['Varn', 'Ellery', 'Corra', 'Tessel', 'Orrin', 'Brask', 'Halden'])}"
    day = r.choice(DAYS)
    hours = r.randint(3, 14)
    leader, _ = person(r)
    cause = r.choice(["thick fog", "heavy snow", "a sudden storm", "darkness"])
    lead = [f"{cap(NUMBER_WORDS[n])} hikers were rescued from {mountain} on {day} after being trapped by {cause}.",
            f"Rescue teams reached the group after a search lasting {hours} hours."]
    extra = ["All of the hikers were taken to hospital, but none was seriously hurt.",
             f"Team leader {leader} said the group had been well prepared and had called for help early.",
             "A helicopter was used to carry two of the hikers down the mountain.",
             "Officials reminded visitors to check the weather forecast before setting out."]
    summary = r.choice([
        f"{cap(NUMBER_WORDS[n])} hikers trapped by {cause} on {mountain} were rescued after a {hours}-hour search.",
        f"Rescuers brought {NUMBER_WORDS[n]} hikers down from {mountain} on {day} after they were trapped by {cause}.",
    ])
    return lead, extra, summary


def doc_species(r):
    uni = r.choice(UNIVERSITIES)
    animal, places, (lo, hi) = r.choice([
        ("frog", ["the forests of", "the marshes of"], (2, 9)),
        ("beetle", ["a cave in", "the forests of"], (2, 4)),
        ("lizard", ["the mountains of", "the forests of"], (8, 30)),
        ("fish", ["a lake in", "a cave in", "a river in"], (4, 30)),
        ("bird", ["the forests of", "the mountains of"], (10, 25)),
        ("snail", ["a cave in", "the forests of"], (2, 5)),
    ])
    place = f"{r.choice(places)} {r.choice(REGIONS)}"
    sp = f"{r.choice(ANIMAL_PREFIX)} {animal}"
    size = r.randint(lo, hi)
    leader, _ = person(r)
    journal = r.choice(["Nature Letters", "the Journal of Field Biology",
                        "Animal Science Today", "the Zoological Review"])
    lead = [f"Researchers at {uni} have discovered a new species of {animal} in {place}.",
            f"The animal, which the team has called the {sp}, is about {size} centimetres long."]
    extra = [f"Team leader {leader} said the discovery showed how much was still unknown about the region.",
             f"The findings were published this week in {journal}.",
             "The researchers believe only a few hundred of the animals remain.",
             "They have asked the government to protect the area where it was found."]
    summary = r.choice([
        f"Researchers at {uni} have found a new {animal} species, the {sp}, in {place}.",
        f"A new species of {animal} about {size} centimetres long has been discovered in {place}.",
    ])
    return lead, extra, summary


def doc_festival(r):
    town = town_name(r)
    fest = r.choice(["Lantern Festival", "Harvest Fair", "Jazz Weekend",
                     "Book Festival", "Kite Festival", "Food Market",
                     "Folk Music Festival"])
    n = r.randint(12, 90) * 1000
    m = n - r.randint(2, 10) * 1000
    days = r.randint(2, 5)
    org, _ = person(r)
    lead = [f"The {fest} in {town} attracted a record {n:,} visitors this year, organisers said.",
            f"That was up from {m:,} last year."]
    extra = [f"The festival ran for {NUMBER_WORDS[days]} days and included more than {r.randint(3, 20) * 10} events.",
             f"Organiser {org} thanked the volunteers who helped to run it.",
             "Local hotels and restaurants reported their busiest weekend of the year.",
             "Next year's festival is already being planned."]
    summary = r.choice([
        f"A record {n:,} people visited the {fest} in {town}, up from {m:,} last year.",
        f"The {fest} in {town} drew a record {n:,} visitors this year.",
    ])
    return lead, extra, summary


FACTORIES = [("Apex Motors", ["electric cars", "car engines"]),
             ("Lumen Electronics", ["solar panels", "batteries", "televisions"]),
             ("Stellar Foods", ["bottled juice", "frozen meals", "breakfast cereal"]),
             ("Pinecrest Paper", ["paper packaging", "cardboard boxes"]),
             ("Marigold Textiles", ["cotton clothing", "curtains and bed linen"]),
             ("Westbrook Chemicals", ["paint", "cleaning products"]),
             ("Crestline Steel", ["steel beams", "steel pipes"]),
             ("Keystone Cement", ["cement", "concrete blocks"])]


def doc_factory(r):
    company, products = r.choice(FACTORIES)
    town = town_name(r)
    day = r.choice(DAYS[:5])
    jobs = r.randint(4, 60) * 10
    product = r.choice(products)
    cost = r.randint(10, 300)
    lead = [f"{company} opened a new factory in {town} on {day}, creating {jobs} jobs.",
            f"The plant, which cost {cost} million euros, will make {product}."]
    extra = ["Most of the new workers will be hired from the local area.",
             f"The mayor of {town} called the opening a great day for the town.",
             "Production is expected to reach full capacity by the end of next year.",
             "The company said it chose the site because of its good rail links."]
    summary = r.choice([
        f"{company} has opened a {cost} million euro factory making {product} in {town}, creating {jobs} jobs.",
        f"A new {company} factory in {town} will make {product} and employ {jobs} people.",
    ])
    return lead, extra, summary


def doc_charity(r):
    town = town_name(r)
    school = f"{r.choice(LAST)} {r.choice(['Primary School', 'High School', 'Academy'])}"
    amt = r.randint(8, 120) * 100
    cause = r.choice(["the local hospital", "a children's charity",
                      "an animal shelter", "the town library",
                      "families affected by the floods"])
    act = r.choice(["running a sponsored walk", "selling cakes",
                    "holding a concert", "washing cars",
                    "organising a sponsored swim"])
    lead = [f"Pupils at {school} in {town} raised {amt:,} euros for {cause} by {act}.",
            f"More than {r.randint(5, 30) * 10} pupils took part."]
    extra = [f"The head teacher said she was very proud of the pupils.",
             "Parents and teachers also helped to organise the event.",
             f"The money will be handed over at a ceremony next week.",
             "The school hopes to make the event a yearly tradition."]
    summary = r.choice([
        f"Pupils at {school} in {town} raised {amt:,} euros for {cause}.",
        f"{school} pupils raised {amt:,} euros for {cause} by {act}.",
    ])
    return lead, extra, summary


def doc_election(r):
    town = town_name(r)
    winner, g = person(r)
    rival, _ = person(r)
    pr, pos = ("He", "his") if g == "m" else ("She", "her")
    day = r.choice(["Sunday", "Thursday"])
    p1 = r.randint(51, 68)
    p2 = 100 - p1 - r.randint(0, 8)
    turnout = r.randint(35, 78)
    promise = r.choice(["build more affordable homes", "improve bus services",
                        "cut local taxes", "plant ten thousand trees",
                        "reopen the town swimming pool"])
    lead = [f"{winner} was elected mayor of {town} on {day}, winning {p1} percent of the vote.",
            f"{pr} defeated {rival}, who received {p2} percent."]
    extra = [f"Turnout was {turnout} percent.",
             f"{pr} has promised to {promise} during {pos} first year in office.",
             f"{rival} congratulated the new mayor and said the result was clear.",
             "The new mayor will take office next month."]
    summary = r.choice([
        f"{winner} won the {town} mayoral election with {p1} percent of the vote, defeating {rival}.",
        f"{winner} has been elected mayor of {town} after beating {rival}.",
    ])
    return lead, extra, summary


def doc_rail(r):
    a = town_name(r)
    b = unique(r, town_name, {a})
    day = r.choice(DAYS)
    x = r.randint(70, 150)
    y = r.randint(25, x - 20)
    cost = r.randint(80, 900)
    trains = r.randint(2, 6)
    lead = [f"A new railway line between {a} and {b} opened on {day}.",
            f"The line cuts the journey time between the two towns from {x} minutes to {y} minutes."]
    extra = [f"It cost {cost} million euros and took four years to build.",
             f"There will be {NUMBER_WORDS[trains]} trains an hour at busy times.",
             "Hundreds of people gathered at the stations to watch the first train arrive.",
             "Some farmers had opposed the route, which crosses their land."]
    summary = r.choice([
        f"A new railway between {a} and {b} has cut the journey time from {x} to {y} minutes.",
        f"The new {a}-{b} railway line opened on {day}, reducing the trip to {y} minutes.",
    ])
    return lead, extra, summary


def doc_auction(r):
    artist, _ = person(r)
    city = r.choice(CITIES)
    title = r.choice(["The Harbour at Dawn", "Woman with a Blue Umbrella",
                      "Winter Orchard", "The Red Boat", "Evening in the Square",
                      "Portrait of a Sailor"])
    amt = money(r, 1.1, 7.9)
    est = r.randint(3, 9) * 100
    year = r.randint(1880, 1960)
    lead = [f"A painting by {artist} sold for {amt} million euros at an auction in {city} on {r.choice(DAYS[:5])}.",
            f"The work, called {title}, was painted in {year}."]
    extra = [f"The auction house had expected it to sell for about {est},000 euros.",
             "The buyer, who did not want to be named, bid by telephone.",
             f"It is the highest price ever paid for a work by the artist.",
             "The painting had been kept by the same family for three generations."]
    summary = r.choice([
        f"{artist}'s painting {title} sold for {amt} million euros at auction in {city}.",
        f"A {year} painting by {artist} fetched {amt} million euros in {city}.",
    ])
    return lead, extra, summary


def make_summaries() -> list[dict]:
    r = rng("summaries")
    makers = [doc_council, doc_company, doc_match, doc_storm, doc_rescue,
              doc_species, doc_festival, doc_factory, doc_charity,
              doc_election, doc_rail, doc_auction]
    rows, seen = [], set()
    i = 0
    while len(rows) < 300:
        lead, extra, summary = makers[i % len(makers)](r)
        i += 1
        k = r.randint(max(0, 3 - len(lead)), min(len(extra), 6 - len(lead)))
        body = r.sample(extra, k)
        document = " ".join(lead + body)
        if document in seen:
            continue
        seen.add(document)
        rows.append({"document": document, "summary": summary})
    r.shuffle(rows)
    return rows


# ---------------------------------------------------------------------------
# 5. English -> French translation pairs
# ---------------------------------------------------------------------------

# person index: 0 je, 1 tu, 2 il/elle, 3 nous, 4 vous, 5 ils/elles
FR_SUBJECTS = [
    ("I", "je", 0), ("you", "vous", 4), ("he", "il", 2), ("she", "elle", 2),
    ("we", "nous", 3), ("they", "ils", 5),
    ("the boy", "le garçon", 2), ("the girl", "la fille", 2),
    ("my brother", "mon frère", 2), ("my sister", "ma sœur", 2),
    ("the teacher", "le professeur", 2), ("the doctor", "le médecin", 2),
    ("our neighbour", "notre voisin", 2), ("the cook", "le cuisinier", 2),
    ("my grandmother", "ma grand-mère", 2),
    ("the children", "les enfants", 5), ("my parents", "mes parents", 5),
    ("the students", "les étudiants", 5), ("the tourists", "les touristes", 5),
    ("my friends", "mes amis", 5), ("the women", "les femmes", 5),
]
EN_3SG = {2}

FR_PLACES = {
    "kitchen": ("in the kitchen", "dans la cuisine"),
    "garden": ("in the garden", "dans le jardin"),
    "restaurant": ("at the restaurant", "au restaurant"),
    "cafe": ("at the café", "au café"),
    "home": ("at home", "à la maison"),
    "park": ("in the park", "dans le parc"),
    "library": ("in the library", "à la bibliothèque"),
    "train": ("on the train", "dans le train"),
    "office": ("at the office", "au bureau"),
    "market": ("at the market", "au marché"),
    "town": ("in town", "en ville"),
    "station": ("at the station", "à la gare"),
    "school": ("in front of the school", "devant l'école"),
    "museum": ("outside the museum", "devant le musée"),
    "paris": ("in Paris", "à Paris"),
    "lyon": ("in Lyon", "à Lyon"),
    "cinema": ("at the cinema", "au cinéma"),
}
FR_TIMES = [("every day", "tous les jours"), ("every morning", "tous les matins"),
            ("every evening", "tous les soirs"), ("on Sundays", "le dimanche"),
            ("on Saturdays", "le samedi"), ("in the afternoon", "l'après-midi"),
            ("in the evening", "le soir")]


def O(en, fr, definite=False, places=None):
    return {"en": en, "fr": fr, "def": definite, "places": places}


# en base, en 3sg, fr infinitive, fr present (6 persons), objects, places
FR_VERBS = [
    ("eat", "eats", "manger", ["mange", "manges", "mange", "mangeons", "mangez", "mangent"],
     [O("an apple", "une pomme"), O("a sandwich", "un sandwich"),
      O("the bread", "le pain", True), O("the cake", "le gâteau", True),
      O("a pear", "une poire"), O("the soup", "la soupe", True),
      O("some cheese", "du fromage"), O("some rice", "du riz"),
      O("the fish", "le poisson", True)],
     ["kitchen", "garden", "restaurant", "cafe", "home", "park"]),
    ("drink", "drinks", "boire", ["bois", "bois", "boit", "buvons", "buvez", "boivent"],
     [O("a coffee", "un café"), O("the milk", "le lait", True),
      O("a glass of water", "un verre d'eau"), O("the tea", "le thé", True),
      O("some water", "de l'eau"), O("some orange juice", "du jus d'orange")],
     ["kitchen", "cafe", "restaurant", "home", "garden"]),
    ("read", "reads", "lire", ["lis", "lis", "lit", "lisons", "lisez", "lisent"],
     [O("a book", "un livre"), O("the newspaper", "le journal", True),
      O("a letter", "une lettre"), O("the menu", "la carte", True, ["restaurant", "cafe"]),
      O("a story", "une histoire"), O("the report", "le rapport", True)],
     ["library", "garden", "home", "train", "cafe", "park"]),
    ("write", "writes", "écrire", ["écris", "écris", "écrit", "écrivons", "écrivez", "écrivent"],
     [O("a letter", "une lettre"), O("a message", "un message"),
      O("the report", "le rapport", True), O("a poem", "un poème"),
      O("a postcard", "une carte postale")],
     ["office", "home", "library", "cafe", "kitchen"]),
    ("buy", "buys", "acheter", ["achète", "achètes", "achète", "achetons", "achetez", "achètent"],
     [O("the bread", "le pain", True, ["market", "town"]),
      O("some flowers", "des fleurs", False, ["market"]),
      O("a newspaper", "un journal", False, ["station", "town"]),
      O("a bicycle", "un vélo", False, ["town", "paris", "lyon"]),
      O("some apples", "des pommes", False, ["market"]),
      O("the tickets", "les billets", True, ["station"]),
      O("a present", "un cadeau", False, ["town", "paris"])],
     []),
    ("cook", "cooks", "préparer", ["prépare", "prépares", "prépare", "préparons", "préparez", "préparent"],
     [O("dinner", "le dîner", True), O("lunch", "le déjeuner", True),
      O("the soup", "la soupe", True), O("the vegetables", "les légumes", True),
      O("the fish", "le poisson", True), O("some rice", "du riz")],
     ["kitchen", "home"]),
    ("look for", "looks for", "chercher", ["cherche", "cherches", "cherche", "cherchons", "cherchez", "cherchent"],
     [O("the keys", "les clés", True, ["kitchen", "garden", "home"]),
      O("a hotel", "un hôtel", False, ["paris", "lyon"]),
      O("the station", "la gare", True), O("a job", "un travail", False, ["paris", "lyon"]),
      O("the cat", "le chat", True, ["garden", "kitchen"]),
      O("the museum", "le musée", True)],
     []),
    ("like", "likes", "aimer", ["aime", "aimes", "aime", "aimons", "aimez", "aiment"],
     [O("coffee", "le café", True), O("tea", "le thé", True),
      O("music", "la musique", True), O("chocolate", "le chocolat", True),
      O("football", "le football", True), O("cats", "les chats", True),
      O("books", "les livres", True), O("the sea", "la mer", True),
      O("the garden", "le jardin", True), O("summer", "l'été", True)],
     []),
    ("wait for", "waits for", "attendre", ["attends", "attends", "attend", "attendons", "attendez", "attendent"],
     [O("the bus", "le bus", True), O("the train", "le train", True),
      O("the doctor", "le médecin", True), O("a friend", "un ami"),
      O("the taxi", "le taxi", True), O("the teacher", "le professeur", True)],
     ["station", "school", "museum"]),
    ("watch", "watches", "regarder", ["regarde", "regardes", "regarde", "regardons", "regardez", "regardent"],
     [O("a film", "un film", False, ["home", "cinema"]),
      O("the television", "la télévision", True, ["home"]),
      O("the match", "le match", True, ["home", "cafe"]),
      O("the birds", "les oiseaux", True, ["garden", "park"]),
      O("the children", "les enfants", True, ["garden", "park"])],
     []),
    ("open", "opens", "ouvrir", ["ouvre", "ouvres", "ouvre", "ouvrons", "ouvrez", "ouvrent"],
     [O("the door", "la porte", True), O("the window", "la fenêtre", True),
      O("the box", "la boîte", True), O("a bottle", "une bouteille"),
      O("the shop", "le magasin", True), O("the gate", "le portail", True)],
     []),
    ("close", "closes", "fermer", ["ferme", "fermes", "ferme", "fermons", "fermez", "ferment"],
     [O("the door", "la porte", True), O("the window", "la fenêtre", True),
      O("the box", "la boîte", True), O("the shop", "le magasin", True),
      O("the gate", "le portail", True)],
     []),
    ("sell", "sells", "vendre", ["vends", "vends", "vend", "vendons", "vendez", "vendent"],
     [O("some flowers", "des fleurs", False, ["market"]),
      O("bread", "du pain", False, ["market"]),
      O("vegetables", "des légumes", False, ["market"]),
      O("the house", "la maison", True), O("the car", "la voiture", True),
      O("newspapers", "des journaux", False, ["station"])],
     []),
    ("take", "takes", "prendre", ["prends", "prends", "prend", "prenons", "prenez", "prennent"],
     [O("the train", "le train", True), O("the bus", "le bus", True),
      O("a taxi", "un taxi"), O("the keys", "les clés", True),
      O("an umbrella", "un parapluie"), O("a photo", "une photo")],
     []),
]
VOULOIR = ["veux", "veux", "veut", "voulons", "voulez", "veulent"]
AVOIR = ["ai", "as", "a", "avons", "avez", "ont"]
HABITER = ["habite", "habites", "habite", "habitons", "habitez", "habitent"]
FR_VOWELS = "aeiouéèêàâîôûh"


_ELISION = re.compile(r"\b([jJnN])e (?=[" + FR_VOWELS + "])")


def fr_join(subject_fr: str, rest: str) -> str:
    """Join and elide the words je/ne before a vowel or mute h (je aime -> j'aime)."""
    return _ELISION.sub(r"\1'", f"{subject_fr} {rest}")


def en_verb(subj, base, third):
    return third if subj[2] in EN_3SG else base


# adjective: en, fr (ms, fs, mp, fp)
FR_ADJ = {
    "big": ("big", ("grand", "grande", "grands", "grandes")),
    "small": ("small", ("petit", "petite", "petits", "petites")),
    "new": ("new", ("nouveau", "nouvelle", "nouveaux", "nouvelles")),
    "old": ("old", ("vieux", "vieille", "vieux", "vieilles")),
    "beautiful": ("beautiful", ("beau", "belle", "beaux", "belles")),
    "clean": ("clean", ("propre", "propre", "propres", "propres")),
    "dirty": ("dirty", ("sale", "sale", "sales", "sales")),
    "closed": ("closed", ("fermé", "fermée", "fermés", "fermées")),
    "open": ("open", ("ouvert", "ouverte", "ouverts", "ouvertes")),
    "empty": ("empty", ("vide", "vide", "vides", "vides")),
    "full": ("full", ("plein", "pleine", "pleins", "pleines")),
    "expensive": ("expensive", ("cher", "chère", "chers", "chères")),
    "quiet": ("quiet", ("calme", "calme", "calmes", "calmes")),
    "red": ("red", ("rouge", "rouge", "rouges", "rouges")),
    "blue": ("blue", ("bleu", "bleue", "bleus", "bleues")),
    "green": ("green", ("vert", "verte", "verts", "vertes")),
    "black": ("black", ("noir", "noire", "noirs", "noires")),
    "white": ("white", ("blanc", "blanche", "blancs", "blanches")),
    "grey": ("grey", ("gris", "grise", "gris", "grises")),
    "hot": ("hot", ("chaud", "chaude", "chauds", "chaudes")),
    "cold": ("cold", ("froid", "froide", "froids", "froides")),
    "long": ("long", ("long", "longue", "longs", "longues")),
    "narrow": ("narrow", ("étroit", "étroite", "étroits", "étroites")),
    "heavy": ("heavy", ("lourd", "lourde", "lourds", "lourdes")),
    "light": ("light", ("léger", "légère", "légers", "légères")),
    "comfortable": ("comfortable", ("confortable", "confortable", "confortables", "confortables")),
    "modern": ("modern", ("moderne", "moderne", "modernes", "modernes")),
    "busy": ("busy", ("animé", "animée", "animés", "animées")),
    "friendly": ("friendly", ("gentil", "gentille", "gentils", "gentilles")),
}
PRENOMINAL = {"big", "small", "new", "old", "beautiful"}


def fr_adj(key, gender, plural):
    return FR_ADJ[key][1][(2 if plural else 0) + (1 if gender == "f" else 0)]


# en sg, en pl, fr sg, fr pl, gender, adjectives for predicates
FR_NOUNS = {
    "house": ("house", "houses", "maison", "maisons", "f",
              ["big", "small", "new", "old", "beautiful", "clean", "quiet", "expensive", "white", "empty"]),
    "car": ("car", "cars", "voiture", "voitures", "f",
            ["new", "old", "red", "blue", "black", "white", "grey", "expensive", "dirty", "small"]),
    "garden": ("garden", "gardens", "jardin", "jardins", "m",
               ["big", "small", "beautiful", "quiet", "green"]),
    "room": ("room", "rooms", "chambre", "chambres", "f",
             ["big", "small", "clean", "dirty", "quiet", "empty", "cold", "comfortable"]),
    "museum": ("museum", "museums", "musée", "musées", "m",
               ["big", "new", "old", "closed", "open", "modern", "empty", "busy"]),
    "shop": ("shop", "shops", "magasin", "magasins", "m",
             ["small", "new", "closed", "open", "expensive", "empty", "busy"]),
    "street": ("street", "streets", "rue", "rues", "f",
               ["long", "narrow", "quiet", "busy", "clean", "dirty", "beautiful"]),
    "door": ("door", "doors", "porte", "portes", "f",
             ["open", "closed", "red", "green", "blue", "heavy", "old"]),
    "window": ("window", "windows", "fenêtre", "fenêtres", "f",
               ["open", "closed", "big", "small", "dirty", "clean"]),
    "restaurant": ("restaurant", "restaurants", "restaurant", "restaurants", "m",
                   ["closed", "open", "expensive", "full", "empty", "quiet", "busy"]),
    "bottle": ("bottle", "bottles", "bouteille", "bouteilles", "f",
               ["empty", "full", "heavy", "green", "cold"]),
    "soup": ("soup", "soups", "soupe", "soupes", "f", ["hot", "cold"]),
    "book": ("book", "books", "livre", "livres", "m",
             ["new", "old", "long", "heavy", "expensive", "red", "blue"]),
    "dress": ("dress", "dresses", "robe", "robes", "f",
              ["new", "long", "red", "blue", "black", "white", "beautiful", "expensive"]),
    "bag": ("bag", "bags", "sac", "sacs", "m",
            ["heavy", "light", "full", "empty", "black", "new", "big", "small"]),
    "city": ("city", "cities", "ville", "villes", "f",
             ["big", "old", "beautiful", "quiet", "busy", "modern", "clean"]),
    "beach": ("beach", "beaches", "plage", "plages", "f",
              ["beautiful", "long", "quiet", "empty", "busy", "clean"]),
    "road": ("road", "roads", "route", "routes", "f",
             ["long", "narrow", "quiet", "busy", "new", "old"]),
    "table": ("table", "tables", "table", "tables", "f",
              ["big", "small", "heavy", "clean", "dirty", "white", "old"]),
    "chair": ("chair", "chairs", "chaise", "chaises", "f",
              ["comfortable", "heavy", "light", "old", "new", "blue"]),
    "coat": ("coat", "coats", "manteau", "manteaux", "m",
             ["new", "old", "long", "heavy", "light", "black", "grey", "warm"]),
    "bicycle": ("bicycle", "bicycles", "vélo", "vélos", "m",
                ["new", "old", "red", "blue", "light", "heavy", "expensive"]),
    "dog": ("dog", "dogs", "chien", "chiens", "m",
            ["big", "small", "old", "friendly", "black", "white"]),
    "cat": ("cat", "cats", "chat", "chats", "m",
            ["small", "old", "friendly", "black", "white", "grey"]),
    "hat": ("hat", "hats", "chapeau", "chapeaux", "m",
            ["new", "old", "big", "small", "red", "black", "beautiful"]),
    "shirt": ("shirt", "shirts", "chemise", "chemises", "f",
              ["new", "clean", "dirty", "white", "blue", "green"]),
    "glass": ("glass", "glasses", "verre", "verres", "m", ["empty", "full", "clean", "dirty"]),
    "key": ("key", "keys", "clé", "clés", "f", ["small", "old", "heavy", "new"]),
    "letter": ("letter", "letters", "lettre", "lettres", "f", ["long", "old", "new"]),
    "bakery": ("bakery", "bakeries", "boulangerie", "boulangeries", "f", ["open", "closed", "small", "busy"]),
    "pharmacy": ("pharmacy", "pharmacies", "pharmacie", "pharmacies", "f", ["open", "closed", "small", "new"]),
}
FR_ADJ["warm"] = ("warm", ("chaud", "chaude", "chauds", "chaudes"))
FR_NUMBERS = ["", "", "deux", "trois", "quatre", "cinq", "six", "sept", "huit", "neuf", "dix"]
THERE_PLACES = {
    ("in the garden", "dans le jardin"): ["dog", "cat", "bicycle", "table", "chair"],
    ("in the kitchen", "dans la cuisine"): ["cat", "table", "chair", "bottle", "glass", "bag"],
    ("in the street", "dans la rue"): ["car", "dog", "bicycle", "shop", "bakery", "restaurant"],
    ("on the table", "sur la table"): ["book", "bottle", "glass", "key", "letter", "bag", "hat"],
    ("near the station", "près de la gare"): ["restaurant", "shop", "bakery", "pharmacy", "museum"],
    ("in front of the house", "devant la maison"): ["car", "bicycle", "dog", "cat"],
    ("in the room", "dans la chambre"): ["chair", "table", "bag", "book", "dress", "coat"],
}
HAVE_SUBJECTS = [s for s in FR_SUBJECTS if s[0] != "you"]
HAVE_ONE_SUBJECTS = [s for s in FR_SUBJECTS if s[2] in (0, 2)]  # "I", "he", "my sister" ...
COLOURS_EN = {"red", "blue", "green", "black", "white", "grey"}
HAVE_NOUNS = ["car", "bicycle", "house", "dog", "cat", "bag", "coat", "hat",
              "dress", "shirt", "garden", "book", "table"]
COUNT_NOUNS = [("cat", "cats", "chats"), ("dog", "dogs", "chiens"),
               ("book", "books", "livres"), ("bicycle", "bicycles", "vélos"),
               ("sister", "sisters", "sœurs"), ("brother", "brothers", "frères"),
               ("child", "children", "enfants"), ("ticket", "tickets", "billets"),
               ("key", "keys", "clés"), ("apple", "apples", "pommes"),
               ("friend", "friends", "amis"), ("room", "rooms", "chambres")]
WHERE = [("the station", "la gare", 0), ("the museum", "le musée", 0),
         ("the bank", "la banque", 0), ("the post office", "la poste", 0),
         ("the bakery", "la boulangerie", 0), ("the market", "le marché", 0),
         ("the keys", "les clés", 1), ("the children", "les enfants", 1),
         ("the toilets", "les toilettes", 1), ("my glasses", "mes lunettes", 1),
         ("the beach", "la plage", 0), ("the car", "la voiture", 0),
         ("the tickets", "les billets", 1), ("the hospital", "l'hôpital", 0),
         ("the pharmacy", "la pharmacie", 0), ("my bag", "mon sac", 0)]
CITIES_FR = [("Paris", "Paris"), ("Lyon", "Lyon"), ("London", "Londres"),
             ("Brussels", "Bruxelles"), ("Geneva", "Genève"), ("Marseille", "Marseille"),
             ("Montreal", "Montréal"), ("Rome", "Rome"), ("Lisbon", "Lisbonne")]


def tr_svo(r):
    en_b, en_3, _, conj, objs, places = r.choice(FR_VERBS)
    subj = r.choice(FR_SUBJECTS)
    obj = r.choice(objs)
    en = f"{subj[0]} {en_verb(subj, en_b, en_3)} {obj['en']}"
    fr = fr_join(subj[1], f"{conj[subj[2]]} {obj['fr']}")
    plist = obj["places"] if obj["places"] is not None else places
    if plist and r.random() < 0.7:
        pen, pfr = FR_PLACES[r.choice(plist)]
        en, fr = f"{en} {pen}", f"{fr} {pfr}"
    if r.random() < 0.35 and en_b != "like":
        ten, tfr = r.choice(FR_TIMES)
        en, fr = f"{en} {ten}", f"{fr} {tfr}"
    return en, fr


def tr_neg(r):
    en_b, _, _, conj, objs, _ = r.choice(FR_VERBS)
    subj = r.choice(FR_SUBJECTS)
    defs = [o for o in objs if o["def"]]
    obj = r.choice(defs)
    aux = "does not" if subj[2] in EN_3SG else "do not"
    en = f"{subj[0]} {aux} {en_b} {obj['en']}"
    fr = fr_join(subj[1], fr_join("ne", f"{conj[subj[2]]} pas {obj['fr']}"))
    return en, fr


def tr_want(r):
    en_b, _, inf, _, objs, places = r.choice([v for v in FR_VERBS if v[0] != "like"])
    subj = r.choice(FR_SUBJECTS)
    obj = r.choice(objs)
    want = "wants" if subj[2] in EN_3SG else "want"
    en = f"{subj[0]} {want} to {en_b} {obj['en']}"
    fr = fr_join(subj[1], f"{VOULOIR[subj[2]]} {inf} {obj['fr']}")
    plist = obj["places"] if obj["places"] is not None else places
    if plist and r.random() < 0.4:
        pen, pfr = FR_PLACES[r.choice(plist)]
        en, fr = f"{en} {pen}", f"{fr} {pfr}"
    return en, fr


def tr_adj(r):
    key = r.choice(list(FR_NOUNS))
    en_s, en_p, fr_s, fr_p, g, adjs = FR_NOUNS[key]
    a = r.choice(adjs)
    plural = r.random() < 0.35
    det = "les" if plural else ("la" if g == "f" else "le")
    fr_noun = f"{det} {fr_p if plural else fr_s}"
    en_noun = f"the {en_p if plural else en_s}"
    mode = r.choice(["plain", "plain", "very", "not"])
    if mode == "very" and a in COLOURS_EN:
        mode = "plain"
    adj_en, adj_fr = FR_ADJ[a][0], fr_adj(a, g, plural)
    be_en, be_fr = ("are", "sont") if plural else ("is", "est")
    if mode == "very":
        return f"{en_noun} {be_en} very {adj_en}", f"{fr_noun} {be_fr} très {adj_fr}"
    if mode == "not":
        return (f"{en_noun} {be_en} not {adj_en}",
                fr_join(fr_noun, fr_join("ne", f"{be_fr} pas {adj_fr}")))
    return f"{en_noun} {be_en} {adj_en}", f"{fr_noun} {be_fr} {adj_fr}"


def tr_there(r):
    (pen, pfr), nouns = r.choice(list(THERE_PLACES.items()))
    key = r.choice(nouns)
    en_s, en_p, fr_s, fr_p, g, _ = FR_NOUNS[key]
    n = r.choice([1, 1, 1, 2, 3, 4, 5])
    if n == 1:
        en = f"there is {with_article(en_s)} {pen}"
        fr = f"il y a {'une' if g == 'f' else 'un'} {fr_s} {pfr}"
    else:
        en = f"there are {NUMBER_WORDS[n]} {en_p} {pen}"
        fr = f"il y a {FR_NUMBERS[n]} {fr_p} {pfr}"
    return en, fr


def tr_have(r):
    subj = r.choice(HAVE_ONE_SUBJECTS)
    key = r.choice(HAVE_NOUNS)
    en_s, _, fr_s, _, g, adjs = FR_NOUNS[key]
    a = r.choice(adjs + ["big", "small", "new", "old", "beautiful"])
    if a not in FR_ADJ or (key == "garden" and a not in ("big", "small", "beautiful")):
        a = "new" if key != "garden" else "big"
    have = "has" if subj[2] in EN_3SG else "have"
    art = "une" if g == "f" else "un"
    adj_fr = fr_adj(a, g, False)
    np_fr = f"{art} {adj_fr} {fr_s}" if a in PRENOMINAL else f"{art} {fr_s} {adj_fr}"
    en = f"{subj[0]} {have} {with_article(FR_ADJ[a][0])} {en_s}"
    fr = fr_join(subj[1], f"{AVOIR[subj[2]]} {np_fr}")
    return en, fr


def tr_count(r):
    subj = r.choice(HAVE_SUBJECTS)
    _, en_p, fr_p = r.choice([c for c in COUNT_NOUNS if c[1] not in subj[0]])
    n = r.randint(2, 10)
    have = "has" if subj[2] in EN_3SG else "have"
    return (f"{subj[0]} {have} {NUMBER_WORDS[n]} {en_p}",
            fr_join(subj[1], f"{AVOIR[subj[2]]} {FR_NUMBERS[n]} {fr_p}"))


def tr_live(r):
    subj = r.choice(FR_SUBJECTS)
    cen, cfr = r.choice(CITIES_FR)
    live = "lives" if subj[2] in EN_3SG else "live"
    return f"{subj[0]} {live} in {cen}", fr_join(subj[1], f"{HABITER[subj[2]]} à {cfr}")


def tr_question(r):
    if r.random() < 0.5:
        en, fr, pl = r.choice(WHERE)
        return (f"where {'are' if pl else 'is'} {en}?",
                f"où {'sont' if pl else 'est'} {fr} ?")
    objs = FR_VERBS[7][4]  # "like"
    obj = r.choice(objs)
    return f"do you like {obj['en']}?", f"aimez-vous {obj['fr']} ?"


def make_translation() -> list[dict]:
    r = rng("translation")
    kinds = [(tr_svo, 120), (tr_neg, 40), (tr_want, 50), (tr_adj, 70),
             (tr_there, 40), (tr_have, 40), (tr_count, 20), (tr_live, 10),
             (tr_question, 20)]
    rows, seen = [], set()
    for fn, n in kinds:
        got = 0
        for _ in range(n * 50):
            if got == n:
                break
            en, fr = fn(r)
            en, fr = cap(en), cap(fr)
            if not en.endswith("?"):
                en, fr = en + ".", fr + "."
            if en in seen:
                continue
            seen.add(en)
            rows.append({"translation": {"en": en, "fr": fr}})
            got += 1
    r.shuffle(rows)
    return rows


# ---------------------------------------------------------------------------
# 6. French review-style sentiment sentences
# ---------------------------------------------------------------------------

# noun phrase, gender, plural
FR_REVIEW_NOUNS = [
    ("le film", "m", 0), ("la mise en scène", "f", 0), ("le scénario", "m", 0),
    ("l'histoire", "f", 0), ("la musique", "f", 0), ("la photographie", "f", 0),
    ("le jeu des acteurs", "m", 0), ("la fin", "f", 0), ("le rythme", "m", 0),
    ("les dialogues", "m", 1), ("les personnages", "m", 1),
    ("les effets spéciaux", "m", 1), ("la réalisation", "f", 0),
    ("le montage", "m", 0), ("les décors", "m", 1),
    ("la bande originale", "f", 0), ("ce film", "m", 0),
    ("cette comédie", "f", 0), ("ce thriller", "m", 0), ("ce drame", "m", 0),
    ("les scènes d'action", "f", 1), ("l'interprétation", "f", 0),
    ("le dernier film de ce réalisateur", "m", 0), ("les costumes", "m", 1),
]
FR_POS = [("excellent", "excellente", "excellents", "excellentes"),
          ("magnifique", "magnifique", "magnifiques", "magnifiques"),
          ("remarquable", "remarquable", "remarquables", "remarquables"),
          ("brillant", "brillante", "brillants", "brillantes"),
          ("superbe", "superbe", "superbes", "superbes"),
          ("réussi", "réussie", "réussis", "réussies"),
          ("captivant", "captivante", "captivants", "captivantes"),
          ("émouvant", "émouvante", "émouvants", "émouvantes"),
          ("original", "originale", "originaux", "originales"),
          ("impressionnant", "impressionnante", "impressionnants", "impressionnantes"),
          ("soigné", "soignée", "soignés", "soignées"),
          ("formidable", "formidable", "formidables", "formidables"),
          ("parfait", "parfaite", "parfaits", "parfaites"),
          ("lumineux", "lumineuse", "lumineux", "lumineuses"),
          ("passionnant", "passionnante", "passionnants", "passionnantes"),
          ("réjouissant", "réjouissante", "réjouissants", "réjouissantes")]
FR_NEG = [("ennuyeux", "ennuyeuse", "ennuyeux", "ennuyeuses"),
          ("médiocre", "médiocre", "médiocres", "médiocres"),
          ("décevant", "décevante", "décevants", "décevantes"),
          ("prévisible", "prévisible", "prévisibles", "prévisibles"),
          ("raté", "ratée", "ratés", "ratées"),
          ("plat", "plate", "plats", "plates"),
          ("fade", "fade", "fades", "fades"),
          ("maladroit", "maladroite", "maladroits", "maladroites"),
          ("confus", "confuse", "confus", "confuses"),
          ("lourd", "lourde", "lourds", "lourdes"),
          ("bâclé", "bâclée", "bâclés", "bâclées"),
          ("laborieux", "laborieuse", "laborieux", "laborieuses"),
          ("pénible", "pénible", "pénibles", "pénibles"),
          ("creux", "creuse", "creux", "creuses"),
          ("interminable", "interminable", "interminables", "interminables"),
          ("insipide", "insipide", "insipides", "insipides")]
FR_ADVS = ["", "", "très ", "vraiment ", "particulièrement ", "franchement ",
           "tout simplement "]
# Adjectives that do not take "très"/"particulièrement".
FR_EXTREME = {"excellent", "magnifique", "remarquable", "superbe", "parfait",
              "formidable", "raté", "interminable", "bâclé"}
FR_EXTREME_ADVS = ["", "", "vraiment ", "tout simplement ", "absolument "]


def fr_adv_adj(r: random.Random, adjs: list, gender: str, plural: int) -> str:
    a = r.choice(adjs)
    adv = r.choice(FR_EXTREME_ADVS if a[0] in FR_EXTREME else FR_ADVS)
    return adv + fr_form(a, gender, plural)
FR_GENRES = [("film", "m"), ("drame", "m"), ("thriller", "m"), ("polar", "m"),
             ("documentaire", "m"), ("film d'animation", "m"), ("western", "m"),
             ("comédie", "f"), ("histoire d'amour", "f"), ("comédie musicale", "f")]
FR_STOCK = {
    1: ["J'ai adoré ce film du début à la fin.", "À voir absolument !",
        "Un vrai bonheur.", "On ne s'ennuie pas une seconde.",
        "C'est l'un des meilleurs films de l'année.",
        "Je suis sorti de la salle avec le sourire.",
        "Une très belle surprise.", "J'ai ri et j'ai pleuré.",
        "Je le reverrai avec plaisir.", "Je le recommande vivement.",
        "La salle a applaudi à la fin.", "Un moment de pur plaisir."],
    0: ["J'ai détesté ce film du début à la fin.", "À éviter absolument.",
        "Une vraie déception.", "On s'ennuie du début à la fin.",
        "C'est l'un des pires films de l'année.",
        "Je suis sorti de la salle très déçu.", "Quel gâchis !",
        "J'ai failli partir avant la fin.", "Deux heures de perdues.",
        "Je ne le conseille à personne.", "La moitié de la salle s'est endormie.",
        "Je regrette le prix du billet."],
}
FR_MALGRE = {
    1: ["quelques longueurs", "un début un peu lent",
        "une fin un peu prévisible", "un budget modeste",
        "quelques maladresses"],
    0: ["de bons acteurs", "une belle photographie", "une musique réussie",
        "un sujet intéressant", "quelques scènes drôles"],
}
FR_ACTORS = [("Julien Moreau", "m"), ("Camille Durand", "f"),
             ("Léa Martin", "f"), ("Thomas Girard", "m"),
             ("Sophie Lambert", "f"), ("Nicolas Petit", "m"),
             ("Claire Fontaine", "f"), ("Hugo Bernard", "m"),
             ("Manon Leroy", "f"), ("Antoine Roux", "m"),
             ("Inès Garnier", "f"), ("Karim Benali", "m")]
FR_ACTOR_ADJ = {
    1: [("brillant", "brillante"), ("excellent", "excellente"),
        ("remarquable", "remarquable"), ("formidable", "formidable"),
        ("parfait", "parfaite"), ("émouvant", "émouvante"),
        ("lumineux", "lumineuse"), ("bouleversant", "bouleversante")],
    0: [("médiocre", "médiocre"), ("maladroit", "maladroite"),
        ("fade", "fade"), ("décevant", "décevante"),
        ("peu convaincant", "peu convaincante"), ("mauvais", "mauvaise")],
}


def fr_form(adj, gender, plural):
    return adj[(2 if plural else 0) + (1 if gender == "f" else 0)]


def fr_review(r: random.Random, label: int) -> str:
    good = FR_POS if label else FR_NEG
    bad = FR_NEG if label else FR_POS

    def be(n):
        return "sont" if n[2] else "est"

    t = r.randrange(10)
    if t in (0, 1):
        n = r.choice(FR_REVIEW_NOUNS)
        s = f"{n[0]} {be(n)} {fr_adv_adj(r, good, n[1], n[2])}."
    elif t == 2:
        n = r.choice(FR_REVIEW_NOUNS)
        a1, a2 = r.sample(good, 2)
        s = f"{n[0]} {be(n)} {fr_form(a1, n[1], n[2])} et {fr_form(a2, n[1], n[2])}."
    elif t == 3:
        n1, n2 = r.sample(FR_REVIEW_NOUNS, 2)
        s = (f"{n1[0]} {be(n1)} {fr_form(r.choice(bad), n1[1], n1[2])}, mais "
             f"{n2[0]} {be(n2)} {fr_form(r.choice(good), n2[1], n2[2])}.")
    elif t == 4:
        g, gen = r.choice(FR_GENRES)
        art = "une" if gen == "f" else "un"
        a = fr_form(r.choice(good), gen, 0)
        if r.random() < 0.5:
            end = "que je recommande à tout le monde" if label else "que je ne recommande à personne"
            s = f"{art} {g} {a} {end}."
        else:
            s = f"je n'ai jamais vu {art} {g} aussi {a}."
    elif t == 5:
        n = r.choice(FR_REVIEW_NOUNS)
        first = f"{cap(n[0])} {be(n)} {fr_adv_adj(r, good, n[1], n[2])}."
        s = f"{first} {r.choice(FR_STOCK[label])}" if r.random() < 0.7 else r.choice(FR_STOCK[label])
    elif t == 6:
        n = r.choice(FR_REVIEW_NOUNS)
        s = f"malgré {r.choice(FR_MALGRE[label])}, {n[0]} {be(n)} {fr_form(r.choice(good), n[1], n[2])}."
    elif t == 7:
        who = r.choice(["le réalisateur", "la réalisatrice", "le jeune cinéaste", "la cinéaste"])
        g, gen = r.choice(FR_GENRES)
        s = f"{who} signe {'une' if gen == 'f' else 'un'} {g} {fr_form(r.choice(good), gen, 0)}."
    elif t == 8:
        g, gen = r.choice(FR_GENRES)
        s = f"{'quelle' if gen == 'f' else 'quel'} {g} {fr_form(r.choice(good), gen, 0)} !"
    else:
        name, gen = r.choice(FR_ACTORS)
        a = r.choice(FR_ACTOR_ADJ[label])[1 if gen == "f" else 0]
        s = f"{name} est {a} dans le rôle principal."
    return cap(s)


def make_french() -> list[dict]:
    r = rng("french")
    rows, seen = [], set()
    for label in (1, 0):
        count = 0
        while count < 200:
            s = fr_review(r, label)
            if s not in seen:
                seen.add(s)
                rows.append({"sentence": s, "label": label})
                count += 1
    r.shuffle(rows)
    return rows


# ---------------------------------------------------------------------------
# 7. English LM corpus: the English text above, one sentence per line
# ---------------------------------------------------------------------------

def split_sentences(text: str) -> list[str]:
    out, cur = [], []
    for word in text.split(" "):
        cur.append(word)
        if word.endswith((".", "?", "!")) and word != "1.":
            out.append(" ".join(cur))
            cur = []
    if cur:
        out.append(" ".join(cur))
    return out


def make_lm_corpus(sst, conll, squad, summ, trans, n_lines=1500) -> list[str]:
    r = rng("lm")
    units: list[list[str]] = []
    for art in squad["data"]:
        for p in art["paragraphs"]:
            units.append(split_sentences(p["context"]))
    for row in summ:
        units.append(split_sentences(row["document"]))
    units += [[row["sentence"]] for row in sst]
    units += [[detokenize(row["tokens"])] for row in conll
              if len(row["tokens"]) > 8 and row["tokens"][-1] == "."]
    units += [[row["translation"]["en"]] for row in trans]
    r.shuffle(units)
    lines, seen = [], set()
    for unit in units:
        for s in unit:
            if s not in seen:
                seen.add(s)
                lines.append(s)
        if len(lines) >= n_lines:
            break
    return lines[:n_lines]


# ---------------------------------------------------------------------------

NER_LABELS = {"O"} | {f"{p}-{k}" for p in "BI" for k in ("PER", "LOC", "ORG", "MISC")}


def check(sst, conll, squad, summ, trans, french, lm) -> None:
    """Sanity checks on the generated data (run on every generation)."""
    for rows, n in ((sst, 300), (french, 200)):
        labels = [row["label"] for row in rows]
        assert labels.count(0) == labels.count(1) == n, "labels not balanced"
        assert len({row["sentence"] for row in rows}) == len(rows), "duplicates"
    for row in conll:
        toks, tags = row["tokens"], row["ner_tags"]
        assert len(toks) == len(tags) and all(t in NER_LABELS for t in tags)
        for i, t in enumerate(tags):  # IOB2: I-X only after B-X or I-X
            if t.startswith("I-"):
                assert i > 0 and tags[i - 1][2:] == t[2:], (toks, tags)
    for art in squad["data"]:
        for p in art["paragraphs"]:
            for qa in p["qas"]:
                for a in qa["answers"]:
                    start, text = a["answer_start"], a["text"]
                    assert p["context"][start:start + len(text)] == text
    for row in summ:
        assert 3 <= len(split_sentences(row["document"])) <= 6, row["document"]
        assert len(split_sentences(row["summary"])) == 1, row["summary"]
    for row in trans:
        en, fr = row["translation"]["en"], row["translation"]["fr"]
        assert en[-1] == fr[-1] and en[0].isupper() and fr[0].isupper()
        assert "  " not in en + fr
    assert len(set(lm)) == len(lm) and all(line.strip() == line and line for line in lm)


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=HERE, help="output folder (default: garden/tasks/data)")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)

    sst = make_sst2()
    conll = make_conll()
    squad = make_squad()
    summ = make_summaries()
    trans = make_translation()
    french = make_french()
    lm = make_lm_corpus(sst, conll, squad, summ, trans)
    check(sst, conll, squad, summ, trans, french, lm)

    out = lambda name: os.path.join(args.out, name)  # noqa: E731
    write_jsonl(out("sst2_like.jsonl"), sst)
    write_jsonl(out("conll_like.jsonl"), conll)
    with open(out("squad_like.json"), "w", encoding="utf-8", newline="\n") as f:
        json.dump(squad, f, ensure_ascii=False, indent=1)
        f.write("\n")
    write_jsonl(out("summaries.jsonl"), summ)
    write_jsonl(out("translation_en_fr.jsonl"), trans)
    write_jsonl(out("french_sentences.jsonl"), french)
    with open(out("lm_corpus.txt"), "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(lm) + "\n")

    n_q = sum(len(p["qas"]) for a in squad["data"] for p in a["paragraphs"])
    n_p = sum(len(a["paragraphs"]) for a in squad["data"])
    counts = {
        "sst2_like.jsonl": f"{len(sst)} sentences",
        "conll_like.jsonl": f"{len(conll)} sentences",
        "squad_like.json": f"{len(squad['data'])} articles, {n_p} paragraphs, {n_q} questions",
        "summaries.jsonl": f"{len(summ)} documents",
        "translation_en_fr.jsonl": f"{len(trans)} pairs",
        "french_sentences.jsonl": f"{len(french)} sentences",
        "lm_corpus.txt": f"{len(lm)} lines",
    }
    for name, what in counts.items():
        print(f"{name:26s} {what:45s} {os.path.getsize(out(name)):>8,d} bytes")


if __name__ == "__main__":
    main()
