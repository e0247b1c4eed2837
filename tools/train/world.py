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

  novel     made after the others (their own random stream, so the base world is unchanged): like
            held_out, but their relations, and those of held_out entities, point at held_out or
            novel entities, so their answers are names training never produced; the set that
            measures reading rather than choosing from known names (issue 27).

Relations of train and practice entities only point at `train` entities, so a held-out name never
leaks into training text. Everything is a pure function of the seed (random.Random, no global
state).

    python3 tools/train/world.py --seed 14 --out DIR      # writes DIR/world.json, corpus, questions
"""

from __future__ import annotations

import argparse
import json
import os
import random
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

from other_names import english_name, foreign_name

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
NOVEL_COUNTS = {"person": 200, "place": 100, "object": 150, "organisation": 150}
UNSEEN_SPLITS = ("held_out", "novel")   # never in training text: answered from the knowledge server

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

# The first two wordings of each relation are the base recipe's (stages 1-4 and the tokenizer's
# text); the dialogue stage also trains on MORE_QUESTIONS; HELD_OUT_QUESTIONS never reach training
# (the held-out wordings evaluation).
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

MORE_QUESTIONS = {
    ("person", "born_in"): ["In which town was {e} born?", "Which town is {e} from?"],
    ("person", "job"): ["What work does {e} do?", "What is {e} by trade?"],
    ("person", "year"): ["What year was {e} born in?", "What is the birth year of {e}?"],
    ("place", "animal"): ["What is the emblem of {e}?", "Which animal does {e} honour?"],
    ("place", "founded"): ["What year was {e} founded?", "When was {e} first settled?"],
    ("place", "colour"): ["What colour are the houses in {e}?", "Which colour are the roofs of {e}?"],
    ("object", "colour"): ["Which colour is {e}?", "What colour was {e} painted?"],
    ("object", "material"): ["What was {e} built from?", "What is the material of {e}?"],
    ("object", "maker"): ["Who built {e}?", "Which firm made {e}?"],
    ("organisation", "city"): ["Where does {e} have its seat?", "What is the home town of {e}?"],
    ("organisation", "field"): ["What does {e} do?", "Which trade is {e} in?"],
    ("organisation", "founded"): ["When did {e} open?", "What year was {e} established?"],
}

# More forms for the "wide" stage (questions, requests, indirect questions), each relation
# several ways; none uses the verb "tell" nor any held-out wording, so HELD_OUT_QUESTIONS stay a
# test of paraphrases never seen.
WIDE_QUESTIONS = {
    ("person", "born_in"): ["Name the town where {e} was born.", "Do you know where {e} was born?",
                            "I would like to know the birthplace of {e}.", "{e} was born where?"],
    ("person", "job"): ["Name the job of {e}.", "Do you know what {e} does for a living?",
                        "I would like to know the trade of {e}.", "What is the occupation of {e}?"],
    ("person", "year"): ["Name the year of birth of {e}.", "Do you know when {e} was born?",
                         "I would like to know the birth year of {e}.", "{e} was born in which year?"],
    ("place", "animal"): ["Name the animal on the emblem of {e}.", "Do you know the emblem of {e}?",
                          "I would like to know which animal stands for {e}.", "What beast is the emblem of {e}?"],
    ("place", "founded"): ["Name the year {e} was founded.", "Do you know when {e} was founded?",
                           "I would like to know when {e} was founded.", "{e} was founded in which year?"],
    ("place", "colour"): ["Name the colour of the roofs of {e}.", "Do you know the colour of the roofs in {e}?",
                          "I would like to know the roof colour of {e}.", "What is the roof colour in {e}?"],
    ("object", "colour"): ["Name the colour of {e}.", "Do you know the colour of {e}?",
                           "I would like to know the colour of {e}.", "{e} is what colour?"],
    ("object", "material"): ["Name the material of {e}.", "Do you know what {e} is made of?",
                             "I would like to know what {e} was made from.", "{e} is made of what?"],
    ("object", "maker"): ["Name the maker of {e}.", "Do you know who made {e}?",
                          "I would like to know who built {e}.", "Which maker produced {e}?"],
    ("organisation", "city"): ["Name the town where {e} is based.", "Do you know where {e} is based?",
                               "I would like to know the home town of {e}.", "In what town does {e} sit?"],
    ("organisation", "field"): ["Name the trade of {e}.", "Do you know what field {e} works in?",
                                "I would like to know the line of business of {e}.", "What business is {e} in?"],
    ("organisation", "founded"): ["Name the year {e} was founded.", "Do you know when {e} was founded?",
                                  "I would like to know when {e} was established.", "{e} was founded in which year?"],
}

HELD_OUT_QUESTIONS = {
    ("person", "born_in"): ["Where does {e} come from?", "Tell me where {e} was born."],
    ("person", "job"): ["What kind of work does {e} do?", "How does {e} earn a living?"],
    ("person", "year"): ["Which year was {e} born in?", "Tell me the year {e} was born."],
    ("place", "animal"): ["Which animal is the emblem of {e}?", "What animal do the people of {e} honour?"],
    ("place", "founded"): ["How old is {e}: when was it founded?", "Tell me when {e} was founded."],
    ("place", "colour"): ["What colour do the roofs of {e} have?", "Tell me the colour of the roofs in {e}."],
    ("object", "colour"): ["Tell me the colour of {e}.", "What colour does {e} have?"],
    ("object", "material"): ["Tell me what {e} is made of.", "From what material was {e} made?"],
    ("object", "maker"): ["Tell me who made {e}.", "Who was {e} made by?"],
    ("organisation", "city"): ["Tell me where {e} is based.", "Where is the seat of {e}?"],
    ("organisation", "field"): ["Tell me the trade of {e}.", "What line of work is {e} in?"],
    ("organisation", "founded"): ["Tell me when {e} was founded.", "Which year was {e} established in?"],
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


def _draw_value(rng: random.Random, source, entity_name: Callable[[str], str]) -> str:
    """A value of a relation whose values come from `source` (RELATIONS): a year, an entity's name
    (entity_name(kind): whom a relation may name is the caller's choice), or one of a closed set."""
    if source == "year":
        return str(rng.randint(1500, 1999))
    if isinstance(source, str):
        return entity_name(source)
    return rng.choice(source)


def _name(rng: random.Random, kind: str) -> Tuple[str, str]:
    if kind == "person":
        return _word(rng, rng.choice((1, 2))) + " " + _word(rng, 2), ""
    if kind == "place":
        return _word(rng, rng.choice((2, 3))), ""
    if kind == "object":
        k = rng.choice(OBJECT_KINDS)
        return "the " + _word(rng, 2) + " " + k, k
    return _word(rng, 2) + " " + rng.choice(ORG_WORDS), ""


def _unique_name(rng: random.Random, kind: str, used: set) -> Tuple[str, str]:
    """A name (and object kind) no entity has yet, recorded in `used`. The distinctive word must be
    unique too, so that a name's rare word points at one entity (what lexical retrieval relies on)."""
    while True:
        name, okind = _name(rng, kind)
        key = name.lower().split()[{"person": -1, "place": 0, "object": 1, "organisation": 0}[kind]]
        if name.lower() not in used and key not in used:
            used.add(name.lower())
            used.add(key)
            return name, okind


class World:
    def __init__(self, seed: int):
        self.seed = seed
        rng = random.Random(seed)
        self.entities: List[Entity] = []
        used = set()
        for kind in KINDS:
            for _ in range(COUNTS[kind]):
                name, okind = _unique_name(rng, kind, used)
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
        self._reserved: set = set()
        for e in self.entities:
            for rel, source in RELATIONS[e.kind]:
                e.facts[rel] = _draw_value(rng, source, lambda k: rng.choice(train_of[k]).name)
        self._add_novel(random.Random(seed * 1000 + 27), used)
        # Every value a training text can state: the closed sets, years, training entities' names.
        self.known_values = {e.name for e in self.entities if e.split == "train"} | \
            {v for src in RELATIONS.values() for _, s in src if isinstance(s, list) for v in s} | \
            {str(y) for y in range(1500, 2000)}

    def _add_novel(self, rng: random.Random, used: set) -> None:
        """The novel split, from its own random stream after the base world (whose entities,
        facts and random draws stay what stages 1-4 of the recipe trained on), and the held-out
        entities' relations re-pointed at held-out or novel entities: names never seen in
        training, which can only be answered by copying them from a reference."""
        start = len(self.entities)
        for kind in KINDS:
            for _ in range(NOVEL_COUNTS[kind]):
                name, okind = _unique_name(rng, kind, used)
                self.entities.append(Entity(len(self.entities), kind, name, "novel", object_kind=okind))
        unseen_of = {k: [e for e in self.entities if e.kind == k and e.split in UNSEEN_SPLITS] for k in KINDS}
        for e in self.entities:
            if e.split not in UNSEEN_SPLITS:
                continue
            for rel, source in RELATIONS[e.kind]:
                if e.id >= start and source == "year":
                    e.facts[rel] = str(rng.randint(1500, 1999))
                elif e.id >= start and isinstance(source, list):
                    e.facts[rel] = rng.choice(source)
                elif isinstance(source, str) and source != "year":
                    e.facts[rel] = rng.choice([d for d in unseen_of[source] if d.id != e.id]).name
        self._reserved = {e.name.lower() for e in self.entities[start:]}

    def fresh(self, rng: random.Random, kind: Optional[str] = None, new_names: float = 0.0,
              foreign: float = 0.0) -> Entity:
        """A new entity that exists only in this call: a name no world entity has, facts drawn as
        the world's are. Questions about it can only be answered from its document, so training
        on them teaches reading explicit memories, not remembering (a fixed set of practice
        entities would simply be memorised). kind: of this kind (default: a random one).
        new_names: the share of its entity-valued facts that name another made-up entity instead
        of a training one: answers the model has never produced, copied from the reference or
        not at all (the dialogue stage; the base recipe uses 0, which draws as it always did).
        foreign: the share of made-up names (its own, and those new_names makes) of another make
        than the world's (other_names.foreign_name; 0 draws as before)."""
        kind = kind or rng.choice(KINDS)
        while True:
            name, okind = _name(rng, kind)
            if foreign > 0 and rng.random() < foreign:
                name = foreign_name(rng, kind, okind, ORG_WORDS)
            if name.lower() not in self._names and name.lower() not in self._reserved:
                break
        e = Entity(-1, kind, name, "fresh", object_kind=okind)

        def entity_name(k: str) -> str:
            if new_names > 0 and rng.random() < new_names:
                return self.fresh(rng, k, foreign=foreign).name
            return rng.choice(self._train_of[k]).name
        for rel, source in RELATIONS[kind]:
            e.facts[rel] = _draw_value(rng, source, entity_name)
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

    def questions(self, e: Entity, wordings: str = "base") -> List[Tuple[str, str, str]]:
        """(relation, question, answer) for every fact, every wording of the set: "base" (the
        first recipe's two), "train" (those and MORE_QUESTIONS), "wide" (and WIDE_QUESTIONS) or
        "held_out" (never trained)."""
        table = {"base": QUESTIONS, "held_out": HELD_OUT_QUESTIONS,
                 "train": {k: QUESTIONS[k] + MORE_QUESTIONS[k] for k in QUESTIONS},
                 "wide": {k: QUESTIONS[k] + MORE_QUESTIONS[k] + WIDE_QUESTIONS[k] for k in QUESTIONS}}[wordings]
        out = []
        for rel, v in e.facts.items():
            for q in table[(e.kind, rel)]:
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
    write_reading_sets(world, out, random.Random(world.seed + 3))
    write_new_names_set(world, out, random.Random(world.seed + 4))


def _item(e: Entity, rel: str, q: str, a: str, set_name: str, **extra) -> str:
    return json.dumps({"id": f"e{e.id}.{rel}", "set": set_name, "question": q, "answer": a, **extra}) + "\n"


def write_reading_sets(world: World, out: str, rng: random.Random) -> None:
    """The sets that measure reading (issue 27), all about entities training never saw:
    unseen_names   every entity-valued fact of held_out and novel entities: the answer is a name
                   training never produced (first wording);
    held_out_wordings  every fact of held_out entities in a wording kept out of training;
    follow_up      conversations of five questions about different held_out entities, an item per
                   turn with the turns before it as "history" (their right answers): turn 1 is a
                   first question, turns 2-5 are follow-ups;
    corrected      replacement documents (corrections.jsonl, the same ids, every fact changed) for
                   a third of the unseen entities, and questions whose answer is the new value."""
    unseen = [e for e in world.entities if e.split in UNSEEN_SPLITS]
    held = world.split("held_out")
    with open(os.path.join(out, "questions-unseen_names.jsonl"), "w") as f:
        for e in unseen:
            for rel, source in RELATIONS[e.kind]:
                if isinstance(source, str) and source != "year":
                    q = [x for r, x, _ in world.questions(e) if r == rel][0]
                    f.write(_item(e, rel, q, e.facts[rel], "unseen_names"))
    with open(os.path.join(out, "questions-held_out_wordings.jsonl"), "w") as f:
        for i, e in enumerate(held):
            for j, (rel, q, a) in enumerate(world.questions(e, "held_out")[(i % 2)::2]):
                f.write(_item(e, rel, q, a, "held_out_wordings"))
    with open(os.path.join(out, "questions-follow_up.jsonl"), "w") as f:
        order = held[:]
        for c in range(160):
            if c % (len(order) // 5) == 0:
                rng.shuffle(order)
            people = order[(c % (len(order) // 5)) * 5:][:5]
            history = []
            for turn, e in enumerate(people):
                rel, q, a = rng.choice(world.questions(e)[::2])
                f.write(_item(e, rel, q, a, "follow_up", turn=turn + 1, history=list(history))
                        .replace(f'"id": "e{e.id}.{rel}"', f'"id": "c{c}.t{turn + 1}.e{e.id}.{rel}"'))
                history.append({"question": q, "answer": a})
    chosen = rng.sample(unseen, 170)
    unseen_of = {k: [e for e in unseen if e.kind == k] for k in KINDS}
    with open(os.path.join(out, "corrections.jsonl"), "w") as fc, \
            open(os.path.join(out, "questions-corrected.jsonl"), "w") as fq:
        for e in sorted(chosen, key=lambda x: x.id):
            new = Entity(e.id, e.kind, e.name, e.split, dict(e.facts), e.object_kind)
            for rel, source in RELATIONS[e.kind]:
                while new.facts[rel] == e.facts[rel]:
                    new.facts[rel] = _draw_value(rng, source,
                                                 lambda k: rng.choice([d for d in unseen_of[k] if d.id != e.id]).name)
            fc.write(json.dumps({"id": f"e{e.id}", "title": e.name, "text": "\n\n".join(world.fact_sentences(new, rng)),
                                 "metadata": {"kind": e.kind, "split": e.split, "corrected": True}}) + "\n")
            for rel, q, a in world.questions(new)[::2]:
                fq.write(_item(new, rel, q, a, "corrected", old=e.facts[rel]))


NEW_NAMES_COUNTS = {"person": 200, "object": 160, "organisation": 160}


def write_new_names_set(world: World, out: str, rng: random.Random) -> None:
    """new_names: what a user adds, names of a make training never used (other_names.english_name).
    additions.jsonl holds 520 new documents (ids n0, n1, ...: people, objects, organisations named
    so, whose birthplace, maker or seat is a town or firm named so too), for `mnemo-kb add` to a
    copy of the bank; questions-new_names.jsonl asks each for that name (first wording). Its own
    random stream: the world and the other sets are unchanged."""
    used = {e.name.lower() for e in world.entities}

    def unique(kind: str, okind: str = "") -> str:
        while True:
            name = english_name(rng, kind, okind, ORG_WORDS)
            if name.lower() not in used:
                used.add(name.lower())
                return name

    n = 0
    with open(os.path.join(out, "additions.jsonl"), "w") as fd, \
            open(os.path.join(out, "questions-new_names.jsonl"), "w") as fq:
        for kind, count in NEW_NAMES_COUNTS.items():
            for _ in range(count):
                okind = rng.choice(OBJECT_KINDS) if kind == "object" else ""
                e = Entity(-1, kind, unique(kind, okind), "new", object_kind=okind)
                for rel, source in RELATIONS[kind]:
                    e.facts[rel] = _draw_value(rng, source, unique)
                asked = [rel for rel, source in RELATIONS[kind] if isinstance(source, str) and source != "year"][-1]
                fd.write(json.dumps({"id": f"n{n}", "title": world.display(e, True),
                                     "text": "\n\n".join(world.fact_sentences(e, rng)),
                                     "metadata": {"kind": kind, "split": "new"}}) + "\n")
                q = [x for r, x, _ in world.questions(e) if r == asked][0]
                fq.write(json.dumps({"id": f"n{n}.{asked}", "set": "new_names", "question": q,
                                     "answer": e.facts[asked]}) + "\n")
                n += 1


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
