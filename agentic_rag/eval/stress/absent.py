"""Facts with no answer in the catalog: no_match (real names it lacks) and ambiguous (bare shared names)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from agentic_rag.eval.stress.facts import Builder, Fact, World
from agentic_rag.eval.stress.names import NameIndex, norm

# Real titles and people the demo catalog does not hold. Names one edit away from a catalog name
# ("Holo" ~ "Zolo") are left out, and any that the catalog gains later is dropped by `absent`.
ABSENT: dict[str, tuple[str, ...]] = {
    "anime": (
        "Sailor Moon", "Your Name", "Vinland Saga", "Steins;Gate", "Tokyo Ghoul", "Code Geass", "Fruits Basket",
        "Haikyu!!", "Mushishi", "Made in Abyss", "Violet Evergarden", "Gintama", "Berserk", "Trigun",
        "Samurai Champloo", "Oshi no Ko", "Blue Lock", "Kaguya-sama: Love Is War", "Bocchi the Rock!",
        "Cyberpunk: Edgerunners", "Dr. Stone", "Black Clover", "Fire Force", "Dorohedoro", "Erased", "Parasyte",
        "Toradora!", "Clannad", "Re:Zero", "Sword Art Online", "Perfect Blue", "Spirited Away",
        "Princess Mononoke", "Ghost in the Shell", "Serial Experiments Lain", "Inuyasha", "Ranma 1/2",
        "Yu Yu Hakusho", "Slam Dunk", "Great Teacher Onizuka", "The Promised Neverland", "Dandadan", "Kaiju No. 8",
        "Solo Leveling", "Lycoris Recoil", "Odd Taxi", "Mushoku Tensei", "Tokyo Revengers", "Hellsing",
        "Claymore", "Durarara!!",
    ),
    "person": (
        "Rumiko Takahashi", "Hayao Miyazaki", "Makoto Shinkai", "Naoko Takeuchi", "Satoshi Kon", "Mamoru Hosoda",
        "Kentaro Miura", "Naoki Urasawa", "Hiro Mashima", "Hirohiko Araki", "Isao Takahata", "Mamoru Oshii",
        "Katsuhiro Otomo", "Joe Hisaishi", "Takehiko Inoue", "Sui Ishida", "Yusei Matsui", "Naoko Yamada",
        "Hiroyuki Imaishi", "Yuki Tabata", "Kaiu Shirai", "Riichiro Inagaki", "Ken Wakui", "Hajime Kamoshida",
    ),
    "character": (
        "Kenshin Himura", "Lelouch Lamperouge", "Ash Ketchum", "Thorfinn", "Ken Kaneki", "Rintaro Okabe",
        "Usagi Tsukino", "Rimuru Tempest", "Gintoki Sakata", "Eikichi Onizuka", "Subaru Natsuki", "Kirito",
        "Motoko Kusanagi", "Ryo Saeba", "Conan Edogawa", "Takemichi Hanagaki", "Mai Sakurajima", "Shoyo Hinata",
        "Senku Ishigami", "Ai Hoshino", "Marin Kitagawa",
    ),
    "studio": (
        "Studio Ghibli", "Kyoto Animation", "Trigger", "Shaft", "A-1 Pictures", "David Production", "Science SARU",
        "Lerche", "P.A. Works", "Studio Bind", "TMS Entertainment", "Doga Kobo", "Silver Link", "Kinema Citrus",
        "Brain's Base", "White Fox", "Studio Orange", "Diomedea",
    ),
}


def _squash(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", norm(text))


def absent(names: NameIndex, candidates: Iterable[str]) -> list[str]:
    """The candidates the catalog has no name for, even ignoring spaces and punctuation."""
    squashed = {_squash(n) for n in names.owners}
    return [c for c in candidates if not names.known(c) and _squash(c) not in squashed]


def _absent_facts(w: World, kind: str) -> list[Fact]:
    named = "person" if kind in ("person", "character") else "title"
    return [Fact(words={"x": n}, named={"x": named}, expect="not_found") for n in absent(w.names, ABSENT[kind])]


def absent_anime(w: World) -> list[Fact]:
    return _absent_facts(w, "anime")


def absent_person(w: World) -> list[Fact]:
    return _absent_facts(w, "person")


def absent_character(w: World) -> list[Fact]:
    return _absent_facts(w, "character")


def absent_studio(w: World) -> list[Fact]:
    return _absent_facts(w, "studio")


def shared_name(w: World) -> list[Fact]:
    """Bare names that entities of different types (anime, manga, character) really share."""
    return [Fact(words={"x": n}, named={"x": "title"}, expect="needs_clarification")
            for n in w.names.shared_names()]


BUILDERS: dict[str, Builder] = {
    "absent_anime": absent_anime, "absent_person": absent_person, "absent_character": absent_character,
    "absent_studio": absent_studio, "shared_name": shared_name,
}
