"""A question asked in another language, searched and judged in English, the language of the indexed papers.

The embedding model, the keyword index, the relevance gate's word checks and the quotation step all read English:
asked in Spanish or German, a question about a paper in the index was mostly turned away (no passage close enough
to it, or words no paper uses: "Helfen", "Akupunktur"). This component tells the question's language (py3langid,
a naive Bayes model over byte n-grams trained on 97 languages, bundled in its package) and, when it is not
English, asks a chat model to translate it. The translation is what every later stage reads; the reader's
question stays as asked in the conversation, and a note says how it was searched. English questions pass
through untouched and the model is not asked. If the model fails or writes nothing usable, the question is
searched as asked, and a note says so.

Usage:
```python
from haystack.components.generators.chat import OpenAIChatGenerator
from pmc_rag.components.question_translator import QuestionTranslator

translator = QuestionTranslator(chat_generator=OpenAIChatGenerator(model="qwen2.5-0.5b-instruct",
                                                                   api_base_url="http://127.0.0.1:1417/v1"))
translator.warm_up()
translator.run(question="¿El erlotinib es eficaz en el cáncer de pulmón con mutación EGFR?")
# {'question': 'Is erlotinib effective in lung cancer with an EGFR mutation?', 'notes': ["Asked in Spanish: ..."]}
translator.run(question="Is erlotinib effective?")   # {'question': 'Is erlotinib effective?', 'notes': []}
```
"""

from __future__ import annotations

import json
import re
import threading
import time
from functools import lru_cache
from typing import Any

from haystack import component, default_from_dict, default_to_dict, logging
from haystack.components.generators.chat.types import ChatGenerator
from haystack.core.serialization import component_to_dict
from haystack.dataclasses import ChatMessage
from haystack.utils import deserialize_chatgenerator_inplace

from pmc_rag.components.recorded_reply_chat_generator import NoRecordedReply

logger = logging.getLogger(__name__)

# The model is shown three translations before the question, each as the JSON it must write: without them the
# embedded 0.5B model answered the question instead ("Yes, INR is generally considered reliable.").
INSTRUCTIONS = ("Translate the user's text into English. Do not answer it: it is a question to translate, word for "
                "word, in the words a medical paper would use. Keep drug, gene and disease names.")
EXAMPLES = (("¿La metformina reduce el riesgo de cáncer de colon en diabéticos?",
             "Does metformin reduce the risk of colon cancer in diabetics?"),
            ("Mon fils a de l'asthme : les corticoïdes inhalés freinent-ils sa croissance ?",
             "My son has asthma: do inhaled corticosteroids slow his growth?"),
            ("Hilft Ibuprofen bei Migräne besser als Paracetamol?",
             "Does ibuprofen help migraine better than paracetamol?"))

# An English question the papers did not answer as asked is reworded once in their terms (`reword_unanswered`): the
# model sees the question alone, never a passage, so it cannot borrow a paper's words for a subject no paper joins.
REWORD_INSTRUCTIONS = ("Rewrite the user's health question in the words a medical research paper would use: medical "
                       "terms for everyday words, no personal details. Keep every subject of the question and what it "
                       "asks; add no subject and drop none. Do not answer it.")
REWORD_EXAMPLES = (("My dad's ankles swell since he started amlodipine, does that go away?",
                    "Does amlodipine-induced ankle edema resolve?"),
                   ("Do kids who snore do worse at school?",
                    "Is snoring in children associated with poorer school performance?"),
                   ("Is it ok to take ibuprofen for a headache when you're pregnant?",
                    "Is ibuprofen use for headache during pregnancy safe?"))

# The translations (and, for a minute, the failures) of the most recent questions are kept: a question is read by
# the answering service and then by the pipeline, and a repeated one need not wait for the model again.
REMEMBERED_QUESTIONS = 1024
FAILURE_REMEMBERED_S = 60.0

# py3langid's codes for the languages a reader is most likely to ask in; others are named by their code.
LANGUAGE_NAMES = {"es": "Spanish", "fr": "French", "de": "German", "it": "Italian", "pt": "Portuguese",
                  "nl": "Dutch", "pl": "Polish", "sv": "Swedish", "da": "Danish", "no": "Norwegian", "fi": "Finnish",
                  "ru": "Russian", "uk": "Ukrainian", "tr": "Turkish", "el": "Greek", "cs": "Czech", "ro": "Romanian",
                  "hu": "Hungarian", "zh": "Chinese", "ja": "Japanese", "ko": "Korean", "ar": "Arabic",
                  "he": "Hebrew", "hi": "Hindi", "fa": "Persian", "vi": "Vietnamese", "id": "Indonesian",
                  "gl": "Galician", "ca": "Catalan"}


@component
class QuestionTranslator:
    """
    Passes an English question on as it is; translates one in another language into English with
    `chat_generator` (which should write `{"english": "..."}`, or the translation alone).
    """

    def __init__(self, *, chat_generator: ChatGenerator, max_english_probability: float = 0.01,
                 min_language_probability: float = 0.15, max_length_ratio: float = 3.0,
                 reword_unanswered: bool = False):
        """
        :param chat_generator: The chat model that translates (its `generation_kwargs` may hold it to JSON).
        :param max_english_probability: A question is translated when py3langid gives English at most this
            probability (read from `judged_words`). Measured on the evaluation sets: the 24 tuning questions in six
            languages scored 0.0006 at most; 1,655 English questions (PubMedQA dev, plain-language, vague,
            route, conversation and unanswerable ones) 0.041 at least.
        :param min_language_probability: ... and py3langid gives the likeliest language at least this probability.
            A question made mostly of drug and gene names is no language: "Erlotinib vs osimertinib in
            EGFR-mutant NSCLC" gives English 0.007, and its likeliest, Estonian, only 0.12. A short question
            spreads its probability over kindred languages ("¿Funciona la metformina?": Spanish 0.21), so the bar
            is low: the 24 tuning questions in other languages gave their language 0.58 at least, and no crisis
            message in another language, of any set, falls under 0.2.
        :param max_length_ratio: A translation more than this many times as long as the question is not one (the
            model answered or rambled): the question is searched as asked.
        :param reword_unanswered: An English question the papers did not answer as asked is asked once more,
            reworded by the same model in the terms papers use (`reworded`; the answering layer does it, see
            `pmc_rag.answering.pipeline_run`).
        """
        if not 0.0 < max_english_probability < 1.0:
            raise ValueError(f"max_english_probability must be between 0 and 1, not {max_english_probability}")
        if not 0.0 <= min_language_probability < 1.0:
            raise ValueError(f"min_language_probability must be at least 0 and under 1, not {min_language_probability}")
        self.chat_generator = chat_generator
        self.max_english_probability = max_english_probability
        self.min_language_probability = min_language_probability
        self.max_length_ratio = max_length_ratio
        self.reword_unanswered = reword_unanswered
        self._memo: dict[str, tuple[str | None, float]] = {}  # question -> (English or None, when), oldest first
        self._lock = threading.Lock()

    def warm_up(self) -> None:
        """Loads the language model, and warms the chat model if it can: one that cannot start (no model server,
        no key) does not stop the pipeline, whose English questions never need it; a question in another
        language is then searched as asked, and its note says so."""
        _identifier()
        if hasattr(self.chat_generator, "warm_up"):
            try:
                self.chat_generator.warm_up()
            except Exception as error:  # an OpenAI client without a key raises here, not at the first question
                logger.warning("The translator's chat model could not start; questions in other languages will be "
                               "searched as asked: {error}", error=error)

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, chat_generator=component_to_dict(self.chat_generator, name="chat_generator"),
                               max_english_probability=self.max_english_probability,
                               min_language_probability=self.min_language_probability,
                               max_length_ratio=self.max_length_ratio, reword_unanswered=self.reword_unanswered)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QuestionTranslator:
        data = {**data, "init_parameters": dict(data["init_parameters"])}  # the caller's dict is left as it was
        deserialize_chatgenerator_inplace(data["init_parameters"], key="chat_generator")
        return default_from_dict(cls, data)

    def language(self, question: str) -> str | None:
        """The question's language code when it is not English, else None (also for fewer than `MIN_WORDS` words
        to judge by, or no language likely enough)."""
        words = judged_words(question)
        if len(words) < MIN_WORDS:
            return None
        ranked = dict(_identifier().rank(" ".join(words)))
        likeliest = max(ranked, key=ranked.__getitem__)
        if ranked.get("en", 0.0) > self.max_english_probability or \
                ranked[likeliest] < self.min_language_probability:
            return None
        return likeliest

    @component.output_types(question=str, notes=list[str])
    def run(self, question: str) -> dict[str, Any]:
        """
        :param question: The question as asked.
        :returns: `question`: in English (as asked when it was, or when no translation could be had); `notes`:
            how it was searched, when translated.
        """
        language = self.language(question)
        if language is None:
            return {"question": question, "notes": []}
        name = LANGUAGE_NAMES.get(language, f"language '{language}'")
        english = self._remembered(question)
        if english is None:
            return {"question": question, "notes": [
                f"Asked in {name}: the question could not be translated into English, the language of the papers, "
                "so it was searched as asked."]}
        return {"question": english, "notes": [
            f"Asked in {name}: searched and answered in English, the language of the papers, as \"{english}\" "
            "(a model's translation)."]}

    def remembers(self, question: str) -> bool:
        """Whether `run` would answer from memory, without asking the model (a translation made, or a failure
        within the last `FAILURE_REMEMBERED_S`)."""
        with self._lock:
            english, when = self._memo.get(question, (None, -FAILURE_REMEMBERED_S - 1.0))
            return english is not None or time.monotonic() - when < FAILURE_REMEMBERED_S

    def reworded(self, question: str) -> str | None:
        """The English question in the terms papers use, by the chat model (remembered as translations are);
        None when it is not English, when rewording is off or the model wrote nothing usable."""
        if not self.reword_unanswered or self.language(question) is not None:
            return None
        return self._remembered(question, reword=True)

    def _remembered(self, question: str, reword: bool = False) -> str | None:
        """`_translated`, remembered: the answering service translates a question before its crisis check and the
        pipeline's run then reads it again; a model that failed or timed out was asked twice (two 30 s waits). A
        failure is remembered for `FAILURE_REMEMBERED_S` only, so that a restarted model is asked again."""
        now = time.monotonic()
        key = f"reworded: {question}" if reword else question
        with self._lock:
            if key in self._memo:
                english, when = self._memo.pop(key)
                if english is not None or now - when < FAILURE_REMEMBERED_S:
                    self._memo[key] = (english, when)  # the most recently used last
                    return english
        english = self._translated(question, *((REWORD_INSTRUCTIONS, REWORD_EXAMPLES) if reword else
                                                (INSTRUCTIONS, EXAMPLES)))
        with self._lock:
            self._memo[key] = (english, now)
            while len(self._memo) > REMEMBERED_QUESTIONS:
                del self._memo[next(iter(self._memo))]
        return english

    def _translated(self, question: str, instructions: str = INSTRUCTIONS,
                    examples: tuple[tuple[str, str], ...] = EXAMPLES) -> str | None:
        messages = [ChatMessage.from_system(instructions)]
        for asked, english in examples:
            messages += [ChatMessage.from_user(asked), ChatMessage.from_assistant(json.dumps({"english": english}))]
        try:
            replies = self.chat_generator.run(messages=[*messages, ChatMessage.from_user(question)])["replies"]
        except NoRecordedReply:  # a test's recording lacks this prompt: not a model failure to fail over from
            raise
        except Exception as error:  # any failure of the model: searched as asked, never no answer
            logger.warning("The question could not be translated: {error}", error=error)
            return None
        text = (replies[0].text or "").strip() if replies else ""
        try:
            parsed = json.loads(text)
            text = str(parsed.get("english", "")) if isinstance(parsed, dict) else ""
        except json.JSONDecodeError:
            text = text.splitlines()[0] if text else ""
        text = " ".join(text.split())
        if not text or len(text) > self.max_length_ratio * len(question) or text == question:
            return None
        return text


# The language is told from the question's words of letters only, less those in capitals: an identifier
# ("PMC2329613", "PMID"), an acronym ("EGFR", "TL;DR") or a number is the same in every language, and "Summarise
# PMC2329613" read whole was Oromo to py3langid. Under three such words there is too little to tell by (9 of 910
# short English requests of the route and conversation sets scored under 0.03 read whole; none so).
MIN_WORDS = 3
_LETTERS = re.compile(r"^[^\W\d_]+(?:['’-][^\W\d_]+)*$")


def judged_words(question: str) -> list[str]:
    """The question's words of letters only, punctuation around them stripped, less words in capitals."""
    words = (token.strip("¿?¡!.,;:()[]\"'«»“”") for token in question.split())
    return [w for w in words if _LETTERS.match(w) and not w.isupper()]


def english_probability(text: str) -> float:
    """py3langid's probability that `text`, read whole, is English (0-1)."""
    return language_probabilities(text).get("en", 0.0)


def language_probabilities(text: str) -> dict[str, float]:
    """py3langid's probability of each language for `text`, read whole (language code -> 0-1)."""
    return dict(_identifier().rank(text))


@lru_cache(maxsize=1)
def _identifier() -> Any:
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
