#!/usr/bin/python3
"""A seeded synthetic world: the facts the default model learns and the knowledge it never sees.

Entities of four kinds (people, places, objects, organisations) each carry three facts drawn
from closed value sets or from other entities. Every entity belongs to one split:

  train     its facts appear in the training text (documents and questions): the model should
            hold them in its weights (the UltraMemV2 memory layers);
  practice  appears only as retrieved references in the Memory3 stage of training, never as
            training text: the model learns to *read* facts from explicit memories;
  held_out  appears nowhere in training, only in the knowledge corpus: answering about it
            needs the knowledge server.

Relations only point at `train` entities, so a held-out name never leaks into training text.
Everything is a pure function of the seed (random.Random, no global state).

    python3 tools/train/world.py --seed 14 --out DIR      # writes DIR/world.json, corpus, questions
"""

from __future__ import annotations

import argparse
import json
import os
import random
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

# ---------------------------------------------------------------------------------------------
# Value sets (every answer is one of these or an entity name)
# ---------------------------------------------------------------------------------------------

COLOURS = ["red", "blue", "green", "yellow", "purple", "orange", "black", "white", "grey", "brown",
           "pink", "teal", "silver", "gold", "crimson", "amber", "violet", "indigo"]
MATERIALS = ["oak", "iron", "glass", "copper", "stone", "bronze", "clay", "silk", "wool", "marble",
             "brass", "tin", "ivory", "pine", "leather", "steel", "slate", "jade"]
OBJECT_KINDS = ["lantern", "clock", "compass", "violin", "teapot", "telescope", "bell", "mirror",
                "chair", "kite", "drum", "map", "ring", "vase", "sword", "harp"]
JOBS = ["baker", "painter", "sailor", "farmer", "teacher", "doctor", "weaver", "miner", "poet",
        "builder", "singer", "tailor", "judge", "pilot", "gardener", "merchant", "potter", "scribe"]
FIELDS = ["shipping", "farming", "mining", "printing", "banking", "weaving", "brewing", "glassmaking",
          "medicine", "music", "clockmaking", "mapmaking", "baking", "masonry", "fishing", "trading"]
ANIMALS = ["fox", "owl", "heron", "wolf", "bear", "hare", "swan", "lynx", "crow", "otter", "stag",
           "eagle", "boar", "falcon", "badger", "seal"]
ORG_WORDS = ["Works", "Guild", "Company", "Society", "House", "Trust", "Union", "Foundry"]

ONSETS = ["b", "br", "c", "d", "dr", "f", "g", "gr", "h", "j", "k", "l", "m", "n", "p", "qu", "r",
          "s", "st", "t", "th", "tr", "v", "w", "z", "sh", "ch", "k", "l", "m"]
VOWELS = ["a", "e", "i", "o", "u", "ai", "ea", "io", "ou", "y"]
CODAS = ["", "", "n", "r", "l", "s", "th", "m", "x", "nd", "rt", "sk", "v"]

KINDS = ("person", "place", "object", "organisation")
COUNTS = {"person": 800, "place": 400, "object": 600, "organisation": 400}
SPLIT_SHARES = (("held_out", 0.1), ("practice", 0.1))   # the rest: train

# ---------------------------------------------------------------------------------------------
# Relations: how a fact is said (documents) and asked (questions)
# ---------------------------------------------------------------------------------------------

# kind -> list of (relation, value source); a value source is a list or an entity kind.
RELATIONS = {
    "person": [("born_in", "place"), ("job", JOBS), ("year", "year")],
    "place": [("animal", ANIMALS), ("founded", "year"), ("colour", COLOURS)],
    "object": [("colour", COLOURS), ("material", MATERIALS), ("maker", "organisation")],
    "organisation": [("city", "place"), ("field", FIELDS), ("founded", "year")],
}

# Sentences stating a fact: {e} the entity's name, {v} the value.
STATEMENTS = {
    ("person", "born_in"): ["{e} was born in {v}.", "{e} comes from {v}.", "The birthplace of {e} is {v}."],
    ("person", "job"): ["{e} works as a {v}.", "By trade {e} is a {v}.", "{e} earns a living as a {v}."],
    ("person", "year"): ["{e} was born in the year {v}.", "{e} came into the world in {v}.",
                         "The birth year of {e} is {v}."],
    ("place", "animal"): ["The emblem of {e} is a {v}.", "{e} has a {v} on its flag.",
                          "People in {e} honour the {v}."],
    ("place", "founded"): ["{e} was founded in {v}.", "The town of {e} dates from {v}.",
                           "{e} was first settled in {v}."],
    ("place", "colour"): ["The roofs of {e} are painted {v}.", "{e} is known for its {v} roofs.",
                          "Most houses in {e} have {v} roofs."],
    ("object", "colour"): ["{e} is {v}.", "The colour of {e} is {v}.", "{e} is painted {v}."],
    ("object", "material"): ["{e} is made of {v}.", "{e} was built from {v}.", "The material of {e} is {v}."],
    ("object", "maker"): ["{e} was made by {v}.", "{v} made {e}.", "The maker of {e} is {v}."],
    ("organisation", "city"): ["{e} is based in {v}.", "The home of {e} is {v}.", "{e} has its seat in {v}."],
    ("organisation", "field"): ["{e} works in {v}.", "The trade of {e} is {v}.", "{e} is known for {v}."],
    ("organisation", "founded"): ["{e} was founded in {v}.", "{e} opened its doors in {v}.",
                                  "{e} was established in {v}."],
}

QUESTIONS = {
    ("person", "born_in"): ["Where was {e} born?", "What is the birthplace of {e}?"],
    ("person", "job"): ["What does {e} do for a living?", "What is the job of {e}?"],
    ("person", "year"): ["In what year was {e} born?", "When was {e} born?"],
    ("place", "animal"): ["What animal is the emblem of {e}?", "Which animal is on the flag of {e}?"],
    ("place", "founded"): ["When was {e} founded?", "In what year was {e} founded?"],
    ("place", "colour"): ["What colour are the roofs of {e}?", "What colour are the roofs in {e}?"],
    ("object", "colour"): ["What colour is {e}?", "What is the colour of {e}?"],
    ("object", "material"): ["What is {e} made of?", "What material is {e} made of?"],
    ("object", "maker"): ["Who made {e}?", "Who is the maker of {e}?"],
    ("organisation", "city"): ["Where is {e} based?", "In which town is {e} based?"],
    ("organisation", "field"): ["What field does {e} work in?", "What is the trade of {e}?"],
    ("organisation", "founded"): ["When was {e} founded?", "In what year was {e} founded?"],
}

INTROS = {
    "person": ["{e} is a person.", "{e} is someone of note.", ""],
    "place": ["{e} is a town.", "{e} is a small town.", ""],
    "object": ["{e} is a famous {k}.", "{e} is an old {k}.", ""],
    "organisation": ["{e} is an organisation.", "{e} is a firm.", ""],
}


@dataclass
class Entity:
    id: int
    kind: str
    name: str
    split: str
    facts: Dict[str, str] = field(default_factory=dict)
    object_kind: str = ""  # objects only


def _word(rng: random.Random, syllables: int) -> str:
    while True:  # four letters at least, so that no name is an English word such as "The"
        w = "".join(rng.choice(ONSETS) + rng.choice(VOWELS) for _ in range(syllables)) + rng.choice(CODAS)
        if len(w) >= 4:
            return w.capitalize()


def _name(rng: random.Random, kind: str) -> Tuple[str, str]:
    if kind == "person":
        return _word(rng, rng.choice((1, 2))) + " " + _word(rng, 2), ""
    if kind == "place":
        return _word(rng, rng.choice((2, 3))), ""
    if kind == "object":
        k = rng.choice(OBJECT_KINDS)
        return "the " + _word(rng, 2) + " " + k, k
    return _word(rng, 2) + " " + rng.choice(ORG_WORDS), ""


class World:
    def __init__(self, seed: int):
        self.seed = seed
        rng = random.Random(seed)
        self.entities: List[Entity] = []
        used = set()
        for kind in KINDS:
            for _ in range(COUNTS[kind]):
                while True:
                    name, okind = _name(rng, kind)
                    # The distinctive word must be unique too, so that a name's rare word points
                    # at one entity (what lexical retrieval relies on).
                    key = name.lower().split()[{"person": -1, "place": 0, "object": 1, "organisation": 0}[kind]]
                    if name.lower() not in used and key not in used:
                        used.add(name.lower())
                        used.add(key)
                        break
                self.entities.append(Entity(len(self.entities), kind, name, "train", object_kind=okind))
        # Splits: a fixed share of every kind.
        for kind in KINDS:
            members = [e for e in self.entities if e.kind == kind]
            rng.shuffle(members)
            start = 0
            for split, share in SPLIT_SHARES:
                n = int(round(share * len(members)))
                for e in members[start:start + n]:
                    e.split = split
                start += n
        train_of = {k: [e for e in self.entities if e.kind == k and e.split == "train"] for k in KINDS}
        self._train_of = train_of
        self._names = {e.name.lower() for e in self.entities}
        for e in self.entities:
            for rel, source in RELATIONS[e.kind]:
                if source == "year":
                    v = str(rng.randint(1500, 1999))
                elif isinstance(source, str):
                    v = rng.choice(train_of[source]).name
                else:
                    v = rng.choice(source)
                e.facts[rel] = v

    def fresh(self, rng: random.Random, kind: Optional[str] = None) -> Entity:
        """A new entity that exists only in this call: a name no world entity has, facts drawn as
        the world's are. Questions about it can only be answered from its document, so training
        on them teaches reading explicit memories, not remembering (a fixed set of practice
        entities would simply be memorised). kind: of this kind (default: a random one)."""
        kind = kind or rng.choice(KINDS)
        while True:
            name, okind = _name(rng, kind)
            if name.lower() not in self._names:
                break
        e = Entity(-1, kind, name, "fresh", object_kind=okind)
        for rel, source in RELATIONS[kind]:
            if source == "year":
                e.facts[rel] = str(rng.randint(1500, 1999))
            elif isinstance(source, str):
                e.facts[rel] = rng.choice(self._train_of[source]).name
            else:
                e.facts[rel] = rng.choice(source)
        return e

    def split(self, name: str) -> List[Entity]:
        return [e for e in self.entities if e.split == name]

    # --- text -----------------------------------------------------------------------------

    @staticmethod
    def display(e: Entity, start: bool) -> str:
        return e.name[0].upper() + e.name[1:] if start else e.name

    def document(self, e: Entity, rng: random.Random) -> str:
        """One paragraph stating all of e's facts in a random wording and order."""
        parts = []
        intro = rng.choice(INTROS[e.kind])
        if intro:
            parts.append(intro.format(e=self.display(e, True), k=e.object_kind))
        rels = list(e.facts)
        rng.shuffle(rels)
        for rel in rels:
            t = rng.choice(STATEMENTS[(e.kind, rel)])
            s = t.format(e=e.name, v=e.facts[rel])
            parts.append(s[0].upper() + s[1:])
        return " ".join(parts)

    def fact_sentences(self, e: Entity, rng: random.Random) -> List[str]:
        """Each of e's facts as its own short sentence, in a random wording: the knowledge
        corpus's references. A Memory3 memory keeps 8 tokens per kv head of its reference (§3.3);
        a one-fact reference of about ten tokens keeps nearly all of them, where a paragraph of
        four facts keeps mostly the repeated name."""
        return [s for s, _, _ in self.fact_spans(e, rng)]

    def fact_spans(self, e: Entity, rng: random.Random) -> List[Tuple[str, int, int]]:
        """fact_sentences with where each sentence states its value: (sentence, start, end) in
        characters. Training uses the span to teach what a memory must keep (data.py)."""
        out = []
        for rel, v in e.facts.items():
            t = rng.choice(STATEMENTS[(e.kind, rel)])
            start = len(t[:t.index("{v}")].format(e=e.name))
            s = t.format(e=e.name, v=v)
            out.append((s[0].upper() + s[1:], start, start + len(v)))
        return out

    def questions(self, e: Entity) -> List[Tuple[str, str, str]]:
        """(relation, question, answer) for every fact, every wording."""
        out = []
        for rel, v in e.facts.items():
            for q in QUESTIONS[(e.kind, rel)]:
                s = q.format(e=e.name)
                out.append((rel, s[0].upper() + s[1:], v))
        return out

    def to_json(self) -> dict:
        return {"seed": self.seed, "entities": [e.__dict__ for e in self.entities]}


def write_outputs(world: World, out: str) -> None:
    os.makedirs(out, exist_ok=True)
    rng = random.Random(world.seed + 1)
    with open(os.path.join(out, "world.json"), "w") as f:
        json.dump(world.to_json(), f, indent=0)
    # The knowledge corpus: one JSONL document per entity (every split), titled with its name,
    # one paragraph per fact, so that mnemo-kb cuts one short reference per fact.
    with open(os.path.join(out, "knowledge.jsonl"), "w") as f:
        for e in world.entities:
            f.write(json.dumps({"id": f"e{e.id}", "title": e.name, "text": "\n\n".join(world.fact_sentences(e, rng)),
                                "metadata": {"kind": e.kind, "split": e.split}}) + "\n")
    # Evaluation questions: the first wording of every fact, per split (sets for mnemo eval).
    for split in ("train", "held_out", "practice"):
        with open(os.path.join(out, f"questions-{split}.jsonl"), "w") as f:
            for e in world.split(split):
                for rel, q, a in world.questions(e)[::2]:
                    f.write(json.dumps({"id": f"e{e.id}.{rel}", "set": split, "question": q, "answer": a}) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    w = World(a.seed)
    write_outputs(w, a.out)
    for s in ("train", "practice", "held_out"):
        print(f"{s}: {len(w.split(s))} entities")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
