"""Cue words: what the words around the names ask for, read anywhere in the question.

Each set is a family of words people use for one relation or attribute, in any order and with any
chatter around them. Words inside a linked name are never cues ("Death Note" asks for nothing).
"""

from __future__ import annotations

import re

from agentic_rag.protocol.vocabulary import EntityType


def words(text: str) -> frozenset[str]:
    return frozenset(text.split())


STUDIO = words("studio studios animated animate animates animating animation animator animators")
DIRECT = words("direct directed director directors directs directing dir helmed helm")
MUSIC = words("music compose composer composers composed composes soundtrack score scored ost songs")
DESIGN = words("design designs designer designers designed")
SCRIPT = words("screenplay script scripts screenwriter composition")
DRAW = words("drew draw draws drawn drawing artist artists illustrated illustrator illustrates illustrate art")
WRITE = words("wrote write writes written writer writers author authors mangaka story")
CREATE = words("created creator creators create creates invented")
# the people a staff cue asks for, as nouns ("the director of ..."): the named person is not the subject
STAFF_NOUNS = words("director directors composer composers writer writers author authors artist artists creator "
                    "creators illustrator illustrators mangaka designer designers screenwriter")
# a staff verb right after a person's name makes the person its subject ("the anime that X directed")
STAFF_VERBS = words("directed directs wrote writes drew draws composed composes scored created creates illustrated "
                    "illustrates designed designs")
def staff_roles(word: str) -> tuple[str, ...]:
    """The staff roles a verb or noun names ("directed" -> director); empty: every credit."""
    w = word.lower()
    if "music" in w or "compos" in w or "scor" in w or "soundtrack" in w or w == "ost":
        return ("music",)
    if "design" in w:
        return ("character_design",)
    if "direct" in w:
        return ("director", "chief_director")
    if "screenplay" in w or "script" in w or "composition" in w:
        return ("series_composition",)
    # "art", not "arts" ("martial arts" is a genre)
    if w in ("art", "artwork") or any(x in w for x in ("drew", "draw", "illustrat", "artist")):
        return ("story_and_art", "art")
    if any(x in w for x in ("wrote", "writ", "author", "creat", "mangaka")):
        return ("original_creator", "story_and_art", "story")
    return ()


MADE = words("made makes make produced producer")
CAST = words("characters chars cast protagonist protagonists lead leads heroes hero heroine mc mcs")
MAIN = words("main protagonist protagonists lead leads hero heroes heroine mc mcs")
FORMATS = words("tv ova ona movie film special series show")
SEQUEL = words("sequel sequels after next follow follows followed following followup continuation continues "
               "continued")
# another telling of the same story ("did X get a remake", "the other version of X")
REMAKE = words("remake remakes remade remaking reboot rebooted retelling redo redone redoing recut")
OTHER_VERSION = re.compile(r"\b(?:other|another|alternative|alternate|different|newer|older|new|old) "
                           r"(?:version|adaptation|take|retelling)\b")
# Verbs whose subject is the later work: "which anime does X follow on from" asks for X's prequel.
FOLLOWS = words("follow follows followed continue continues continued")
BEFORE_AFTER = words("before after earlier later")
WORKED = words("worked work staff someone somebody anyone")
BOTH = words("both")
ASIDE = words("not counting including incl excluding except besides")  # a name after these is an aside
PREQUEL = words("prequel prequels before previous preceded precedes preceding")
ORDER = words("order chronological")
SOURCE = words("source original based adapted adapts adapt adaptation")
ADAPTATION = words("adaptation adaptations adapted turned")
MENTOR = words("mentor mentors teacher teachers sensei master masters trained taught trains teaches train teach "
               "mentored")
MENTOR_VERBS = words("train trained trains teach taught teaches mentor mentored mentors")
STUDENTS = words("student students pupil pupils disciple disciples apprentice apprentices")
RIVAL = words("rival rivals nemesis")
ENEMY = words("enemy enemies villain villains foe foes fought fights fight nemesis")
ALLY = words("ally allies companion companions friend friends buddy buddies bff")
TEAMMATE = words("teammate teammates team squad crewmate crewmates crew party")
WHOSE = words("whose whom")
NUMBERS = {w: i for i, w in enumerate(
    ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"))}
SEASON_COUNT = re.compile(r"\b(?P<n>two|three|four|five|six|seven|eight|nine|ten|\d)(?: \w+){0,3} (?:seasons|series)\b")
# a later season not linked to the name ("does one punch man have a s2"); season 1 is the name itself
SEASON_TAG = re.compile(r"\b(?:s0?(?:[2-9]|1\d)|season (?:[2-9]|1\d)|(?:2nd|3rd|[4-9]th) season)\b")
FAMILY = words("father dad mother mom parents parent brother brothers sister sisters sibling siblings son sons "
               "daughter daughters child children kids grandfather grandpa grandmother grandma granddaughter "
               "grandson family wife husband uncle aunt cousin married spouse marry marries marrying wed weds "
               "wedded wives husbands spouses")
RELATED = words("related relation relationship relationships connected connection connections connect connects "
                "link linked links relate relates common know tie ties tied")
COMPARE = words("compare compared comparing comparison vs versus difference differences differ")
COMPARATIVE = words("more fewer less longer shorter older newer earlier later bigger higher lower")
YEAR = words("year when aired air airs released release premiere premiered premiere started start debut "
             "debuted begin began published dates date")
AIRED = words("air aired airs airing broadcast broadcasts premiere premiered premieres")  # said of a show
PUBLISHED = words("published publish serialized serialised serialization serialisation chapters")  # of a manga
FOUNDED = words("founded founding established formed")
NATIVE = words("japanese romaji native kanji kana")  # "the japanese title of X": a title it has
NAMES = words("nickname nicknames alias aliases aka")  # the entity's other names: a lookup says them
ENDED = words("end ended ends finish finished finishes concluded conclude")
EPISODES = words("episodes episode eps ep")
VOLUMES = words("volumes volume vols vol tankobon")
MAGAZINE = words("magazine magazines serialized serialised serialization serialisation")
FORMAT = words("format")
STATUS = words("status ongoing airing finished completed")
TOTAL = words("total combined altogether together all seasons")
# a sum is asked even without "how many"
SUM = words("total totals combined altogether together sum sums summing summed added adding")
WORKS = words("anime shows show series works work titles manga movies films credits")  # ("his title": no work)
OTHER = words("other else another")
TITLE = words("japanese romaji native title called")
APPEAR = words("appear appears appeared appearing from in star stars starring featuring feature features")

CUES: frozenset[str] = (STUDIO | DIRECT | MUSIC | DESIGN | SCRIPT | DRAW | WRITE | CREATE | MADE | CAST | SEQUEL
                        | PREQUEL | ORDER | SOURCE | ADAPTATION | MENTOR | FAMILY | RELATED | COMPARE | COMPARATIVE
                        | YEAR | FOUNDED | EPISODES | VOLUMES | MAGAZINE | FORMAT | STATUS | TOTAL | WORKS)

# The fandom's own words: a reader's demographics, genres and forms the dictionary lacks, the places people watch
# and read, what fans do. Never a name, whatever the case they are typed in (understanding/unknown.py).
JARGON = words("""
ova ovas ona onas oad oads shonen shounen seinen shojo shoujo josei kodomo isekai mecha mahou iyashikei harem
ecchi moe manhwa manhua webtoon webtoons doujin doujinshi tankobon tankoubon mangaka seiyuu seiyu waifu waifus
husbando tsundere yandere kuudere dandere chibi kawaii senpai sensei otaku weeb weebs sakuga filler fillers canon
noncanon crunchyroll funimation hidive netflix cosplay cosplays cosplayer cosplayers fanart fanfic fanfics fandom
fandoms animes mangas rewatch rewatching rewatched binge binged bingeing binging bingeable
lmao lmfao imho smth tldr idek srsly pfft hmmm nvm istg icymi afaik tbqh ikr omfg wtf smh yall gonna wanna gotta
kinda sorta dunno lemme gimme incl excl approx
""")

# Phrases read as one cue word, so their words do not also count on their own ("lead into" is no lead role).
PHRASES: tuple[tuple[str, str], ...] = (
    ("lead into", "sequel"), ("then what", "sequel"), ("leads into", "sequel"), ("led into", "sequel"),
    ("leads to", "sequel"), ("led to", "sequel"), ("follow up", "sequel"), ("come after", "sequel"),
    ("comes after", "sequel"),
    # "lead" the verb is no lead role: "who leads the phantom troupe" (whose record says it leads it), and what someone
    # leads is who they are ("what organisation does dragon lead": "Leader of the Revolutionary Army")
    ("who leads", "who"), ("who led", "who"), ("who is leading", "who"), ("who s leading", "who"),
    ("does lead", "who is"), ("did lead", "who is"), ("do lead", "who is"),
    ("side story", "side"), ("spin off", "spinoff"), ("first ep", "first episode"), ("by who", "whose"),
    ("put out", "made"), ("puts out", "made"), ("come up with", "made"), ("came up with", "made"),
    ("by whom", "whose"), ("real name", "alias"), ("full name", "alias"), ("other names", "aliases"),
    # the named work (or "it") is the later one: "which series does it follow on from" asks what came before
    ("follows on from", "prequel"), ("follow on from", "prequel"), ("followed on from", "prequel"),
    ("it follows", "prequel"), ("does it follow", "prequel"),
    ("have to do with", "related"), ("has to do with", "related"), ("had to do with", "related"),
    ("got to do with", "related"),
    # where a manga runs is its magazine
    ("where does it run", "magazine"), ("where did it run", "magazine"),
    ("where is it published", "magazine"), ("where was it published", "magazine"),
    # chatter that carries cue words
    ("asking for a friend", ""), ("for a friend", ""), ("if you know", ""), ("just curious", ""),
    ("me and my friends", ""), ("with my friends", ""), ("a friend of mine", ""), ("friend of mine", ""),
    ("my friends", ""), ("my friend", ""), ("with friends", ""), ("my buddy", ""), ("my bff", ""),
    ("thanks in advance", ""), ("in short", ""), ("no spoilers", ""),
    # genres whose words are cue words ("arts": art, who drew it)
    ("martial arts", ""), ("martial art", ""),
)

# Type words right next to a name ("the Death Note manga", "the anime Naruto").
TYPE_WORD: dict[str, EntityType] = {
    "anime": "anime", "show": "anime", "series": "anime", "tv": "anime", "movie": "anime", "film": "anime",
    "ova": "anime", "manga": "manga", "comic": "manga", "character": "character", "studio": "studio",
    "franchise": "franchise",
}
# A verb right before a name that says which reading it is: a manga is read, an anime watched ("where can I read X")
VERB_TYPE: dict[str, EntityType] = {
    **dict.fromkeys(("read", "reading", "reread", "rereading"), "manga"),
    **dict.fromkeys(("watch", "watching", "watched", "rewatch", "rewatching", "binge", "binging"), "anime"),
}
MOVIE_WORDS = words("movie film")
ARTICLES = words("the a an")

HOW_MANY = re.compile(r"\b(?:how many|how much|number of|count of|count the|count)\b")
HOW_MANY_OF_A_WORK = re.compile(r"\bhow (?:many|much) (?:episodes|eps|volumes|vols|chapters)\b")
HOW_LONG = re.compile(r"\bhow long\b")
# an order asked of a list of works: every one of them, not the first alone ("oldest first", "in release order")
LISTED_IN_ORDER = re.compile(r"\b(?:oldest|earliest|newest|latest) (?:first|to (?:the )?(?:newest|latest|oldest|"
                             r"earliest))\b|"
                             r"\bin (?:release|airing|chronological|broadcast|publication|the right|watch) order\b|"
                             r"\bin order(?: of (?:release|airing))?\b|"
                             r"\bin the order (?:they|it) (?:aired|came out|were released|released|came)\b|"
                             r"\bchronologically\b|"
                             r"\b(?:sorted |ordered |listed )?by (?:release )?(?:year|date|release)\b")
# the pilot episode, not the verb nor a pilot of something ("which eva does toji pilot", "the pilot of Unit-01")
FIRST_EPISODE = re.compile(r"\b(?:first episode|episode (?:1|one)|pilot episode|(?:the|its|a) pilot(?! of)(?! for))\b")
EPISODE_N = re.compile(r"\b(?:episode|ep|eps) (?P<n>\d{1,4})\b")
GENRES = words("genre genres tagged tags category categories")
IN_ORDER = re.compile(r"\b(?:in order|watch order|order to watch|all (?:the )?seasons|every season)\b")
# What kind of thing the answer is: "which anime ...", "what manga ...", "which Dragon Ball series ...".
ANSWER_TYPE = re.compile(
    r"\b(?:which|what|list|name|the) (?:\w+ )?(?P<w>anime|shows?|series|manga|studio|movie|film)\b")
ALL_SEASONS = re.compile(r"\b(?:both|all|every)\b.*?\b(?:seasons|series|parts|cours|entries)\b|"
                         r"\bevery\b(?:\s+\S+){0,3}?\s+season\b")
LAST_SEASON = re.compile(r"\b(?:last|latest|newest|most recent|final)\b(?: \w+){0,2} (?:season|seasons|series|one|"
                         r"entry|installment|part)\b|\b(?:season|seasons|series)\b(?: \w+){0,3} (?:the )?(?:last|"
                         r"latest|newest|most recent)\b|"
                         r"\b(?:concludes?|concluding|closes|ends)\b(?: \w+){0,5} (?:chain|sequels|saga|run)\b")
FIRST_SEASON = re.compile(r"\bfirst (?:tv )?(?:season|series|anime|show)\b")
# The attribute a comparison asks about, by its wording (first match wins; none: every difference).
COMPARE_FIELDS = (
    # a field right after "more" or "fewer" is the one compared ("ended up with more volumes")
    (re.compile(r"\b(?:more|fewer|less|most|fewest)(?: \w+)? (?:volumes?|vols?)\b"), "volumes"),
    (re.compile(r"\b(?:more|fewer|less|most|fewest)(?: \w+)? (?:episodes?|eps)\b"), "episode_count"),
    (re.compile(r"\bend(?:ed|s)?\b(?! up\b)|\bfinish(?:ed|es)?\b|\bconclude[ds]?\b|\bwrap(?:ped)? up\b"), "end_year"),
    (re.compile(r"\bstudios?\b|\banimat"), "studios"),
    (re.compile(r"\bvolumes?\b|\bvols?\b"), "volumes"),
    (re.compile(r"\bepisodes?\b|\beps\b|\blonger\b|\bshorter\b"), "episode_count"),
    (re.compile(r"\bfirst\b|\bearlier\b|\bolder\b|\bnewer\b|\brecent\b|\bcame out\b|\baired\b|\byears?\b|"
                r"\breleased\b|\blater\b|\bbefore\b|\bafter\b|\bfounded\b|\bstarted\b"), "year"),
)


def phrases(*said: str) -> tuple[str, ...]:
    """A family of multi-word cues, each read as whole words in the question's words outside the names."""
    return said


# Cue phrases: what a run of words asks for where no one word of it does.
STUDIO_PHRASES = phrases("animation studio", "produced by", "who produced", "who animated")  # the studio of a work
OTHER_WORKS_PHRASES = phrases("what did", "what has", "what else", "what other")  # "what else did X's studio make"
CAST_PHRASES = phrases("who is in", "who are in", "who's in", "who appears in", "who stars in")  # a work's characters
WHO_IS_PHRASES = phrases("who is", "whos", "who was", "who s")  # asks who a character is, not where
OTHER_MANGA_PHRASES = phrases("other manga", "another manga", "more manga")  # a person's other credits are manga
ADAPTED_FROM_PHRASES = phrases("adapted from", "adapted off")  # a work's source
SPINOFF_MANGA_PHRASES = phrases("spinoff manga", "spinoffs manga", "side manga")  # the franchise's manga
MAGAZINE_PHRASES = phrases("published in", "ran in", "serialized in")
RAN_WHERE_PHRASES = phrases("where did it run", "where did that run", "where it ran", "where did the manga run")
FORMAT_PHRASES = phrases("is it a movie", "what type", "what kind")
CAME_OUT_PHRASES = phrases("came out", "come out")
YEAR_PHRASES = phrases("what year", *CAME_OUT_PHRASES)
STATUS_PHRASES = phrases("still running", "still going", "still being serialized", "still being published",
                         "still serialized", "still publishing", "still coming out", "done yet", "over yet",
                         "ended yet", "complete yet", "completed yet", "wrapped up yet")
ADD_UP_PHRASES = phrases("add up", "in all")  # a sum of each listed match's count
SUM_PHRASES = phrases(*ADD_UP_PHRASES, "all together")  # a sum asked without a sum word
IN_TOTAL_PHRASES = phrases("in total", "add up")  # every work of a format, added up
WHICH_ONE_PHRASES = phrases("which one")  # one of two names is asked for: a comparison
WORKED_PHRASES = phrases("who worked")  # someone who worked on both
# An explanation is asked: why, how come, how a thing came to be ("how did X turn into", "how is X Y's brother", "how
# are X and Y related"), what a thing actually is. Not "how many/long/old" (a number), nor "how do you say" (a name).
EXPLAIN = re.compile(
    r"\b(?:why|whys|how come|explain)\b"
    r"|\bhow (?:is|are|was|were|did|does|do|has|have|can|could|comes?)\b(?! (?:you|u|i|we|one)\b)"
    r"|\bwhat (?:(?:is|was|are|were|s) \w+(?: \w+)? (?:actually|really|exactly)|(?:actually|really|exactly) "
    r"(?:is|was|are|were))\b"
    # what drove someone to do something: "what made tanjiro join the corps", "what caused him to leave"
    # "what's driving Aki", "what is motivating her": a cause
    r"|\bwhat(?:'s|’s|s| is| was)\s+(?:really\s+|actually\s+)?(?:driving|motivating|pushing|behind)\b"
    # "where did his Sharingan come from": an origin
    r"|\bwhere (?:did|does|do|would) \S+(?: \S+){0,4}? come from\b"
    # "what's Ryuk's motive for ...", "what was the reason X left": a cause asked by its noun
    r"|\bwhat(?:'s|’s|s| is| was| were| are)\s+(?:\S+\s+){0,3}?(?:motive|motives|motivation|reason|reasons|"
    r"purpose|point)\b"
    # ("what made X ..." said right after "what" is a cause: "what studio made X" is a credit)
    r"|\bwhat (?:made|makes|caused|causes|drove|drives|motivated|motivates|pushed|pushes|led|leads|prompted|"
    r"inspired) (?!up\b)\S+",
    re.IGNORECASE)
# "how are X and Y related exactly", "how is X different from Y": the why, not only the relation
INSISTED = words("exactly actually really even different differ differs difference")
# The edges between characters, by the cue words that ask for them, in the order they are tried ("nemesis": a rival)
PEER_EDGES: dict[str, frozenset[str]] = {"rival": RIVAL, "enemy": ENEMY, "teammate": TEAMMATE, "ally": ALLY}


# What the catalog records of nothing, asked in these words: said as not recorded, never answered with a neighbour
# ("who voices levi" is not Levi's lookup; "its myanimelist score" is not its music). A singing voice is a credit
# some records hold ("the singing voice of Uta"), so only the voice cast's words are here.
UNRECORDED: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b(?:voice actors?|voice actress(?:es)?|voice cast|voiced|voices|voicing|seiyuus?|dubbed|"
                r"(?:english|japanese|german|spanish|french) dub|\bvas?\b)\b", re.IGNORECASE), "voice actors"),
    (re.compile(r"\b(?:myanimelist|anilist|imdb|mal score|ratings?|rated)\b", re.IGNORECASE), "ratings or scores"),
    (re.compile(r"\b(?:box office|copies sold|sales figures?|budget|(?:how many|number of) copies|"
                r"copies(?: \w+){0,5} sold|sold worldwide)\b", re.IGNORECASE), "sales or budgets"),
)
