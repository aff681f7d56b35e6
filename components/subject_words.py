"""Which of a question's words name its subject: not the words that ask for something ("summarise", "compare")
nor those that join or judge subjects ("associated", "affect"); and the run of subject words around a word."""

from __future__ import annotations

import re

from pmc_rag.components.citations import content_words

# Words that ask for something ("Summarise the evidence on tuberculosis", "Give me an overview of ...", "Tell me
# about ...", "Contrast robotic with laparoscopic surgery", "Ketamine versus morphine: which is better?") are rare
# in papers but are not what the question is about: they never count as its specific words.
REQUEST_WORD = re.compile(r"^(?:summar(?:y|ies|i[sz]e[ds]?|i[sz]ing)|overview|outline|briefly|tl;?dr|explain|"
                          r"describe|give|tell|list|please|compar(?:e[sd]?|ing|isons?)|contrast(?:s|ed|ing)?|"
                          r"versus|vs|better|worse)$", re.IGNORECASE)
# Words that join a question's subjects or judge them ("Is hypoxia associated with infection control?", "Does
# context matter ...?", "Are current guidelines sufficient?", "What happens to thyroxine in fish fed PBDE-47?"):
# they name no subject, so they are never specific words, and they end a phrase.
FRAME_WORD = re.compile(r"^(?:associated?|association|affect(?:s|ed|ing)?|effects?|influenc(?:e[sd]?|ing)|"
                        r"impacts?|improv(?:e[sd]?|ing)|reduc(?:e[sd]?|ing)|increas(?:e[sd]?|ing)|"
                        r"decreas(?:e[sd]?|ing)|lower(?:s|ed|ing)?|rais(?:e[sd]?|ing)|predict(?:s|ed|ing|ive|able)?|"
                        r"related?|relationship|linked|causes?|caused|leads?|correlated?|prevents?|prevented|"
                        r"helps?|change[sd]?|differ(?:s|ent)?|depends?|needs?|necessary|useful|safe|effective|"
                        r"efficacious|benefits?|role|value|matters?|sufficient|mandatory|justified|worth(?:while)?|"
                        r"feasible|possible|reliable|accurate|adequate|appropriate|provides?|option|"
                        r"happen(?:s|ed|ing)?)$",
                        re.IGNORECASE)


def is_subject_word(token: str) -> bool:
    """A word that can name a question's subject: it has content, and it neither asks ("summarise") nor joins or
    judges subjects ("associated", "affect")."""
    return bool(content_words(token)) and not REQUEST_WORD.match(token) and not FRAME_WORD.match(token)


def phrase_around(question: str, word: str) -> str:
    """The run of the question's subject words around `word` ("proton pump inhibitors" around "pump"): a subject
    named by several words shares its meaning out among them, so each is weighed with the others."""
    tokens = re.findall(r"[\w-]+|[^\w\s]", question)
    lowered = [t.lower() for t in tokens]
    if word.lower() not in lowered:
        return word
    start = end = lowered.index(word.lower())

    while start > 0 and is_subject_word(tokens[start - 1]):
        start -= 1
    while end + 1 < len(tokens) and is_subject_word(tokens[end + 1]):
        end += 1
    return " ".join(tokens[start:end + 1])


def names_phrase(text: list[str], phrase: list[str]) -> bool:
    """Whether the text's stems hold the phrase's in its order, with at most one other word between two of them
    ("quality of weekend care" names "quality care")."""
    for start, stem in enumerate(text):
        if stem != phrase[0]:
            continue
        position = start
        for wanted in phrase[1:]:
            following = text[position + 1:position + 3]
            if wanted not in following:
                break
            position += 1 + following.index(wanted)
        else:
            return True
    return False
