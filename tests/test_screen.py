"""The screen of HV (stages/screen.py): one test per failure class of stored memories, with
a judge as lenient as the 1.5B model (every NLI pair "entailment"), so only the rules decide."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from promem_fast import Extractor
from promem_fast.schema import Session, Turn
from promem_fast.stages import screen
from promem_fast.stages.state import Entry, PipelineState
from promem_fast.stages.verify import (
    ASKED_REASON, ASSISTANT_REASON, WISHED_REASON, BORROWED_REASON, FILLER_REASON, OTHER_SPEAKER_REASON,
    KIND_REASON, PLACEHOLDER_REASON, QUOTED_REASON, REVERSED_FEELING_REASON, SAID_OF_IT_REASON, UNSTATED_REASON,
    URGED_REASON, CITED_OTHER_REASON, ADDRESSED_REASON, REMARK_REASON, PRAISE_REASON, NO_SUBJECT_REASON, AGE_REASON,
    OWNER_REASON, HELD_BY_OTHER_REASON, RELATION_REASON, DEAD_SPEAKER_REASON, PHRASE_REASON,
    TEMPLATE_REASON, dedup_entries, shared_words, stands_for, verify_entries)
from promem_fast.prompts.common import dialogue_block

from conftest import FakeNLI, KeywordEmbedder, const, keyed, make_config, make_ctx, make_services

DAY = datetime(2024, 3, 4, 9, 0)


def session(rows, user="Nora", sid="x"):
    return Session(session_id=sid, user_name=user, start_time=DAY,
                   turns=[Turn(turn_id=i, role=r, content=c, timestamp=DAY,
                               speaker=(user if r == "user" else "Kai")) for i, r, c in rows])


async def screened(rows, entries, user="Nora", **pipeline):
    """Run HV on ``entries`` [(text, [turn ids])] with a lenient judge; return
    (kept texts, {discarded text: reason})."""
    s = session(rows, user)
    ctx = make_ctx(session=s, services=make_services(rules={}, nli=FakeNLI(default="entailment")), **pipeline)
    state = PipelineState.create(s, user, dialogue_block(s, user))
    state.entries = [Entry(t, "draft", "kept", ids) for t, ids in entries]
    await verify_entries(ctx, state)
    kept = [state.entries[i].text for i in state.live_entries()]
    return kept, {d.text: d.reason for d in state.discarded}, state


# --- filler --------------------------------------------------------------------------------

@pytest.mark.parametrize("text, filler", [
    ("Nora appreciates the conversation.", True),
    ("Nora is looking forward to the next chat.", True),
    ("Nora thanks the assistant for the great tips.", True),
    ("Nora agrees that rest matters.", True),
    ("Nora shared her travel preference with the assistant.", True),
    ("Nora finds it wonderful.", True),
    ("Nora definitely agrees that dance floors help avoid injuries.", True),  # an adverb before the reaction
    ("Nora really appreciates the chat.", True),
    ("Nora can't wait!", True),                                   # excitement about nothing named
    ("Nora is excited too!", True),                               # "too" adds nothing to it
    ("Nora is excited about the regatta too.", False),
    ("Nora can't wait for the regatta in May.", False),
    ("Nora is waiting for the bus.", False),                      # "wait" as a whole word only
    ("Nora agrees to meet Kai in Lisbon on Friday.", False),   # a plan with a place and a person
    ("Nora totally agrees to move to Oslo in June.", False),
    ("Nora mentioned she adopted a greyhound.", False),          # a fact wrapped in a dialogue act
    ("Nora appreciates the Tate Modern.", False),
    ("Nora adopted a greyhound called Pip.", False),
    ("Nora's rent is 900 euros.", False),
    ("诺拉很感谢这次聊天。", False),                             # non-ASCII words always count
])
def test_filler_rule(text, filler):
    assert screen.is_filler(text, "Nora") is filler


@pytest.mark.parametrize("entry, before, reaction", [
    ("Nora likes the blend nicely.", "Here is my new painting, the colors blend nicely.", True),
    ("Nora loves that photo.", "Look at this photo from my trip!", True),
    ("Nora likes the beach.", "How was your weekend?", False),          # not what the other side showed
    ("Nora loves the park near her old house.", "I went to the park.", False),  # more than a reaction
])
def test_reaction_to_what_the_other_side_showed(entry, before, reaction):
    assert screen.reaction_to_other(entry, "Nora", before) is reaction


async def test_filler_entries_are_discarded_before_nli():
    rows = [("u1", "user", "Thanks so much, this chat was lovely! I start my pottery class on Monday."),
            ("a2", "assistant", "Enjoy the pottery class!")]
    kept, why, _ = await screened(rows, [("Nora enjoyed the chat.", ["u1"]),
                                         ("Nora starts a pottery class on Monday.", ["u1"])])
    assert kept == ["Nora starts a pottery class on Monday."]
    assert why == {"Nora enjoyed the chat.": FILLER_REASON}


@pytest.mark.parametrize("text, fragment", [
    ("Divorced", True),
    ("Both parents are deceased", True),
    ("Establish a platform for social change", True),
    ("Nora is divorced.", False),
    ("Her brother Teo moved to Oslo.", False),
    ("Teo, her brother, moved to Oslo.", False),
    ("Kai painted the lake.", False),         # the other speaker is named (another rule decides)
    ("诺拉离婚了。", False),                    # non-ASCII: not decided here
    # with another named speaker, a bare "she" / "they" could be either speaker
    ("Her friends kept calling her every week.", True),
    ("They have been a great way to unwind.", True),
    ("She and her sister opened a bakery.", True),
    ("My sister opened a bakery.", False),
    # a function word that opens a later sentence is no name; a name there still is one
    ("The feedback has been positive. Many are curious how the changes help them.", True),
    ("Wellness workshops would be useful. It's about tools for growth.", True),
    ("The trip went well. Teo loved it.", False),
    ("That's the plan. There's a lot to do.", True),
    # the first token is skipped however the entry starts
    (" Divorced", True),
])
def test_a_fragment_that_names_no_one_is_not_a_memory(text, fragment):
    assert screen.names_no_one(text, "Nora", ["Kai"]) is fragment


@pytest.mark.parametrize("text", ["Her friends kept calling her every week.", "She and her sister opened a bakery."])
def test_a_pronoun_names_the_user_when_no_other_speaker_is_named(text):
    # HaluMem-style chat with an unnamed assistant: "she" can only be the user
    assert screen.names_no_one(text, "Nora", []) is False
    assert screen.names_no_one(text, "Nora", ["assistant"]) is False


@pytest.mark.parametrize("text, filler", [
    # nothing but generic nouns and light verbs: nothing a later question could ask about
    ("Nora hopes to find a place that will inspire her.", True),
    ("Nora has some exciting projects in the works.", True),
    ("Nora is up for the challenge.", True),
    ("Nora is looking for the right place and getting everything ready.", True),
    # a leaving remark: "off to" moves no more than "going to" does
    ("Nora is off to do some research.", True),
    # a named or qualified object is a memory
    ("Nora hopes to find a place for her pottery studio.", False),
    ("Nora has some projects with the Oslo museum in the works.", False),
    ("Nora is up for the challenge of running a marathon.", False),
    ("Nora is looking for a place in Lyon.", False),
    ("Nora found a place near the harbour.", False),
    ("Nora has 3 projects in the works.", False),
    ("Nora got a new place.", False),                    # news, not a generic remark
    ("Nora has her own project.", False),
    ("Nora is off to do some research on adoption agencies.", False),
    ("Nora is off to Lisbon.", False),
    ("Nora is off to go swimming with the kids.", False),
    # a resolve to persevere names nothing
    ("Nora will keep pushing and working hard.", True),
    ("Nora won't let anything hold her back.", True),
    ("Nora keeps going to reach her goals no matter what.", True),
    ("Nora is not giving up.", True),
    # ... unless it names what she perseveres at, or is news
    ("Nora will keep pushing to finish her thesis.", False),
    ("Nora is working hard at the bakery.", False),
    ("Nora won't let her knee injury hold her back.", False),
    ("Nora wants to give back to her community.", False),
    ("Nora is giving back.", False),                      # volunteering, not perseverance
    ("Nora quit her job last week.", False),
    ("Nora reached her goal of 10,000 steps.", False),
    # the words of a pep talk without one say something else
    ("Nora won.", False),
    ("Nora quit.", False),
    ("Nora is back.", False),
    ("Nora is having a hard time.", False),
    ("Nora keeps pushing her bakery forward.", False),
])
def test_an_entry_of_generic_nouns_and_light_verbs_is_filler(text, filler):
    assert screen.is_filler(text, "Nora") is filler


@pytest.mark.parametrize("text, filler", [
    # a feeling about nothing named answers no later question
    ("Nora is feeling calm and content.", True),
    ("Nora feels energised and ready.", True),
    ("Nora is thrilled for this new chapter.", True),
    ("Nora is determined to make it work.", True),
    # a feeling about something named is a memory
    ("Nora is nervous about her driving test in May.", False),
    ("Nora is thrilled about the greenhouse she built.", False),
    ("Nora feels calm when she paints watercolours.", False),
    ("Nora is proud of her brother Teo.", False),
    ("Nora is 34 and feels ready.", False),               # a number is always content
    ("Nora is stressed about work.", False),              # work is what the feeling is about
    ("Nora is optimistic.", False),                       # a trait is a persona fact
    ("Nora feels optimistic and calm.", True),            # ... unless "feel" frames it
    ("Nora is super thankful.", True),                    # an intensifier adds nothing
    ("Nora is extremely grateful and truly happy.", True),
    ("Nora is super busy with her bakery.", False),
    ("Nora went to the supermarket.", False),             # "super" is a word, not a prefix
    ("Nora talked about the Super Bowl.", False),          # ... and a name when capitalised
    ("Nora got a scarf.", False),
])
def test_a_feeling_about_nothing_named_is_filler(text, filler):
    assert screen.is_filler(text, "Nora") is filler


@pytest.mark.parametrize("text, filler", [
    ("Nora's statement is about the performers.", True),
    ("Nora's reply is about the weekend.", True),
    # a remark on what was said is filler whatever it names
    ("Nora's statement is about the performers' practice and their performance.", True),
    ("Nora's comment was about the colours of the new mural downtown.", True),
    ("Nora's message is about her move to Lisbon in May.", False),       # a message may carry news
    ("Nora's message to the students was about hope.", False),   # a speech she gave: an event
    ("Nora's question about visas went to the embassy.", False),
    ("Nora's statement to the police was filed on Monday.", False),
    ("Nora's reply was that she accepted the job in Berlin.", False),      # a fact told as a reply
    ("Nora's thesis statement is about climate policy.", False),
    ("Nora's talk was about Berlin housing.", False),                      # names something
    ("Nora adopted a dog named Max, which is mentioned in the turn.", False),  # the fact comes first
    ("Nora's friends are mentioned in the turn.", True),
    ("Nora's rock is mentioned in the turn.", True),
    ("Nora's new job was discussed in the conversation.", True),
    ("Nora was mentioned in the local newspaper.", False),
])
def test_an_entry_whose_subject_is_something_said_is_conversation_meta(text, filler):
    assert screen.is_filler(text, "Nora") is filler


def test_a_remark_on_speech_is_read_after_the_users_name_only():
    # the piece screen_replay.py replays as "remark_act": a remark whatever it names, not a
    # message, nor someone else's remark
    assert screen.remark_on_speech("Nora's comment was about the colours of the new mural downtown.", "Nora")
    assert screen.remark_on_speech("User's reply is about the weekend.", "Nora")
    assert not screen.remark_on_speech("Nora's message is about her move to Lisbon in May.", "Nora")
    assert not screen.remark_on_speech("Liam's comment was about the mural.", "Nora")


@pytest.mark.parametrize("text, turn, word", [
    ("Nora is determined to make the project work.", "Can't wait! I'm determined to make it work.", "project"),
    ("Nora is handling the situation well.", "I'm handling it okay, I guess.", "situation"),
    ("Nora is looking for the right place to work on the project.", "Looking for the right place is nerve-wracking.",
     "project"),
    # a whole word: "think" does not hide "thing"
    ("Nora will sort out the thing tomorrow.", "I think I'll sort it out tomorrow.", "thing"),
    # the turn names the placeholder itself: a real object
    ("Nora is determined to make the project work.", "The garden project is hard, but I'll make it work.", None),
    # a complement names it
    ("Nora is stressed about the situation with her landlord.", "My landlord won't fix the heating.", None),
    ("Nora is building a greenhouse.", "I'm building a greenhouse this spring.", None),
    # typographic apostrophes and emoji are not another language
    ("Nora is determined to make the project work.", "Can\u2019t wait! I\u2019m determined to make it work \U0001f4aa",
     "project"),
    ("Nora is determined to make the project work.", "Je suis déterminée à réussir.", None),
])
def test_a_placeholder_for_what_the_turn_left_unnamed(text, turn, word):
    assert screen.placeholder_object(text, "Nora", turn) == word


@pytest.mark.parametrize("text, turn, word", [
    # the turn's own "these practices" points at a list the entry never names
    ("Nora uses these practices to stay calm before exams.", "I use these practices to stay calm before exams.",
     "practices"),
    ("This approach will help Nora keep her message consistent.", "It keeps my message consistent.", "approach"),
    ("Nora plans to share these adaptive strategies with her partners.", "I'll share them with my partners.",
     "strategies"),
    # an entry with letters outside ASCII in its turn is still read (the rule reads the entry)
    ("Nora uses these practices to stay calm.", "Ich mache das im Café.", "practices"),
    # named before, right after (a word, or punctuation opening a list), or in an earlier clause
    ("Nora's son took his first steps; those initial steps moved her.", "He took his first steps!", None),
    ("Nora tried these activities like rowing and climbing.", "I tried rowing and climbing.", None),
    ("Nora uses these practices, such as yoga, to relax.", "Yoga relaxes me.", None),
    ("Nora uses these practices: yoga and rowing.", "Yoga and rowing.", None),
    ("Nora uses these practices (yoga, rowing) daily.", "Yoga and rowing daily.", None),
    ("Nora does yoga and rowing; these activities calm her.", "Yoga and rowing calm me.", None),
    # a noun in front names them; times and the entry's own moments are not stand-ins
    ("Nora takes these swimming lessons on Fridays.", "I take these swimming lessons on Fridays.", None),
    ("Nora does these breathing exercises every morning.", "I do these breathing exercises every morning.", None),
    ("Nora visited Lisbon twice this year.", "I was in Lisbon twice this year.", None),
    ("Nora cherishes these moments with her family.", "I cherish these moments with my family.", None),
])
def test_a_demonstrative_with_a_stand_in_noun_names_nothing(text, turn, word):
    assert screen.placeholder_object(text, "Nora", turn) == word


@pytest.mark.parametrize("text, word", [
    # the subject points back at a turn the entry does not carry
    ("This will be incredibly rewarding for Nora.", "this"),
    ("It's been a great way for Nora to unwind.", "it"),
    ("That helps Nora stay calm at work.", "that"),
    # a noun after the demonstrative names the subject; the user as subject is the usual case
    ("That trip to Oslo changed Nora's plans.", None),
    ("Nora says this will be her last race.", None),
    # a dummy subject before a fact the entry states itself
    ("It's Nora's birthday on May 3.", None),
    ("It has been three years since Nora moved to Oslo.", None),
    ("These are Nora's favourite books: Dune and Emma.", None),
    ("That's why Nora quit her job.", None),
    ("It was 2019 when Nora moved to Oslo.", None),
    # an entry that ends on a bare pointer and says little else
    ("Nora opened with that.", "that"),
    ("Nora really loves it!", "it"),
    ("Nora adopted a cat named Miso and loves it.", None),
    ("Nora got a puppy and adores it.", None),
    ("Nora finally sold the old piano and bought a keyboard to replace it.", None),
])
def test_an_entry_whose_subject_is_a_bare_this_names_nothing(text, word):
    assert screen.placeholder_object(text, "Nora", "I think this will help me a lot.") == word


async def test_an_entry_naming_its_object_only_by_a_placeholder_is_discarded_before_nli():
    rows = [("u1", "user", "Finding the right spot has been nerve-wracking, but I'm determined to make it work. "
                           "I signed the lease for the studio on Elm Street.")]
    kept, why, _ = await screened(rows, [("Nora is determined to make the project work.", ["u1"]),
                                         ("Nora signed the lease for the studio on Elm Street.", ["u1"])])
    assert kept == ["Nora signed the lease for the studio on Elm Street."]
    assert why == {"Nora is determined to make the project work.": PLACEHOLDER_REASON}


async def test_a_compound_with_a_placeholder_clause_keeps_its_named_part():
    s = session([("u1", "user", "I painted a mural for the library. It's due in May, so I'm rushing.")])
    entry = "Nora painted a mural for the library; the project is due in May."
    rules = {"verify": keyed({f"Entry: {entry}": ["Nora painted a mural for the library.",
                                                  "Nora has the project due in May."]})}
    ctx = make_ctx(session=s, services=make_services(rules=rules, nli=FakeNLI(default="entailment")))
    state = PipelineState.create(s, "Nora", dialogue_block(s, "Nora"))
    state.entries = [Entry(entry, "draft", "kept", ["u1"])]
    await verify_entries(ctx, state)
    e = state.entries[0]
    # one clause is vague, so the entry is decomposed rather than lost, and the named part stays
    assert (e.text, e.status, e.discarded) == ("Nora painted a mural for the library.", "revised", False)
    assert "atomic fact: " + PLACEHOLDER_REASON in {d.reason for d in state.discarded}


def test_announcing_a_topic_is_filler():
    assert screen.is_filler("Nora wants to share her beverage preference with the assistant.", "Nora")
    assert not screen.is_filler("Nora wants to share a flat with Teo in Porto.", "Nora")
    # the act's purpose is about the conversation too; what the act itself names decides
    assert screen.is_filler("Nora would like to share her film preference with you so you can understand her "
                            "personal tastes and better know her choices in future chats.", "Nora")
    assert not screen.is_filler("Nora mentioned her move to Porto in June so that Teo knows she is away.", "Nora")


# --- assistant text as a user fact -----------------------------------------------------------

async def test_assistant_praise_and_advice_are_not_user_facts():
    rows = [("u1", "user", "I ran 5 km before work again today."),
            ("a2", "assistant", "Your discipline is admirable! You could try interval sprints on hills next week."),
            ("u3", "user", "Maybe, we will see.")]
    kept, why, _ = await screened(rows, [
        ("Nora's discipline is admirable.", ["a2"]),
        ("Nora will try interval sprints on hills next week.", ["u3"]),
        ("Nora ran 5 km before work today.", ["u1"])])
    assert kept == ["Nora ran 5 km before work today."]
    assert why["Nora will try interval sprints on hills next week."] == ASSISTANT_REASON
    assert why["Nora's discipline is admirable."] in (ASSISTANT_REASON, FILLER_REASON)


def test_about_other_speaker_needs_their_name_or_the_assistant():
    assert screen.about_other_speaker("Kai's painting blends nicely.", ["Kai Ito"])
    assert screen.about_other_speaker("The assistant suggested yoga.", [])
    assert not screen.about_other_speaker("The group was powerful.", ["Kai Ito"])  # "The" is no name
    assert not screen.about_other_speaker("Kaiser rolls are her favourite.", ["Kai Ito"])
    assert screen.about_other_speaker("Mel is raising awareness for mental health.", ["Melanie"])  # short form
    assert not screen.about_other_speaker("Me and Teo went out.", ["Melanie"])


async def test_facts_about_the_other_speaker_are_not_the_users():
    rows = [("u1", "user", "Wow, you painted that lake at dawn? It looks great."),
            ("a2", "assistant", "Yes, I painted it last summer at Lake Bled.")]
    kept, why, _ = await screened(rows, [("Kai painted the lake at dawn.", ["u1"])])
    assert kept == [] and why == {"Kai painted the lake at dawn.": OTHER_SPEAKER_REASON}


# --- wrong person ----------------------------------------------------------------------------

@pytest.mark.parametrize("entry, turn, clash", [
    ("Nora flies in on Sunday.", "My sister Ines flies in on Sunday, so I'm cleaning the spare room.", True),
    ("Nora is cleaning the spare room.", "My sister Ines flies in on Sunday, so I'm cleaning the spare room.", False),
    ("Nora leads the sales team in Porto.", "My boss leads the sales team in Porto.", True),
    ("Nora signed up for the marathon.", "Her trainer signed her up for the marathon.", True),
    ("Nora signed up for the marathon.", "I signed up for the marathon with my cousin.", False),
    ("Nora went climbing with her cousin.", "My cousin and I went climbing.", False),
    ("Nora got promoted.", "He got promoted last week and I'm proud of him.", True),
    ("Nora's sister flies in on Sunday.", "My sister flies in on Sunday.", False),  # the right person
    ("Nora went to Rome.", "Then I went to Rome.", False),
    ("Nora is doing something amazing.", "You\u2019re doing something amazing! Good luck!", True),  # typographic apostrophe
    # someone else's possession (the other speaker's) pinned on the user
    ("Nora's new neighbours will love having her.", "Your new neighbours will love having you!", True),
    ("Nora's roommate Leo starts at the bakery.", "My roommate Leo starts at the bakery on Monday.", False),
    ("Nora's favorite restaurant is Luigi's.", "Their lasagna is why Luigi's is my favorite restaurant.", False),
    # a third party's possession ("their", "his", "her") pinned on the user
    ("Nora's patience and advice helped a lot after the move.",
     "I've known them for years. Their patience and advice helped a lot after the move.", True),
    ("Nora's garden won a prize at the fair.", "My uncle is thrilled: his garden won a prize at the fair!", True),
    ("Nora's band plays on Friday.", "My sister is so excited, her band plays on Friday!", True),
    ("Nora's band plays on Friday.", "My sister and her band play on Friday!", True),
    ("Nora's band plays on Friday.", "Her new band plays on Friday!", True),  # one word between
    ("Nora's band plays on Friday.", "Her drummer and my band play on Friday!", False),  # window: "and my"
    ("Nora's mother's garden is blooming.", "Great! Her garden is blooming this spring.", False),  # her = mother
    ("Nora's photos of the trip were a hit.", "Showed her the photos of the trip, they were a hit.", False),
    # someone else's thing by a possessive name or noun, swapped for the user's name
    ("Nora's cello sounds warm and rich.", "Wow! Ines's cello sounds warm and rich.", True),
    ("Nora's perfect; it's got a deep tone.", "Sounds great! Yamaha's perfect; it's got a deep tone.", True),
    ("Nora's speech moved the room.", "Watching my student's speech moved the room.", True),
    ("Nora's speech moved the room.", "My speech moved the room, my students' faces said it all.", False),
    ("Nora's perfect.", "Everything's perfect here!", False),                      # "'s" is "is"
    ("Nora's garden is thriving.", "This year's garden is thriving!", False),           # a time, not an owner
    ("Nora's race went well.", "Saturday's race went well, I PR'd!", False),
    ("Nora's speech moved the room.", "Last night's speech moved the room.", False),
    ("Nora's project won an award.", "My team's project won an award!", False),        # her own team
    ("Nora's art show is next week.", "Our gallery's art show is next week!", False),
    ("Nora's kitchen smells of bread.", "It's so nice, Nora's kitchen smells of bread.", False),  # her own name
    ("Nora's sister's bakery opens Monday.", "My sister's bakery opens Monday!", False),
    # the clause with the entry's verb is said of "you"
    ("Nora is learning Italian by watching films.", "You've been learning Italian! Watching films is clever.", True),
    ("Nora is learning Italian by watching films.", "I'm learning Italian! Watching films helps.", False),
    ("Nora bakes sourdough bread every weekend.", "I bake sourdough bread every weekend. Do you bake bread?", False),
    # the addressee's things, whatever the entry makes of them
    ("Nora is making Kai's future family lucky.", "Your future family is gonna be so lucky to have you!", True),
    ("Nora loves Kai's cooking.", "I love your cooking!", False),
    # German capitalises every noun: "Samstag" names no one; "ich" is the user, "mein Hund" not
    ("Nora hat am Samstag zwei Besichtigungen.", "Gute Idee. Am Samstag habe ich zwei Besichtigungen.", False),
    ("Nora zieht nach Hamburg.", "Im Dezember ziehe ich nach Hamburg.", False),
    ("Nora muss übrigens mit.", "Mein Hund Bruno muss übrigens mit.", True),
    ("Nora zieht nach Hamburg.", "Am Samstag zieht sie nach Hamburg.", True),  # the subject after the verb
    # an English turn with a German name is read as English: the name is someone else
    ("Nora flies in on Sunday.", "Cousin Jürgen flies in Sunday!", True),
])
def test_subject_clash(entry, turn, clash):
    assert screen.subject_clash(entry, "Nora", turn) is clash


@pytest.mark.parametrize("entry, turn, clash", [
    # the verb's nearest subject is someone else, at the start of the sentence too
    ("Nora is moving to Oslo in May.", "Work is fine. Ines is moving to Oslo in May, so I'll miss her.", True),
    ("Nora laughed when they opened the gift.", "We gave Leo the gift. Tobiah laughed when we opened it.", True),
    ("Nora is driving to Porto to see her cousin Ana.", "My cousin Ana is driving to Porto to see me!", True),
    ("Nora coaches the under-12 team.", "My neighbour, Ines, coaches the under-12 team on Saturdays.", True),
    ("Nora is swimming 2 km a day.", "My physio told me to start swimming 2 km a day.", True),
    # the user is the subject, or the one it happens to
    ("Nora is moving to Oslo in May.", "Ines and I are moving to Oslo in May.", False),
    ("Nora is moving to Oslo in May.", "Ines asked if I'm moving to Oslo in May, and I am.", False),
    ("Nora is motivated by her students.", "Seeing my students grow motivates me every day.", False),
    ("Nora is motivated by her family.", "My husband and kids keep me motivated.", False),
    ("Nora was inspired by the stories.", "The stories were so inspiring.", False),             # no subject found
    ("Nora shared her story with the group.", "They were so brave, and I felt I'd helped by sharing my story.", False),
    ("Nora posted her paintings online.", "I did what you said and posted my paintings online.", False),
    # not a verb of the turn's sentences, or only in a question
    ("Nora found a new studio.", "Great news! Did you find the studio you wanted?", False),
    # a capitalised word of the lexicon, a vocative or the user's own name is no other subject
    ("Nora is running the Oslo marathon.", "Honestly running the Oslo marathon is my dream.", False),
    ("Nora is running the Oslo marathon.", "Hey Kai, running the Oslo marathon was a dream.", False),
    ("Nora is running the Oslo marathon.", "Nora is running the Oslo marathon, that's me!", False),
    # the user's own turn in German: the English rule stays out
    ("Nora zieht im Mai nach Oslo.", "Ines zieht im Mai nach Oslo, ich bleibe hier.", False),
    # the user is the subject: "me and ...", a clause after a comma or "then", a place name first
    ("Nora went to the beach last weekend.", "Me and my sister went to the beach last weekend.", False),
    ("Nora drove home.", "I called my mom, then drove home.", False),
    ("Nora flew to Oslo.", "I met my sister at the airport, flew to Oslo together.", False),
    ("Nora took over the bakery.", "After Ines left, took over the bakery myself.", False),
    ("Nora got the job.", "Thanks to Ines, got the job!", False),
    ("Nora visited Lisbon last May.", "Lisbon was amazing, visited it last May.", False),
    ("Nora adopted a dog.", "Ines, guess what, adopted a dog!", False),
    # someone else is: a contraction, "my little brother", a name of the lexicon inside the
    # clause, "Mom", a tag question, an adverb before the entry's verb, "us" after the verb
    ("Nora is moving to Oslo.", "Ines's moving to Oslo next month.", True),
    ("Nora is moving to Oslo.", "She'll be moving to Oslo next month.", True),
    ("Nora is moving to Oslo.", "My little brother is moving to Oslo.", True),
    ("Nora cried.", "It was sad, and when Tom cried we all did.", False),           # "we" did too
    ("Nora cried when they left.", "We left early. When we left, Tom cried.", True),
    ("Nora called the school.", "Mom called the school this morning.", True),
    ("Nora is moving to Oslo.", "Ines is moving to Oslo, can you believe it?", True),
    ("Nora recently moved to Oslo.", "Ines moved to Oslo last month.", True),
    ("Nora drove to the airport.", "Ines drove us to the airport.", True),
])
def test_the_turn_gives_the_verb_another_subject(entry, turn, clash):
    assert screen.subject_clash(entry, "Nora", turn) is clash


@pytest.mark.parametrize("entry, filler", [
    ("Nora is a bit nervous, to be honest.", True),    # a hedged state about nothing named
    ("Nora is busy.", True),
    ("Nora is really busy these days.", True),
    ("Nora is tired all the time.", False),  # a complaint about her health, not a passing mood
    ("Nora is busy with the bakery's opening.", False),  # names what keeps her busy
    ("Nora is a bit nervous about the Oslo marathon.", False),
    ("Nora tells Nora that she twice a week, Tuesdays and Fridays.", True),  # garbled: tells herself
    ("Nora told Ines that she twice a week, Tuesdays and Fridays.", False),
    ("Nora told Nora's mom about the move to Oslo.", False),  # her mom: the possessive is no self-act
    ("Nora sends Nora a video of the harbour.", True),  # any verb with her own name as its object
    ("Nora sends Ines a video of the harbour.", False),
    ("Nora visited Nora Lindqvist, her namesake aunt, in Malmo.", False),  # a full name is someone else
    ("Nora and Ines moved to Oslo.", False),
    ("Nora brought Nora's cake to the party.", False),
])
def test_a_hedged_bare_state_is_filler(entry, filler):
    assert screen.is_filler(entry, "Nora", ["Kai"]) is filler


@pytest.mark.parametrize("entry, user", [
    # a name that is also a word or a place, with a verb that takes no person
    ("Grace says grace before every dinner with her kids.", "Grace"),
    ("Joy brings joy to her students at Hillside.", "Joy"),
    ("Jordan visited Jordan last spring with his brother.", "Jordan"),
    ("Mary Ann visits Ann every Sunday in Leeds.", "Mary Ann"),
])
def test_a_name_that_is_also_a_word_is_no_self_act(entry, user):
    assert screen.is_filler(entry, user, ["Kai"]) is False


@pytest.mark.parametrize("entry, turn, other", [
    ("Nora expressed pride in the promotion.", "That's a big promotion. You must be proud.", True),
    ("Nora is excited about the trip.", "My kids are so excited about the trip!", True),
    ("Nora is nervous about the exam.", "Ines is nervous about the exam, she barely sleeps.", True),
    ("Nora is proud of her daughter.", "I'm so proud of Maisie!", False),
    ("Nora is excited about the trip.", "We are so excited about the trip!", False),
    ("Nora is excited about the trip.", "Ines asked about it. I'm excited about the trip.", False),
    ("Nora went to a pride parade.", "Went to the pride parade with my sister, she was so proud!", False),
    ("Nora is exhausted after the move.", "> You must be exhausted after the move!\nHaha, not really.", False),  # quoted: not read
    ("Nora bakes bread.", "You must be proud of that bread, I bake it every day.", False),  # no feeling in the entry
])
def test_a_feeling_the_turn_gives_someone_else(entry, turn, other):
    assert screen.feeling_of_other(entry, "Nora", turn) is other


def test_a_users_name_ending_in_s_owns_her_things():
    assert screen.subject_clash("James's guitar is out of tune.", "James", "Ugh, James' guitar is out of tune again.") is False
    assert screen.subject_clash("James's guitar is out of tune.", "James", "Ugh, Lucas' guitar is out of tune again.") is True


@pytest.mark.parametrize("entry, turn, before, borrowed", [
    # "won" and "Bergen" are only in the other speaker's first-person news
    ("Nora won a chess tournament in Bergen.", "That chess tournament sounds intense!",
     "I won a chess tournament in Bergen last week.", True),
    ("Nora won a chess tournament in Bergen.", "I won a chess tournament in Bergen.", "Tell me about chess.", False),
    # the other side asked: the words the user's turn lacks are not their own news
    ("Nora visited Paris last spring.", "Yes, last spring, it was amazing.", "Have you ever visited Paris?", False),
    # only a name comes from the other turn: the user's answer carries the fact
    ("Nora has been to Paris twice.", "Yes, I have been twice.", "I love Paris! Have you been?", False),
    # the user says it holds for them too
    ("Nora works as a nurse at the hospital.", "Me too, at the same hospital.", "I work as a nurse.", False),
    # one word of the other's is not their news
    ("Nora started working at a bakery.", "I've been working at a bakery since I moved.", "I started a new job.", False),
])
def test_the_other_speakers_news_restated_about_the_user(entry, turn, before, borrowed):
    assert screen.borrowed_from_other(entry, "Nora", turn, before) is borrowed


@pytest.mark.parametrize("entry, turn, before, reaction", [
    ("Nora is interested in the harbour views.", "Loving the harbour views! Where was that?",
     "Our hotel had wonderful harbour views.", True),
    ("Nora loves harbour views.", "I love harbour views, I grew up by the sea.", "Our hotel had harbour views.", False),
    # an answer to the other's question is the user's own
    ("Nora loves hiking.", "Love hiking, especially in autumn.", "Do you love hiking?", False),
    # more than what the other side showed
    ("Nora enjoys the harbour walks.", "I walk along the harbour every evening.", "Here is a photo of the harbour.", False),
])
def test_a_reaction_clause_to_what_the_other_side_said(entry, turn, before, reaction):
    assert screen.reaction_to_other(entry, "Nora", before, turn) is reaction


@pytest.mark.parametrize("entry, turn, before, echo", [
    # the other side's news, echoed back with no first person: a reaction of any length
    ("Nora is excited about the regatta.", "Wow, they look strong! Can't wait to see them win the regatta.",
     "Those are my rowers, they race at the harbour regatta in May.", True),
    ("Nora likes the oak floor's warm colour and grain.", "Sounds lovely! Oak is perfect, such a warm colour and grain.",
     "We picked an oak floor for the cafe: warm colour, nice grain.", True),
    # the user's own clause: "I" / "my" makes it theirs
    ("Nora rows at the harbour regatta.", "Oh nice, I row at the harbour regatta too!",
     "Those are my rowers, they race at the harbour regatta in May.", False),
    # a word of the user's own beside the echo: news, not an echo
    ("Nora trained for the regatta in Porto.", "Trained for the regatta in Porto last year!",
     "Those are my rowers, they race at the harbour regatta in May.", False),
    # a confirmed number is a fact
    ("Nora's budget is 900 euros.", "Yes, 900 euros, exactly.", "So the budget is 900 euros.", False),
    # the other side only asked
    ("Nora likes oak floors.", "Oak floors, always.", "Do you like oak floors?", False),
    # any first person in the turn makes it the user's own ("I go every summer")
    ("Nora loves hiking in the hills.", "Hiking in the hills? I go every summer, love it.",
     "Hiking in the hills is the best.", False),
    ("Nora likes jazz.", "Jazz is the best, it's all I listen to when I study.", "Jazz is the best music for studying.", False),
    # what the other side says of the user is no echo
    ("Nora loves hiking with her dog.", "Yes, hiking with the dog is the best part of the week!",
     "So you love hiking with your dog.", False),
    # "wants" is a plan, not a stance; a named place may be the user's own
    ("Nora wants to visit the coast.", "Gonna visit the coast for sure!", "The coast is lovely in spring.", False),
    ("Nora loves Lisbon.", "Lisbon is the best!", "Lisbon is lovely in spring.", False),
    # most of the words must come from the other side; a number is a confirmation
    ("Nora is excited about the regatta and the crew dinner.", "Can't wait for the regatta and the crew dinner!",
     "They race at the harbour regatta in May.", False),
    ("Nora likes the 900 euro budget.", "Sounds fine, 900 euros works.", "The budget is 900 euros.", False),
    # "me too": the user says it of themselves
    ("Nora loves rowing because it is calm and strong.", "Yeah, me too! Rowing is so calm and strong.",
     "I love rowing, it's so calm and strong!", False),
    # an action, not a stance: borrowed_from_other decides
    ("Nora is racing at the harbour regatta.", "Racing at the harbour regatta!",
     "Those are my rowers, they race at the harbour regatta in May.", False),
    # the other side's news in another form of its verb ("won" / "winning", "rode" / "riding")
    ("Nora is happy about winning the cup.", "Wow! Winning the cup is amazing! Which race was it?",
     "My crew won the cup at the harbour regatta.", True),
    ("Nora is excited about riding the ferry.", "Riding the ferry, how fun!", "We rode the ferry to the islands.", True),
    # a word no form of which the other side said is the user's own
    ("Nora is happy about winning the medal.", "Wow! Winning the medal is amazing!",
     "My crew won the cup at the harbour regatta.", False),
])
def test_an_echo_of_the_other_speakers_turn(entry, turn, before, echo):
    assert screen.reaction_to_other(entry, "Nora", before, turn) is echo


@pytest.mark.parametrize("text, filler", [
    ("Nora will talk to you soon.", True),                       # sign-off
    ("Nora will have a next chat with you.", True),
    ("Nora believes it is essential.", True),                    # an opinion with no referent
    ("Nora is proud of Kai for finishing the marathon.", True),  # praise of the other speaker
    ("Nora is kind to Kai.", True),
    ("Nora is proud of her son Leo for finishing the marathon.", False),  # a third party the user told about
    ("Nora will see the dentist again next week.", False),
    ("Nora's son starts kindergarten in May.", False),
    # opinions and pride with a referent of their own stay
    ("Nora feels that her job is too stressful.", False),
    ("Nora believes that kids should learn to cook.", False),
    ("Nora is proud to be a nurse.", False),
    ("Nora is kind to animals.", False),
    # dialogue acts addressed to the other speaker, and a copied line
    ("Nora congratulated Kai.", True),
    ("Nora is asking Kai about anything new.", True),
    ("Nora says 'Let's dance!'", True),
    ("Nora asks, 'Could you send me the recipe?'", True),   # any verb of speech
    ("Nora exclaimed: \"What a view!\"", True),
    ("Nora added that 'it was worth it'", True),
    ("Nora asked her landlord for a new lease in May.", False),       # no quotation: an act with news
    # the quotation must run to the end: a title, or a quote with news after it, is a fact
    ("Nora added 'Becoming Nicole' to her reading list.", False),
    ("Nora answered \"yes\" to the job offer from Acme.", False),
    ("Nora said 'I quit' and left for Lyon.", False),
    ("Nora told Kai about her new job at Acme.", False),   # news wrapped in a dialogue act
    ("Nora invited Kai to her wedding in May.", False),
    ("Nora asked her doctor about the rash.", False),
    # a short claim about an unnamed "it"
    ("Nora considers it special to her.", True),
    ("Nora is excited to see where it takes her.", True),
    ("Nora finds it hard to sleep before night shifts.", False),
    ("Nora finds it wonderful to chat.", True),
    ("Nora sold it to Teo.", False),
    # a reaction joined to news: the news keeps it
    ("Nora is glad she has Kai in her corner and is looking for a studio downtown.", False),
    ("Nora is glad she has Kai in her corner.", True),
    ("Nora moved this spring.", False),
    ("Nora looks forward to hearing more about Kai's painting class.", True),
    # a stance toward the other speaker: conversation meta
    ("Nora acknowledges Kai's patience and support.", True),
    ("Nora has been feeling grateful for Kai's help.", True),
    ("Nora is thrilled to build something real together with Kai.", True),
    ("Nora and Kai are motivated and lifting each other up.", True),
    ("Nora is being kind to Kai's parents.", True),
    ("Nora appreciates Kai's advice and is moving to Lyon in June.", False),  # news beside it
    ("Nora and Kai will go to a salsa class on Friday.", False),             # a joint plan
    ("Nora told Kai about her sister's wedding in Porto.", False),
    ("Nora is excited about her trip to Lyon.", False),                      # names no other speaker
    # a stance that comes with news of its own stays
    ("Nora is excited to visit Kai in Tokyo next month.", False),
    ("Nora and Kai are excited to adopt a puppy next week.", False),
    ("Nora is proud of her own painting, which Kai liked.", False),
    ("Nora was happy to help Kai move into his new apartment.", False),
    ("Nora loves hiking with Kai on weekends.", False),
    ("Nora and Sam support each other.", False),                             # Sam is a third party
    ("Nora and Tom are excited about Kai's visit in May.", False),
])
def test_sign_offs_and_praise_of_the_other_speaker_are_filler(text, filler):
    assert screen.is_filler(text, "Nora", ["Kai"]) is filler


@pytest.mark.parametrize("text, filler", [
    ("Nora thanked the other person for the salsa class they taught.", True),
    ("Nora wants to share her favourite tea with the user.", True),
    ("Nora told the other speaker that she moved.", True),
    ("Nora told the user yesterday about her cat.", True),
    # compound nouns and other sides are not parties of the chat
    ("Nora leads the user research team at Spotify.", False),
    ("Nora is the user of a Pixel 8.", False),
    # what the user wants of the assistant is a preference worth keeping
    ("Nora wants the assistant to reply in French.", False),
    ("Nora works as the assistant to the director.", False),
    ("Nora's office moved to the other side of town.", False),
    ("Nora has a user-friendly website for her bakery.", False),
])
def test_an_entry_that_names_a_party_of_the_chat_by_role_is_filler(text, filler):
    assert screen.is_filler(text, "Nora", ["Kai"]) is filler


async def test_a_reply_that_restates_the_other_speakers_news_is_discarded():
    rows = [("a1", "assistant", "Big news: I won a chess tournament in Bergen last week!"),
            ("u2", "user", "That chess tournament sounds intense! I only play online with my uncle.")]
    kept, why, _ = await screened(rows, [("Nora won a chess tournament in Bergen.", ["u2"]),
                                         ("Nora plays chess online with her uncle.", ["u2"])])
    assert kept == ["Nora plays chess online with her uncle."]
    assert why == {"Nora won a chess tournament in Bergen.": BORROWED_REASON}


@pytest.mark.parametrize("entry, turn, before, remark", [
    # the only sentence that states it has no "I": a remark on the other side's news
    ("Nora sold her old camper van.", "Oh wow. Selling the old camper van must have stung. Any regrets?",
     "We finally sold our old camper van last weekend.", True),
    ("Nora is patient.", "Fun game! Being patient sure pays off in chess.", "I'm learning to be patient in chess.", True),
    # the same words in a sentence of her own: her news too
    ("Nora sold her old camper van.", "Ha, I sold my old camper van too, last spring.",
     "We finally sold our old camper van last weekend.", False),
    # a dropped "I" with news the other side never gave
    ("Nora is repainting the garden shed.", "Repainting the garden shed this week, so no hikes.",
     "Any plans for the week?", False),
    # the other side's news holds half of it, but less than the user's turn does
    ("Nora swims at the lake every morning before work.", "Lake's great. Swimming there every morning before work.",
     "I swim at the lake every weekend.", False),
    # an answer to the other side's question is the user's news
    ("Nora sold the van.", "Sold it last week, finally.", "Did you sell the van?", False),
    ("Nora adopted the puppy on Sunday.", "Yes! Adopted the puppy on Sunday.", "Did you adopt the puppy?", False),
    # the other side tells the user's news back in the second person: not their own
    ("Nora got the job at the bank.", "Getting the job at the bank is a dream.",
     "Nora, you got the job at the bank, congrats!", False),
    # no content word: nothing to weigh
    ("Nora.", "Wow, great.", "I did it.", False),
    ("Nora sold her camper van.", "Me too! Selling the camper van was hard.", "We sold our camper van.", False),
    # nothing before it from the other side
    ("Nora sold her camper van.", "Selling the camper van was hard.", "", False),
])
def test_a_remark_on_the_other_speakers_news_is_not_the_users(entry, turn, before, remark):
    assert screen.remark_on_other_news(entry, "Nora", turn, before) is remark


async def test_a_remark_on_the_other_speakers_news_is_discarded_and_her_own_news_kept():
    rows = [("a1", "assistant", "Bad luck this month: I sprained my wrist and had to stop rowing for a while."),
            ("u2", "user", "Ouch, so sorry. Rowing keeps you sane, so stopping rowing must be hard. "
                           "I started a pottery class on Tuesdays.")]
    kept, why, _ = await screened(rows, [("Nora had to stop rowing.", ["u2"]),
                                         ("Nora started a pottery class on Tuesdays.", ["u2"])])
    assert kept == ["Nora started a pottery class on Tuesdays."]
    assert why == {"Nora had to stop rowing.": REMARK_REASON}


async def test_a_short_reply_merged_with_the_other_speakers_next_turn_is_discarded():
    # the model merges "looks awesome!" with what the other side says right after it
    rows = [("a1", "assistant", "I'm pouring all my time into the bakery lately."),
            ("u2", "user", "Wow, the bakery looks awesome, you make it look easy!"),
            ("a3", "assistant", "Thanks! I'm determined to make this bakery work, whatever it takes."),
            ("u4", "user", "You will! I baked rye bread this morning. I'm determined to finish my degree this year.")]
    kept, why, _ = await screened(rows, [("Nora is determined to make her bakery work.", ["u2"]),
                                         ("Nora baked rye bread this morning.", ["u4"]),
                                         ("Nora is determined to finish her degree this year.", ["u4"])])
    assert kept == ["Nora baked rye bread this morning.", "Nora is determined to finish her degree this year."]
    assert why == {"Nora is determined to make her bakery work.": BORROWED_REASON}


@pytest.mark.parametrize("rows, entry", [
    # an answer to a question is the user's news, whatever the other side then says of theirs
    ([("a1", "assistant", "How's the new job at the hospital going?"),
      ("u2", "user", "Honestly exhausting, the night shifts are brutal."),
      ("a3", "assistant", "I worked night shifts at a hospital for two years, I know the feeling.")],
     "Nora works night shifts at the hospital."),
    # a turn in the first person tells of the user
    ([("a1", "assistant", "Guitar lessons are going well for me."),
      ("u2", "user", "Three months now, my fingers hurt so much!"),
      ("a3", "assistant", "I've been learning guitar for years and my fingers still hurt.")],
     "Nora has been learning guitar for three months."),
])
async def test_the_users_answer_is_kept_whatever_the_other_side_says_next(rows, entry):
    kept, why, _ = await screened(rows, [(entry, ["u2"])])
    assert kept == [entry] and why == {}


COACH = [("u1", "user", "My coach moved the team run to Saturday. I'm skipping it because my ankle hurts.")]


async def verified_one(rows, entry, atoms, sources=("u1",), nli=None):
    """HV of one entry citing ``sources`` on ``rows`` (``nli``, default a lenient judge); the
    decomposer answers ``atoms``."""
    s = session(rows)
    rules = {"verify": keyed({entry: atoms})}
    ctx = make_ctx(session=s, services=make_services(rules=rules, nli=nli or FakeNLI(default="entailment")))
    state = PipelineState.create(s, "Nora", dialogue_block(s, "Nora"))
    state.entries = [Entry(entry, "draft", "kept", list(sources))]
    await verify_entries(ctx, state)
    return state


async def test_a_compound_entry_keeps_the_users_clause_of_a_wrong_person_one():
    state = await verified_one(
        COACH, "Nora moved the team run to Saturday and is skipping it because her ankle hurts.",
        ["Nora moved the team run to Saturday.", "Nora is skipping the team run because her ankle hurts."])
    assert [state.entries[i].text for i in state.live_entries()] == [
        "Nora is skipping the team run because her ankle hurts."]
    assert {d.text: d.reason for d in state.discarded} == {
        "Nora moved the team run to Saturday.": "atomic fact: about another person in turn u1, not the user"}


async def test_a_compound_entry_keeps_the_users_clause_of_one_said_to_the_other_side():
    from promem_fast.stages.verify import NOT_SELF_REASON

    rows = [("u1", "user", "So excited about your move to Lyon! I ran a charity race for the shelter on Saturday.")]
    state = await verified_one(
        rows, "Nora is excited about the move to Lyon and ran a charity race for the shelter.",
        ["Nora is excited about the move to Lyon.", "Nora ran a charity race for the shelter."])
    assert [state.entries[i].text for i in state.live_entries()] == ["Nora ran a charity race for the shelter."]
    assert {d.text: d.reason for d in state.discarded} == {
        "Nora is excited about the move to Lyon.": "atomic fact: " + NOT_SELF_REASON}


async def test_a_compound_the_decomposer_repeats_beside_a_clause_is_cut_at_its_clauses():
    # the decomposer splits off the wrong-person clause but gives the compound back too:
    # judged whole, the compound would fail the screen and take the user's clause with it
    entry = "Nora moved the team run to Saturday, but she is skipping the run because her ankle hurts."
    state = await verified_one(COACH, entry, [entry, "Nora moved the team run to Saturday."])
    assert [state.entries[i].text for i in state.live_entries()] == [
        "Nora is skipping the run because her ankle hurts."]
    assert {d.text: d.reason for d in state.discarded} == {
        "Nora moved the team run to Saturday.": "atomic fact: about another person in turn u1, not the user"}
    # beside the user's clause, the repeat adds nothing that clause does not already state
    state = await verified_one(COACH, entry, [entry, "Nora is skipping the team run because her ankle hurts."])
    assert [state.entries[i].text for i in state.live_entries()] == [
        "Nora is skipping the team run because her ankle hurts."]
    # facts that do not repeat the compound stay as the decomposer wrote them
    rows = [("u1", "user", "My coach moved the team run to Saturday. I was born and raised in Lyon.")]
    state = await verified_one(rows, "Nora moved the team run to Saturday and was born and raised in Lyon.",
                               ["Nora moved the team run to Saturday.", "Nora was born and raised in Lyon."])
    assert [state.entries[i].text for i in state.live_entries()] == ["Nora was born and raised in Lyon."]


async def test_an_entry_half_in_another_script_is_rejected_by_the_screen():
    from promem_fast.stages.extract import MIXED_SCRIPT_REASON

    rows = [("u1", "user", "I stay stable with supportive friends and family.")]
    state = await verified_one(rows, "Nora stays stable with supportive朋友 and family.", [])
    assert state.live_entries() == []
    assert [d.reason for d in state.discarded] == [MIXED_SCRIPT_REASON]


async def test_a_compound_the_decomposer_gives_back_whole_is_cut_at_its_clauses():
    entry = "Nora moved the team run to Saturday, but she is skipping the run because her ankle hurts."
    state = await verified_one(COACH, entry, [entry])
    assert [state.entries[i].text for i in state.live_entries()] == [
        "Nora is skipping the run because her ankle hurts."]
    assert screen.split_clauses("Nora likes tea and coffee.", "Nora") == ["Nora likes tea and coffee."]
    assert screen.split_clauses("Nora likes tea but not coffee and plays chess on Sundays.", "Nora") == [
        "Nora likes tea but not coffee and plays chess on Sundays."]
    assert screen.split_clauses("Nora wants a dog, but her landlord does not allow pets.", "Nora") == [
        "Nora wants a dog.", "Nora's landlord does not allow pets."]
    assert screen.split_clauses("Nora wants a dog, but their landlord does not allow pets.", "Nora") == [
        "Nora wants a dog.", "their landlord does not allow pets."]
    assert screen.split_clauses("Nora's mom is retired and they live in Spain.", "Nora") == [
        "Nora's mom is retired and they live in Spain."]


@pytest.mark.parametrize("entry, turn, before, clash", [
    # a subject-less clause that goes on in the second person, about what the other just said
    ("Nora is restoring an old sailboat.", "Restoring an old sailboat - you're so patient!",
     "I'm restoring an old sailboat this winter.", True),
    ("Nora is restoring an old sailboat.", "Restoring an old sailboat - I'm so proud of it!",
     "I'm restoring an old sailboat this winter.", False),
    # the user's own news with a word to the other side
    ("Nora booked flights to Lisbon.", "Finally booked flights to Lisbon - you were right about the prices!",
     "Prices drop in March.", False),
    ("Nora is training for a marathon in May.", "Training for a marathon in May - you should come!", "", False),
])
def test_a_subjectless_clause_about_the_other_side(entry, turn, before, clash):
    assert screen.subject_clash(entry, "Nora", turn, before) is clash


@pytest.mark.parametrize("entry, turn, to_other", [
    ("Nora will get through it.", "It may be tough, but you will get through it!", True),
    ("Nora takes breaks to dance.", "Don't forget to take breaks to dance!", True),
    ("Nora's family will be lucky.", "Your family will be so lucky to have you!", True),
    ("Nora has time to rehearse.", "Cool! Do you have time to rehearse this week?", True),
    ("Nora will make time to dance.", "Gotta make time to dance, that's for sure.", False),  # casual, no "I"
    ("Nora takes breaks to dance.", "I take breaks to dance when you are busy.", False),
    ("Nora was inspired by the stories.", "The stories were so inspiring!", False),
    # right after a sentence to the other side, a sentence with no person of its own goes on about them
    ("Nora is planting a garden for the kids.",
     "You're doing something wonderful! Planting a garden for the kids is so kind.", True),
    # not two sentences on, and not after a generic "yourself" or a question
    ("Nora ran the race in 3 hours.", "You're amazing! That race was brutal. Ran it in 3 hours.", False),
    ("Nora's painting stands for acceptance.",
     "Here's one - it's all about being yourself. The painting stands for acceptance.", False),
    ("Nora ran the race in 3 hours.", "Did you run it too? Ran it in 3 hours.", False),
    ("Nora started a new job at the bakery.", "Thank you! Started a new job at the bakery last week.", False),
    # a co-subject is who the turn addresses, not what it states: the clause is found without it
    ("Nora and Kai had a great day at the wedding.", "Congrats, Kai! You both looked great on your wedding day!", True),
    ("Nora and Kai had a great day at the wedding.", "Kai and I had a great day at the wedding!", False),
    # "Never" before a bare verb is advice; before a past form, a statement that dropped its "I"
    ("Nora gives up.", "Never give up, Kai!", True),
    ("Nora visited Lisbon once.", "Lisbon?! Never had a chance to visit. Been only to Porto once.", False),
    ("Nora has been to Lisbon.", "Never been to Lisbon, sadly.", False),
])
def test_a_sentence_said_to_the_other_side(entry, turn, to_other):
    assert screen.said_to_other(entry, "Nora", turn) is to_other


async def test_a_fact_from_advice_to_the_other_side_is_discarded():
    from promem_fast.stages.verify import NOT_SELF_REASON

    rows = [("a1", "assistant", "Opening the studio is so stressful."),
            ("u2", "user", "It may be tough! Make sure to take breaks. I nap every afternoon.")]
    s = session(rows)
    ctx = make_ctx(session=s, services=make_services(rules={}, nli=FakeNLI(default="entailment")))
    state = PipelineState.create(s, "Nora", dialogue_block(s, "Nora"))
    state.entries = [Entry("Nora takes breaks.", "detail", "recovered", ["u2"]),
                     Entry("Nora makes sure to take breaks.", "draft", "kept", ["u2"]),
                     Entry("Nora naps every afternoon.", "detail", "recovered", ["u2"])]
    await verify_entries(ctx, state)
    # a re-read and a draft entry alike: read one by one, drafts from advice were wrong too
    assert [state.entries[i].text for i in state.live_entries()] == ["Nora naps every afternoon."]
    # "Make sure ..." opens with a bare verb, but the turn neither says "you" nor answers a
    # request for tips: not read as an imperative; both are said to the other side
    assert {d.reason for d in state.discarded} == {NOT_SELF_REASON}


async def test_a_third_partys_fact_pinned_on_the_user_is_discarded():
    rows = [("u1", "user", "My brother Teo moves to Oslo in June. I will help him pack.")]
    kept, why, _ = await screened(rows, [("Nora moves to Oslo in June.", ["u1"]),
                                         ("Nora will help her brother pack.", ["u1"]),
                                         ("Nora's brother Teo moves to Oslo in June.", ["u1"])])
    assert kept == ["Nora will help her brother pack.", "Nora's brother Teo moves to Oslo in June."]
    assert why == {"Nora moves to Oslo in June.": "about another person in turn u1, not the user"}


# --- world knowledge -------------------------------------------------------------------------

async def test_world_knowledge_the_turn_never_states_is_discarded():
    rows = [("u1", "user", "I finally got a Siberian husky puppy!")]
    kept, why, _ = await screened(rows, [("Siberian huskies need a lot of daily exercise.", ["u1"]),
                                         ("Nora got a Siberian husky puppy.", ["u1"])])
    assert kept == ["Nora got a Siberian husky puppy."]
    assert why == {"Siberian huskies need a lot of daily exercise.": UNSTATED_REASON}


@pytest.mark.parametrize("entry, turn, unstated", [
    ("Nora's husband is a man; Nora's kids are children.", "I'm lucky to have my husband and kids.", True),
    ("Nora got a border collie; border collies are very clever dogs.", "I got a border collie!", True),
    ("Nora was a happy child.", "I grew up on a farm in Kent.", True),
    ("Nora is a nurse.", "I work as a nurse at St Mary's.", False),
    ("Nora's sister Ana is a doctor.", "My sister Ana works as a physician.", False),  # a specific kind: a paraphrase
    ("Nora's trip to Japan was a success.", "Our Japan trip went great!", False),
    ("Nora's kids are very excited.", "The kids can't wait!", False),  # an adjective: support() reads it
    ("Nora is a proud working mom of two kids.", "As a working mom of two kids I'm proud.", False),
    ("Nora's dog Rex is a rescue dog.", "Rex was a rescue, we got him in May.", False),  # "rescue" is in the turn
])
def test_a_broad_kind_the_turn_never_names_is_world_knowledge(entry, turn, unstated):
    assert screen.unstated_kind(entry, "Nora", turn) is unstated


async def test_an_entry_that_files_someone_under_an_unstated_kind_is_discarded():
    rows = [("u1", "user", "I'm lucky to have my husband and kids; they keep me going.")]
    kept, why, _ = await screened(rows, [("Nora's husband is a man.", ["u1"]),
                                         ("Nora's husband and kids keep her going.", ["u1"])])
    assert kept == ["Nora's husband and kids keep her going."]
    assert why == {"Nora's husband is a man.": KIND_REASON}


async def test_a_compound_keeps_its_stated_clause_when_the_other_files_an_unstated_kind():
    entry = "Nora's husband Tom coaches the kids' soccer team; her husband is a man."
    state = await verified_one([("u1", "user", "My husband Tom coaches the kids' soccer team.")], entry,
                               ["Nora's husband Tom coaches the kids' soccer team.", "Nora's husband is a man."])
    assert [state.entries[i].text for i in state.live_entries()] == [
        "Nora's husband Tom coaches the kids' soccer team."]
    assert {d.text: d.reason for d in state.discarded} == {"Nora's husband is a man.": "atomic fact: " + KIND_REASON}


# --- an age the turn never gives ------------------------------------------------------------

@pytest.mark.parametrize("entry, turn, before, unstated", [
    ("Nora is 8 years old now.", "8 years already! Feels like yesterday we met at that gig.", "", True),  # a duration
    ("Nora's son Leo is a 3-year-old.", "Leo has 3 teeth now and one more coming.", "", True),           # a count
    ("Nora is aged 40.", "I paid 40 dollars for the ticket at the agency.", "", True),   # "agency" is not "age"
    ("Nora's daughter is twelve years old.", "We drove twelve hours to our old cabin with my daughter.", "", True),
    ("Nora's son is 7 years old.", "We're meeting at 7 pm, there are 7 of us.", "", True),  # a time, a count
    ("Nora is 8 years old now.", "8 years already!", "How long have you two been married?", True),
    ("Nora is 39 years old.", "I'm 39 and I live in Leeds.", "", False),
    ("Nora's son is 5 years old.", "My son is 5 and loves trains.", "", False),
    ("Nora's son is 7 years old.", "Leo's 7 now!", "", False),
    ("Nora's son is 7 years old.", "He's only 7!", "", False),
    ("Nora's son is 7 years old.", "She'll be 7 next week.", "", False),
    ("Nora's son is 7 years old.", "My son, 7, loves trains.", "", False),
    ("Nora's son is 7 years old.", "We threw a party for his 7th birthday.", "", False),
    ("Nora's son is 7 years old.", "My 7 yo loves trains.", "", False),
    ("Nora's son is 7 years old.", "7!", "How old is your son?", False),   # the question gives the age
    ("Nora's niece is 7 years old.", "My niece turned 7 on Sunday.", "", False),
    ("Nora won the regional final at age fifteen.", "We won the regional final when I was fifteen.", "", False),
    ("Nora is twenty-five years old.", "I just turned 25!", "", False),     # words and digits alike
    ("Nora is 60 years old.", "I\u2018m 60 this year!", "", False),          # typographic apostrophes
    ("Nora is 39 years old.", "I was born in 1986.", "", False),             # born: the age is given
    ("Nora has been married for 8 years.", "8 years already!", "", False),   # no age in the entry
    ("Nora is 30 years old.", "We're both 30 and still dancing!", "", False),
    ("Nora won the final at age 15.", "At 15 I won the final.", "", False),
    ("Nora is twenty five years old.", "I'm 25 as of June.", "", False),    # "twenty five" is 25, not 5
    ("Nora is 30 years old.", "I'm 30 as well!", "", False),
    ("Nora's son Leo is 7 years old.", "Leo (7) loves trains.", "", False),
    ("Nora is 40 years old.", "I'm hitting 40 next month.", "", False),
    ("Nora likes a whisky aged 12 years.", "I like a whisky aged 12 years.", "", False),  # not a person's age
    ("Nora is 12 years old.", "I like a whisky aged 12 years.", "", True),
])
def test_an_age_the_turn_never_gives_is_unstated(entry, turn, before, unstated):
    assert screen.unstated_age(entry, turn, before) is unstated


async def test_a_number_of_the_turn_read_as_an_age_is_discarded():
    rows = [("a1", "assistant", "What a lovely photo! How long have you two been together?"),
            ("u1", "user", "8 years already! Time flies. We met at a jazz gig in Porto.")]
    kept, why, _ = await screened(rows, [("Nora is 8 years old now.", ["u1"]),
                                         ("Nora met her partner at a jazz gig in Porto.", ["u1"])])
    assert kept == ["Nora met her partner at a jazz gig in Porto."]
    assert why == {"Nora is 8 years old now.": AGE_REASON}


# --- an attribute of a named owner handed to the user --------------------------------------------

@pytest.mark.parametrize("entry, turn, swapped", [
    ("Nora's crust is perfect.", "Sounds great! Luigi's perfect; it's got the right crunch and crust.", True),
    ("Nora's support has given her time to study.", "Acme's flexible support policy is great. I can study now.", True),
    ("Nora's cooking is the best.", "Mom's cooking is the best, I miss it so much.", True),
    ("Nora's bike is red.", "My bike is red, just like Tom's bike.", False),              # "my bike"
    ("Nora's Acme support has helped her grow.", "Acme's support has helped me grow.", False),  # names Acme
    ("Nora's sister is a nurse.", "It's great, my sister is a nurse now.", False),
    ("Nora's garden is blooming.", "Today's sun made the whole garden bloom.", False),   # "Today's" owns nothing
    ("Nora's crust is perfect.", "Luigi's place is nice. The crust there is perfect.", False),  # another sentence
    ("Nora loves Luigi's crust.", "Luigi's crust is perfect.", False),                   # not "<user>'s X is"
    ("Nora's garden is lovely.", "Tom's here and the garden is lovely.", False),        # not Tom's garden
    ("Nora's dog is sick.", "School's out and the dog is sick.", False),
    ("Nora's support has helped her.", "Ana's supper was lovely; my support network helped.", False),  # "supper"
    ("Nora's cooking is better.", "Tom's cooking is great, but Nora's cooking is better.", False),
])
def test_an_attribute_of_a_named_owner_is_not_the_users(entry, turn, swapped):
    assert screen.owner_swapped(entry, "Nora", turn) is swapped


async def test_an_attribute_handed_from_a_named_owner_to_the_user_is_discarded():
    rows = [("a1", "assistant", "I'm after Luigi's pizza dough for the bakery."),
            ("u1", "user", "Sounds great! Luigi's perfect; it's got the right crunch and crust. I bake on Sundays.")]
    kept, why, _ = await screened(rows, [("Nora's crust is perfect.", ["u1"]),
                                         ("Nora bakes on Sundays.", ["u1"])])
    assert kept == ["Nora bakes on Sundays."]
    assert why == {"Nora's crust is perfect.": OWNER_REASON}


# --- a thing the other speaker calls "my ..." and the user "your ..." ---------------------------

HOLDER_USER = ["How's your pottery studio going? Found a kiln yet?", "My garden is blooming, and I got a new job."]
HOLDER_OTHER = ["Still looking for a kiln for my pottery studio.", "My students loved the glaze class!",
                "Our business plan is done."]


@pytest.mark.parametrize("entry, held", [
    ("Nora is determined to make her pottery studio work.", True),
    ("Nora found a kiln for her own pottery studio.", True),      # "own" says nothing of whose
    ("Nora's pottery studio is downtown.", True),                  # "<user>'s" as "her"
    ("Nora loves her garden.", False),                             # the user says "my garden"
    ("Nora got a job at her new office.", False),                  # no one says "my office"
    ("Nora is proud of Kai and her pottery studio.", False),       # "her" may be Kai
    ("Nora teaches her students.", False),                         # the user never says "your students"
    ("Nora finished her business plan.", False),                   # the user never says "your business plan"
    ("Nora bought a kiln for her studio.", True),                  # "my pottery studio" / "your pottery studio"
    ("Nora bought a kiln for her shed.", False),                   # no one says "my shed" or "your shed"
])
def test_a_thing_the_other_speaker_calls_mine_is_not_the_users(entry, held):
    assert screen.held_by_other(entry, "Nora", HOLDER_USER, HOLDER_OTHER, ["Kai"]) is held


def test_a_thing_the_premise_turn_says_as_the_users_own_stays_hers():
    users = ["How are your kids?", "Took the kids to the zoo on Sunday."]
    other = ["My kids are great, thanks!"]
    # both speakers have kids: the premise turn says "the kids", not "your kids"
    assert not screen.held_by_other("Nora took her kids to the zoo.", "Nora", users, other, ["Kai"],
                                    "Took the kids to the zoo on Sunday.")
    # a premise turn that says it only as "your ..." (or not at all) leaves it the other's
    assert screen.held_by_other("Nora loves her kids.", "Nora", users, other, ["Kai"], "How are your kids?")
    assert screen.held_by_other("Nora loves her kid.", "Nora", users, other, ["Kai"], "Wow!")  # singular


def test_a_thing_held_by_the_other_needs_both_sides_of_the_session():
    assert not screen.held_by_other("Nora is determined to make her pottery studio work.", "Nora", [], HOLDER_OTHER)
    assert not screen.held_by_other("Nora is determined to make her pottery studio work.", "Nora", HOLDER_USER, [])


async def test_a_thing_of_the_other_speaker_given_to_the_user_is_discarded():
    rows = [("a1", "assistant", "Still looking for a kiln for my pottery studio."),
            ("u1", "user", "How's your pottery studio going?"),
            ("a2", "assistant", "Slowly, it's been quite a journey."),
            ("u2", "user", "I'm determined to make it work this year, and to finish my first vase this week.")]
    kept, why, _ = await screened(rows, [("Nora is determined to make her pottery studio work.", ["u2"]),
                                         ("Nora is determined to finish her first vase this week.", ["u2"])])
    assert kept == ["Nora is determined to finish her first vase this week."]
    assert why == {"Nora is determined to make her pottery studio work.": HELD_BY_OTHER_REASON}


# --- a relation the dialogue never gives that name ------------------------------------------------

CIRCLE = ("A few people matter to me: OkaforAda is my Colleague, Ada and I run the night shift together. "
          "BrennanLiam is my Friend, Liam is a friend who shares my love of Teodor Varga's films, and we "
          "often go to screenings together. My cousin Rosa visits every spring. Mika and I are old friends.")


@pytest.mark.parametrize("entry, unstated", [
    # the name of the film-maker the friend admires, made a friend too
    ("Teodor Varga is a friend of Liam and a friend of Nora.", True),
    # the colleague made a friend
    ("OkaforAda is a Friend of Nora, and they run the night shift together.", True),
    ("Ada is Nora's cousin.", True),
    # ties the lists, and everyday speech, give
    ("Ada is a colleague of Nora.", False),
    ("OkaforAda is a Colleague of Nora.", False),
    ("Liam is a close friend of Nora.", False),
    ("Rosa is Nora's cousin.", False),
    ("Mika is an old friend of Nora.", False),
    # not a named person's relation
    ("She is a friend of Nora.", False),
    ("Nora is a friend of Liam.", False),
    ("Nora often goes to screenings with Liam.", False),
])
def test_a_relation_needs_a_turn_that_gives_it_that_name(entry, unstated):
    assert screen.relation_unstated(entry, "Nora", [CIRCLE], ["Kai"]) is unstated


@pytest.mark.parametrize("entry, turn", [
    # a job or someone else's relation is no relation to the user
    ("Ana is a teacher at Lincoln High.", "My friend Ana teaches at Lincoln High."),
    ("Ana is Liam's sister.", "Liam's sister Ana joined us."),
    ("Mia is a friend of Nora's daughter.", "My daughter's friend Mia came over."),
    # lists, contractions, "of mine", a pronoun after the name, in-laws
    ("Mika is a friend of Nora.", "I had dinner with my friends Ana, Liam and Mika."),
    ("Liam is a friend of Nora.", "Ana and Liam are my friends."),
    ("Ana is Nora's best friend.", "Ana's my best friend."),
    ("Ana is Nora's best friend.", "I had lunch with Ana today. She is my best friend."),
    ("Linda is a close friend of Nora.", "Linda, a close friend of mine, called."),
    ("Ana is a friend of Nora.", "I'm friends with Ana."),
    ("Ana is Nora's cousin.", "Ana \u2013 my cousin \u2013 lives in Porto."),
    ("Ana is Nora's mother-in-law.", "My mother-in-law Ana visited."),
    # another word for the same relation
    ("Tomas is a colleague of Nora.", "My coworker Tomas is funny."),
    ("Ana is Nora's mother.", "My mom Ana is funny."),
    ("Tomas is Nora's neighbour.", "My neighbor Tomas is funny."),
    # a turn in another language says nothing these patterns read
    ("Ana is Nora's cousin.", "Mi prima Ana vive en Oporto y trabaja como enfermera."),
])
def test_a_relation_a_turn_gives_in_other_words_is_kept(entry, turn):
    assert not screen.relation_unstated(entry, "Nora", [turn])


def test_a_name_inside_a_longer_name_gives_it_no_relation():
    assert screen.relation_unstated("Ana is a friend of Nora.", "Nora", ["Diana is my friend."])


def test_a_relation_is_not_read_in_turns_that_are_not_english():
    turns = ["Meine Kollegin Ada und ich arbeiten nachts zusammen."]
    assert not screen.relation_unstated("Ada is a friend of Nora.", "Nora", turns)
    assert not screen.relation_unstated("Ada is a friend of Nora.", "Nora", [])


async def test_a_relation_pinned_on_the_wrong_name_is_discarded():
    rows = [("a1", "assistant", "Who are the people closest to you?"), ("u1", "user", CIRCLE)]
    kept, why, _ = await screened(rows, [("Teodor Varga is a friend of Liam and a friend of Nora.", ["u1"]),
                                         ("Rosa is Nora's cousin.", ["u1"])])
    assert kept == ["Rosa is Nora's cousin."]
    assert why == {"Teodor Varga is a friend of Liam and a friend of Nora.": RELATION_REASON}


# --- the speaker said to be dead ----------------------------------------------------------------

@pytest.mark.parametrize("entry, dead", [
    ("Nora is deceased.", True),
    ("Nora passed away last spring.", True),
    ("Nora has died.", True),
    ("Nora's grandparents are deceased.", False),
    ("Nora has been dead tired all week.", False),
    ("Nora was dead set on the red bike.", False),
    ("Nora's uncle Tomas died in 2019.", False),
    # idioms and games
    ("Nora died laughing at the movie.", False),
    ("Nora died of embarrassment at the party.", False),
    ("Nora died three times on the final boss.", False),
    ("Nora was dead against the plan.", False),
])
def test_the_speaker_is_not_dead(entry, dead):
    assert screen.speaker_dead(entry, "Nora") is dead


async def test_a_list_item_about_the_parents_is_not_pinned_on_the_user():
    rows = [("a1", "assistant", "Tell me about your family."),
            ("u1", "user", "Both grandparents are deceased, Widowed, Two children.")]
    kept, why, _ = await screened(rows, [("Nora is deceased.", ["u1"]), ("Nora has two children.", ["u1"])])
    assert kept == ["Nora has two children."]
    assert why == {"Nora is deceased.": DEAD_SPEAKER_REASON}


# --- a phrase of the other speaker's turn pinned on the user ------------------------------------

USER_TURNS = ["I think it's vital to keep talking about grief and loss. People have been so warm to me.",
              "Yes, I'll keep writing my column every Sunday."]


@pytest.mark.parametrize("entry, other, copied", [
    # the reply's words, one of them ("build") never the user's
    ("Nora thinks it is vital to build warmth, trust, and courage.",
     "Your column helps build warmth, trust, and courage in people.", True),
    ("Nora writes a column to help readers heal after loss and grief.",
     "Your words help readers heal after loss and grief, Nora.", True),
    # the user's own words, in the other's order ("grief and loss" / "loss and grief")
    ("Nora keeps talking about loss and grief.", "So brave to keep talking about loss and grief!", False),
    # three words in a row are not a phrase
    ("Nora writes a weekly column.", "A weekly column is a big job.", False),
    # four words in a row with two content words ("dance", "class") are not one either
    ("Nora went to a dance class.", "So you went to a dance class!", False),
    # a question of the other side is their words too
    ("Nora enjoyed the jazz night at Blue Note.", "Did you enjoy the jazz night at Blue Note?", True),
    # names do not count as content words ("Nora" is the user, "Kai" the other speaker)
    ("Nora keeps writing to Kai Okafor daily.", "Thanks for writing to Kai Okafor daily!", False),
    # a phrase the user says too
    ("Nora keeps writing her column every Sunday.", "So you keep writing your column every Sunday?", False),
])
def test_a_phrase_of_the_other_turn_that_the_user_never_says(entry, other, copied):
    assert screen.phrase_from_other(entry, "Nora", USER_TURNS, [other], ["Kai"]) is copied


def test_a_phrase_counts_only_from_a_turn_the_entry_cites_or_the_reply():
    entry = "Nora thinks it is vital to build warmth, trust, and courage."
    reply = "Your column helps build warmth, trust, and courage in people."
    assert not screen.phrase_from_other(entry, "Nora", USER_TURNS, [], ["Kai"])
    assert screen.phrase_from_other(entry, "Nora", USER_TURNS, [], ["Kai"], reply)


@pytest.mark.parametrize("entry, reply", [
    # a reply repeats the user's news with its names, dates and numbers: not the other's words
    ("Nora went to the Harbour Book Fair on Jan 03, 2029.", "You went to the Harbour Book Fair on Jan 03, 2029!"),
    ("Nora balances duties at Acme Freight Labs.", "Balancing duties at Acme Freight Labs is hard work."),
])
def test_a_reply_run_with_a_name_or_number_is_not_a_borrowed_phrase(entry, reply):
    assert not screen.phrase_from_other(entry, "Nora", USER_TURNS, [], ["Kai"], reply)
    # the same run in a turn the entry cites still counts
    assert screen.phrase_from_other(entry, "Nora", USER_TURNS, [reply], ["Kai"])


@pytest.mark.parametrize("cited", [
    ["u1", "a1"],   # the draft cites the reply
    ["u1"],         # the draft cites only the user's turn; the phrase is the reply's right after it
])
async def test_a_phrase_of_the_reply_is_discarded(cited):
    rows = [("u1", "user", "I write a column about grief for lonely readers. People have been so warm to me."),
            ("a1", "assistant", "Your column about grief helps lonely readers heal. Thank you!"),
            ("u2", "user", "Thanks! I write it every Sunday for the Harbour Times.")]
    copied = "Nora's column about grief helps lonely readers heal."
    kept, why, _ = await screened(rows, [(copied, cited),
                                         ("Nora writes a column every Sunday for the Harbour Times.", ["u2"])])
    assert kept == ["Nora writes a column every Sunday for the Harbour Times."]
    assert why == {copied: PHRASE_REASON}


# --- quoted text -----------------------------------------------------------------------------

@pytest.mark.parametrize("turn", [
    '> You must be worn out after the long flight!\nHaha, my aunt always says that.',
    'My aunt texted me "you must be worn out after the long flight" again.',
    'My aunt texted me \u201cyou must be worn out after the long flight\u201d again.',
])
async def test_a_quoted_line_is_not_the_users_statement(turn):
    kept, why, _ = await screened([("u1", "user", turn)], [("Nora is worn out after the long flight.", ["u1"])])
    assert kept == [] and why == {"Nora is worn out after the long flight.": QUOTED_REASON}


# --- asked, not stated -----------------------------------------------------------------------

async def test_what_the_user_asks_the_other_speaker_is_not_a_user_fact():
    rows = [("a1", "assistant", "I have been looking at places for the bakery."),
            ("u1", "user", "Nice! Did you find the right spot for the bakery yet? I signed the lease for my flat."),
            ("u2", "user", "Can you find me a quiet hotel for my trip to Oslo?")]
    kept, why, _ = await screened(rows, [("Nora found the right spot for the bakery.", ["u1"]),
                                         ("Nora signed the lease for her flat.", ["u1"]),
                                         ("Nora is planning a trip to Oslo.", ["u2"])])
    # a question with "my" tells of the user; one without it only asks
    assert kept == ["Nora signed the lease for her flat.", "Nora is planning a trip to Oslo."]
    assert why == {"Nora found the right spot for the bakery.": ASKED_REASON}


@pytest.mark.parametrize("entry, turn, asked", [
    ("Nora wants to hear her new song on Friday.", "Haha yes! Wanna hear my new song on Friday? Can't wait!", True),
    ("Nora wants to join her book club.", "Do you want to join my book club? We meet Mondays.", True),
    ("Nora is coming to her gig on Saturday.", "Ok so would you like to come to my gig on Saturday?", True),
    # the user's own want, said plainly; a question about the user's own plans
    ("Nora wants to hear the new Bjork album.", "I want to hear the new Bjork album so badly.", False),
    ("Nora is moving to Lyon in June.", "Guess what, I'm moving to Lyon in June! Want to visit?", False),
])
def test_an_offer_put_as_a_question_is_asked_not_stated(entry, turn, asked):
    assert screen.asked_only(entry, "Nora", turn) is asked


@pytest.mark.parametrize("entry, turn, urged", [
    ("Nora is hanging in there.", "Glad you're here! We'll get through this - hang in there!", True),
    ("Nora keeps going.", "Long week for you; keep going!", True),
    ("Nora is hanging in there.", "Rough month - but I'm hanging in there.", False),  # said of herself
])
def test_an_imperative_after_a_dash_is_urged(entry, turn, urged):
    assert screen.urged_only(entry, "Nora", turn) is urged


# --- said of "it" or "they", not of the user -----------------------------------------------------

@pytest.mark.parametrize("entry, turn, clash", [
    ("Nora really speaks to her.", "Yes! Flamenco is so intense and proud - it really speaks to me.", True),
    ("Nora looks elegant.", "Oh, it looks elegant! Are those your dancers?", True),
    ("Nora reflected on how far she has come.", "The talk went well. It made me reflect on how far I've come.", False),
    ("Nora took three years to finish her nursing degree.", "It took me three years to finish my nursing degree.", False),
    ("Nora was inspired to start painting again.", "It inspired me to start painting again.", False),
    ("Nora has a dream of opening a bakery.", "Saving up - it's been a dream to open a bakery.", False),
    ("Nora loves the harbour walk.", "I love the harbour walk, it calms me.", False),
    ("Nora won the regional final.", "They said I won the regional final!", False),
    ("Nora's garden looks lovely.", "It looks lovely in May.", False),  # not the user as subject
    # a pronoun for the user in a chat with an assistant
    ("She's been incredibly helpful during her move to Oslo.",
     "I joined a running club. It's been incredibly helpful during my move to Oslo.", True),
    ("He looks elegant.", "Oh, it looks elegant!", True),
    ("She has been running with a club.", "I've been running with a club. It's been great.", False),
    ("Her club looks elegant.", "Oh, it looks elegant!", False),           # a possessive, not a subject
    # "to" before a name is a preposition, not an infinitive the "it" stands for; before a
    # verb, a split infinitive or a word lemminflect does not know, it is one
    ("Nora was amazing on the way to Porto.", "It was amazing on the way to Porto!", True),
    ("Nora was thrilled to finally meet Kai.", "It was a thrill to finally meet Kai!", False),
    ("Nora dreams of livestreaming her concerts.", "It's been a dream to livestream my concerts.", False),
    # a pronoun entry is checked against things only: "she" may be the daughter
    ("She loves to bake.", "My daughter is seven. She loves to bake!", False),
])
def test_a_verb_said_of_it_is_not_the_users(entry, turn, clash):
    assert screen.said_of_it(entry, "Nora", turn) is clash


async def test_an_entry_said_of_it_is_discarded_before_nli():
    rows = [("a1", "assistant", "Here is a clip of the flamenco show."),
            ("u1", "user", "Yes! Flamenco is so intense and proud - it really speaks to me. I take classes on Tuesdays.")]
    kept, why, _ = await screened(rows, [("Nora really speaks to her.", ["u1"]),
                                         ("Nora takes flamenco classes on Tuesdays.", ["u1"])])
    assert kept == ["Nora takes flamenco classes on Tuesdays."]
    assert why == {"Nora really speaks to her.": SAID_OF_IT_REASON}


# --- who feels and who causes it, swapped ------------------------------------------------------

@pytest.mark.parametrize("entry, turn, swapped", [
    # the user made the one moved where the turn has others move an audience, or the user
    ("Nora is impressed with the choir at the gala.",
     "Yes, that's my choir! They rehearsed all month and will surely impress at the gala.", True),
    ("Nora motivates them with her cooking.", "My sisters cook with me every Sunday - they motivate me so much.", True),
    ("Nora was really inspired by her students.", "I hope my talk inspires the students next week.", True),
    # the turn uses the verb the entry's way at least once
    ("Nora is motivated by her sisters.", "My sisters cook with me every Sunday; they keep me motivated.", False),
    ("Nora was inspired by the climbers' stories.", "The climbers' stories were so inspiring! I want to try it.", False),
    ("Nora encouraged her team to enter the race.", "I spoke to my team and encouraged them to enter the race.", False),
    ("Nora motivates others with her talks.", "I hope my talks motivate others; my mentors motivate me too.", False),
    ("Nora keeps a planner to stay organized and motivated.", "I keep a planner to stay organized and motivated.", False),
    # a participle or a left-out "I" may be the speaker's own feeling; a passive, the user's act
    ("Nora is impressed with the choir.", "So impressed with the choir last night!", False),
    ("Nora feels inspired after the trip.", "Feeling super inspired after the trip!", False),
    ("Nora impressed the judges with her talk.", "The judges were impressed with my talk!", False),
    ("Nora was inspired by her story.", "Her story inspired both me and my sister.", False),
    # "herself", "him", another language: left to the other checks
    ("Nora motivates herself by running.", "Running motivates me.", False),
    ("Nora encouraged him to apply.", "I encouraged him to apply for the job.", False),
    ("Nora inspire ses élèves.", "J'inspire mes élèves chaque jour.", False),
    # a feeling verb the turn does not use is left to the other checks
    ("Nora is impressed with the new bakery.", "The new bakery is great, best bread in town.", False),
])
def test_a_feeling_verb_with_its_roles_swapped_is_caught(entry, turn, swapped):
    assert screen.reversed_feeling(entry, "Nora", turn) is swapped


async def test_an_entry_that_swaps_who_is_impressed_is_discarded_before_nli():
    rows = [("a1", "assistant", "Wow, are they yours at the gala? They sound so warm!"),
            # the verb's subject is left out after "and": the "said of it" check does not see it
            ("u1", "user", "Yeah, they're the singers of my choir! They've been rehearsing hard and will "
                           "definitely impress with their voices. We meet on Mondays.")]
    kept, why, _ = await screened(rows, [("Nora is impressed with the singers at the gala.", ["u1"]),
                                         ("Nora's choir meets on Mondays.", ["u1"])])
    assert kept == ["Nora's choir meets on Mondays."]
    assert why == {"Nora is impressed with the singers at the gala.": REVERSED_FEELING_REASON}


# --- urged on the other side, not done ---------------------------------------------------------

@pytest.mark.parametrize("entry, turn, urged", [
    ("Nora checked out her ideal pottery studio by the river.",
     "Oh wow, that must have been fun! Check my ideal pottery studio by the river.", True),
    ("Nora pushes through and it will be worth it.", "The exam is hard, but push through and it will be worth it.", False),
    ("Nora pushes through and it will be worth it.", "Push through and it will be worth it, Kai!", True),
    ("Nora is hanging in there.", "Hang in there, Kai!", True),
    ("Nora has a new bakery on Elm Street.", "Check out my new bakery on Elm Street!", False),  # verb "has"
    ("Nora checked out a studio downtown.", "Checked out a studio downtown today. Look at the light!", False),
    ("Nora keeps bees.", "I keep bees in the garden. Keep at it, Kai!", False),  # "keep" also said of herself
    ("Nora tried the new ramen place.", "Try the new ramen place on Elm Street!", True),  # any form of the verb
    ("Nora checked out the new ramen place.", "Did you check out the new ramen place?", False),  # a question
    ("Nora watches a lot of horror movies.", "Watch a lot of horror movies lately.", False),  # a habit, "I" dropped
    ("Nora hangs out with her sister on Sundays.", "Hang out with my sister on Sundays.", False),
])
def test_urged_on_the_other_side_is_not_done(entry, turn, urged):
    assert screen.urged_only(entry, "Nora", turn) is urged


# any verb's bare form opening a sentence is an imperative (lemminflect's lexicon) in a turn that
# gives advice ("you", or tips asked for); a dropped "I", a noun subject or an adverb never is
@pytest.mark.parametrize("entry, turn, previous, urged", [
    ("Nora uses a budgeting app.", "Money is tight for you? Use a budgeting app and track the coins.", "", True),
    ("Nora gathered her receipts for the tax return.", "Gather your receipts for the tax return.", "", True),
    ("Nora uses social media.", "Marketing is key. Use social media channels.", "Got any tips for marketing?", True),
    ("Nora uses social media.", "Marketing is key. Use social media channels.", "I started a shop.", False),  # no advice
    ("Nora remembers the trip.", "Remember, the trip was your idea!", "", True),  # a verb only: the clause after is not its subject
    # the user's own habits and jobs with the "I" dropped
    ("Nora works from home.", "Work from home mostly, you know how it is.", "", False),  # a habit
    ("Nora teaches piano to kids.", "Teach piano to kids, it's so rewarding.", "", False),  # no advice in the turn
    ("Nora volunteers at the shelter.", "Volunteer at the local shelter. I love it there.", "", False),
    ("Nora starts her new job on Monday.", "Start my new job Monday! Can you believe it?", "", False),  # first person
    ("Nora flies to Tokyo.", "Fly to Tokyo - tomorrow! Wish you could come.", "", False),  # a time, past the dash
    ("Nora quit smoking.", "Quit smoking. You would not believe how good it feels.", "", False),  # past = base
    ("Nora loves the new cafe.", "Love the new cafe on Elm Street! You have to go.", "", False),  # a feeling
    ("Nora read a great novel.", "Read a great novel last week - you'd love it.", "", False),  # a done deed
    # noun subjects and adverbs
    ("Nora works at the bakery.", "Work at the bakery was crazy, you wouldn't believe it.", "", False),
    ("Nora works a lot.", "Work went great, thanks for asking you!", "", False),  # a past-tense verb after it
    ("Nora dances a lot.", "Dance practice has been exhausting. How are you?", "", False),
    ("Nora dances a lot.", "Dance floors help avoid injuries, you know.", "", False),  # plural noun, then a bare verb
    ("Nora fashions her own jewelry.", "Fashion influences the whole family, you see.", "", False),  # 3rd-person verb, object
    ("Nora respects her mentor.", "Respect for standing up to him, you rock!", "", False),  # a noun before "for"
])
def test_any_verb_opening_a_sentence_is_urged(entry, turn, previous, urged):
    assert screen.urged_only(entry, "Nora", turn, previous) is urged


async def test_an_urged_entry_is_discarded_before_nli():
    rows = [("a1", "assistant", "I finally booked the venue for the show."),
            ("u1", "user", "Wow! Check my ideal pottery studio by the river. I rent a kiln there on Sundays.")]
    kept, why, _ = await screened(rows, [("Nora checked out her ideal pottery studio by the river.", ["u1"]),
                                         ("Nora rents a kiln by the river on Sundays.", ["u1"])])
    assert kept == ["Nora rents a kiln by the river on Sundays."]
    assert why == {"Nora checked out her ideal pottery studio by the river.": URGED_REASON}


# --- the writer's reading of the turn ----------------------------------------------------------

def test_an_added_reading_of_the_turn_is_flagged():
    turn = "I restored an old boat last summer. I sold my car, which means I walk to work now."
    assert screen.inferred("Nora restored an old boat, implying she is very patient.", turn)
    assert screen.inferred("Nora restored a boat, which shows her patience.", turn)
    assert not screen.inferred("Nora sold her car, which means she walks to work now.", turn)  # the turn says so
    assert not screen.inferred("Nora is showing her paintings at the fair.", turn)  # no comma: not a reading
    assert not screen.inferred("Nora restored an old boat last summer.", turn)
    # an action, or the turn's own verb, is not a reading
    assert not screen.inferred("Nora teaches kids to code, showing them how to build games.", "I show them how.")
    assert not screen.inferred("Nora hikes every weekend, reflecting on life.", "I hike and reflect on life.")
    assert screen.without_reading("Nora restored an old boat, implying she is very patient.") == "Nora restored an old boat."
    assert screen.without_reading("Nora restored an old boat.") is None


async def test_a_compound_with_a_reading_keeps_its_stated_part():
    s = session([("u1", "user", "I restored an old boat last summer.")])
    entry = "Nora restored an old boat, implying she is very patient."
    rules = {"verify": keyed({f"Entry: {entry}": ["Nora restored an old boat.", "Nora is very patient."]})}
    ctx = make_ctx(session=s, services=make_services(rules=rules, nli=FakeNLI(default="entailment")))
    state = PipelineState.create(s, "Nora", dialogue_block(s, "Nora"))
    state.entries = [Entry(entry, "draft", "kept", ["u1"])]
    await verify_entries(ctx, state)
    e = state.entries[0]
    # flagged as a whole (inferred), so decomposed; the reading finds no support in the turn
    # (without the flag the lenient judge keeps the entry as written)
    assert [(a.text, a.action) for a in e.atomic_facts] == [
        ("Nora restored an old boat.", "kept"), ("Nora is very patient.", "discarded")]
    assert (e.text, e.status, e.discarded) == ("Nora restored an old boat.", "revised", False)
    assert "atomic fact: " + UNSTATED_REASON in {d.reason for d in state.discarded}
    # the decomposer gives the entry back whole (as the 1.5B model often does): cut before the reading
    rules = {"verify": keyed({f"Entry: {entry}": [entry]})}
    ctx = make_ctx(session=s, services=make_services(rules=rules, nli=FakeNLI(default="entailment")))
    state = PipelineState.create(s, "Nora", dialogue_block(s, "Nora"))
    state.entries = [Entry(entry, "draft", "kept", ["u1"])]
    await verify_entries(ctx, state)
    assert (state.entries[0].text, state.entries[0].discarded) == ("Nora restored an old boat.", False)


async def test_a_wish_is_not_stored_as_done():
    rows = [("u1", "user", "I want to be brave for my family - they give me strength. I'd love to visit Kyoto, "
                           "and I hope to run a marathon in May. I adopted a cat last week.")]
    kept, why, _ = await screened(rows, [("Nora is brave for her family.", ["u1"]),
                                         ("Nora visited Kyoto.", ["u1"]),
                                         ("Nora wants to be brave for her family.", ["u1"]),
                                         ("Nora hopes to run a marathon in May.", ["u1"]),
                                         ("Nora is planning a visit to Kyoto.", ["u1"]),
                                         ("Nora adopted a cat last week.", ["u1"])])
    # the wish kept as a wish, a plan, or a fact stated outside the wish, stays
    assert kept == ["Nora wants to be brave for her family.", "Nora hopes to run a marathon in May.",
                    "Nora is planning a visit to Kyoto.", "Nora adopted a cat last week."]
    assert why == {"Nora is brave for her family.": WISHED_REASON, "Nora visited Kyoto.": WISHED_REASON}


@pytest.mark.parametrize("entry, turn, wished", [
    ("Nora runs a bakery.", "I wish I could run a bakery one day.", True),
    ("Nora runs a bakery.", "I run a bakery. I want to open a second one.", False),
    ("Nora is a nurse.", "I'm a nurse, and I want to become a surgeon.", False),
    ("Nora became a surgeon.", "I'm a nurse, and I want to become a surgeon.", True),
    # "wanted to" mostly tells a story, not a wish
    ("Nora told Kai about her school talk.", "I wanted to tell you about my school talk.", False),
    # a view of the wish is not a claim that it came true
    ("Nora feels it is important to help others.", "I want to help others.", False),
    ("Nora dreams of sailing to Crete.", "I dream of sailing to Crete.", False),
    # the wish ends with its clause: what follows is stated as done
    ("Nora finished a marathon yesterday.", "I hope to see you soon and I finished a marathon yesterday.", False),
    ("Nora got a promotion.", "I'd like to celebrate because I got a promotion!", False),
    ("Nora started a new job today.", "i want to go to paris lol\ni started a new job today", False),
    ("Nora loves sushi and ramen.", "I'd like to share my food preference: I love sushi and ramen.", False),
    ("Nora painted a mural last week.", "I'd love to show you the mural I painted last week.", False),
    ("Nora went hiking last week.", "I want to tell you that I went hiking last week.", False),
    ("Nora baked a cake.", "Wanna see a pic of the cake I baked?", False),
    # its purpose is part of the wish
    ("Nora helps kids read.", "I want to study teaching so I can help kids read.", True),
    # a wish that came true, told in the past
    ("Nora visited Kyoto in May.", "I had hoped to visit Kyoto and I finally did in May!", False),
    # a paraphrase that keeps it a wish
    ("Nora is saving up to visit Kyoto.", "I'd love to visit Kyoto.", False),
    ("Nora visited Kyoto.", "I would really love to visit Kyoto.", True),
    # English markers only
    ("Nora besucht Kyoto.", "Ich möchte Kyoto besuchen.", False),
])
def test_wished_only(entry, turn, wished):
    assert screen.wished_only(entry, "Nora", turn) is wished


@pytest.mark.parametrize("entry, turn, exhorted", [
    # a collective exhortation restated as the user's view or deed
    ("Nora felt it was important to work together and build a kinder world.",
     "I'm grateful for the chance. By working together we can build a kinder world.", True),
    ("Nora can make a real difference together with Kai.", "We can make a real difference together!", True),
    ("Nora and Kai tackle life's challenges together.", "We can tackle life's challenges together!", True),
    # a "we" clause that states a fact, or says no "together"
    ("Nora went camping with her family.", "We all went camping together, it was great.", False),
    ("Nora can't afford a car.", "We can't afford a car together with the rent.", False),
    ("Nora can finally afford a house.", "We can finally afford a house together!", False),
    ("Nora and her husband built a treehouse.", "Together we built a treehouse for the kids.", False),
    ("Nora should have left earlier.", "We should have left earlier together, we missed the train.", False),
    ("Nora started hiking with her husband.", "We started hiking together, we should do it more often.", False),
    # a joint plan has a time or a will
    ("Nora and Kai will go hiking next Saturday.", "We should go hiking next Saturday!", False),
    ("Nora plans a dance session with Kai.", "We should plan a dance session!", False),
    # stated outside the exhortation too
    ("Nora builds furniture with her dad.", "I build furniture with my dad. We can build you a table too.", False),
    ("Nora runs a bakery.", "I run a bakery.", False),
    # the span ends with its clause
    ("Nora adopted a cat last month.", "We can talk later, I adopted a cat last month.", False),
    # "let's" exhorts whatever follows it, "and" included
    ("Nora wants to keep chasing her goals and making them happen.",
     "We've done so much. Let's keep chasing our goals and making them happen.", True),
    ("Nora wants to go hiking.", "Let's go hiking sometime!", True),
    # ... but a "let's" with a time is a plan, and "let's see / say / be honest" opens a statement
    ("Nora is excited about the grand opening.", "Let's make some memories tomorrow at the grand opening!", False),
    ("Nora was nervous before the interview.", "Let's just say I was nervous before the interview.", False),
    ("Nora moved to Oslo in 2019.", "Let's see, I moved to Oslo in 2019.", False),
    ("Nora loves hiking.", "I love hiking. Let's go together sometime!", False),
    # "let us" inside a sentence is permission, not an exhortation
    ("Nora's landlord lets her keep the puppy.", "Our landlord finally let us keep the puppy!", False),
    ("Nora wants to keep going.", "Let us keep going after our goals!", True),
])
def test_exhorted_only(entry, turn, exhorted):
    assert screen.exhorted_only(entry, "Nora", turn) is exhorted


@pytest.mark.parametrize("entry, turn, planned", [
    # the turn only plans, intends or owes what the entry says was done
    ("Nora has asked Mrs. Patel for a reference.", "Good idea, Mrs. Patel runs that class, I'll ask her.", True),
    ("Nora moved to Oslo.", "I'm going to move to Oslo next year.", True),
    ("Nora bought a new bike.", "I really need to buy a new bike.", True),
    ("Nora finally signed up for a pottery class.", "I'm gonna finally sign up for a pottery class.", True),
    # done once in the turn, a plan in the entry, or a past spelled as the present
    ("Nora asked Mrs. Patel for a reference.", "I asked Mrs. Patel for a reference yesterday.", False),
    ("Nora moved to Oslo.", "We might move to Oslo again, I moved there once before.", False),
    ("Nora will ask Mrs. Patel for a reference.", "I'll ask Mrs. Patel for a reference.", False),
    ("Nora plans to visit her aunt in Graz.", "I'm planning to visit my aunt in Graz.", False),
    ("Nora put the bike in the shed.", "I'll put the bike in the shed.", False),
    ("Nora is getting married next week.", "I'm going to get married next week.", False),
    # "May" the month is no modal, in the entry or the turn
    ("Nora moved to Oslo in May.", "I'm going to move to Oslo.", True),
    ("Nora ordered a rain barrel next week.", "I'm going to order a rain barrel next week.", True),
    # past perfect, a past "could" / "would", "got to" and "decided to" tell what was done
    ("Nora finished the marathon.", "I'd trained for months and I'd finished the marathon in four hours.", False),
    ("Nora bought a house.", "After the bonus came in I could finally buy a house!", False),
    ("Nora visited her grandma in Cork.", "Every summer we would visit my grandma in Cork.", False),
    ("Nora adopted a dog.", "I finally got to adopt a dog!", False),
    ("Nora painted the fence.", "I decided to paint the fence, it took all day.", False),
])
def test_planned_as_done(entry, turn, planned):
    assert screen.planned_as_done(entry, "Nora", turn) is planned


@pytest.mark.parametrize("entry, turn, hedged", [
    ("Nora is applying for a postdoc in Uppsala.", "After the defence I might apply for a postdoc in Uppsala.", True),
    ("Nora is moving to Oslo.", "We may move to Oslo next year.", True),
    ("Nora works with fashion bloggers.", "I'm thinking of working with fashion bloggers next month.", True),
    # the entry keeps the hedge, or the turn also says it plainly
    ("Nora might apply for a postdoc in Uppsala.", "After the defence I might apply for a postdoc in Uppsala.", False),
    ("Nora is considering applying for a postdoc.", "I might apply for a postdoc.", False),
    ("Nora is running the Bath half marathon.", "I'm running the Bath half marathon! I might run Bristol too.", False),
    ("Nora loves jazz.", "I could listen to jazz all day, I love jazz.", False),
    # a feeling or a passive is not a deed
    ("Nora is impressed by the choir.", "You might be impressed by the choir.", False),
])
def test_hedged_as_certain(entry, turn, hedged):
    assert screen.hedged_as_certain(entry, "Nora", turn) is hedged


async def test_a_possibility_is_not_stored_as_certain():
    from promem_fast.stages.verify import HEDGED_REASON

    rows = [("u1", "user", "I handed in my thesis on Friday. I might apply for a postdoc in Uppsala.")]
    kept, why, _ = await screened(rows, [("Nora handed in her thesis on Friday.", ["u1"]),
                                         ("Nora is applying for a postdoc in Uppsala.", ["u1"])])
    assert kept == ["Nora handed in her thesis on Friday."]
    assert why == {"Nora is applying for a postdoc in Uppsala.": HEDGED_REASON}


def test_a_month_names_no_one():
    assert screen.names_no_one("The defence is in May.", "Nora", ["Kai"]) is True
    assert screen.names_no_one("The defence of Nora is in May.", "Nora", ["Kai"]) is False
    assert screen.names_no_one("The wedding of Lukas is in May.", "Nora", ["Kai"]) is False


async def test_a_plan_is_not_stored_as_done():
    from promem_fast.stages.verify import PLANNED_REASON

    rows = [("u1", "user", "I teach maths at Hillside. Mrs. Patel runs that class, I'll ask her for a reference.")]
    kept, why, _ = await screened(rows, [("Nora teaches maths at Hillside.", ["u1"]),
                                         ("Nora asked Mrs. Patel for a reference.", ["u1"])])
    assert kept == ["Nora teaches maths at Hillside."]
    assert why == {"Nora asked Mrs. Patel for a reference.": PLANNED_REASON}


async def test_a_collective_exhortation_is_not_stored_as_the_users_view():
    from promem_fast.stages.verify import EXHORTED_REASON

    rows = [("u1", "user", "I shared my story at the library on Monday. Together we can build a kinder town.")]
    kept, why, _ = await screened(rows, [("Nora shared her story at the library on Monday.", ["u1"]),
                                         ("Nora felt it was important to build a kinder town.", ["u1"])])
    assert kept == ["Nora shared her story at the library on Monday."]
    assert why == {"Nora felt it was important to build a kinder town.": EXHORTED_REASON}


# --- the lexical fast path -------------------------------------------------------------------

async def test_near_copies_are_entailed_without_an_nli_call():
    rows = [("u1", "user", "I moved to Valencia in 2021 and I teach chemistry at a high school.")]
    s = session(rows)
    nli = FakeNLI()  # any NLI call raises
    ctx = make_ctx(session=s, services=make_services(rules={}, nli=nli))
    state = PipelineState.create(s, "Nora", dialogue_block(s, "Nora"))
    state.entries = [Entry("Nora teaches chemistry at a high school.", "draft", "kept", ["u1"])]
    await verify_entries(ctx, state)
    assert nli.pairs == [] and [(v.label, v.by) for v in state.entries[0].nli] == [("entailment", "lexical")]
    # switched off: the NLI service is asked
    nli2 = FakeNLI(default="entailment")
    ctx = make_ctx(session=s, services=make_services(rules={}, nli=nli2), lexical_entailment=False)
    state.entries = [Entry("Nora teaches chemistry at a high school.", "draft", "kept", ["u1"])]
    await verify_entries(ctx, state)
    assert len(nli2.pairs) == 1 and state.entries[0].nli[0].by == "nli"


async def test_a_negation_the_turn_does_not_say_is_not_a_near_copy():
    # every content word is in the turn, but "not" turns it around; too few shared words
    # in one clause for the polarity rule ("OkaforJohn" is no word "John")
    rows = [("u1", "user", "OkaforJohn is my Classmate, John and I studied together.")]
    s = session(rows)
    nli = FakeNLI(default="contradiction")
    rules = {"verify": keyed({"Entry: John is not": ["John is not a classmate of Nora."],
                              "Fact: John is not": {"action": "DISCARD", "revised_fact": ""}})}
    ctx = make_ctx(session=s, services=make_services(rules=rules, nli=nli))
    state = PipelineState.create(s, "Nora", dialogue_block(s, "Nora"))
    state.entries = [Entry("John is not a classmate of Nora.", "draft", "kept", ["u1"]),
                     Entry("John is a classmate of Nora.", "draft", "kept", ["u1"])]
    await verify_entries(ctx, state)
    assert {h for _, h in nli.pairs} == {"John is not a classmate of Nora."}  # asked, not lexical
    assert state.entries[0].nli[0].label == "contradiction" and state.entries[0].discarded
    assert [v.by for v in state.entries[1].nli] == ["lexical"] and not state.entries[1].discarded
    # a negation the turn says too stays a near-copy
    rows = [("u1", "user", "I'm not a fan of meat, and my classmate John cooks for me.")]
    s = session(rows)
    nli = FakeNLI()  # any NLI call raises
    ctx = make_ctx(session=s, services=make_services(rules={}, nli=nli))
    state = PipelineState.create(s, "Nora", dialogue_block(s, "Nora"))
    state.entries = [Entry("Nora is not a fan of meat.", "draft", "kept", ["u1"])]
    await verify_entries(ctx, state)
    assert nli.pairs == [] and [v.by for v in state.entries[0].nli] == ["lexical"]


async def test_screen_off_keeps_what_the_lenient_judge_accepts():
    rows = [("u1", "user", "I finally got a Siberian husky puppy!")]
    kept, why, _ = await screened(rows, [("Siberian huskies need a lot of daily exercise.", ["u1"])],
                                  screen_entries=False)
    assert kept == ["Siberian huskies need a lot of daily exercise."] and why == {}


# --- duplicates ------------------------------------------------------------------------------

async def test_dedup_keeps_the_fuller_statement_and_never_merges_opposites():
    rows = [("u1", "user", "I love jazz, but I don't like slow jazz. I play the bike to work.")]
    s = session(rows)
    emb = KeywordEmbedder(["jazz", "slow", "bike"])
    ctx = make_ctx(session=s, services=make_services(rules={}, embed=emb))
    state = PipelineState.create(s, "Nora", dialogue_block(s, "Nora"))
    state.entries = [Entry(t, "draft", "kept", ["u1"]) for t in (
        "Nora loves jazz.", "Nora doesn't like slow jazz.", "Nora loves jazz music.", "Nora bikes.",
        "Nora bikes to work.")]
    dropped = await dedup_entries(ctx, state)
    assert [state.entries[i].text for i in dropped] == ["Nora loves jazz.", "Nora bikes."]
    assert [state.entries[i].text for i in state.live_entries()] == [
        "Nora doesn't like slow jazz.", "Nora loves jazz music.", "Nora bikes to work."]
    assert [d.reason.split(" (")[0] for d in state.discarded] == [
        "near-duplicate of 'Nora loves jazz music.'", "near-duplicate of 'Nora bikes to work.'"]


async def test_dedup_drops_one_sentence_filled_with_every_name():
    rows = [("u1", "user", "can I come back after thursday and paste his written quote? Ola, Piotr and Kasia all quoted")]
    s = session(rows)
    ctx = make_ctx(session=s, services=make_services(rules={}, embed=KeywordEmbedder(["quote", "budget"])))
    state = PipelineState.create(s, "Nora", dialogue_block(s, "Nora"))
    texts = ["Nora will use Ola's written quote after Thursday.", "Nora will use Piotr's written quote after Thursday.",
             "Nora will use Kasia's written quote after Thursday.", "Nora's budget is 30,000 zł."]
    state.entries = [Entry(t, "draft", "kept", ["u1"]) for t in texts]
    dropped = await dedup_entries(ctx, state)
    assert [state.entries[i].text for i in dropped] == texts[:3]
    assert [state.entries[i].text for i in state.live_entries()] == texts[3:]
    assert {d.reason for d in state.discarded} == {TEMPLATE_REASON}


@pytest.mark.parametrize("tau_dup_nli", [0.8, None])
async def test_a_paraphrase_below_tau_dup_is_a_duplicate_only_when_the_fuller_entry_entails_it(tau_dup_nli):
    rows = [("u1", "user", "I chose an adoption agency that helps LGBTQ+ folks. I read biographies and "
                           "historical fiction. I'm 39."),
            ("u2", "user", "They help LGBTQ folks with adoption, that's why.")]
    s = session(rows)
    # cosines: 0.884, 0.866, 0.816 for the three pairs (all between tau_dup_nli and tau_dup)
    emb = KeywordEmbedder(["adoption", "lgbtq", "folks", "agency", "read", "likes", "biographies", "nora", "is",
                           "years"])
    nli = FakeNLI({"Nora chose them because they help LGBTQ folks with adoption.": "entailment",
                   "Nora likes to read biographies.": "neutral"}, default="entailment")
    ctx = make_ctx(session=s, services=make_services(rules={}, embed=emb, nli=nli), tau_dup_nli=tau_dup_nli)
    state = PipelineState.create(s, "Nora", dialogue_block(s, "Nora"))
    # the fuller entry of a pair (more content words) is the premise
    texts = ["Nora chose an adoption agency in Leeds that helps LGBTQ folks with adoption.",
             "Nora chose them because they help LGBTQ folks with adoption.",
             "Nora likes to read historical fiction.", "Nora likes to read biographies.",
             "Nora is 39 years old.", "Nora is a woman."]
    # the paraphrase comes from another turn: one of the same turn would be merged before NLI
    # (test_a_fuller_entry_of_the_same_turn_stands_for_a_shorter_one)
    state.entries = [Entry(t, "draft", "kept", ["u2" if t == texts[1] else "u1"]) for t in texts]
    dropped = await dedup_entries(ctx, state)
    if tau_dup_nli is None:
        assert dropped == [] and nli.pairs == []
        return
    assert [state.entries[i].text for i in dropped] == [texts[1]]
    # "is a woman" shares no word with "is 39 years old": NLI is not asked
    assert sorted(h for _, h in nli.pairs) == sorted([texts[1], texts[3]])
    assert [d.reason.split(" (")[0] for d in state.discarded] == [f"restates {texts[0]!r}"]
    assert state.entries[0].source_turn_ids == ["u1", "u2"]


async def test_a_fuller_entry_of_the_same_turn_stands_for_a_shorter_one():
    """75 % of an entry's words (at least 2) in a fuller entry sharing its source turn: the
    fuller stays and takes its turns; a differing object, another turn, a flipped polarity or
    a number the fuller lacks keeps both."""
    rows = [("u1", "user", "I chose Bright Home because they help LGBTQ+ folks adopt; their warmth spoke to me. "
                           "I play chess on weekends and tennis on weekends too."),
            ("u2", "user", "Bright Home helps LGBTQ+ folks adopt kids, you know."),
            ("u3", "user", "I don't play chess online. I ran 5 km along the river in Leeds with my older sister. "
                           "I like classical music and take music classes on weekends."),
            ("u4", "user", "Bright Home it is.")]
    s = session(rows)
    ctx = make_ctx(session=s, services=make_services(rules={}), tau_dup_nli=None)
    state = PipelineState.create(s, "Nora", dialogue_block(s, "Nora"))
    texts = [("Nora chose Bright Home because they help LGBTQ+ folks adopt; their warmth spoke to her.", ["u1"]),
             ("Nora chose the Bright Home agency that helps LGBTQ+ folks adopt.", ["u1", "u4"]),  # 7 of 8
             ("Nora plays chess on weekends.", ["u1"]),
             ("Nora plays tennis on weekends.", ["u1"]),                                        # 2 of 3
             ("Bright Home helps LGBTQ+ folks adopt kids.", ["u2"]),                             # other turn
             ("Nora doesn\u2019t play chess online.", ["u3"]),  # a typographic apostrophe still negates
             ("Nora plays chess online.", ["u3"]),                                                # polarity
             # 4 of 5 words, but the fuller one lacks the number
             ("Nora ran 5 km along the river in Leeds.", ["u3"]),
             ("Nora ran along the river in Leeds with her older sister.", ["u3"]),
             # "classical" and "classes" share a stem, not a word
             ("Nora likes classical music.", ["u3"]), ("Nora takes music classes on weekends.", ["u3"])]
    state.entries = [Entry(t, "draft", "kept", list(ids)) for t, ids in texts]
    dropped = await dedup_entries(ctx, state)
    assert [state.entries[i].text for i in dropped] == [texts[1][0]]
    assert [d.reason for d in state.discarded] == [
        f"restated more fully by {texts[0][0]!r} (same turn, 7 of its 8 words)"]
    assert state.entries[0].source_turn_ids == ["u1", "u4"]  # the fuller one takes its turns


@pytest.mark.parametrize("user, short, full, shared", [
    ("Caroline", "Caroline chose an adoption agency that helps LGBTQ+ folks with adoption.",
     "Caroline chose them because they help LGBTQ+ folks with adoption. Their inclusivity and support "
     "really spoke to her.", (5, 6)),
    ("Sarah", "Sarah plays chess on weekends.", "Sarah plays tennis on weekends.", (2, 3)),
    # "but" and "because" end clauses, they are not words; a user name of two words is no word
    ("Sarah Garcia", "Sarah Garcia reads novels but skips poetry.",
     "Sarah Garcia reads novels because poetry bores her.", (3, 4)),
    # a typographic apostrophe is read as the plain one: "doesn’t" is no content word
    ("Sarah Garcia", "Sarah Garcia doesn’t like energy drinks.", "Sarah Garcia likes energy drinks.", (2, 2)),
])
def test_shared_words(user, short, full, shared):
    from promem_fast.stages.verify import shared_words
    assert shared_words(short, full, user) == shared


async def test_dedup_never_drops_a_number_the_kept_entry_lacks():
    rows = [("u1", "user", "I was born on 1986-03-26, my partner on 1985-07-15. I run 5 km a day.")]
    s = session(rows)
    ctx = make_ctx(session=s, services=make_services(rules={}, embed=KeywordEmbedder(["born", "run"])))
    state = PipelineState.create(s, "Nora", dialogue_block(s, "Nora"))
    texts = ["Nora's partner was born on 1985-07-15.", "Nora was born on 1986-03-26.",
             "Nora runs every day.", "Nora runs 5 km every day.", "Nora runs 5 km."]
    state.entries = [Entry(t, "draft", "kept", ["u1"]) for t in texts]
    dropped = await dedup_entries(ctx, state)  # every pair of a keyword is at cosine 1.0
    assert [state.entries[i].text for i in dropped] == ["Nora runs every day.", "Nora runs 5 km."]
    assert [state.entries[i].text for i in state.live_entries()] == texts[:2] + ["Nora runs 5 km every day."]


def test_dedup_reads_a_number_with_thousands_separators_as_the_same_number():
    from promem_fast.stages.verify import _numbers

    assert _numbers("Sarah's monthly income is $15,600.") == _numbers("Sarah's monthly income is 15600 USD.") == {"15600"}
    assert _numbers("She saved $1,139,000 by 2024-03-26.") == {"1139000", "2024", "03", "26"}
    assert _numbers("She has 3,5 kids, 12,3456 and 1, 234") == {"3", "5", "12", "3456", "1", "234"}


async def test_dedup_merges_the_same_amount_written_two_ways():
    rows = [("u1", "user", "My monthly income is 15600 USD, so $15,600 a month.")]
    s = session(rows)
    ctx = make_ctx(session=s, services=make_services(rules={}, embed=KeywordEmbedder(["income"])))
    state = PipelineState.create(s, "Nora", dialogue_block(s, "Nora"))
    texts = ["Nora's monthly income is 15600 USD.", "Nora's monthly income is $15,600."]
    state.entries = [Entry(t, "draft", "kept", ["u1"]) for t in texts]
    dropped = await dedup_entries(ctx, state)
    assert len(dropped) == 1 and len(state.live_entries()) == 1


def test_dedup_runs_in_the_pipeline_and_can_be_switched_off():
    from conftest import promem_rules

    s = session([("u1", "user", "I adopted a puppy named Max yesterday."),
                 ("u2", "user", "Max is a puppy.")], user="Alice")
    rules = promem_rules()
    rules.update(details=const({"u1": [], "u2": []}), events=const([]), relations=const([]),
                 draft=const([{"fact": "Alice adopted a puppy named Max yesterday.", "turns": ["u1"]},
                              {"fact": "Alice adopted a puppy named Max.", "turns": ["u2"]}]))
    g = Extractor(make_config(), make_services(rules=rules, nli=FakeNLI(default="entailment"))).extract(s)
    assert [e.text for e in g.events] == ["Alice adopted a puppy named Max yesterday."]
    assert [d.reason.split(" (")[0] for d in g.discarded] == [
        "near-duplicate of 'Alice adopted a puppy named Max yesterday.'"]
    g2 = Extractor(make_config(dedup=False), make_services(rules=rules, nli=FakeNLI(default="entailment"))).extract(s)
    assert len(g2.events) == 2 and "no-dedup" in g2.ablations


# --- non-English -----------------------------------------------------------------------------

def test_an_age_in_years_is_supported_by_the_number_alone():
    # "I'm 41, is that crazy?" states the age the re-read writes as "is 41 years old"
    assert screen.support("Nora is 41 years old.", "Nora", "Hi. I'm 41, is that crazy?") == 1.0
    assert screen.support("Nora's son is 9-year-old.", "Nora", "My son is 9 and loves maths.") == 1.0
    # the number itself still has to be there
    assert screen.support("Nora is 42 years old.", "Nora", "Hi. I'm 41, is that crazy?") == 0.0
    assert screen.predicate_words("Nora has worked at the bakery for 3 years.", "Nora")[-2:] == ["3", "years"]


def test_support_ignores_resolved_dates_and_the_users_name_in_scripts_without_spaces():
    turn = "我昨天在杭州买了一辆自行车。"
    assert screen.support("李雷于2023-05-07在杭州买了一辆自行车。", "李雷", turn) == 1.0
    assert screen.support("李雷在北京卖了一台电脑。", "李雷", turn) < screen.MIN_SUPPORT
    # "fährt" / "fahre" share too few character pairs; "nach" and "Köln" count, the date does not
    assert screen.support("Nora fährt am 2024-03-11 nach Köln.", "Nora", "Ich fahre nächsten Montag nach Köln.") == 2 / 3


async def test_non_english_facts_keep_their_language_and_names():
    rows = [("u1", "user", "Ich fahre nächsten Montag mit Jürgen nach Köln."),
            ("a2", "assistant", "Gute Reise!")]
    kept, why, _ = await screened(rows, [("Nora fährt am 2024-03-11 mit Jürgen nach Köln.", ["u1"])])
    assert kept == ["Nora fährt am 2024-03-11 mit Jürgen nach Köln."] and why == {}


async def test_an_entry_written_in_another_language_is_restated_in_its_turns():
    from promem_fast.stages.verify import restore_language

    rows = [("u1", "user", "Ich fange nächsten Montag bei Siemens in München an."),
            ("u2", "user", "Morgen fahre ich mit dem Rad zur Arbeit."),
            ("u3", "user", "Nächste Woche besuche ich meine Tante in Graz.")]
    s = session(rows, "Jürgen")
    rules = {"verify": keyed({
        "Jürgen starts at Siemens": json.dumps("Jürgen fängt nächsten Montag bei Siemens in München an."),
        # a rewrite the turn does not state is not kept
        "Jürgen cycles": json.dumps("Jürgen fährt mit dem Auto nach Berlin."),
        # nor one with a calendar date the turn does not resolve to (next week is 2024-03-11)
        "Jürgen visits": json.dumps("Jürgen besucht am 5. März seine Tante in Graz.")})}
    ctx = make_ctx(session=s, services=make_services(rules=rules))
    state = PipelineState.create(s, "Jürgen", dialogue_block(s, "Jürgen"))
    state.entries = [Entry("Jürgen starts at Siemens in München next Monday.", "draft", "kept", ["u1"]),
                     Entry("Jürgen cycles to work tomorrow.", "draft", "kept", ["u2"]),
                     Entry("Jürgen visits his aunt in Graz next week.", "draft", "kept", ["u3"])]
    for e, t in zip(state.entries, ("u1", "u2", "u3")):
        e.ground_turn_id = t
    await restore_language(ctx, state)
    assert [e.text for e in state.entries] == [
        "Jürgen fängt nächsten Montag bei Siemens in München an.", "Jürgen cycles to work tomorrow.",
        "Jürgen visits his aunt in Graz next week."]
    assert state.entries[0].original_text == "Jürgen starts at Siemens in München next Monday."


async def test_an_entry_in_another_language_is_screened_in_its_turns_language():
    # the 1.5B model writes German turns' facts in English; read lexically against the German
    # turn, they looked unstated and were lost: they are written in German before the screen
    rows = [("u1", "user", "Ich ziehe nächsten Monat nach Hamburg, weil ich dort eine Stelle beim NDR habe."),
            ("a2", "assistant", "Glückwunsch!"),
            ("u3", "user", "Am Samstag habe ich zwei Besichtigungen. Mein Hund Bruno muss übrigens mit.")]
    s = session(rows, "Miriam")
    rules = {"verify": keyed({
        "Miriam is moving": json.dumps("Miriam zieht nächsten Monat nach Hamburg."),
        "Miriam has two": json.dumps("Miriam hat am Samstag zwei Besichtigungen."),
        # a rewrite no turn states stays English, and the screen reads it as before
        "Miriam's dog": json.dumps("Miriams Katze bleibt in Köln.")})}
    ctx = make_ctx(session=s, services=make_services(rules=rules, nli=FakeNLI(default="entailment")))
    state = PipelineState.create(s, "Miriam", dialogue_block(s, "Miriam"))
    state.entries = [Entry("Miriam is moving to Hamburg next month.", "draft", "kept", ["u1"]),
                     Entry("Miriam has two apartment viewings on Saturday.", "draft", "kept", ["u3"]),
                     Entry("Miriam's dog Bruno must come along to the viewings.", "draft", "kept", ["u3"])]
    await verify_entries(ctx, state)
    assert [state.entries[i].text for i in state.live_entries()] == [
        "Miriam zieht nächsten Monat nach Hamburg.", "Miriam hat am Samstag zwei Besichtigungen."]
    assert state.entries[0].original_text == "Miriam is moving to Hamburg next month."
    assert {d.text: d.reason for d in state.discarded} == {
        "Miriam's dog Bruno must come along to the viewings.": UNSTATED_REASON}


async def test_english_entries_of_english_turns_cost_no_rewrite():
    rows = [("u1", "user", "I'm moving to Hamburg next month for a job at the radio.")]
    s = session(rows, "Miriam")
    # no LLM rule at all: any model call would raise KeyError
    ctx = make_ctx(session=s, services=make_services(rules={}, nli=FakeNLI(default="entailment")))
    state = PipelineState.create(s, "Miriam", dialogue_block(s, "Miriam"))
    state.entries = [Entry("Miriam is moving to Hamburg next month.", "draft", "kept", ["u1"])]
    await verify_entries(ctx, state)
    assert [state.entries[i].text for i in state.live_entries()] == ["Miriam is moving to Hamburg next month."]
    assert state.entries[0].original_text is None and sum(st.llm_calls for st in ctx.stats.values()) == 0


async def test_a_failed_restatement_keeps_the_verified_entry():
    from promem_fast.stages.verify import restore_language

    s = session([("u1", "user", "Ich fange nächsten Montag bei Siemens an.")], "Jürgen")
    ctx = make_ctx(session=s, services=make_services(rules={"verify": const("not JSON at all")}))
    state = PipelineState.create(s, "Jürgen", dialogue_block(s, "Jürgen"))
    state.entries = [Entry("Jürgen starts at Siemens next Monday.", "draft", "kept", ["u1"])]
    state.entries[0].ground_turn_id = "u1"
    await restore_language(ctx, state)
    assert [e.text for e in state.entries] == ["Jürgen starts at Siemens next Monday."]
    assert not state.entries[0].discarded


def test_language_of_reads_function_words_not_a_german_name():
    from promem_fast.timeparse import language_of

    assert language_of("Jürgen starts his job at Siemens in München on Monday.") == "en"
    assert language_of("Jürgen fängt nächsten Montag bei Siemens an.") == "de"
    assert language_of("我下个月要去成都。") == "zh"
    # English words German also has ("am", "an", "die", "hat") do not make a sentence German
    assert language_of("I am an artist and my hat is red.") == "en"


def test_a_long_premise_is_cut_to_the_sentences_about_the_hypothesis():
    filler = "My job is in finance and I work long hours on most days of the week. " * 4
    turn = filler + "I used to love jazz concerts. Not any more, they are too loud. " + filler
    cut = screen.focus_premise(turn, "Nora loves jazz concerts.", "Nora", 40)
    # the sentence and the one after it that turns it around
    assert cut == "I used to love jazz concerts. Not any more, they are too loud."
    assert screen.focus_premise(turn, "Nora loves jazz.", "Nora", 0) == turn
    assert screen.focus_premise("Short turn.", "Nora loves jazz.", "Nora", 40) == "Short turn."
    assert len(screen.focus_premise(turn, "Nora owns a kayak.", "Nora", 40).split()) == 40


def test_the_embedded_regression_set_covers_every_failure_class():
    from _bench_loader import load_benchmark

    reg = load_benchmark("bench_regression")
    CASES, sessions_of = reg.CASES, reg.sessions_of
    cases = json.loads(CASES.read_text(encoding="utf-8"))
    assert {c["class"].split(" (")[0] for c in cases} == {
        "filler", "assistant text", "wrong person", "world knowledge", "quoted text", "duplicates", "non-English",
        "plan read as done"}
    sessions = sessions_of(cases)
    assert all(1 <= len(s.turns) <= 4 and s.turns[0].role == "user" for s in sessions)
    assert all(c["expect"] for c in cases)


@pytest.mark.parametrize("turn, own", [
    # praise, advice and questions to the other side: nothing of the speaker's own
    ("Wow, Nora! Taking in kids in need - you're so kind. Your family will be so lucky to have you!", "Wow, Nora!"),
    ("Believe in yourself! You got this. Don't forget to take breaks.", ""),
    ("Got time to rehearse this week? Let's meet at six.", ""),
    # first person before "you" stays; a question that tells of the speaker stays
    ("I'd like to tell you about my job. What about you?", "I'd like to tell you about my job."),
    ("Can you suggest a hotel for my trip to Rome?", "Can you suggest a hotel for my trip to Rome?"),
    # dropped "I" and generic "you" are the speaker's own
    ("Never had the chance to go. Been to Oslo once.", "Never had the chance to go. Been to Oslo once."),
    ("Marley flooring is great: it lets you move.", "Marley flooring is great: it lets you move."),
    # "Let's" is a suggestion to the other side even with "we" / "our" in it
    ("Let's keep going after our goals. I opened my store in May.", "I opened my store in May."),
    ("Let's face it, I'm terrible at cooking.", "Let's face it, I'm terrible at cooking."),
    # a first-person word keeps the sentence whatever comes before it
    ("You know, I've been running since 2019.", "You know, I've been running since 2019."),
    ("Your advice helped me get the job at Google.", "Your advice helped me get the job at Google."),
    ("Please note that I'm allergic to peanuts.", "Please note that I'm allergic to peanuts."),
    # emoji do not make a turn foreign; a German turn comes back whole
    ("You're so kind! \U0001F60A Your family will be lucky.", ""),
    # the sentence right after one said to the other side goes on about them
    ("You're doing something wonderful! Planting a garden for the kids is so kind. I start my new job on Monday.",
     "I start my new job on Monday."),
    ("You're amazing! That race was brutal. Ran it in 3 hours.", "Ran it in 3 hours."),
    # set phrases with "you" are not about the other side
    ("Thank you! Started a new job at the bakery last week.", "Started a new job at the bakery last week."),
    ("Miss you! Been swamped at the hospital.", "Been swamped at the hospital."),
    ("Kannst du mir helfen, meine Reise nach Rom zu planen?", "Kannst du mir helfen, meine Reise nach Rom zu planen?"),
])
def test_own_statements_keep_what_the_speaker_says_of_themselves(turn, own):
    assert screen.own_statements(turn) == own


async def _recover(rows, details, rule, entries=()):
    """Run CC's detail re-read on a session of ``rows`` whose ``details`` no entry states, the
    LLM answering by ``rule``, with ``entries`` ((text, source turn id)) live before it;
    returns the state and the texts of the added entries."""
    from promem_fast.stages.complete import recover_from_details
    s = session(rows)
    ctx = make_ctx(session=s, services=make_services(rules={"recover": rule}), recover_by="llm")
    state = PipelineState.create(s, "Nora", dialogue_block(s, "Nora"))
    state.entries.extend(Entry(text=t, origin="draft", status="kept", source_turn_ids=[tid]) for t, tid in entries)
    state.details = details
    added = await recover_from_details(ctx, state)
    return state, [state.entries[i].text for i in added]


async def test_a_turn_said_to_the_other_speaker_is_not_read_again():
    rows = [("t0", "assistant", "I ran a charity race on Saturday."),
            ("t1", "user", "You're so brave! Your family must be proud of you."),
            ("t2", "assistant", "Thanks! Any plans?"),
            ("t3", "user", "Wow! I adopted a cat named Pip. You would love her.")]
    asked = []

    def reread(req):
        asked.append(req.messages[-1]["content"])
        return json.dumps(["Nora adopted a cat named Pip.", "Nora would love her cat."])

    state, added = await _recover(rows, [("t1", "Nora's family is proud"), ("t3", "adopted cat Pip"),
                                         ("t3", "named Pip"), ("t3", "would love her")], reread)
    assert len(asked) == 1  # t1 only praises the other speaker
    assert "Wow! I adopted a cat named Pip." in asked[0] and "You would love her" not in asked[0]
    assert '"adopted cat Pip"' in asked[0] and "would love her" not in asked[0].split("about:")[1]
    assert added == ["Nora adopted a cat named Pip."]
    assert any("would love" in d.text for d in state.discarded)


async def test_a_turn_is_asked_for_one_fact_per_missing_detail_at_most():
    rows = [("t0", "assistant", "How was your week?"),
            ("t1", "user", "I bought a kayak and time flies, it feels like yesterday I got my bike."),
            ("t2", "assistant", "Nice!"),
            ("t3", "user", "I started pottery classes in May and joined a choir.")]
    asked = {}

    def reread(req):
        turn = "t1" if "[t1]" in req.messages[-1]["content"] else "t3"
        asked[turn] = (req.json_schema["maxItems"], req.messages[-1]["content"])
        return json.dumps({"t1": ["Nora bought a kayak."],
                           "t3": ["Nora started pottery classes in May.", "Nora joined a choir."]}[turn])

    _, added = await _recover(rows, [("t1", "bought kayak"), ("t3", "pottery classes"), ("t3", "joined choir")],
                              reread)
    assert asked["t1"][0] == 1 and "At most 1." in asked["t1"][1]
    assert asked["t3"][0] == 2 and "At most 2." in asked["t3"][1]
    assert added == ["Nora bought a kayak.", "Nora started pottery classes in May.", "Nora joined a choir."]


async def test_a_re_read_fact_needs_half_its_words_from_what_the_turn_says_of_its_speaker():
    rows = [("t0", "assistant", "How was the weekend?"),
            ("t1", "user", "I bought a kayak. Your lake trip with the cousins sounds great!")]
    state, added = await _recover(rows, [("t1", "bought kayak"), ("t1", "a kayak")], const(
        ["Nora bought a kayak.", "Nora bought a kayak for the lake trip with the cousins."]))
    assert added == ["Nora bought a kayak."]
    assert {d.text: d.reason for d in state.discarded} == {
        "Nora bought a kayak for the lake trip with the cousins.": "not read from what turn t1 says of its speaker"}


async def test_a_re_read_is_asked_only_about_details_whose_every_word_the_turn_says():
    rows = [("t0", "assistant", "My friends and mentors keep me going. What motivates you?"),
            ("t1", "user", "I want to be brave for my family - they give me love."),
            ("t2", "assistant", "That's lovely. Any news?"),
            ("t3", "user", "We do all kinds of dances, from jazz to tap.")]
    asked = {}

    def reread(req):
        turn = "t1" if "[t1]" in req.messages[-1]["content"] else "t3"
        asked[turn] = req.messages[-1]["content"].split("about:")[1]
        return json.dumps(["Nora wants to be brave for her family."])

    # "mentors" is the other speaker's word; t3 says "tap" but not "classes" (half of the words:
    # enough before, when a turn was read again for details half-stated in it)
    _, added = await _recover(rows, [("t1", "family and mentors"), ("t1", "brave for my family"),
                                     ("t3", "tap classes")], reread)
    assert set(asked) == {"t1"}  # t3's only detail names what t3 does not say
    assert '"brave for my family"' in asked["t1"] and "mentors" not in asked["t1"]
    assert added == ["Nora wants to be brave for her family."]


async def test_a_name_no_detail_lists_and_no_entry_states_is_asked_about():
    rows = [("t0", "assistant", "Paris?! Never been. How was the studio hunt, Nora?"),
            ("t1", "user", "Wow, nice! Been only to Lisbon once. Thanks, Kaity! I'm so proud of you for the Porto race."),
            ("t2", "assistant", "Not yet. Plans for the weekend?"),
            ("t3", "user", "Kai and Mia! Going to the Alfama market with my aunt on Saturday.")]
    asked = {}

    def reread(req):
        turn = "t1" if "[t1]" in req.messages[-1]["content"] else "t3"
        asked[turn] = req.messages[-1]["content"].split("about:")[1]
        return json.dumps({"t1": ["Nora has been to Lisbon once."],
                           "t3": ["Nora is going to the Alfama market with her aunt."]}[turn])

    # t1: "Lisbon"; not "Kaity" (its sentence says nothing but thanks) nor "Porto" (in a
    # sentence said to the other side: "you"); t3: "Alfama", not "Saturday" (a day) nor
    # "Mia" (a sentence of names only, the other speaker's included)
    state, added = await _recover(rows, [], reread, entries=[("Nora is going to the market with her aunt.", "t3")])
    assert set(asked) == {"t1", "t3"}
    assert '"Lisbon"' in asked["t1"] and "Kaity" not in asked["t1"] and "Porto" not in asked["t1"]
    assert '"Alfama"' in asked["t3"] and "Saturday" not in asked["t3"] and "Mia" not in asked["t3"]
    assert added == ["Nora has been to Lisbon once.", "Nora is going to the Alfama market with her aunt."]


@pytest.mark.parametrize("answer, kept", [
    ("Nora has been to Lisbon once.", True),
    # a fact that takes most of its words from elsewhere is not read from that sentence
    ("Nora visited Lisbon once, which she had never done, and liked the spot.", False),
])
async def test_a_turn_read_again_for_names_only_shows_only_their_sentences(answer, kept):
    rows = [("t0", "assistant", "I went to Paris yesterday!"),
            ("t1", "user", "Wow, nice spot! Never had a chance to visit it. Been only to Lisbon once.")]
    asked = []

    def reread(req):
        asked.append(req.messages[-1]["content"])
        return json.dumps([answer])

    state, added = await _recover(rows, [], reread)
    assert len(asked) == 1 and "Been only to Lisbon once." in asked[0]
    assert "nice spot" not in asked[0] and "Never had" not in asked[0]
    assert added == ([answer] if kept else [])
    if not kept:
        assert {d.text: d.reason for d in state.discarded} == {answer: "not read from what turn t1 says of its speaker"}


@pytest.mark.parametrize("details, shown, hidden", [
    # a detail that is just a name the turn says: its sentence alone, so the model cannot
    # graft the other news onto it
    ([("t1", "Lisbon")], ["Oh, I flew to Lisbon on Friday!"], ["cosy studio", "north light"]),
    # with a detail that is no name, the whole turn, as the speaker said it of themselves
    ([("t1", "north light"), ("t1", "Lisbon")], ["cosy studio", "north light!", "Lisbon on Friday"], []),
    ([("t1", "studio Lisbon")], ["cosy studio", "north light", "Lisbon on Friday"], []),
])
async def test_a_turn_missing_only_names_is_read_again_only_in_their_sentences(details, shown, hidden):
    rows = [("t0", "assistant", "Any luck with the studio hunt?"),
            ("t1", "user", "I've been looking at a cosy studio. It has great north light! Oh, I flew to Lisbon on Friday!")]
    asked = []

    def reread(req):
        asked.append(req.messages[-1]["content"].split("Memory so far")[0])
        return json.dumps(["Nora flew to Lisbon on Friday."])

    await _recover(rows, details, reread)
    assert len(asked) == 1
    assert all(x in asked[0] for x in shown) and not any(x in asked[0] for x in hidden)


async def test_a_name_inside_a_missing_detail_is_not_asked_about_twice():
    rows = [("t0", "assistant", "How was the spring?"), ("t1", "user", "I took a trip to Lisbon with my aunt.")]
    asked = []

    def reread(req):
        asked.append(req.messages[-1]["content"].split("about:")[1])
        return json.dumps(["Nora took a trip to Lisbon with her aunt."])

    _, added = await _recover(rows, [("t1", "trip to Lisbon")], reread)
    assert len(asked) == 1 and '"trip to Lisbon"' in asked[0] and '"Lisbon"' not in asked[0]
    assert added == ["Nora took a trip to Lisbon with her aunt."]


def test_uncovered_names_skip_speakers_common_words_and_foreign_turns():
    from promem_fast.stages.complete import _names_in, uncovered_names
    rows = [("t0", "assistant", "How was the trip, Nora?"),
            ("t1", "user", "Great, Kai! My Family loved Sweden and New York. "
                           "Mel said my Travel Preference is Rome, gonna ask Grandma's CEO."),
            ("t2", "assistant", "Und dann?"),
            ("t3", "user", "Dann sind wir nach Berlin gefahren, mit dem Zug.")]
    s = session(rows)
    state = PipelineState.create(s, "Nora", dialogue_block(s, "Nora"))
    # "Kai" (the other speaker), "Family", "Travel Preference" and "Grandma's" (common words),
    # "CEO" (an acronym), "Mel" (a sentence's first word is capitalised anyway) and a German
    # turn (so is every noun there) give none; "New York" is one name
    assert uncovered_names(state) == {"t1": ["Sweden", "New York", "Rome"]}
    state.entries = [Entry("Nora's family loved Sweden.", "draft", "kept", ["t1"])]
    assert uncovered_names(state) == {"t1": ["New York", "Rome"]}
    # chat spellings, days with a possessive, hyphenated speaker names; an accented capital
    assert _names_in("So Im gonna meet Élodie on Friday's fair, Jean-Luc.", {"jean", "luc"}) == ["Élodie"]
    assert _names_in("Then Dr Okafor called.", set()) == ["Dr Okafor"]


async def test_a_re_read_fact_that_names_the_other_speaker_is_dropped():
    from promem_fast.stages.complete import OTHER_NAMED_REASON
    rows = [("t0", "assistant", "I gave a talk at my school."),  # the other speaker is "Kai"
            ("t1", "user", "I'm so proud of the difference you make. I joined a choir in March.")]
    state, added = await _recover(
        rows, [("t1", "joined choir"), ("t1", "choir in March"), ("t1", "March"), ("t1", "difference")],
        const(["Nora joined a choir in March.", "Nora is proud of the difference Kai makes.",
               "Nora joined Kai's choir in March."]))
    # only the re-read is screened this way: a draft entry naming Kai is judged by HV
    assert added == ["Nora joined a choir in March."]
    assert {d.text: d.reason for d in state.discarded} == {
        "Nora is proud of the difference Kai makes.": OTHER_NAMED_REASON,
        "Nora joined Kai's choir in March.": OTHER_NAMED_REASON}


@pytest.mark.parametrize("text, others, named", [
    ("Nora thanks Kai for the tip.", ["Kai"], True),
    ("Nora joined Jack's band.", ["Jack Lee"], True),
    ("Nora will start a job soon.", ["Will"], False),  # case as written
    ("Nora met Dr. Lee at the clinic.", ["Dr. Smith"], False),  # a title is not a name
    ("Nora works on AI research.", ["AI Assistant"], False),
    ("Nora Smith joined a choir.", ["Mary Smith"], False),  # the user's own surname
    ("Nora met O\u2019Brien at work.", ["O'Brien"], True),
    ("诺拉和李明一起去了北京。", ["李明"], True),
])
def test_names_other_speaker(text, others, named):
    assert screen.names_other_speaker(text, others, "Nora Smith") is named



# --- the other speaker's turn that the entry cites ---------------------------------------------

async def test_an_entry_the_other_speakers_cited_turn_states_better_is_discarded():
    # the draft cites the other side's turn it took the news from; the user only echoes it
    # (one word of it missing from the user's turn: too few for the borrowed-words rule; a
    # user turn in between, so that it is no remark on the turn right before)
    rows = [("a1", "assistant", "Searching for a pottery studio location has been tricky, but I'm determined."),
            ("u1", "user", "Oh wow."),
            ("u2", "user", "Searching for the perfect pottery studio is a tough job, Kai. I signed up for a sailing course in June."),
            ("a3", "assistant", "Sailing sounds fun!")]
    kept, why, _ = await screened(rows, [("Nora is searching for a pottery studio location.", ["a1", "u2"]),
                                         ("Nora signed up for a sailing course in June.", ["u2", "a3"])])
    assert kept == ["Nora signed up for a sailing course in June."]
    assert why == {"Nora is searching for a pottery studio location.": CITED_OTHER_REASON}


@pytest.mark.parametrize("user_turn, other_turn, entry, flagged", [
    # the other side's first-person statement holds words the user's turn lacks
    ("Finding the perfect studio spot is tough.", "I'm set on a pottery studio near the harbour.",
     "Nora is set on a pottery studio near the harbour.", True),
    # a question holds the words: the user answers it, the fact is the user's
    ("Five years already!", "How long have you been married?", "Nora has been married for five years.", False),
    # the other side restates the user's news in the second person: no first person, not theirs
    ("Ran my first marathon!", "Wow, you ran your first marathon in Oslo!", "Nora ran her first marathon in Oslo.", False),
    # "me too": it holds for the user as well
    ("Yeah, me too! Jazz is so soothing.", "I love jazz, it's soothing and I play the sax.",
     "Nora loves jazz and plays the sax.", False),
    # the user's turn states it as well as the other's does
    ("I'm set on a pottery studio near the harbour.", "I'm set on a pottery studio near the harbour.",
     "Nora is set on a pottery studio near the harbour.", False),
    # the other side repeats the user's news back: "I" and "you" in one sentence is about the user
    ("Ran my first marathon!", "Wow, I can't believe you ran your first marathon in Oslo!",
     "Nora ran her first marathon in Oslo.", False),
    ("Got laid off from Google yesterday, it's rough.",
     "I'm really sorry to hear you were laid off from your marketing job at Google.",
     "Nora was laid off from her marketing job at Google.", False),
    # a first-person question of the other side is no statement of theirs
    ("Finding the perfect studio spot is tough.", "Am I crazy to be set on a pottery studio near the harbour?",
     "Nora is set on a pottery studio near the harbour.", False),
    # scripts these rules do not read
    ("找工作真难。", "我在港口附近找到了一个陶艺工作室。", "Nora 在港口附近找到了一个陶艺工作室。", False),
])
def test_cited_other_states_better(user_turn, other_turn, entry, flagged):
    assert screen.cited_other_states_better(entry, "Nora", [user_turn], [other_turn]) is flagged


def test_cited_other_states_better_needs_a_cited_other_turn():
    assert not screen.cited_other_states_better("Nora is set on a studio near the harbour.", "Nora",
                                                ["Finding a studio is tough."], [])


# --- an entry that speaks to someone ---------------------------------------------------------

@pytest.mark.parametrize("text, addressed", [
    ("Nora is in awe of your courage as a trans person.", True),
    ("Nora is always around for you.", True),
    ("Nora will talk to you soon.", True),
    ("You should see Nora's garden.", True),                      # capitalised at a sentence start
    ("Nora thinks art shows who you\u2019re meant to be.", True),  # typographic apostrophe
    ("Nora loves the song 'All You Need Is Love'.", False),        # a title in quotes
    ("Nora read \"You Are a Badass\" twice.", False),
    ("Nora's favourite film is Me Before You.", False),            # a title without quotes
    ("Nora's painting is about being yourself.", False),           # "yourself" is often generic
    ("Nora's youngest son plays the tuba.", False),                # "you" only at a word start
    ("Nora's motto is 'you only live once'.", False),              # a saying in single quotes
    ("Nora's motto is \u2018you only live once\u2019.", False),      # ... typographic ones
    ('Nora\'s motto is "you only live once".', False),
    ("Nora's favourite song is 'I'll be there for you'.", False),   # a contraction inside the quote
    ("Nora wrote thank-you notes to everyone at her wedding.", False),  # a hyphenated compound
    ("Nora plays would-you-rather with her kids.", False),
    ("Nora ya tiene dos perros y vive en Madrid con su hermana.", False),  # not English
])
def test_addresses_someone(text, addressed):
    assert screen.addresses_someone(text) is addressed


def test_addresses_someone_leaves_the_speakers_names_alone():
    assert screen.addresses_someone("You Wei is training for a marathon in Shanghai.", ["You Wei", "Kai"]) is False
    assert screen.addresses_someone("You Wei is training for you.", ["You Wei"]) is True


async def test_an_entry_that_speaks_to_someone_is_discarded():
    rows = [("a1", "assistant", "I finally got my pilot licence last week!"),
            ("u2", "user", "I'm in awe of your courage, Kai. I bought a kayak on Monday.")]
    kept, why, _ = await screened(rows, [("Nora is in awe of your courage.", ["u2"]),
                                         ("Nora bought a kayak on Monday.", ["u2"])])
    assert kept == ["Nora bought a kayak on Monday."]
    assert why == {"Nora is in awe of your courage.": ADDRESSED_REASON}


async def test_a_compound_entry_keeps_its_clause_that_speaks_to_no_one():
    # a generic "you" in one clause: the entry is decomposed and only that clause is dropped
    rows = [("u1", "user", "I bought a kayak on Monday and it lets you reach the hidden coves.")]
    state = await verified_one(
        rows, "Nora bought a kayak on Monday, which lets you reach the hidden coves.",
        ["Nora bought a kayak on Monday.", "The kayak lets you reach the hidden coves."])
    assert [state.entries[i].text for i in state.live_entries()] == ["Nora bought a kayak on Monday."]
    assert {d.text: d.reason for d in state.discarded} == {
        "The kayak lets you reach the hidden coves.": "atomic fact: " + ADDRESSED_REASON}


def _kept_and_why(state):
    return [state.entries[i].text for i in state.live_entries()], {d.text: d.reason for d in state.discarded}


async def test_a_compound_the_cited_other_turn_states_better_is_split_not_lost():
    rows = [("u1", "user", "Finding a studio is tough, Kai. I signed up for a sailing course in June!"),
            ("a2", "assistant", "Sailing, nice! I'm set on a pottery studio near the harbour.")]
    entry = "Nora is set on a pottery studio near the harbour and signed up for a sailing course in June."
    atoms = ["Nora is set on a pottery studio near the harbour.", "Nora signed up for a sailing course in June."]
    kept, why = _kept_and_why(await verified_one(rows, entry, atoms, sources=["u1", "a2"]))
    assert kept == ["Nora signed up for a sailing course in June."]
    assert set(why) == {"Nora is set on a pottery studio near the harbour."}


async def test_an_atomic_fact_the_cited_other_turn_states_better_is_discarded():
    # the compound as a whole is stated better by the user's turn; judged not entailed, it is
    # decomposed, and its other-side clause (half of it in the user's turn) is theirs
    rows = [("u1", "user", "Finding a pottery studio is so tough, Kai. I signed up for a sailing course in June!"),
            ("a2", "assistant", "Sailing, nice! I'm set on a pottery studio by the harbour.")]
    entry = "Nora is set on a pottery studio by the harbour and signed up for a sailing course in June."
    atoms = ["Nora is set on a pottery studio by the harbour.", "Nora signed up for a sailing course in June."]
    kept, why = _kept_and_why(await verified_one(rows, entry, atoms, sources=["u1", "a2"],
                                                 nli=FakeNLI({entry: "neutral"}, default="entailment")))
    assert kept == ["Nora signed up for a sailing course in June."]
    assert why == {"Nora is set on a pottery studio by the harbour.": "atomic fact: " + CITED_OTHER_REASON}


async def test_a_negation_only_in_the_fuller_entrys_added_clause_does_not_keep_a_duplicate():
    """Polarity is read on the clause the shorter entry restates: "..., removing sodas from her
    disliked list" adds a negated clause, yet restates "feels clear about healthier choices"."""
    rows = [("u1", "user", "I feel clear and determined about making healthier choices. Removing sodas "
                           "from my disliked list is part of it. I don't like jazz, I like blues.")]
    s = session(rows)
    ctx = make_ctx(session=s, services=make_services(rules={}), tau_dup_nli=None)
    state = PipelineState.create(s, "Nora", dialogue_block(s, "Nora"))
    texts = ["Nora feels clear and determined about making healthier choices.",
             "Nora feels clear and determined about making healthier choices, removing sodas from her disliked list "
             "is part of it.",
             "Nora likes jazz.",                                   # the fuller entry negates this clause
             "Nora doesn't like jazz, and she likes blues a lot."]
    state.entries = [Entry(t, "draft", "kept", ["u1"]) for t in texts]
    dropped = await dedup_entries(ctx, state)
    assert [state.entries[i].text for i in dropped] == [texts[0]]
    assert stands_for(texts[0], texts[1], "Nora")
    # a negation of the shorter entry's own needs one in the fuller entry: not a restatement
    assert not stands_for("Nora plays chess on weekends but never plays tennis.",
                          "Nora plays chess on weekends and plays tennis with her brother at the club.", "Nora")
    # the clause that matches says the opposite, though both entries hold a negation
    assert not stands_for("Nora never plays tennis on weekends.",
                          "Nora plays tennis on weekends with friends but never alone.", "Nora")


async def test_five_of_seven_words_in_a_fuller_entry_of_the_turn_is_a_restatement():
    """SAME_TURN_SHARE is 70 %: 5 of the shorter entry's 7 words ("took" is not "taking") in
    a fuller entry of the same turn is one fact (two facts at 75 %, until 3971431). NLI is
    off and the cosine is 0.75, so only the word rule decides."""
    rows = [("u1", "user", "I baked a lot as a kid - my crew took gold at the county fair at age twelve!")]
    s = session(rows)
    emb = KeywordEmbedder(["gold", "fair", "twelve", "crew", "baking"])  # cosine 3/4
    ctx = make_ctx(session=s, services=make_services(rules={}, embed=emb), tau_dup_nli=None)
    state = PipelineState.create(s, "Nora", dialogue_block(s, "Nora"))
    short = "Nora's crew took gold at the county fair at age twelve."
    full = "Nora entered baking contests as a kid, taking gold at the county fair at age twelve."
    state.entries = [Entry(t, "draft", "kept", ["u1"]) for t in (short, full)]
    assert shared_words(short, full, "Nora") == (5, 7)
    assert not stands_for(short, full, "Nora", share=0.75)
    dropped = await dedup_entries(ctx, state)
    assert [state.entries[i].text for i in dropped] == [short]
    assert [state.entries[i].text for i in state.live_entries()] == [full]


async def test_the_turn_an_entry_was_grounded_on_counts_as_its_turn_for_dedup():
    """A draft entry citing only u2 but verified on u1 (its ground turn, listed among its
    source turns in the output graph) restates a shorter entry of u1; with neither turn
    shared the two stay apart."""
    rows = [("u1", "user", "Passing on my stories to others matters to me, it builds a community of hope."),
            ("u2", "user", "Yes, a strong and supportive one.")]
    s = session(rows)
    emb = KeywordEmbedder(["stories", "others", "community", "hope", "pass", "share"])  # cosine 0.52
    short = "Nora felt it was important to pass on her stories to others."
    full = "Nora felt it was important to share her stories with others to build a supportive community of hope."
    for ground, merged in (("u1", True), ("u2", False)):
        ctx = make_ctx(session=s, services=make_services(rules={}, embed=emb), tau_dup_nli=None)
        state = PipelineState.create(s, "Nora", dialogue_block(s, "Nora"))
        state.entries = [Entry(short, "draft", "kept", ["u1"]), Entry(full, "draft", "kept", ["u2"])]
        state.entries[0].ground_turn_id, state.entries[1].ground_turn_id = "u1", ground
        dropped = await dedup_entries(ctx, state)
        assert [state.entries[i].text for i in dropped] == ([short] if merged else [])
        if merged:
            assert state.entries[1].source_turn_ids == ["u2", "u1"]


def test_three_of_four_words_in_a_fuller_entry_is_a_restatement():
    """A plan restated with its details (3 of the shorter entry's 4 content words) is one fact;
    2 of 3 words ("chess" / "tennis", 67 %, under SAME_TURN_SHARE) stays two facts."""
    short = "Nora is planning to sing at a local fair."
    full = "Nora has been rehearsing a folk song that she will sing at a local fair in June."
    assert shared_words(short, full, "Nora") == (3, 4)
    assert stands_for(short, full, "Nora")
    assert not stands_for("Nora plays chess on weekends.", "Nora plays tennis on weekends at the club.", "Nora")


# --- praise of the user in the other side's words ------------------------------------------------

@pytest.mark.parametrize("entry, turn, praised", [
    ("Nora's commitment to learning is inspiring.", "I keep learning every day; it's about adapting.", True),
    ("Nora's proactive approach is truly impressive.", "I plan ahead for each project.", True),
    ("Nora's story is inspiring to others.", "People tell me my story is inspiring to them.", False),  # her words
    ("Nora finds the climbers inspiring.", "The climbers were great.", False),   # not a copula appraisal
    ("Nora's garden is blooming.", "My garden is blooming!", False),
])
def test_praise_in_words_the_user_never_says(entry, turn, praised):
    assert screen.praised_in_other_words(entry, turn) is praised


async def test_praise_of_the_user_in_the_assistants_words_is_discarded():
    rows = [("u1", "user", "My commitment to continuous learning keeps me going. I joined a pottery class on Mondays."),
            ("a1", "assistant", "Your commitment to continuous learning is inspiring!")]
    kept, why, _ = await screened(rows, [("Nora's commitment to continuous learning is inspiring.", ["u1"]),
                                         ("Nora joined a pottery class on Mondays.", ["u1"])])
    assert kept == ["Nora joined a pottery class on Mondays."]
    assert why == {"Nora's commitment to continuous learning is inspiring.": PRAISE_REASON}


async def test_an_entry_whose_subject_points_back_is_discarded_and_one_that_names_it_kept():
    rows = [("u1", "user", "I started weekly team walks at lunch. Honestly, this will be so rewarding for me.")]
    kept, why, _ = await screened(rows, [("This will be incredibly rewarding for Nora.", ["u1"]),
                                         ("Nora started weekly team walks at lunch.", ["u1"])])
    assert kept == ["Nora started weekly team walks at lunch."]
    assert why == {"This will be incredibly rewarding for Nora.": PLACEHOLDER_REASON}


async def test_a_fragment_with_only_function_words_at_its_sentence_starts_is_discarded():
    rows = [("u1", "user", "The feedback has been positive. Many are curious about the new schedule. "
                           "I moved the stand-up to 9:30.")]
    kept, why, _ = await screened(rows, [("The feedback has been positive. Many are curious about the new "
                                          "schedule.", ["u1"]),
                                         ("Nora moved the stand-up to 9:30.", ["u1"])])
    assert kept == ["Nora moved the stand-up to 9:30."]
    assert why == {"The feedback has been positive. Many are curious about the new schedule.": NO_SUBJECT_REASON}


@pytest.mark.parametrize("entry, turn, previous, exclaimed", [
    # a bare reaction to the other side's news, then a question
    ("Nora says Dmitri is poor.", "Poor Dmitri! Did the cast come off yet?", "My cousin Dmitri broke his wrist.", True),
    ("Nora is busy June.", "Busy June! Will you still make the barbecue?", "Two weddings and a move in June.", True),
    ("Nora is almost-Professor Ana.", "Congrats, almost-Professor Ana! What comes next?", "My tenure vote passed.", True),
    # an answer to a question, a statement with its "I" dropped, an imperative, a clause
    ("Nora is going to Lima.", "Lima! Can't wait.", "Where are you off to in May?", False),
    ("Nora got the job at the museum.", "Got the job at the museum! Starting Monday.", "", False),
    ("Nora is engaged.", "Engaged! Theo asked on the beach.", "", False),
    ("Nora keeps going after her dreams.", "Thanks! Keep going after your dreams!", "", False),
    ("Nora's new flat has great natural light.", "It's near the park. Plus the natural light!", "", False),
    # the user's own news said without a verb: no reaction word, nothing of the turn before
    ("Nora is pregnant.", "Pregnant! Due in March.", "Hi Nora, you said you had news.", False),
    ("Nora is finally home in Berlin.", "Finally home in Berlin! The flight was awful.", "How was the trip?", False),
    # a name and an interjection say nothing; the entry also stated in the rest of the turn
    ("Nora talked with Ana about her move.", "Yeah, Ana! I told you about my move.", "", False),
    ("Nora thinks the poor harvest hurt Dmitri's farm.", "Poor Dmitri! The harvest hurt his farm a lot.", "", False),
])
def test_exclaimed_only(entry, turn, previous, exclaimed):
    assert screen.exclaimed_only(entry, "Nora", turn, previous) is exclaimed


async def test_a_bare_exclamation_is_not_stored_as_a_fact():
    from promem_fast.stages.verify import EXCLAIMED_REASON

    rows = [("a1", "assistant", "My cousin Dmitri broke his wrist skiing."),
            ("u1", "user", "Poor Dmitri! I broke mine in 2019, on the ice in Riga.")]
    kept, why, _ = await screened(rows, [("Nora says Dmitri is poor.", ["u1"]),
                                         ("Nora broke her wrist in 2019 in Riga.", ["u1"])])
    assert kept == ["Nora broke her wrist in 2019 in Riga."]
    assert why == {"Nora says Dmitri is poor.": EXCLAIMED_REASON}


async def test_a_rewrite_in_the_turns_language_takes_no_first_person_word_from_it():
    rows = [("u1", "user", "Meine Schwester Jana wohnt in Altona und kann mir bei den Besichtigungen helfen.")]
    s = session(rows, "Miriam")
    rules = {"verify": keyed({"Miriam's sister": json.dumps(
        "Miriams Schwester Jana wohnt in Altona und kann mir bei den Besichtigungen helfen.")})}
    ctx = make_ctx(session=s, services=make_services(rules=rules, nli=FakeNLI(default="entailment")))
    state = PipelineState.create(s, "Miriam", dialogue_block(s, "Miriam"))
    state.entries = [Entry("Miriam's sister Jana lives in Altona and can help her with the viewings.", "draft",
                           "kept", ["u1"])]
    await verify_entries(ctx, state)
    assert [state.entries[i].text for i in state.live_entries()] == [
        "Miriams Schwester Jana wohnt in Altona und kann Miriam bei den Besichtigungen helfen."]


@pytest.mark.parametrize("entry, later, value", [
    ("Nora booked a viewing for Saturday morning.",
     ["Oh wait, actually the viewing is Sunday at 11, not Saturday, I'm working Saturday."], "Saturday"),
    ("Nora has a dentist appointment on the 14th.", ["Sorry, I meant the 15th, not the 14th."], "14th"),
    ("Nora plant das Essen für 30 Gäste.", ["Moment, es sind 32, nicht 30."], "30"),
    ("王芳周四去看牙医。", ["不对，是周五，不是周四。"], "周四"),
    ("Nora started pottery classes three weeks ago.", ["Oh and sorry, I said three weeks ago, it's actually four."],
     "three"),
    # no correction mark; a lower-case word; the entry tells of the change or negates the value
    ("Nora loves Porto.", ["I love Lisbon, not Porto."], None),
    ("Nora has a cat.", ["Actually it's a cat, not a dog."], None),
    ("Nora moved the viewing from Saturday to Sunday.", ["Actually the viewing is Sunday, not Saturday."], None),
    ("Nora's viewing is not on Saturday.", ["Actually the viewing is Sunday, not Saturday."], None),
    # no correction: a mark inside the sentence, a question, a plain negation, a contrast
    ("Nora is flying to Munich on Friday.", ["At the moment I'm still at home, not in Munich yet."], None),
    ("Nora went to Spain last summer.", ["Can't wait for Italy, not Spain this time!"], None),
    ("Nora's party is on Sunday.", ["Wait, is the party Saturday, not Sunday?"], None),
    ("Nora fährt mit dem Auto zur Arbeit.", ["Eigentlich will ich nicht Auto fahren, aber es geht nicht anders."], None),
    ("Nora visited Paris.", ["Actually my favourite part was Rome, not Paris."], None),
    ("Nora started pottery classes four weeks ago.", ["Sorry, I said three weeks ago, it's actually four."], None),
    ("Nora loves the coast.", ["Sorry, I said I love the coast, actually the mountains are better."], None),
    ("王芳的签证有问题。", ["其实签证不是问题，机票才是。"], None),
    # a user turn in between says the value again: the correction is of that turn
    ("Nora plays football on Saturday.", ["The viewing is Saturday.", "Wait, actually it's Sunday, not Saturday."],
     None),
])
def test_corrected_later(entry, later, value):
    assert screen.corrected_later(entry, later) == value


async def test_a_value_the_user_corrects_later_is_not_stored():
    from promem_fast.stages.verify import CORRECTED_REASON

    rows = [("u1", "user", "My interview at the museum is on Thursday at 2pm."),
            ("a1", "assistant", "Good luck! Do you know the panel?"),
            ("u2", "user", "Oh wait, I checked the invite, it's Friday at 2pm, not Thursday. The panel is three curators.")]
    kept, why, _ = await screened(rows, [("Nora's interview at the museum is on Thursday at 2pm.", ["u1"]),
                                         ("Nora's interview panel is three curators.", ["u2"])])
    assert kept == ["Nora's interview panel is three curators."]
    assert why == {"Nora's interview at the museum is on Thursday at 2pm.": CORRECTED_REASON}


def test_an_emoji_does_not_make_a_turn_foreign():
    # "And give ..." is an imperative too; the emoji kept the English rules off the turn
    turn = "Okay, deal 😂 I'll pick you up at nine. And give baby Ava a cuddle from me!"
    assert screen.urged_only("Nora will give baby Ava a cuddle.", "Nora", turn, "The 17th works.") is True
    assert screen.reads_english("Who are you 😂") is True
    assert screen.urged_only("Nora will give baby Ava a cuddle.", "Nora", "给 Ava 一个拥抱! And give baby Ava a cuddle!",
                             "") is False


@pytest.mark.parametrize("entry, turn, previous, other", [
    ("Nora is exhausted.", "Exhausted but fine. The surgery took six hours. I drove her home.",
     "Oh no! How's your grandma doing?", True),
    ("Nora is much better.", "Much better, thanks. Back at school on Monday.", "Is Dmitri okay now?", True),
    # asked about the user, or about the user's own things; a subject opens the answer
    ("Nora is exhausted.", "Exhausted but fine. Long week.", "How are you doing?", False),
    ("Nora is exhausted.", "Exhausted, honestly. Too many deadlines.", "How's the job?", False),
    ("Nora is exhausted.", "I'm exhausted. She's fine though.", "How's your grandma doing?", False),
    ("Nora is exhausted.", "She's exhausted. I'm fine.", "How's your grandma doing?", False),
    # the user's own things, a place, not a person
    ("Nora is exhausted.", "Exhausted but fine.", "How's your knee doing?", False),
    ("Nora is exhausted.", "Exhausted but fine.", "How's your thesis going?", False),
    ("Nora loved Lisbon.", "Loved it, honestly. Back to work Monday.", "How was Lisbon?", False),
    # the question is not the last thing the other side said
    ("Nora is exhausted.", "Exhausted but fine.", "How's Dmitri? And how are you?", False),
    # anything asked of "he" / "she" is about that person; "they" may be a firm asking the user
    ("Nora gets full pay.", "Full pay, yes, but only for a month. He's a bit worried.",
     "Poor Dmitri. Is he still getting paid while he's off?", True),
    ("Nora starts on Monday.", "Starts on Monday, she says. Then I'm on my own.", "When does she start the new job?", True),
    ("Nora has a second interview.", "A second interview, next week.", "Did they tell you the next step?", False),
    # the question asks of the user too, or the answer's dropped "I" owns a past or "-ing" verb
    ("Nora is turning 30 on Saturday.", "Yes, turning 30 on Saturday, can't wait. She's bringing cake.",
     "Is she coming to your party?", False),
    ("Nora finished the race in 3 hours.", "Yeah, finished the race in 3 hours and he cheered the whole way.",
     "Was he at the race?", False),
])
def test_answered_of_other(entry, turn, previous, other):
    assert screen.answered_of_other(entry, "Nora", turn, previous) is other


def test_an_entry_that_names_the_user_as_someone_else_is_about_that_one():
    assert screen.named_other("Nora is a retired racing greyhound named Pickle.", "Nora") is True
    assert screen.named_other("Nora is the new barista called Tom at the cafe.", "Nora") is True
    # a possession, or the user's own name
    assert screen.named_other("Nora has a retired racing greyhound named Pickle.", "Nora") is False
    assert screen.named_other("Nora is a nurse named Nora Diaz on the ward rota.", "Nora Diaz") is False


def test_a_time_before_the_subject_is_read_after_it():
    assert screen.time_last("Yesterday, Nora ran away from a paper bag.") == "Nora ran away from a paper bag yesterday."
    assert screen.time_last("Three weeks ago, Nora's mother broke her hip.") == (
        "Nora's mother broke her hip three weeks ago.")
    assert screen.time_last("Nora ran away.") == "Nora ran away."
    # the pet's act, told with a time first, is not stored as the user's
    turn = "Pickle is a greyhound and he's scared of everything. Yesterday he ran away from a paper bag."
    assert screen.subject_clash(screen.time_last("Yesterday, Nora ran away from a paper bag."), "Nora", turn, "")


@pytest.mark.parametrize("entry, turn, added", [
    # "the ..." in a sentence about someone else ("she"), or right after one that opens with "she"
    ("Nora's kitchen is downstairs.", "He's 90 and lives alone in Leeds. The kitchen is downstairs.", True),
    ("Nora's vet changed the diet.", "She's 14 and slow, the vet changed the diet last month.", True),
    # the user's own: first person in the sentence, "my" elsewhere, or no third person at all
    ("Nora's kitchen is downstairs.", "He's 90. The kitchen is downstairs, I moved it.", False),
    ("Nora's kitchen is downstairs.", "He's 90 and lives alone. The kitchen is downstairs. My kitchen is tiny.", False),
    ("Nora's store is doing great.", "The store is doing great, it's a wild ride!", False),
])
def test_owner_added(entry, turn, added):
    assert screen.owner_added(entry, "Nora", turn, [turn]) is added


@pytest.mark.parametrize("entry, turn, other", [
    ("The whole village is throwing Nora a party.", "Dad retires Friday and the whole village is throwing him a party.", True),
    ("Her coach entered Nora in the race.", "Her coach entered her in the race, she is thrilled.", True),
    # the turn does it to the user, or to both
    ("Her boss promoted Nora last week.", "My boss promoted me last week!", False),
    ("Her boss promoted Nora last week.", "My boss promoted me and him last week!", False),
    ("Tom invited Nora to dinner.", "Tom invited us to dinner, and he invited them too.", False),
])
def test_object_of_other(entry, turn, other):
    assert screen.object_of_other(entry, "Nora", turn) is other


@pytest.mark.parametrize("entry, turn, clash", [
    # a sentence that opens with its verb carries the subject of the one before
    ("Nora fell off her bike on the way to work.",
     "Dmitri broke his wrist. Fell off his bike on the way to work, of all places.", True),
    ("Nora fell off her bike on the way to work.", "Awful week. Fell off my bike on the way to work.", False),
    ("Nora fell off her bike on the way to work.", "I had an awful week. Fell off my bike on the way to work.", False),
    # a bare verb opening a sentence is a request, not a carried subject
    ("Nora will bring snacks.", "Dmitri is coming too. Bring snacks!", False),
    # the dropped subject is the user's: "my" in the sentence, or the one before is "you",
    # "they", a speaker passing on words, or the thing the sentence then points back at
    ("Nora fell off her bike.", "Mum says hi! Fell off my bike this morning though.", False),
    ("Nora fell off her bike.", "Rosa says hi! Fell off the bike this morning though.", False),
    ("Nora passed the exam.", "You were right. Passed the exam with flying colours!", False),
    ("Nora won the raffle.", "They announced the winners. Won the raffle!", False),
    ("Nora adopted a puppy.", "She is so cute. Adopted her on Saturday.", False),
    ("Nora quit her job.", "Rosa's been struggling. Quit my job yesterday.", False),
    # any form of the verb the user says of themself clears it
    ("Nora is moving to Berlin.", "I'll move to Berlin next month. My sister is moving with me too.", False),
    ("Nora is leaving Oslo in May.", "My flatmate left last week, and I'm leaving Oslo in May.", False),
])
def test_subject_carried_or_read_in_the_entrys_own_form(entry, turn, clash):
    assert screen.subject_clash(entry, "Nora", turn) is clash


def test_a_progressive_is_no_passive():
    assert screen._entry_verb_forms("Nora is leaving Oslo.", "Nora")[1] is False
    assert screen._entry_verb_forms("Nora is inspired by her aunt.", "Nora")[1] is True


@pytest.mark.parametrize("entry, turn, urged", [
    # the act after a verb of plan is what the entry claims; the first person later in the
    # sentence ("I want ...") does not make the request the user's own news
    ("Nora is planning to bring treats to Pickle.",
     "Saturday works. And bring treats, I want Pickle to like me more than he likes you!", True),
    ("Nora wants to bring treats to Pickle.", "And bring treats, I want Pickle to like me more than he likes you!", True),
    # the user also does it, or says it of themself in the verb's own clause
    ("Nora is planning to bring treats to Pickle.", "I'm bringing treats for Pickle. And bring your boots, you'll need them!", False),
    ("Nora is planning to bring treats to Pickle.", "Bring my treats for Pickle, you know the ones!", False),
    ("Nora is going to Paris.", "Go to Paris, you'll love it!", True),
])
def test_urged_only_reads_the_act_after_a_plan(entry, turn, urged):
    assert screen.urged_only(entry, "Nora", turn) is urged


def test_an_english_turn_with_vietnamese_or_hawaiian_names_is_read_as_latin():
    assert screen._non_latin("My sister moved to Hà Nội with her husband.") is False
    assert screen._non_latin("We spent a week on Hawaiʻi.") is False
    assert screen._non_latin("我妹妹搬到了河内") is True and screen._non_latin("Моя сестра переехала") is True
    # so the English rules read it: the move is the sister's, not the user's
    assert screen.subject_clash("Nora moved to Hà Nội with her husband.", "Nora",
                                "My sister moved to Hà Nội with her husband.") is True


@pytest.mark.parametrize("turn, urged", [
    # a name right after the verb is its object: a request, not a noun subject
    ("Congrats, tio Bruno! Give Carla a hug from me. Have you held her yet?", (("give", "Give Carla a hug from me."),)),
    # a capitalised common word after it makes a title or a subject, a name and its verb a clause
    ("Summer Sounds was great fun.", ()),
    ("Picture Aiko took at the wedding made my mum cry.", ()),
])
def test_a_name_after_an_opening_verb_is_its_object(turn, urged):
    assert screen._imperatives(turn, "") == urged
    if urged:
        assert screen.urged_only("Nora gives Carla a hug from Nora.", "Nora", turn) is True


_TURNS_DE = ("Ja, er lebt allein, Mama ist vor sechs Jahren gestorben. Einen Pflegegrad hat er nicht. Der Sozialdienst "
             "hat den Reha-Antrag gemacht, mehr nicht.",
             "Jana überlegt noch, ob sie danach kommt. Meine Schwester Jana wohnt in München.")


@pytest.mark.parametrize("entry, no_one", [
    # a German re-read that copied a sentence without the person it is about
    ("Einen Pflegegrad hat er nicht", True),
    ("Der Sozialdienst hat den Reha-Antrag gemacht", True),
    # a person by name (never after an article in the user's turns), by tie, or the user
    ("Jana überlegt noch, ob sie danach kommt", False),
    ("Mama ist vor sechs Jahren gestorben", False),
    ("Sofie hat keinen Pflegegrad beantragt", False),
])
def test_a_german_entry_that_names_no_one(entry, no_one):
    assert screen.names_no_one(entry, "Sofie", ["assistant"], _TURNS_DE) is no_one
    assert screen.names_no_one(entry, "Sofie", ["assistant"]) is False  # without the turns nothing is read


@pytest.mark.parametrize("entry, turns, flagged", [
    # the user told the chat; the name is one the turn mentioned
    ("Nora informed Priya that her mum arrives on Friday.",
     ["I asked my manager Priya this morning and she said yes. Oh and mum arrives on Friday, not Thursday."], True),
    ("Nora told Nora that she swims twice a week.", ["Twice a week, Tuesdays and Fridays."], True),
    # the turn has the telling, or the person is the other speaker ("Mel" for Melanie)
    ("Nora told Priya that her mum arrives on Friday.", ["I told Priya yesterday that mum arrives on Friday."], False),
    ("Nora let Priya know about the move.", ["I let my manager Priya know about the move."], False),
    ("Nora tells Mel about her trip.", ["Mel, the trip was amazing!"], False),
])
def test_told_named_unsaid(entry, turns, flagged):
    assert screen.told_named_unsaid(entry, "Nora", turns, ["Melanie"]) is flagged


# --- an entry that leaves out whom it means ------------------------------------------------

@pytest.mark.parametrize("entry, turn, named", [
    # the turn says it of the user: "I" in the sentence, no he / she / it
    ("She plans to start with the book club.", "Honestly I'll likely start with the book club.",
     "Nora plans to start with the book club."),
    ("She's been rowing since May.", "I've been rowing since May, it's great.", "Nora has been rowing since May."),
    ("He's nervous about the audition.", "I'm so nervous about the audition lol", "Nora is nervous about the audition."),
    # "my" + the same noun, "me" after the same word
    ("Dana Whitfield is her business partner.", "Hi! My business partner is Dana Whitfield.",
     "Dana Whitfield is Nora's business partner."),
    ("The move made her anxious.", "Tbh the move made me anxious.", "The move made Nora anxious."),
    ("Reflecting on her savings plan, she feels calmer.", "I looked at my savings plan and I feel calmer.",
     "Reflecting on Nora's savings plan, she feels calmer."),
    # someone the turn introduced just before
    ("She teaches piano in Leeds.", "My aunt Ruth visited. She teaches piano in Leeds.",
     "Nora's aunt Ruth teaches piano in Leeds."),
    # the sentence is about someone else ("it", "she"): not the user's
    ("She's been helpful during her move.", "It's been helpful during my move.", None),
    ("She swims twice a week.", "My sister and I talk a lot. She swims twice a week.", None),
    # the turn holds too little of the entry to tell
    ("She plans to sell the boat.", "I like the sea.", None),
    # the user is named already: the pronoun has its person
    ("Nora said her mum is coming.", "I said my mum is coming.", None),
])
def test_an_unnamed_person_is_named_as_the_turn_means(entry, turn, named):
    assert screen.name_unnamed(entry, "Nora", turn) == named


@pytest.mark.parametrize("entry, drop", [
    ("They met at a pub quiz in 2019.", True),
    ("It's been a great way to unwind.", True),
    ("She plans to open a shop.", True),
    ("In 2019, they met at a pub quiz.", False),             # time_last moves the time first (the screen does)
    ("His daughter Imani is 8.", False),                     # names the person it is about
    ("She told Nora about the shop.", False),                # names the user
    ("This Saturday Karthik gets married.", False),
])
def test_an_entry_opening_with_an_unresolved_pronoun(entry, drop):
    assert screen.pronoun_opening(entry, "Nora", []) is drop


def test_an_entry_in_latin_script_with_a_symbol_can_name_no_one():
    assert screen.names_no_one("The stall fee is £45 a day.", "Nora", []) is True
    assert screen.names_no_one("The stall is Inês's, £45 a day.", "Nora", []) is False
    assert screen.names_no_one("诺拉的摊位费是45英镑。", "Nora", []) is False  # other scripts: not read


async def test_hv_names_the_draft_pronoun_and_drops_the_unresolved_one():
    from promem_fast.stages.verify import NO_SUBJECT_REASON

    rows = [("u1", "user", "My business partner is Dana Whitfield. I'll likely start with the markets in June."),
            ("u2", "user", "Karthik and Hannah are engaged. They met at a pub quiz in 2019.")]
    kept, why, state = await screened(rows, [("Dana Whitfield is her business partner.", ["u1"]),
                                             ("She plans to start with the markets in June.", ["u1"]),
                                             ("They met at a pub quiz in 2019.", ["u2"])])
    assert kept == ["Dana Whitfield is Nora's business partner.", "Nora plans to start with the markets in June."]
    assert why == {"They met at a pub quiz in 2019.": NO_SUBJECT_REASON}
    assert state.entries[0].original_text == "Dana Whitfield is her business partner."


async def test_a_turn_that_corrects_itself_further_on():
    from promem_fast.stages.verify import CORRECTED_REASON

    rows = [("u1", "user", "My mum is coming over from Alexandria, she lands on the 20th. Mum stays three weeks. "
                           "Oh wait, sorry, I said she lands on the 20th, I just checked and it's actually Sunday the 21st.")]
    kept, why, _ = await screened(rows, [("Nora's mum lands on the 20th.", ["u1"]),
                                         ("Nora's mum lands on Sunday the 21st.", ["u1"]),
                                         ("Nora's mum stays three weeks.", ["u1"])])
    assert kept == ["Nora's mum lands on Sunday the 21st.", "Nora's mum stays three weeks."]
    assert why == {"Nora's mum lands on the 20th.": CORRECTED_REASON}


def test_i_said_then_actually_names_the_value_said_first():
    turn = "Oh wait, I said she lands on the 20th, I checked and it's actually Sunday the 21st."
    assert screen.corrected_later("Nora's mum lands on the 20th.", [turn]) == "20th"
    assert screen.corrected_later("Nora's mum lands on Sunday the 21st.", [turn]) is None


@pytest.mark.parametrize("entry, turn", [
    # the clause's subject is someone else, though the sentence has an "I" further on
    ("She broke her hip last week.", "Gran broke her hip last week and I'm staying with her."),
    ("He lost his job in March.", "Dad lost his job in March so I'm helping out."),
    ("She's moving to Leeds in June.", "Ana's moving to Leeds in June and I'm gutted."),
    # the person is introduced two sentences back, not right before
    ("She keeps scheduling meetings at 7am.",
     "My sister Ana lives in Spain. My boss is awful. She keeps scheduling meetings at 7am."),
    # another sentence's "my dog" is not this sentence's "her dog"
    ("Ana loves her dog.", "My dog Rex is old. Ana loves her dog."),
])
def test_a_pronoun_is_not_named_as_the_user_when_the_turn_means_someone_else(entry, turn):
    assert screen.name_unnamed(entry, "Nora", turn) is None


def test_the_turns_own_verb_decides_has_or_is():
    assert screen.name_unnamed("She's started a new job at Tesco.", "Nora", "I've started a new job at Tesco!") == \
        "Nora has started a new job at Tesco."


def test_a_later_correction_is_not_hidden_by_the_rest_of_the_turn():
    from promem_fast.stages.state import PipelineState
    from promem_fast.stages.verify import CORRECTED_REASON, screen_reason

    s = session([("u1", "user", "The viewing is on Saturday morning. Really hoping Saturday goes well!"),
                 ("u2", "user", "Oh wait, the viewing is Sunday, not Saturday.")], "Nora")
    state = PipelineState.create(s, "Nora", "")
    assert screen_reason(state, "Nora has a viewing on Saturday morning.", s.turns[0], [], []) == CORRECTED_REASON


@pytest.mark.parametrize("turn, entry, value", [
    ("Oh wait, I said I'm flying on the 20th, it's actually the 21st.", "Nora is flying on the 20th.", "20th"),
    ("Oh wait, I said we'd meet Ana on Friday, it's actually Saturday.", "Ana lives in Leeds.", None),
])
def test_the_value_said_first_is_a_number_or_day_before_a_name(turn, entry, value):
    assert screen.corrected_later(entry, [turn]) == value


def test_an_accented_first_name_still_names_someone():
    assert screen.names_no_one("José got promoted.", "Nora", []) is False
    assert screen.is_filler("Nora mentioned she also has a cat.", "Nora") is False


@pytest.mark.parametrize("entry,turn,chat", [
    # the chat itself as the user's act: a silence, replies, a promise to report back
    ("Nadia went silent for a while.", "hiya! sorry, I went silent for a while, work ate me", True),
    ("Nadia is terrible at texting back.", "ha no stress, I'm terrible at texting back too", True),
    ("Nadia will keep the assistant posted on the surveyor's visit.",
     "perfect, I'll keep you posted once the surveyor has been", True),
    ("Nadia will get back to you about the quote.", "ok I'll get back to you about the quote", True),
    # a mood the chat brought, in the sentence that thanks it
    ("Nadia feels way calmer now.", "brilliant, thank you, I feel way calmer now", True),
    ("Nadia feels much more organised about the move.",
     "this was so helpful, I feel much more organised about the move", True),
    # thanks the turn gives the chat, put on someone it only mentions
    ("Nadia thanked Ruth for the lasagne.", "Ruth dropped off a lasagne. anyway cheers for the help!", True),
    ("The main thing is Nadia's dad.", "honestly the main thing is my dad", True),
    # a life fact with the same words stays
    ("Nadia thanked Ruth for the lasagne.", "I thanked Ruth for the lasagne she left", False),
    ("Nadia replied to the landlord's email about the deposit.", "I replied to the landlord's email about the deposit", False),
    ("Nadia went quiet after her divorce.", "I went quiet after my divorce, didn't see anyone", False),
    ("Nadia has been feeling low since the funeral.", "thanks for asking. I've been feeling low since the funeral", False),
    ("Nadia feels better now that the cast is off.", "the cast is off and I feel better now", False),
    ("The main issue is the £3,000 deposit.", "the main issue is the £3,000 deposit", False),
    ("Nadia's sister went quiet for a while.", "my sister went quiet for a while", False),
])
def test_a_remark_about_the_chat_is_filler(entry, turn, chat):
    assert screen.about_the_chat(entry, "Nadia", turn) is chat


def test_an_order_to_bring_something_is_no_plan_of_the_user():
    turn = "Friday works, come to ours. bring crisps not cake, the kids are off sugar"
    assert screen.urged_only("Nadia is planning to bring crisps.", "Nadia", turn) is True
    assert screen.urged_only("Nadia will bring crisps.", "Nadia", "I'll bring crisps on Friday") is False


async def test_an_atomic_fact_opening_with_a_pronoun_nothing_resolves_is_dropped():
    rows = [("u1", "user", "I adopted a greyhound called Biscuit in May. We take him to the beach every Sunday.")]
    entry = "Nora adopted a greyhound called Biscuit in May and brings him to the seaside weekly."
    atoms = ["Nora adopted a greyhound called Biscuit in May.", "They take him to the beach every Sunday."]
    state = await verified_one(rows, entry, atoms, nli=FakeNLI({entry: "neutral"}, default="entailment"))
    assert [state.entries[i].text for i in state.live_entries()] == ["Nora adopted a greyhound called Biscuit in May."]
    assert {d.text: d.reason for d in state.discarded} == {
        "They take him to the beach every Sunday.": "atomic fact: " + NO_SUBJECT_REASON}


@pytest.mark.parametrize("entry, word", [
    # what "it" / "them" stands for is in an earlier sentence
    ("Nora and her husband were half expecting it but it still stung.", "it"),
    ("Nora rang them this morning and their back room seats 30.", "them"),
    ("Nora's brother did it after his knee op.", "it"),
    # a thing before it, an idiom, or "it" as a clause's subject
    ("Nora finished her thesis and submitted it on Friday.", None),
    ("Nora made it to the final.", None),
    ("Nora's husband thinks she should go for it.", None),
    ("Nora felt it was important to speak up.", None),
    ("Nora sold the van because it kept breaking down.", None),
])
def test_an_object_pronoun_with_nothing_to_stand_for(entry, word):
    assert screen.placeholder_object(entry, "Nora", "") == word


def test_a_pointing_adverb_or_a_stance_adverb_is_no_content():
    assert screen.is_filler("Nora is there obviously.", "Nora") is True
    assert screen.is_filler("Nora honestly loves the new flat.", "Nora") is False


def test_a_mood_right_after_the_thanks_is_about_the_chat():
    turn = "cheers, that's sorted then. feel a lot less stressed than this morning. night!"
    assert screen.about_the_chat("Nora feels a lot less stressed than this morning.", "Nora", turn) is True
    turn = "the scan came back clear. feel a lot less stressed than this morning."
    assert screen.about_the_chat("Nora feels a lot less stressed than this morning.", "Nora", turn) is False


@pytest.mark.parametrize("turn, clash", [
    ("the other half already ordered a new mattress online, she's way more organised", True),
    ("the landlord already ordered a new mattress online", True),
    ("I already ordered a new mattress online", False),
    ("the other half and I already ordered a new mattress online", False),
])
def test_the_other_half_or_the_landlord_as_subject_is_someone_else(turn, clash):
    assert screen.subject_clash("Nora ordered a new mattress online.", "Nora", turn) is clash


def test_a_named_thing_after_a_determiner_can_be_what_it_means():
    assert screen.placeholder_object("Nora's colleague has a Leaf too and he loves it.", "Nora", "") is None
    assert screen.placeholder_object("Nora visited the Grand Canyon and loved it.", "Nora", "") is None
    assert screen.placeholder_object("Nora's partner Sam and Nora were expecting it.", "Nora", "") == "it"


@pytest.mark.parametrize("entry, turn, chat", [
    ("Nora is going to walk the dog.", "perfect, thanks! I'm off to walk the dog now", True),
    ("Nora will jot all that down before the viewing.", "brill, I'll jot all that down before the viewing", True),
    ("Nora is going to Lisbon in May.", "I'm off to Lisbon in May!", False),
    ("Nora will walk the dog before work.", "I'll walk the dog before work. ok I'm off to walk the dog", False),
])
def test_leaving_the_chat_or_noting_the_advice_is_filler(entry, turn, chat):
    assert screen.about_the_chat(entry, "Nora", turn) is chat


def test_a_correction_announced_then_made_in_the_next_sentence():
    later = ["oh wait, sorry, I need to fix something. The flat is 58 m², not 48."]
    assert screen.corrected_later("Nora's flat is 48 m².", later, "the flat is 48 m²") == "48"
    later = ["oh wait, sorry, I need to fix something. I re-read the listing and it's 42,000 km, not 62,000."]
    assert screen.corrected_later("Nora's car has 62,000 km.", later, "it has 62,000 km") == "62,000"
    # the sentence after a mark that corrects nothing stated here
    assert screen.corrected_later("Nora's car has 62,000 km.", ["oh wait, one more thing. I like blue, not red."],
                                  "") is None


def test_a_corrected_day_with_or_without_its_ordinal():
    later = ["wait sorry, I just checked and it's the 19th of October, not the 26th."]
    assert screen.corrected_later("Nora's race is on Sunday 26 October.", later, "race is Sunday 26 October") == "26th"
    assert screen.corrected_later("Nora's race is on 19 October.", later, "race is Sunday 26 October") is None
    later = ["oh wait, it's on the 19th, not the 26th."]
    assert screen.corrected_later("Nora's race is on the 26th.", later, "race is on the 26th") == "26th"


@pytest.mark.parametrize("entry, turn", [
    # life facts with the words of a chat remark (from the review of the rule)
    ("Nora responded well to the new medication.", "I responded well to the new medication"),
    ("Nora replied yes to the wedding invitation.", "I replied yes to the wedding invitation"),
    ("Nora wrote this song for her grandmother.", "I wrote this song for my gran"),
    ("Nora keeps her blog updated.", "I keep my blog updated"),
    ("Nora will get back to them about the job offer by Friday.", "I'll get back to them about the job offer by Friday"),
    ("Nora reports back to her manager every Friday.", "I report back to my manager every Friday"),
    ("Nora went quiet for a year after her divorce.", "I went quiet for a year after my divorce"),
    ("Nora is a qualified nurse now.", "Thanks! I'm a qualified nurse now"),
    ("Nora is feeling much better now after her surgery.", "Thanks for asking! I'm feeling much better now after my surgery"),
    ("The big news is Nora is engaged.", "the big news is I'm engaged"),
    ("Nora is visiting her mum in Leeds this weekend.", "I'm off to visit my mum in Leeds this weekend."),
    ("Nora thanked Helen for her help.", "I sent Helen flowers to thank her for the help"),
])
def test_a_life_fact_in_chat_words_is_no_remark_about_the_chat(entry, turn):
    assert screen.about_the_chat(entry, "Nora", turn) is False


def test_review_cases_of_the_other_new_rules():
    for entry in ("Nora visited Kyoto with Sam and loved it.", "Nora found it hard to sleep after the accident.",
                  "Nora hated it when her flatmate was loud.", "Nora considers it a privilege to teach."):
        assert screen.placeholder_object(entry, "Nora", "") is None, entry
    assert screen.household_partner(["I'm seeing my boyfriend Friday", "my husband I think"]) is None
    assert screen.introduced_people(["Had dinner with my parents\nLove them to bits"]) == frozenset()
    assert screen.restate_about_person("Grace, bring me the map so I can plan.", "Nora", {"Grace"}) is None
    assert screen.subject_clash("Nora booked her driving test.", "Nora",
                                "Dropped the kids at school then finally booked my driving test!") is False
    assert screen.corrected_later("Nora's sister lives in Paris.",
                                  ["Sorry for the slow reply! We went to Lyon this time, not Paris."], "") is None
    assert screen.corrected_later("Nora ran 26 km last weekend.",
                                  ["Sorry, the race is on the 27th, not the 26th."], "") is None
    assert screen.urged_only("Nora is bringing a lasagne.", "Nora",
                             "Potluck at Sam's on the 14th. Bring a lasagne, that's the plan, it's my specialty.") is False


# The classes left on new dialogues at 0ada5cb, each as an invented case and its near misses.
@pytest.mark.parametrize("entry,turn,planned", [
    # a first-person present with a time ahead is a timetable, not a deed
    ("Nora started at the dental practice on the 9th.", "I quit the bakery! I start at the dental practice on the 9th", True),
    ("Nora flew to Oslo.", "we fly to Oslo next Friday, can't wait", True),
    ("Nora moved to Leeds.", "I move to Leeds in two weeks", True),
    ("Nora swam on Monday.", "I usually swim on Monday", False),  # a habit
    ("Nora started at the dental practice.", "I started at the dental practice on the 9th", False),
    ("Nora started at the dental practice.", "Sam starts at the dental practice on the 9th", False),
])
def test_a_present_with_a_time_ahead_is_a_plan(entry, turn, planned):
    assert screen.planned_as_done(entry, "Nora", turn) is planned


def test_a_correction_of_a_value_the_premise_never_said():
    later = ["the meet-up is Saturday 14 March. I can bring snacks",
             "oh wait, I checked the invite: it's actually the 7th of March, not the 14th."]
    # the entry cites the turn that named the meet-up; its day came from the next turn
    assert screen.corrected_later("Nora is going to the book club meet-up on Saturday 14 March.", later,
                                  "I joined the book club at the library") == "14th"
    # the premise said the day and a turn between says it again: that one is corrected
    assert screen.corrected_later("Nora's dentist appointment is on 14 March.", later,
                                  "my dentist appointment is on 14 March") is None
    # the entry already holds the new day: nothing left to correct
    assert screen.corrected_later("Nora is going to the meet-up on 7 March.", later,
                                  "I joined the book club at the library") is None


@pytest.mark.parametrize("entry,open_word", [
    ("So the whole family is driving up, Nora will be there a week.", "there"),
    ("Nora found out on Monday and is still in shock.", "found out"),
    ("Nora is there obviously.", "there"),
    ("Nora flew to Lisbon and will be there a week.", None),
    ("Nora works at the library and is there until 6 on Fridays.", None),
    ("Nora will be there for her sister.", None),
    ("Nora was getting there with the thesis.", None),
    ("There is a party at Nora's on Friday.", None),
    ("Nora found out that she got the grant.", None),
    ("Nora found out about the merger on Monday.", None),
])
def test_a_there_or_a_found_out_with_nothing_it_stands_for(entry, open_word):
    assert screen._open_object(entry) == open_word


def test_a_dialogue_line_copied_with_its_label_is_no_memory():
    assert screen.is_filler("Nora: That's amazing, so happy for you!!", "Nora", ["Sam"]) is True
    assert screen.is_filler("[D1:4] Sam (user): wow congrats", "Nora", ["Sam"]) is True
    # a label before a fact that names the person is a restated fact
    assert screen.is_filler("Nora Lind (user): Nora Lind's blood type is O negative.", "Nora Lind", []) is False
    assert screen.is_filler("Nora's plan: a week in Lisbon in May.", "Nora", ["Sam"]) is False


def test_being_back_in_the_chat_and_a_name_said_before_i():
    assert screen.restate_sentence("samm I'm back!", "Nora") == "Nora is back!"
    assert screen.about_the_chat("Nora is back!", "Nora", "samm I'm back! sorry for the silence") is True
    assert screen.about_the_chat("Nora will be back later.", "Nora", "gotta run, back later") is True
    assert screen.about_the_chat("Nora is back from Peru.", "Nora", "I'm back from Peru!") is False
    assert screen.about_the_chat("Nora is back at work.", "Nora", "I'm back at work") is False


@pytest.mark.parametrize("entry,turn,moved", [
    # the user's "I" turned into the person just named
    ("Nora's friend Jakub recommends a dentist in Mokotów, he booked her for Friday.",
     "my friend Jakub recommends a dentist in Mokotów, I booked her for Friday", True),
    ("Nora's sister is painting the nursery this weekend.",
     "my sister's visiting next week! I'm painting the nursery this weekend", True),
    ("Nora's mother is thrilled about the new flat.", "my mum called. honestly I'm so thrilled about the new flat", True),
    # "he" / "she" after the user's own name, or after a role only, is the user
    ("Nora left her job because she was exhausted.", "I left my job, I was exhausted", False),
    ("Nora's dad was a baker so she grew up in the shop.", "my dad was a baker so I grew up in the shop", False),
    # the turn says it of the other person too
    ("Nora's sister is painting the nursery.", "my sister is painting the nursery and I'm painting the hall", False),
    ("Nora's friend Jakub booked the dentist.", "my friend Jakub booked the dentist for me", False),
])
def test_an_act_of_the_user_given_to_someone_else(entry, turn, moved):
    assert screen.act_moved_from_user(entry, "Nora", turn) is moved


def test_learning_what_the_other_side_just_said_is_a_reaction():
    prev = "Most councils run a bulky waste collection: you book a slot online and they take the sofa for about £25."
    assert screen.reaction_to_other("Nora didn't know about the bulky waste collection, will tell Sam.", "Nora", prev,
                                    "oh I didn't know about bulky waste collection, will tell Sam") is True
    assert screen.reaction_to_other("Nora didn't know about her dad's illness until March.", "Nora", prev,
                                    "I didn't know about his illness until March") is False


def test_a_correction_that_says_the_act_again_with_another_day():
    turn = ("wait no sorry, I got the date wrong, I handed the keys back on friday the 14th, "
            "the 12th was when we moved the boxes out")
    assert screen.corrected_later("Nora handed the keys back on March 12th.", [turn],
                                  "I handed back the keys on the 12th of march") == "12th"
    assert screen.corrected_later("Nora handed the keys back on the 14th.", [turn], "") is None
    assert screen.corrected_later("Nora moved the boxes out on the 12th.", [turn], "") is None
    # the stating sentence itself is the correction: read as a later turn
    assert screen.stating_correction("Nora handed the keys back on March 12th.", turn, "Nora") == turn
    assert screen.stating_correction("Nora handed the keys back.", "I handed the keys back on the 12th", "Nora") == ""
    assert screen.restate_sentence("hola, need some help with my landlord.", "Nora") is None


def test_a_denied_number_and_a_number_for_a_number_are_corrections():
    later = ["wait no Tomek didn't order 40, he ordered 4 dozen, so 48 😅 he's taking them to his team"]
    assert screen.corrected_later("Tomek ordered 40 pierogi.", later, "Tomek ordered 40") == "40"
    assert screen.corrected_later("Tomek ordered 48 pierogi.", later, "") is None
    later = ["wait I said 3 rooms, it's 4. also the plumber's quote is 6.200 not 2.600, his writing is awful"]
    assert screen.corrected_later("The plumber quoted 2.600 zł.", later, "the plumber quoted 2.600") == "2.600"
    assert screen.corrected_later("The plumber quoted 6.200 zł.", later, "") is None


def test_a_joke_taken_back_a_question_and_an_indefinite_object():
    turn = "YES. I already told Ola she's cooking, she just did a course. kidding she's not cooking, we'll order pizza"
    assert screen.retracted_joke("Nora told Ola she's cooking.", "Nora", turn) is True
    assert screen.retracted_joke("Nora will order pizza.", "Nora", turn) is False
    assert screen.is_filler("Nora booked already for the trip right?", "Nora") is True
    assert screen._open_object("So Nora may have committed to something dumb.") == "something"
    assert screen._open_object("Nora's aunt already sorted something.") == "something"
    assert screen._open_object("Nora bought something for Sam's birthday at the market.") is None
    assert screen._open_object("Nora worked with the artist to make it happen and give her customers "
                               "something different.") is None


def test_one_sentence_filled_with_every_name():
    texts = ["Nora will send Ola's quote on Friday.", "Nora will send Piotr's quote on Friday.",
             "Nora will send Kasia's quote on Friday.", "Nora's budget is 30,000 zł.",
             "Nora will send the quote on Friday."]
    assert screen.filled_templates(texts) == {0, 1, 2}
    assert screen.filled_templates(texts[:2] + texts[3:]) == set()  # two names: may be two facts
