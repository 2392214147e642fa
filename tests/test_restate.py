"""The detail re-read by rule (pipeline.recover_by "restate"): a user turn's own sentence
written about the user, never a third person's act moved onto the user."""

from __future__ import annotations

import pytest

from promem_fast.stages.complete import restate_facts
from promem_fast.stages import screen
from promem_fast.stages.screen import restate_sentence


@pytest.mark.parametrize("sentence, fact", [
    ("My colleague Rui tore his ACL playing five-a-side last week, so he's out for months and I'm covering "
     "his clients until at least September.",
     "Sam's colleague Rui tore his ACL playing five-a-side last week, so he's out for months and Sam is covering "
     "his clients until at least September."),
    # the third person keeps the act: only the user's own "I" becomes the name
    ("But Henrik is leaving at the end of June, he's moving to Berlin with his girlfriend, so I'll be the only "
     "architect left.",
     "Henrik is leaving at the end of June, he's moving to Berlin with his girlfriend, so Sam will be the only "
     "architect left."),
    ("I love pottery lol 😄", "Sam loves pottery."),
    ("I went to Rome in 2019 and I loved it!", "Sam went to Rome in 2019 and Sam loved it!"),
    # a dropped "I" comes back as the name
    ("Lost my job yesterday.", "Sam lost Sam's job yesterday."),
    ("Been only to Rome once, my favourite trip.", "Sam has been only to Rome once, Sam's favourite trip."),
    # a quotation keeps its speaker's words
    ('My dad said "I am not selling the car" and I agreed.', 'Sam\'s dad said "I am not selling the car" and Sam agreed.'),
    ("Haha, honestly I don't drive at all", "Sam doesn't drive at all."),
])
def test_a_sentence_is_written_about_the_user_by_rule(sentence, fact):
    assert restate_sentence(sentence, "Sam") == fact


@pytest.mark.parametrize("sentence", [
    "Do I need a permit for that?",                       # a question
    "She's 84 and lives on her own in a terraced house.",  # no "I" / "my": someone else's
    "The bedroom and the only toilet are upstairs.",
    "She hates the new food, so I mix in a little tuna.",   # "she" is said only before
    "He says I drive like a nervous grandmother.",
    "My brother Felix might join us in Kyoto.",            # "us": who else is unknown
    "We're thinking of adopting a greyhound.",
    "Left my keys at work.",                                # "left": no subject to give it
    "I agree!",                                             # too short to be a memory
    "",
])
def test_a_sentence_that_is_not_the_users_to_restate_gives_nothing(sentence):
    assert restate_sentence(sentence, "Sam") is None


def test_each_missing_detail_takes_the_sentence_that_holds_it():
    turn = ("She's 84 and lives on her own. My mum broke her hip three weeks ago. "
            "I take the bus to see her twice a week. The physio says stairs are a no.")
    facts = restate_facts(turn, "Grace", ["mum broke hip", "bus twice a week", "physio stairs"], 6)
    # the physio's sentence names no one of the user's: no fact, not one pinned on Grace; "see
    # her" names no one either
    assert facts == ["Grace's mum broke her hip three weeks ago."]


def test_a_sentence_is_restated_once_and_at_most_max_facts():
    turn = "I adopted a cat named Pip last week. My sister Ana found her at the shelter."
    assert restate_facts(turn, "Nora", ["adopted cat", "cat named Pip"], 6) == [
        "Nora adopted a cat named Pip last week."]
    assert restate_facts(turn, "Nora", ["adopted cat", "sister Ana shelter"], 1) == [
        "Nora adopted a cat named Pip last week."]
    # a detail with under half its words in any sentence gives nothing
    assert restate_facts(turn, "Nora", ["kayak trip Norway"], 6) == []


@pytest.mark.parametrize("sentence, fact", [
    ("Give baby Noor a cuddle from me!", None),        # asked of the other side
    ("Check out my new bike!", None),
    ("Let's meet at my place.", None),
    ("Work is crazy for me right now.", "Work is crazy for Sam right now."),  # a noun subject
    ("Sorry I went quiet this week, it's been chaos.", "Sam went quiet this week, it's been chaos."),
    ("Hey, I need help planning something.", "Sam needs help planning something."),
    ("I'd better go and pack a bag for Mum.", "Sam had better go and pack a bag for Mum."),
])
def test_chat_openers_and_requests_are_not_read_as_the_users_facts(sentence, fact):
    assert restate_sentence(sentence, "Sam") == fact


def test_an_emoji_before_a_capital_ends_a_chat_sentence():
    turn = "I just don't like how they look 😂 The Octavia estate sounds good though. My budget is 9k."
    assert restate_facts(turn, "Hamid", ["doesn't like how they look"], 6) == ["Hamid just doesn't like how they look."]


@pytest.mark.parametrize("sentence, fact", [
    # a negation that opens the sentence stays
    ("No more coffee for me after 3pm.", "No more coffee for Sam after 3pm."),
    ("No one told me about the party.", "No one told Sam about the party."),
    ("No, I haven't booked it yet.", "Sam hasn't booked it yet."),
    # a common word before "I" is no numeral ("World War I"); nor is a name "me" became
    ("Yesterday I adopted a cat.", "Yesterday Sam adopted a cat."),
    ("When I was a kid, my dad took me fishing.", "When Sam was a kid, Sam's dad took Sam fishing."),
    ("Tom told me I should apply.", "Tom told Sam Sam should apply."),
    ("i love hiking with my dad", "Sam loves hiking with Sam's dad."),
    ("I'd never been to Japan before.", "Sam had never been to Japan before."),
    ("I'd like to visit my aunt.", "Sam would like to visit Sam's aunt."),
    ("Finally finished my novel!", "Sam finally finished Sam's novel!"),
    ("Can't wait for my vacation!", "Sam can't wait for Sam's vacation!"),
    ("Haven't seen my brother in years.", "Sam hasn't seen Sam's brother in years."),
    ("Hey Tom, I got the job!", "Sam got the job!"),
    ("Mark and I are getting married.", "Mark and Sam are getting married."),
    ("I love it ☺️ The hotel was great.", "Sam loves it The hotel was great."),
    ("It was 30°C at my place.", None),                  # "It" opens: whose place is said before
    ("My flat was 30°C all week.", "Sam's flat was 30°C all week."),
    ("Until I tell my mom.", None),                       # a fragment
    ("Sorry for my late reply.", None),
    ("I miss you so much!", None),                        # said to the other side
])
def test_negations_dropped_subjects_and_chat_spellings(sentence, fact):
    assert restate_sentence(sentence, "Sam") == fact


def test_a_long_run_of_laughter_is_read_in_linear_time():
    # two patterns matching the same "haha" made the tail regex exponential
    assert restate_sentence("I passed my test " + "haha " * 200 + "really", "Sam") == \
        "Sam passed Sam's test " + "haha " * 199 + "haha really."


def test_the_earlier_sentence_gives_way_when_it_is_not_the_users():
    turn = "My sister adopted a cat. I adopted a cat too."
    assert restate_facts(turn, "Sam", ["adopted cat"], 6) == ["Sam's sister adopted a cat."]
    turn = "She adopted a cat. I adopted a cat too."
    assert restate_facts(turn, "Sam", ["adopted cat"], 6) == ["Sam adopted a cat too."]


@pytest.mark.parametrize("sentence, fact", [
    ("Oh my god, congratulations, I'm so happy for you all", None),   # "my god" is no one's
    ("Oh my god, I passed my driving test!", "Sam passed Sam's driving test!"),
    ("Ok I'm ordering the sofa bed now.", "Sam is ordering the sofa bed now."),
    ("Yeah that I can do.", None),                       # "that" is said before
])
def test_exclamations_with_my_are_not_the_users(sentence, fact):
    assert restate_sentence(sentence, "Sam") == fact


@pytest.mark.parametrize("sentence, fact", [
    # "she" / "he" before anyone is named: only the turns before say who
    ("Sorry, I got it wrong earlier, she comes home on Wednesday the 16th.", None),
    ("I was so scared of dropping her I didn't move for 40 minutes.", None),
    ("Measuring is a good idea, I'll ask Lucía to do it, she has the keys.",
     "Measuring is a good idea, Sam will ask Lucía to do it, she has the keys."),
    ("My mum broke her hip and she's coming home.", "Sam's mum broke her hip and she's coming home."),
    ("I PASSED MY DRIVING TEST", None),                   # shouted "MY" is left as it is: not restated
    ("Ha, Miso loved me.", "Miso loved Sam."),
])
def test_a_person_said_before_anyone_is_named_is_not_restated(sentence, fact):
    assert restate_sentence(sentence, "Sam") == fact


def test_an_opening_she_after_a_sentence_naming_one_person_is_that_persons():
    turn = ("My partner Efua is the one who actually knows plants. She grew up on her grandmother's farm "
            "outside Kumasi. She works Saturdays at the pharmacy. Our son Kwame is 9. He's decided to grow a pumpkin.")
    assert restate_facts(turn, "Kofi", ["grew up farm Kumasi", "works Saturdays pharmacy", "grow pumpkin"], 6) == [
        "Kofi's partner Efua grew up on her grandmother's farm outside Kumasi.",
        # the sentence before names a place, not a person: no fact
        "Kofi's son Kwame's decided to grow a pumpkin."]


@pytest.mark.parametrize("before", [
    "Haha he did.",                                 # a chat word is no person
    "My brother Tom and my sister Ana came.",       # two people: which one is unknown
    "It rained all day in Porto.",                  # a place
])
def test_an_opening_pronoun_is_left_alone_when_the_sentence_before_names_no_single_person(before):
    from promem_fast.stages.screen import resolve_opening_pronoun

    assert resolve_opening_pronoun("She says I drive like a grandmother.", before, "Sam") is None


def test_people_the_user_introduces():
    turns = ["My daughter Maisie starts school in May. My business partner is Dana Whitfield.",
             "We went to Rome on my trip to Rome. His girlfriend Mara is lovely.", "Hi Tom! I'm Sam."]
    assert screen.introduced_people(turns, {"sam", "tom"}) == frozenset({"Maisie", "Dana", "Mara"})


@pytest.mark.parametrize("sentence, fact", [
    ("Maisie has been begging for a dog for months.", "Maisie has been begging for a dog for months."),
    ("Haha, Dana wants me to do the books.", "Dana wants Sam to do the books."),
    ("Mum's driving over from Leeds on Friday.", "Sam's mum is driving over from Leeds on Friday."),
    ("Mum's been ill since March.", "Sam's mum has been ill since March."),
    ("Dad loves his new allotment.", "Sam's dad loves his new allotment."),
    # not a person the user introduced, or not the user's to restate
    ("Rome is lovely in May.", None),
    ("Maisie cried when we left.", None),
    ("Dana thinks you should go.", None),
    ("Is Maisie coming too?", None),
    ("mum said no.", None),                      # "mum" only as a name, capitalised
])
def test_a_sentence_about_a_person_the_user_told_of(sentence, fact):
    assert screen.restate_about_person(sentence, "Sam", {"Maisie", "Dana"}) == fact


def test_restate_facts_reads_a_person_the_user_introduced():
    turn = "Haha yes. Maisie has been begging for a dog for months."
    assert restate_facts(turn, "Tom", ["Maisie begging dog"], 6) == []
    assert restate_facts(turn, "Tom", ["Maisie begging dog"], 6, {"Maisie"}) == [
        "Maisie has been begging for a dog for months."]


def test_guess_what_is_a_chat_opener():
    assert screen.restate_sentence("Oh, and guess what, I'm running the Bath half on April 14th!", "Priya") == \
        "Priya is running the Bath half on April 14th!"


def test_the_partner_the_user_pairs_themself_with():
    assert screen.household_partner(["evening. me and my partner Ola are buying our first flat"]) == "Ola"
    assert screen.household_partner(["My wife Ama and I moved in May."]) == "Ama"
    # the one partner the user names, when they pair themself with no one
    assert screen.household_partner(["My partner Ola is an accountant. We rent in Partick."]) == "Ola"
    assert screen.household_partner(["me and my partner Ola", "my wife Ama is a nurse"]) == "Ola"
    # two of them, or a partner only as an owner ("my wife Ama's car"): no one to read "we" as
    assert screen.household_partner(["me and my partner Ola", "me and my boyfriend Sam"]) is None
    assert screen.household_partner(["my wife Ama", "my husband Sam"]) is None
    assert screen.household_partner(["I borrowed my wife Ama's goggles."]) is None


@pytest.mark.parametrize("sentence, fact", [
    ("right now we rent a one bed in Partick", "Right now Tom and Ola rent a one bed in Partick."),
    ("We're flying to Crete on the 3rd.", "Tom and Ola are flying to Crete on the 3rd."),
    ("Our landlord said we can build raised beds.", "Tom and Ola's landlord said they can build raised beds."),
    ("Maisie cried when we left, so I think we're going back.",
     "Maisie cried when Tom and Ola left, so Tom thinks they're going back."),
    ("Shall we leave around 8?", None),           # a question
    ("I love the new flat.", None),               # no "we": restate_sentence's case
])
def test_a_we_sentence_is_the_user_and_partner(sentence, fact):
    assert screen.restate_as_couple(sentence, "Tom", "Ola") == fact
    assert screen.restate_as_couple(sentence, "Tom", None) is None


def test_restate_facts_reads_we_as_the_couple():
    turn = "right now we rent a one bed in Partick"
    assert restate_facts(turn, "Tom", ["rent one bed Partick"], 6) == []
    assert restate_facts(turn, "Tom", ["rent one bed Partick"], 6, partner="Ola") == [
        "Right now Tom and Ola rent a one bed in Partick."]


@pytest.mark.parametrize("sentence, fact", [
    ("We moved to the US in 2019.", "Tom and Ola moved to the US in 2019."),   # the country, not "us"
    ("We'd love to visit Japan.", "Tom and Ola would love to visit Japan."),
    ("My mates and I went climbing and we did ten routes.", None),         # another group's "we"
    ("At work we have a new manager.", None),
    ("It'll be the three of us on the plot.", None),                         # a "we" counted out
    ("Me, my partner Ola and our cat Pamuk.", None),                          # the partner named already
])
def test_we_is_the_couple_only(sentence, fact):
    assert screen.restate_as_couple(sentence, "Tom", "Ola") == fact


@pytest.mark.parametrize("sentence, fact", [
    ("Mum's wedding ring went missing.", "Tom's mum's wedding ring went missing."),
    ("Dad's building company went bust.", "Tom's dad's building company went bust."),
])
def test_mums_thing_is_hers(sentence, fact):
    assert screen.restate_about_person(sentence, "Tom", []) == fact


def test_a_person_introduced_with_is():
    assert screen.introduced_people(["My sister is Ana."]) == frozenset({"Ana"})


def test_a_name_that_is_also_a_common_word():
    # right after the role a capitalised word is a name, common word or not; after "is" it
    # must be no common word, and a month, a weekday or "I" is never one
    assert screen.introduced_people(["my daughter Grace starts school", "my friend Will came"]) == frozenset(
        {"Grace", "Will"})
    assert screen.introduced_people(["my son I think is tired", "my mum Monday morning", "my wife is Grace"]) == \
        frozenset()
    assert restate_facts("Grace starts Year 1 in September.", "Tom", ["Grace starts Year 1 September"], 6,
                         screen.introduced_people(["my daughter Grace"])) == ["Grace starts Year 1 in September."]


@pytest.mark.parametrize("sentence, fact", [
    ("Gonna continue my edu and check out career options!", "Tom is going to continue Tom's edu and check out career options!"),
    ("gotta finish my thesis by May", "Tom has to finish Tom's thesis by May."),
])
def test_a_dropped_i_before_gonna_or_gotta(sentence, fact):
    assert screen.restate_sentence(sentence, "Tom") == fact
    assert "going to be honest" not in (screen.restate_sentence("Gonna be honest, I love it", "Tom") or "")
