#!/usr/bin/python3
"""Names of other makes than the world's (issue 27: a user's new knowledge names things any way).

The world's names are syllables of world.ONSETS / VOWELS / CODAS. Two other makes:

  foreign_name   the reading drill's (World.fresh(foreign=...), train.py --foreign-names):
                 syllables of a broader inventory (the world's and more), or letters at random,
                 in one to three words, so that copying a name does not depend on its make;
  english_name   the new_names evaluation set's only (world.write_new_names_set), never drawn
                 in training: given names, and towns of a stem and an ending English town names
                 have ("Ashthorpe", "Port Elsmire").

Pure functions of the random.Random they are given.
"""

from __future__ import annotations

import random
from typing import Sequence

# The world's syllables first (the same order as world.py's tables), then more.
BROAD_ONSETS = ["b", "br", "c", "d", "dr", "f", "g", "gr", "h", "j", "k", "l", "m", "n", "p", "qu", "r",
                "s", "st", "t", "th", "tr", "v", "w", "z", "sh", "ch", "k", "l", "m",
                "bl", "cl", "cr", "fl", "fr", "gl", "pl", "pr", "sc", "sk", "sl", "sm", "sn", "sp",
                "str", "sw", "tw", "wh", "wr", "y", "x", "ph", "gh", "kn", "ts", ""]
BROAD_VOWELS = ["a", "e", "i", "o", "u", "ai", "ea", "io", "ou", "y",
                "ee", "oo", "ie", "oa", "au", "ei", "ua", "ae", "eo", "ia", "oe", "ui"]
BROAD_CODAS = ["", "", "n", "r", "l", "s", "th", "m", "x", "nd", "rt", "sk", "v",
               "ll", "ss", "ck", "ng", "rd", "st", "sh", "ft", "lk", "mp", "nt", "ps", "rk", "tz",
               "ch", "ght", "ne", "re", "le", "te"]
LETTERS = "abcdefghijklmnopqrstuvwxyz"

EVAL_GIVEN = ["Alice", "Edmund", "Harriet", "Walter", "Agnes", "Rupert", "Edith", "Oswald", "Mabel",
              "Percival", "Winifred", "Ambrose", "Beatrix", "Cuthbert", "Dorothy", "Godfrey", "Imogen",
              "Leopold", "Matilda", "Reginald", "Philippa", "Barnaby", "Rosalind", "Tobias"]
EVAL_STEMS = ["Ash", "Bram", "Carl", "Dun", "Elm", "Fen", "Glen", "Har", "Kel", "Lang", "Mar", "Nor",
              "Oak", "Pem", "Ravens", "Stan", "Thorn", "Wel", "Whit", "Alder", "Bex", "Chel", "Dor",
              "Elles", "Fal", "Gris", "Hol", "Kings", "Lud", "Mel", "Pad", "Rother", "Shel", "Tam",
              "Ven", "Wim", "Yar", "Bright", "Cold", "Wood", "Stock", "Marl", "Crow", "Hay", "Sand"]
EVAL_MIDDLES = ["", "", "", "in", "er", "ley", "ing", "mer", "en"]
EVAL_ENDINGS = ["thorpe", "mire", "ford", "wick", "bury", "ham", "stead", "holm", "by", "ton",
                "field", "more", "dale", "worth", "combe", "minster", "mouth", "bridge", "haven",
                "borough", "shaw", "hurst", "well", "gate"]
EVAL_PREFIXES = ["Port", "Saint", "Upper", "Lower", "New", "Old", "Lake", "Mount", "North", "South",
                 "Great", "Little", "Fort", "East", "West"]


def foreign_word(rng: random.Random) -> str:
    if rng.random() < 0.3:
        return "".join(rng.choice(LETTERS) for _ in range(rng.randint(3, 7))).capitalize()
    syllables = rng.choice((1, 2, 2, 3))
    return ("".join(rng.choice(BROAD_ONSETS) + rng.choice(BROAD_VOWELS) for _ in range(syllables))
            + rng.choice(BROAD_CODAS)).capitalize()


def foreign_name(rng: random.Random, kind: str, object_kind: str, org_words: Sequence[str]) -> str:
    """A name of `kind` ("person", "place", "object" of object_kind, "organisation" ending in one
    of org_words) made of foreign_word's words."""
    def words(*counts: int) -> str:
        return " ".join(foreign_word(rng) for _ in range(rng.choice(counts)))
    if kind == "person":
        return words(2, 2, 3)
    if kind == "place":
        return words(1, 1, 1, 2)
    if kind == "object":
        return "the " + words(1, 1, 2) + " " + object_kind
    return words(1, 1, 2) + " " + rng.choice(org_words)


def english_word(rng: random.Random) -> str:
    return rng.choice(EVAL_STEMS) + rng.choice(EVAL_MIDDLES) + rng.choice(EVAL_ENDINGS)


def english_name(rng: random.Random, kind: str, object_kind: str, org_words: Sequence[str]) -> str:
    """A name of `kind` of English make (as foreign_name)."""
    if kind == "person":
        return rng.choice(EVAL_GIVEN) + " " + english_word(rng)
    if kind == "place":
        w = english_word(rng)
        return rng.choice(EVAL_PREFIXES) + " " + w if rng.random() < 0.3 else w
    if kind == "object":
        return "the " + english_word(rng) + " " + object_kind
    return english_word(rng) + " " + rng.choice(org_words)
