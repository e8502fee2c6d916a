"""Typed records of the shipped demo catalog, and the loader that validates its data files.

The catalog ships as YAML, one file per franchise plus ``studios.yaml`` and ``people.yaml``.
Records reference each other by natural key (a lowercase slug); ids are derived from those keys
(see :func:`agentic_rag.catalog.ids.entity_id`). Loading checks every reference, so a broken
file fails before anything touches the database, with an error naming the file and the record.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Annotated, Any
from urllib.parse import urlsplit

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from agentic_rag.errors import InvalidInput
from agentic_rag.protocol.vocabulary import (
    AnimeFormat,
    AnimeRelation,
    AnimeStaffRole,
    CharacterRelation,
    CharacterRole,
    MangaAuthorRole,
)

DATA_DIR = Path(__file__).parent / "data"

Key = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$", max_length=80)]
Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
Prose = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=1500)]
Year = Annotated[int, Field(ge=1900, le=2030)]


def _image_ref(ref: str) -> str:
    if ref.lower().startswith(("http://", "https://")):
        if not urlsplit(ref).hostname:
            raise ValueError("an image URL needs a host")
        return ref
    path = PurePosixPath(ref)
    if "://" in ref or "\\" in ref or path.is_absolute() or ".." in path.parts:
        raise ValueError("an image is an http(s) URL or a relative path under the data file's folder, "
                         "without '..'")
    return ref


# An entity's picture (cover, portrait, logo): a file beside the data files, or a URL the ingest can reach.
ImageRef = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=2000),
                     AfterValidator(_image_ref)]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Studio(_Record):
    key: Key
    name: Name
    founded: Year | None = None
    image: ImageRef | None = None


class Person(_Record):
    key: Key
    name: Name
    native_name: Name | None = None
    aliases: list[Name] = Field(default_factory=list)
    image: ImageRef | None = None


class Credit(_Record):
    person: Key
    role: AnimeStaffRole


class AnimeLink(_Record):
    to: Key
    type: AnimeRelation


class Anime(_Record):
    key: Key
    title: Name
    title_native: Name | None = None
    title_romaji: Name | None = None
    aliases: list[Name] = Field(default_factory=list)
    format: AnimeFormat
    year: Year
    end_year: Year | None = None
    episodes: Annotated[int, Field(ge=1, le=5000)] | None = None
    status: str = Field(pattern="^(finished|airing)$")
    studios: list[Key] = Field(default_factory=list)
    staff: list[Credit] = Field(default_factory=list)
    genres: list[Annotated[str, StringConstraints(pattern=r"^[a-z][a-z_ ]*$")]] = Field(default_factory=list)
    popularity: Annotated[int, Field(ge=0, le=100)]
    synopsis: Prose
    adapted_from: list[Key] = Field(default_factory=list)
    relations: list[AnimeLink] = Field(default_factory=list)
    image: ImageRef | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


class MangaCredit(_Record):
    person: Key
    role: MangaAuthorRole


class Manga(_Record):
    key: Key
    title: Name
    title_native: Name | None = None
    title_romaji: Name | None = None
    aliases: list[Name] = Field(default_factory=list)
    authors: list[MangaCredit] = Field(min_length=1)
    year: Year
    end_year: Year | None = None
    volumes: Annotated[int, Field(ge=1, le=500)] | None = None
    status: str = Field(pattern="^(finished|ongoing)$")
    magazine: Name | None = None
    genres: list[Annotated[str, StringConstraints(pattern=r"^[a-z][a-z_ ]*$")]] = Field(default_factory=list)
    popularity: Annotated[int, Field(ge=0, le=100)]
    synopsis: Prose
    image: ImageRef | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


class Appearance(_Record):
    anime: Key
    role: CharacterRole


class CharacterLink(_Record):
    to: Key
    type: CharacterRelation
    detail: Annotated[str, StringConstraints(max_length=80)] | None = None


class Character(_Record):
    key: Key
    name: Name
    name_native: Name | None = None
    aliases: list[Name] = Field(default_factory=list)
    description: Prose
    popularity: Annotated[int, Field(ge=0, le=100)]
    appears_in: list[Appearance] = Field(min_length=1)
    manga: list[Key] = Field(default_factory=list)
    relations: list[CharacterLink] = Field(default_factory=list)
    image: ImageRef | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


class Episode(_Record):
    anime: Key
    number: Annotated[int, Field(ge=0, le=5000)]
    title: Name | None = None
    season: Annotated[int, Field(ge=1, le=50)] | None = None
    aired: Annotated[str, StringConstraints(pattern=r"^\d{4}-\d{2}-\d{2}$")] | None = None
    image: ImageRef | None = None


class FranchiseFile(_Record):
    """One franchise: its works, characters and episodes, plus people and studios it introduces."""

    franchise: Key
    name: Name
    description: Prose
    image: ImageRef | None = None
    studios: list[Studio] = Field(default_factory=list)
    people: list[Person] = Field(default_factory=list)
    anime: list[Anime] = Field(default_factory=list)
    manga: list[Manga] = Field(default_factory=list)
    characters: list[Character] = Field(default_factory=list)
    episodes: list[Episode] = Field(default_factory=list)


class Franchise(_Record):
    key: Key
    name: Name
    description: Prose
    image: ImageRef | None = None


class CatalogError(InvalidInput):
    """A data file is malformed or inconsistent; the message names the file and the record."""


class Catalog(BaseModel):
    """The whole demo catalog, every cross-reference checked."""

    model_config = ConfigDict(frozen=True)

    franchises: list[Franchise]
    studios: list[Studio]
    people: list[Person]
    anime: list[Anime]
    manga: list[Manga]
    characters: list[Character]
    episodes: list[Episode]
    anime_franchise: dict[str, str] = Field(description="anime key -> franchise key")
    manga_franchise: dict[str, str] = Field(description="manga key -> franchise key")
    origin: dict[str, str] = Field(default_factory=dict, repr=False, description="'kind:key' -> file name")
    images: dict[str, str] = Field(
        default_factory=dict, repr=False,
        description="'kind:key' -> where the entity's image is: an http(s) URL, or the absolute path of a file "
                    "(a record's relative path, resolved against its data file's folder)")


def _locate(loc: tuple[int | str, ...], data: Any) -> str:
    """Turn a pydantic error location into 'section[i] (key)' so a person can find the record."""
    if len(loc) >= 2 and isinstance(loc[1], int) and isinstance(data, dict):
        section = data.get(loc[0]) or []
        item = section[loc[1]] if loc[1] < len(section) else {}
        ident = None
        if isinstance(item, dict):
            ident = item.get("key") or item.get("title") or (
                f"{item.get('anime')}#{item.get('number')}" if "number" in item else None
            )
        return f"{loc[0]}[{loc[1]}] ({ident})"
    return "top level"


def read_franchise_file(path: Path) -> FranchiseFile:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise CatalogError(f"{path.name}: not valid YAML: {exc}") from exc
    try:
        return FranchiseFile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = first["loc"]
        where = _locate(loc, data)
        field = ".".join(str(p) for p in (loc[2:] if len(loc) >= 2 and isinstance(loc[1], int) else loc))
        raise CatalogError(f"{path.name}: record {where}: {field or 'record'}: {first['msg']}") from exc


def _unique(kind: str, items: Iterable[tuple[str, str, Any]]) -> dict[str, Any]:
    """key -> record; identical duplicates across files are allowed, conflicting ones are not."""
    seen: dict[str, tuple[str, Any]] = {}
    for key, origin, record in items:
        if key in seen and seen[key][1] != record:
            raise CatalogError(f"{origin}: {kind} '{key}' conflicts with its definition in {seen[key][0]}")
        seen.setdefault(key, (origin, record))
    return {k: v[1] for k, v in seen.items()}


def catalog_files(data_dir: Path = DATA_DIR) -> list[Path]:
    files = sorted(data_dir.glob("*.yaml"))
    if not files:
        raise CatalogError(f"{data_dir}: no catalog files (*.yaml)")
    return files


def load_catalog(data_dir: Path = DATA_DIR, files: list[Path] | None = None) -> Catalog:
    """Read and cross-check the data files; raise :class:`CatalogError` on the first problem."""
    files = files if files is not None else catalog_files(data_dir)
    parsed = [(p.name, read_franchise_file(p)) for p in files]
    folders = {p.name: p.resolve().parent for p in files}

    def gather(attr: str, keyf: Any) -> list[tuple[str, str, Any]]:
        return [(keyf(r), name, r) for name, f in parsed for r in getattr(f, attr)]

    studios = _unique("studio", gather("studios", lambda r: r.key))
    people = _unique("person", gather("people", lambda r: r.key))
    anime = _unique("anime", gather("anime", lambda r: r.key))
    manga = _unique("manga", gather("manga", lambda r: r.key))
    characters = _unique("character", gather("characters", lambda r: r.key))
    episodes = _unique("episode", gather("episodes", lambda r: f"{r.anime}#{r.number}"))
    franchises = _unique("franchise", [
        (f.franchise, name, Franchise(key=f.franchise, name=f.name, description=f.description, image=f.image))
        for name, f in parsed if f.anime or f.manga or f.characters
    ])

    origin: dict[str, str] = {}
    anime_franchise: dict[str, str] = {}
    manga_franchise: dict[str, str] = {}
    for name, f in parsed:
        for a in f.anime:
            origin[f"anime:{a.key}"] = name
            anime_franchise[a.key] = f.franchise
        for m in f.manga:
            origin[f"manga:{m.key}"] = name
            manga_franchise[m.key] = f.franchise
        for c in f.characters:
            origin[f"character:{c.key}"] = name
        for e in f.episodes:
            origin[f"episode:{e.anime}#{e.number}"] = name

    def check(kind: str, key: str, ref_kind: str, ref: str, pool: dict[str, Any]) -> None:
        if ref not in pool:
            raise CatalogError(
                f"{origin.get(f'{kind}:{key}', '?')}: {kind} '{key}' references unknown {ref_kind} '{ref}'"
            )

    for a in anime.values():
        for s in a.studios:
            check("anime", a.key, "studio", s, studios)
        for c in a.staff:
            check("anime", a.key, "person", c.person, people)
        for m in a.adapted_from:
            check("anime", a.key, "manga", m, manga)
        for link in a.relations:
            check("anime", a.key, "anime", link.to, anime)
            if link.to == a.key:
                raise CatalogError(f"{origin[f'anime:{a.key}']}: anime '{a.key}' is related to itself")
    for m in manga.values():
        for cr in m.authors:
            check("manga", m.key, "person", cr.person, people)
    for c in characters.values():
        for ap in c.appears_in:
            check("character", c.key, "anime", ap.anime, anime)
        for mk in c.manga:
            check("character", c.key, "manga", mk, manga)
        for cl in c.relations:
            check("character", c.key, "character", cl.to, characters)
            if cl.to == c.key:
                raise CatalogError(f"{origin[f'character:{c.key}']}: character '{c.key}' is related to itself")
    for key, e in episodes.items():
        check("episode", key, "anime", e.anime, anime)
        total = anime[e.anime].episodes
        if total is not None and e.number > total:
            raise CatalogError(
                f"{origin[f'episode:{key}']}: episode '{key}' is numbered past the anime's {total} episodes"
            )

    return Catalog(
        franchises=list(franchises.values()), studios=list(studios.values()), people=list(people.values()),
        anime=list(anime.values()), manga=list(manga.values()), characters=list(characters.values()),
        episodes=list(episodes.values()), anime_franchise=anime_franchise,
        manga_franchise=manga_franchise, origin=origin, images=_images(parsed, folders),
    )


def _images(parsed: list[tuple[str, FranchiseFile]], folders: dict[str, Path]) -> dict[str, str]:
    """'kind:key' -> each image's location, a relative path resolved against its own file's folder (the first
    file that defines a record shared by several)."""
    out: dict[str, str] = {}

    def put(kind: str, key: str, file: str, ref: str | None) -> None:
        if ref is not None:
            location = ref if ref.lower().startswith(("http://", "https://")) else str(folders[file] / ref)
            out.setdefault(f"{kind}:{key}", location)

    for name, f in parsed:
        put("franchise", f.franchise, name, f.image)
        for kind, records in (("studio", f.studios), ("person", f.people), ("anime", f.anime), ("manga", f.manga),
                              ("character", f.characters)):
            for r in records:
                put(kind, r.key, name, r.image)
        for e in f.episodes:
            put("episode", f"{e.anime}#{e.number}", name, e.image)
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m agentic_rag.catalog.records [DIR | FILE...]``: validate data files, print counts."""
    import sys

    args = [Path(a) for a in (sys.argv[1:] if argv is None else argv)]
    try:
        cat = load_catalog(args[0]) if len(args) == 1 and args[0].is_dir() else load_catalog(files=args or None)
    except CatalogError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    rels = (sum(len(a.relations) + len(a.adapted_from) for a in cat.anime)
            + sum(len(c.appears_in) + len(c.relations) for c in cat.characters))
    print(f"franchises={len(cat.franchises)} anime={len(cat.anime)} manga={len(cat.manga)} "
          f"characters={len(cat.characters)} episodes={len(cat.episodes)} studios={len(cat.studios)} "
          f"people={len(cat.people)} relationship_rows={rels}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
