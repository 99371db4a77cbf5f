"""German sentences for the synthetic corpus (`scripts/prepare_dataset.sh --synthetic --voice de`): templates and
slots as the English ones in synthetic_corpus.py, which fills them.

Numbers stay digits ("23 Bücher", "1995", "2,5 Kilometer") in both the written and the spoken text: eSpeak NG reads
them in German when it speaks the corpus, and the phoneme front-end (`--text-cleaners espeak_ipa --language de`)
reads the written text with the same eSpeak, so audio and phonemes say the same thing. There are no abbreviations
and no ordinals ("3." would end a clause). The grammar is kept simple on purpose: nouns are feminine or neuter (their
nominative and accusative are the same), people appear only as subjects.
"""
from __future__ import annotations

import random


def _same(text: str) -> tuple[str, str]:
    return text, text


_FIRST_NAMES = ["Anna", "Bernd", "Clara", "Dieter", "Emma", "Felix", "Greta", "Hans", "Ines", "Jonas", "Karla",
                "Lukas", "Marie", "Nina", "Otto", "Paula", "Rolf", "Sophie", "Tobias", "Ute", "Werner", "Lena"]
_SURNAMES = ["Müller", "Schmidt", "Schneider", "Fischer", "Weber", "Meyer", "Wagner", "Becker", "Schulz", "Hoffmann",
             "Schäfer", "Koch", "Bauer", "Richter", "Klein", "Wolf", "Schröder", "Neumann", "Schwarz", "Zimmermann",
             "Braun", "Krüger", "Hartmann", "Lange"]
_CITIES = ["Köln", "München", "Hamburg", "Berlin", "Dresden", "Bremen", "Leipzig", "Nürnberg", "Stuttgart", "Kassel",
           "Freiburg", "Lübeck", "Potsdam", "Würzburg"]
_WEEKDAYS = ["Montag", "Dienstag", "Mittwoch", "Donnerstag", "Freitag", "Samstag", "Sonntag"]
# Feminine and neuter nouns with their definite article: the same in the nominative and the accusative.
_THING = [("die", "Lampe"), ("das", "Buch"), ("die", "Tasche"), ("das", "Fenster"), ("die", "Brücke"),
          ("das", "Schiff"), ("die", "Uhr"), ("das", "Bild"), ("die", "Karte"), ("das", "Fahrrad"),
          ("die", "Flasche"), ("das", "Haus"), ("die", "Kerze"), ("das", "Boot"), ("die", "Tür"), ("das", "Glas")]
_THINGS = ["Bücher", "Stühle", "Briefe", "Kisten", "Äpfel", "Fahrkarten", "Lampen", "Mäntel", "Karten", "Flaschen",
           "Steine", "Kerzen", "Körbe", "Pferde", "Fenster"]
# (predicative, attributive after a definite article): "ist alt", "die alte Lampe"; the plural adds "n".
_ADJECTIVES = [("alt", "alte"), ("klein", "kleine"), ("schwer", "schwere"), ("hell", "helle"),
               ("kaputt", "kaputte"), ("berühmt", "berühmte"), ("schmal", "schmale"), ("grün", "grüne"),
               ("seltsam", "seltsame"), ("warm", "warme"), ("schön", "schöne"), ("neu", "neue"),
               ("dunkel", "dunkle"), ("teuer", "teure"), ("leer", "leere")]
_PARTICIPLES = ["gefunden", "verkauft", "gemalt", "getragen", "geöffnet", "repariert", "gezählt", "bewegt",
                "beschrieben", "gekauft", "bemerkt", "geputzt"]
_ADVERBS = ["langsam", "leise", "schnell", "vorsichtig", "früh", "spät", "wieder", "zweimal"]


def _person(rng: random.Random) -> tuple[str, str]:
    surname = rng.choice(_SURNAMES)
    if rng.random() < 0.5:
        return _same(f"{rng.choice(['Frau', 'Herr'])} {surname}")
    return _same(f"{rng.choice(_FIRST_NAMES)} {surname}")


def _the_thing(rng: random.Random) -> tuple[str, str]:
    article, noun = rng.choice(_THING)
    return _same(f"{article} {noun}")


def _the_adjective_thing(rng: random.Random) -> tuple[str, str]:
    article, noun = rng.choice(_THING)
    return _same(f"{article} {rng.choice(_ADJECTIVES)[1]} {noun}")


def _count(rng: random.Random) -> tuple[str, str]:
    return _same(str(rng.choice([rng.randint(2, 19), rng.randint(20, 99), rng.randint(100, 999)])))


def _distance(rng: random.Random) -> tuple[str, str]:
    if rng.random() < 0.5:
        return _same(str(rng.randint(2, 40)))
    return _same(f"{rng.randint(1, 20)},{rng.randint(1, 9)}")  # the German decimal comma


SLOTS = {
    "person": _person,
    "name": lambda rng: _same(rng.choice(_FIRST_NAMES)),
    "city": lambda rng: _same(rng.choice(_CITIES)),
    "weekday": lambda rng: _same(rng.choice(_WEEKDAYS)),
    "the_thing": _the_thing,
    "the_adj_thing": _the_adjective_thing,
    "things": lambda rng: _same(rng.choice(_THINGS)),
    "adj_things": lambda rng: _same(f"{rng.choice(_ADJECTIVES)[1]}n {rng.choice(_THINGS)}"),
    "adj": lambda rng: _same(rng.choice(_ADJECTIVES)[0]),
    "participle": lambda rng: _same(rng.choice(_PARTICIPLES)),
    "adverb": lambda rng: _same(rng.choice(_ADVERBS)),
    "count": _count,
    "year": lambda rng: _same(str(rng.randint(1910, 2024))),
    "euros": lambda rng: _same(str(rng.choice([rng.randint(2, 20), rng.randint(21, 99)]))),
    "hour": lambda rng: _same(str(rng.randint(1, 12))),
    "distance": _distance,
}

# Statements, questions and exclamations of roughly 4 to 14 words.
TEMPLATES = [
    "{person} hat in {city} {count} {things} {participle}.",
    "{person} hat {euros} Euro für {the_adj_thing} bezahlt.",
    "{the_adj_thing} wurde {year} gebaut.",
    "Wir sind am {weekday} aus {city} abgefahren.",
    "Hat {person} wirklich {euros} Euro für {the_thing} bezahlt?",
    "Wie viele {things} hat {name} in {city} gefunden?",
    "Wie {adj} {the_thing} ist!",
    "Es hat {count} Tage lang geregnet.",
    "{name} ist {distance} Kilometer nach {city} gelaufen und hat sich dann ausgeruht.",
    "Ist {the_thing} wirklich {distance} Meter lang?",
    "Das Treffen ist am {weekday} um {hour} Uhr in {city}.",
    "{person} wurde {year} in {city} geboren.",
    "Bitte bring {count} {things} und {the_adj_thing} mit.",
    "Warum hat {person} {the_thing} für {euros} Euro verkauft?",
    "Schau dir {the_adj_thing} an!",
    "{the_thing} kostet leider {euros} Euro.",
    "Im Jahr {year} hat {person} {the_adj_thing} {participle}.",
    "Sie hat {the_thing} {adverb} {participle}.",
    "Sie haben vor Mittag {count} {things} gezählt.",
    "Wo hast du {the_adj_thing} hingelegt?",
    "{name} sagte, {the_thing} sei {adj}, aber niemand hörte zu.",
    "Der Zug aus {city} hatte {count} Minuten Verspätung.",
    "Die Straße ist {distance} Kilometer lang; wir sind sie {adverb} gegangen.",
    "Wer hat {the_thing} im Jahr {year} {participle}?",
    "{person} hat nicht mit {count} {things} gerechnet.",
    "Es kostet nur {euros} Euro, also kauf {the_thing}.",
    "Die {adj_things} kamen {adverb} aus {city}.",
    "Toll, {count} {things} an einem Tag!",
    "Am {weekday} war {the_thing} noch {adj}, und heute?",
    "{name} fährt am {weekday} mit dem Fahrrad nach {city}.",
]
