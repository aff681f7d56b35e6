"""Decides what kind of question a message is, so the answering pipeline can take the path that suits it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from importlib import resources
from typing import Any

from haystack import component, default_from_dict, default_to_dict
from haystack.core.serialization import component_from_dict, component_to_dict, import_class_by_name
from haystack.dataclasses import ChatMessage

from pmc_rag.components.citations import paper_ids
from pmc_rag.components.follow_up_asks import searched_for
from pmc_rag.components.part_of_speech import known_word
from pmc_rag.components.recorded_reply_chat_generator import NoRecordedReply

ROUTES = ("single", "summarise", "compare", "several", "overview", "multi_step")

_SUMMARY_VERB = re.compile(
    r"\b(?:summar(?:y|ies|i[sz]e[ds]?|i[sz]ing)|tl;?dr|main findings|key (?:results|findings)|outline|"
    r"overview|what (?:does|did) .{3,120}? (?:report|find|show|conclude)|what (?:were|are) the (?:main |key )?"
    r"(?:results|findings|conclusions)|briefly,? what)\b", re.IGNORECASE)
# "the FIELT trial", "the MmPPOX paper", "'Why Most Published Research Findings Are False'"
_NAMED_PAPER = re.compile(
    r"(?:\bthe (?P<phrase>[^?.;:]{2,120}?) (?:paper|study|trial|article|meta-analysis|review|analysis|report|"
    r"cohort study|validation study|pilot study|serology study|systematic review))\b"
    r"|\bthe (?:paper|study|trial|article|meta-analysis|review) (?:on|about|of|titled|called) (?P<subject>[^?;:]{4,160})"
    # quotation marks, not apostrophes: "Alzheimer's ... Parkinson's" quotes nothing
    r"|(?P<quoted>(?<!\w)['\"\u2018\u201c][^'\"\u2019\u201d]{8,300}['\"\u2019\u201d](?!\w))", re.IGNORECASE)
_TOPIC_WORDS = re.compile(r"\b(?:evidence|literature|research|studies|papers|what is known)\b", re.IGNORECASE)
_OVERVIEW = re.compile(
    r"\b(?:what is known (?:about|on)|what do (?:studies|papers|researchers|we know)|what does the (?:literature|"
    r"evidence|research) say|overview(?: of)?|(?:summari[sz]e|review) the (?:evidence|literature|research|studies)|"
    r"what have (?:researchers|studies) (?:found|shown)|tell me about|list (?:the )?(?:studies|papers|trials)|"
    r"across the (?:papers|studies)|state of (?:the )?(?:research|evidence))\b", re.IGNORECASE)
_COMPARE = re.compile(
    r"\b(?:compare[ds]?|comparing|comparison|contrast(?:ed|ing)?(?!-)|versus|vs\.?|differences? between|"
    r"differ(?:s|ed)? (?:between|from)|similarities|(?:agree|disagree|consistent|inconsistent)\w* (?:on|about|with)|better than|worse than|(?:more|less) (?:effective|accurate|"
    r"common|likely) than|than (?:for|in) (?:men|women|children|adults))\b", re.IGNORECASE)
# Two papers named and asked how they differ: "How do the FIELT trial and the exon 20 study differ?"
_DIFFER = re.compile(r"\b(?:differ\w*|similar\w*)\b", re.IGNORECASE)
# "A or B ... which", "which works better ... : A, B or C"
_WHICH_OF = re.compile(r"\bwhich\b[^?]*\b(?:better|more|best|worse)\b|\b(?:better|best)\b[^?]*\bor\b",
                       re.IGNORECASE)
# The verbs a yes/no question opens with, besides "is", "are" and "should" ("Is A or B better?" is a choice).
_AUXILIARY = r"does|do|did|can|could|will|would|has|have|had|was|were|may|might"
_YES_NO_OPENER = rf"(?:{_AUXILIARY}|is|are|should)\b"
# "Insulin or metformin in diabetes - what does the evidence say?": a question that opens with a choice. Not a
# yes/no question about two factors ("Does either obesity or OSA severity influence ...?"): that asks one thing.
_CHOICE = re.compile(rf"^\s*(?!(?:{_AUXILIARY})\b|(?:is|are)\s+either\b)"
                     r"(?:(?:is|are|should (?:i|we) (?:use|give|choose|prefer))\s+)?(?!either\b)"
                     r"[\w-]+(?:\s[\w-]+){0,2}\s+or\s+[\w-]+", re.IGNORECASE)
# "Inpatient versus outpatient management of neutropenic fever ...: is risk stratification useful?": a study's
# title, then the one yes/no question it answers (a third of PubMedQA's questions take this form). The comparison
# in such a title is between the arms of one study, which the single path finds; the compare route's search per
# arm found other papers (a tonsillectomy finding was quoted for "Inpatient").
_TITLED_YES_NO = re.compile(rf"^(?!\s*{_YES_NO_OPENER})[^?:]{{8,}}?(?::|\.)\s+{_YES_NO_OPENER}[^?]*\?$",
                            re.IGNORECASE)
# The first results name something that a second search must look up.
_SECOND_SEARCH = re.compile(
    r"(?:,? and|;) (?:what|which|where|how|is|are|do|does)\b[^?]*\b(?:other (?:papers|studies|trials)|elsewhere|else|"
    r"(?:that|those|this|these) (?:drug|drugs|mutation|mutations|marker|gene|genes|enzyme|family|inhibitor|"
    r"equation|questionnaire|intervention|condition|outcome|cohort|pathogen|programmes?)|in that cohort|"
    r"in the corpus)\b", re.IGNORECASE)
_PART_START = re.compile(r"(?:^|\s)(?:\d[).]|also,?|and separately:?|two questions:?)\s", re.IGNORECASE)
# "What was the response rate, and how long did ... last?": a second question joined by "and".
_JOINED_QUESTION = re.compile(r",? and (?=(?:how|what|why|which|where|when|who|is it|are they|was it|were they|did it|"
                              r"does it|do they|should|can it)\b)", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'-]+")
# The model layer: what it is asked, and the JSON it must answer in (pipelines/rag_routed_llm.yml gives the model
# server this schema, which holds the reply to it).
LLM_KIND_PROMPT = """A researcher asks a question of a search engine over medical papers. Say which kind it is:
single: asks for one finding ("Does X reduce Y?", "What is the effect of X?")
summarise: asks for a summary of one paper it names by id or title ("Summarise PMC123", "What did the FIELT trial \
find?")
compare: compares two or more named things ("X or Y for Z?", "How does X differ from Y?")
several: asks two or more separate questions
overview: asks what is known about a topic across papers ("What is known about X?")
multi_step: asks about something a first answer will name, in other papers ("Which drug did the X trial test, and what \
do other papers say about it?")

Question: "{question}"
Answer in JSON: {{"kind": "..."}}"""
LLM_KIND_SCHEMA = {"type": "object", "required": ["kind"], "properties": {"kind": {"type": "string",
                                                                                   "enum": list(ROUTES)}}}


@component
class QuestionRouter:
    """
    Says which kind of question a message is, and sends what each kind needs down its own path.

    Kinds (`route`): `single` (one finding, the default path), `summarise` (a named paper), `compare` (two or
    more named subjects), `several` (more than one question in one message), `overview` ("what is known about
    ..."), `multi_step` (the first results name something a second search must look up).

    A follow-up in a conversation (`follow_up_to`, the question it follows up, set by the server) takes the single
    path: it is answered from the topic's papers, and searches with its topic (`FollowUpQuery`'s text). For
    anything else, layers, in order:
    1. Rules: ids (PMC, PMID, DOI, `doc:`), a named paper ("the FIELT trial") with a summary verb, "vs",
       "compare", "what is known about", several question marks or numbered parts. They decide when they match.
    2. Similarity to labelled exemplars: when no rule matches, the question's embedding (the query embedder's,
       so it costs no model call) is compared with labelled questions; if most of its `k` nearest share a kind
       (similarity-weighted share at least `min_share`), that is the kind.
    3. With a `chat_generator` (off in the shipped YAML): the model is asked, only when neither layer decided, to
       name the kind, in JSON (`LLM_KIND_SCHEMA`, which the generator's `response_format` should hold it to). Its
       choice stands only if the question has what that route needs (two subjects for a comparison, ...); a failed
       or unreadable reply is no choice.
    4. Otherwise the question takes the default path, `single`: a plain search answers any question, so an unsure
       router costs an answer its shape, never the answer.

    A route left out of `routes` is never chosen (its questions take the `single` path): that is how a pipeline
    YAML turns a route off.

    Outputs go only where they are used, so the paths that do not apply do not run: `search_question` (what the
    retrievers search, and what is embedded for them) for every route but `summarise` (for `multi_step`, the
    question's first part); `paper` (the paper's id or a phrase of its title) for `summarise`; `subqueries` (one search per
    subject or part) for `compare` and `several`; `follow_up` (the second part) for `multi_step`. A `multi_step`
    question whose first part names a paper ("Which drug did the FIELT trial test, and ...") gets `step_paper` (the
    paper's id or title phrase, to read first) and `step_question` (its first part, to search for if no paper
    is that one) instead of `search_question`.
    `route`, `route_layer` (rule, exemplars or default) and `subjects` always.

    Usage:
    ```python
    from pmc_rag.components.question_router import QuestionRouter

    router = QuestionRouter()
    router.warm_up()                          # embeds the exemplars once
    router.run(question="Summarise PMC4816447", query_embedding=[...])
    # {"route": "summarise", "route_layer": "rule", "paper": "PMC4816447", "subjects": [], ...}
    ```
    """

    def __init__(self, *, routes: list[str] | None = None, exemplars: str | None = None, k: int = 5,
                 min_share: float = 0.7, model: str = "sentence-transformers/all-MiniLM-L6-v2",
                 chat_generator: Any = None):
        """
        :param routes: The routes that may be chosen, besides `single` (always there); None: all of them.
        :param exemplars: A JSON file of labelled questions (`{"questions": [{"question", "kind", "set"}]}`); rows
            whose set is `held_aside` are never used. None: the questions shipped in
            `pmc_rag/evaluation/datasets/route_questions.json`; "" (empty): no similarity layer.
        :param k: How many nearest exemplars vote.
        :param min_share: The similarity-weighted share of the `k` nearest that must agree on a kind.
        :param model: The embedding model the exemplars are embedded with: the query embedder's, since the
            question's embedding comes from it.
        :param chat_generator: A chat generator asked for the kind when neither rules nor exemplars decide (see
            `pipelines/rag_routed_llm.yml`); None: no such layer.
        """
        unknown = sorted(set(routes or ()) - set(ROUTES))
        if unknown:
            raise ValueError(f"unknown routes {unknown}: the routes are {', '.join(ROUTES)}")
        self.routes = list(routes) if routes is not None else list(ROUTES[1:])
        self.exemplars = exemplars
        self.k = k
        self.min_share = min_share
        self.model = model
        self.chat_generator = chat_generator
        self._vectors: Any = None
        self._kinds: list[str] = []
        self._texts: list[str] = []

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, routes=self.routes, exemplars=self.exemplars, k=self.k,
                               min_share=self.min_share, model=self.model,
                               chat_generator=component_to_dict(self.chat_generator, "chat_generator")
                               if self.chat_generator is not None else None)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QuestionRouter:
        generator = data.get("init_parameters", {}).get("chat_generator")
        if generator:
            data = {**data, "init_parameters": {**data["init_parameters"], "chat_generator": component_from_dict(
                import_class_by_name(generator["type"]), generator, "chat_generator")}}
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        if self.chat_generator is not None and hasattr(self.chat_generator, "warm_up"):
            self.chat_generator.warm_up()
        if self._vectors is not None or self.exemplars == "":
            return
        from pmc_rag.components.onnx_text_embedder import embedded_once

        rows = [r for r in labelled_route_questions(self.exemplars) if r.get("set") != "held_aside"]
        self._vectors = embedded_once(self.model, [r["question"] for r in rows], "router")
        self._kinds = [r["kind"] for r in rows]
        self._texts = [r["question"] for r in rows]

    @component.output_types(route=str, route_layer=str, subjects=list[str], search_question=str, paper=str,
                            papers=list[str], subqueries=list[str], follow_up=str, step_paper=str,
                            step_question=str)
    def run(self, question: str, query_embedding: list[float] | None = None, follow_up_to: str | None = None
            ) -> dict[str, Any]:
        """
        :param question: The question as asked.
        :param query_embedding: Its embedding (normalised), for the similarity layer.
        :param follow_up_to: In a conversation, the question this one follows up (set by the server); None for a
            question that stands alone.
        """
        route, layer, paper = self.decide(question, query_embedding, follow_up_to=follow_up_to)
        result: dict[str, Any] = {"route": route, "route_layer": layer, "subjects": []}
        if route == "summarise":
            result["paper"] = paper or _paper_phrase(question)
            return result
        # A follow-up searches with the words papers use for what it asks ("toxicity" for "side effects").
        result["search_question"] = searched_for(question, follow_up_to)
        papers = named_papers(question) if route == "compare" else []
        if len(papers) >= 2:
            # Papers named, not subjects: each is read (its abstract and conclusion first), not searched for.
            del result["search_question"]
            result.update(paper=papers[0], papers=papers, subjects=papers)
        elif route == "compare":
            result["subjects"] = compared_subjects(question)
            if len(result["subjects"]) >= 2:
                topic = _topic_of(question, result["subjects"])
                result["subqueries"] = [f"{subject} {topic}".strip() for subject in result["subjects"]]
        elif route == "multi_step":
            second = _SECOND_SEARCH.search(question)
            if second and second.start() > 0:  # the first step is the first part; FollowUpSearch does the rest
                first = question[: second.start()].strip(" ,;")
                result["follow_up"] = re.sub(r"^[,;\s]*(?:and\s+)?", "", question[second.start():]).strip()
                named = named_paper(first)
                if named:
                    # "Which drug did the FIELT trial test": the named paper is read, not searched for (no passage
                    # is close to those words); searched only if no indexed paper is that one.
                    del result["search_question"]
                    result["step_paper"], result["step_question"] = named, first
                else:
                    result["search_question"] = first
        elif route == "several":
            parts = question_parts(question)
            if len(parts) >= 2:
                result["subqueries"] = parts
        elif route == "single" and not follow_up_to:
            named = named_paper(question)
            if _names_a_paper(named):
                # "How many patients were in the FIELT trial?": the paper it names is read, its passages closest
                # to the question first, as a two-step question's first part is; searched as asked if no paper is
                # that one.
                del result["search_question"]
                result["step_paper"], result["step_question"] = named, question
        return result

    def decide(self, question: str, query_embedding: list[float] | None = None, *, leave_out: bool = False,
               follow_up_to: str | None = None) -> tuple[str, str, str | None]:
        """(route, layer, the named paper's id or None). `leave_out`: an exemplar with the question's own text
        does not vote (for measuring the router on the questions its exemplars come from)."""
        if follow_up_to:
            # The server answers a follow-up in a conversation from the topic's papers, by the single path
            # (pmc_rag/answering/conversation.py): another route's searches would leave those papers.
            return "single", "follow-up", None
        route, layer, paper = self._rule(question)
        if route is None:
            route, layer = self._nearest(query_embedding, question if leave_out else None)
            if not _can_take(route, question):
                route, layer = "single", "default, exemplars overruled"
            if layer.startswith("default") and self.chat_generator is not None:
                asked = self._asked(question)
                if asked is not None:
                    route, layer = (asked, "llm") if _can_take(asked, question) else \
                        ("single", "default, llm overruled")
        if route != "single" and route not in self.routes:
            route, layer = "single", f"{layer}, route off"
        return route, layer, paper

    def _asked(self, question: str) -> str | None:
        """The kind the chat generator names for the question; None when it fails or names none."""
        messages = [ChatMessage.from_user(LLM_KIND_PROMPT.format(question=" ".join(question.split())[:1000]))]
        try:
            replies = self.chat_generator.run(messages=messages)["replies"]
            kind = json.loads(replies[0].text or "")["kind"]
        except NoRecordedReply:  # a test's recording lacks this prompt: not a model failure to fail over from
            raise
        except Exception:  # noqa: BLE001 - a model that is down or writes no JSON leaves the question to `single`
            return None
        return kind if kind in ROUTES else None

    def _rule(self, question: str) -> tuple[str | None, str, str | None]:
        text = " ".join(question.split())
        ids = paper_ids(text)
        named = _NAMED_PAPER.search(text)
        if _SECOND_SEARCH.search(text):
            return "multi_step", "rule", None
        if len(named_papers(text)) >= 2 and (_COMPARE.search(text) or _DIFFER.search(text) or
                                             _SUMMARY_VERB.search(text)):
            # two papers it names, each read: "Compare PMC4816447 with PMC6580637", "What did A and B find?"
            return "compare", "rule", None
        if _SUMMARY_VERB.search(text) and (ids or (named and not (named.group("phrase")
                                                                   and _TOPIC_WORDS.search(named.group("phrase"))))):
            return "summarise", "rule", ids[0] if ids else None
        if ids and len(text.split()) <= 4:  # a bare id: the paper itself is wanted
            return "summarise", "rule", ids[0]
        if len(question_parts(text)) >= 2:
            return "several", "rule", None
        if _TITLED_YES_NO.search(text) and not _TOPIC_WORDS.search(text):  # "...: do the papers agree?" compares
            return "single", "rule", None
        if _COMPARE.search(text) or ((_WHICH_OF.search(text) or _CHOICE.search(text))
                                     and len(compared_subjects(text)) >= 2):
            return "compare", "rule", None
        if _OVERVIEW.search(text):
            return "overview", "rule", None
        return None, "", None

    def _nearest(self, query_embedding: list[float] | None, leave_out: str | None = None) -> tuple[str, str]:
        if self._vectors is None or query_embedding is None or not len(self._kinds):
            return "single", "default"
        import numpy as np

        similarities = self._vectors @ np.asarray(query_embedding, dtype="float32")
        if leave_out is not None:
            similarities = np.where(np.asarray(self._texts) == leave_out, -1.0, similarities)
        nearest = np.argsort(-similarities)[: self.k]
        weights = np.clip(similarities[nearest], 1e-6, None)
        votes: dict[str, float] = {}
        for index, weight in zip(nearest, weights):
            votes[self._kinds[index]] = votes.get(self._kinds[index], 0.0) + float(weight)
        kind, weight = max(votes.items(), key=lambda item: item[1])
        if weight / float(weights.sum()) >= self.min_share:
            return kind, "exemplars"
        return "single", "default"


# "Does oral a-galactosidase relieve irritable bowel symptoms?": a question that opens with a verb asks for one
# finding (yes or no), whatever questions it resembles.
_YES_NO = re.compile(rf"^\s*{_YES_NO_OPENER}", re.IGNORECASE)


def _can_take(route: str, question: str) -> bool:
    """Whether a question has what the similarity layer's route needs to do anything different: two subjects to
    compare, two parts, a paper to read, a second part to look up; an overview is not a yes/no question. (Over the
    500 PubMedQA questions, all single findings, the similarity layer alone sent 13 elsewhere.)"""
    text = " ".join(question.split())
    if route == "compare":
        return len(compared_subjects(text)) >= 2 and not _YES_NO.search(text)
    if route == "several":
        return len(question_parts(text)) >= 2
    if route == "summarise":
        return bool(paper_ids(text) or named_paper(text))
    if route == "multi_step":
        return bool(_SECOND_SEARCH.search(text))
    if route == "overview":
        return not _YES_NO.search(text)
    return True


def labelled_route_questions(path: str | None = None) -> list[dict[str, Any]]:
    """The labelled questions of a route question file (None: the shipped one)."""
    if path:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)["questions"]
    shipped = resources.files("pmc_rag.evaluation") / "datasets" / "route_questions.json"
    return json.loads(shipped.read_text(encoding="utf-8"))["questions"]


def question_parts(question: str) -> list[str]:
    """The separate questions in a message: split at question marks and at "1)", "Also,", "And separately";
    parts of fewer than three words stay with their neighbour."""
    pieces = [p for p in re.split(r"(?<=\?)\s+|;\s+(?=[a-z]+\b[^;]*\?)", question.strip()) if p.strip()]
    parts: list[str] = []
    pieces = [p for piece in pieces for p in _JOINED_QUESTION.split(piece)]
    for piece in pieces:
        for sub in (s.strip() for s in _PART_START.split(" " + piece) if s and s.strip()):
            if parts and (len(_WORD.findall(sub)) < 3 or len(_WORD.findall(parts[-1])) < 3):
                parts[-1] = f"{parts[-1]} {sub}"
            else:
                parts.append(sub)
    return parts if len(parts) >= 2 else [question.strip()]


_SUBJECT_SPLIT = re.compile(
    r"\s*(?:,?\s+\b(?:versus|vs\.?|or|and|with|to|than)\b\s+|,\s+)\s*", re.IGNORECASE)
_LEAD = re.compile(
    r"^.*?\b(?:compare[ds]?|contrast|between|is|does|do|how does|how do|which (?:works|is) (?:better|more \w+)"
    r"(?: for [^:]+)?:?)\s+", re.IGNORECASE)
_TAIL = re.compile(r"\s+(?:in|for|among|on|after|during|regarding)\s+.*$|\s*[-:?].*$", re.IGNORECASE)


def compared_subjects(question: str) -> list[str]:
    """The subjects a comparison names ("erlotinib", "osimertinib"), by the words around "vs", "compare ... with",
    "between ... and", "better than", "A, B or C"."""
    text = " ".join(question.split()).rstrip("?. ")
    for marker in (r"\bvs\.?\s|\bversus\b", r"\bbetter than\b|\bworse than\b|\bthan\b", r"\bcompared? with\b|\bcompared? to\b"):
        match = re.search(marker, text, re.IGNORECASE)
        if match:
            left = _LEAD.sub("", text[: match.start()]).strip(" ,:")
            left = re.sub(r"^(?:the |is |does |how does |how do )", "", left, flags=re.IGNORECASE)
            right = re.sub(r"^\s*(?:for|in|among|with|on)\s+", "", text[match.end():], flags=re.IGNORECASE)
            right = _TAIL.sub("", right).strip(" ,:")
            # "worse for women than for men": the subject is "women", not "worse for women"
            # "does erlotinib work better than chemo": the verb is not part of the subject
            left = re.sub(r"\s+(?:works?|performs?|do|does|did|is|are|was|were|fares?)$", "", left,
                          flags=re.IGNORECASE)
            left = _last_phrase(left)
            left = re.sub(r"^.*\b(?:better|worse|higher|lower|greater|more|less|safer)\s+(?:\w+\s+)?(?:for|in|among|with)\s+",
                          "", left, flags=re.IGNORECASE)
            subjects = [left, _first_phrase(right)]
            return [s for s in subjects if s]
    match = re.search(r"\bbetween (.+?) and (.+?)(?:\s+(?:in|for|among|on)\s|$)", text, re.IGNORECASE)
    if match:
        return [_first_phrase(match.group(1)), _first_phrase(match.group(2))]
    match = re.search(r"\b(?:compare|contrast)\s+(.+?)\s+(?:and|with|to)\s+(.+?)(?:\s+(?:in|for|among|on)\s|$)",
                      text, re.IGNORECASE)
    if match:
        return [_first_phrase(match.group(1)), _first_phrase(match.group(2))]
    colon = text.rsplit(":", 1)
    listed = colon[1] if len(colon) == 2 else text
    items = [i.strip() for i in re.split(r",\s*|\s+or\s+", listed) if i.strip()]
    if 2 <= len(items) <= 4:
        return [_first_phrase(i) for i in items]
    match = re.search(r"\b([\w-]+(?: [\w-]+)?) or ([\w-]+(?: [\w-]+)?)\b", text)
    return [match.group(1), match.group(2)] if match else []


def _first_phrase(text: str) -> str:
    return " ".join(_TAIL.sub("", text).split()[:4]).strip(" ,:")


def _last_phrase(text: str) -> str:
    words = text.split()
    return " ".join(words[-3:]).strip(" ,:") if words else ""


def _topic_of(question: str, subjects: list[str]) -> str:
    """What is being compared about the subjects: the question's words outside them and the comparison words."""
    text = question
    for subject in subjects:
        text = re.sub(re.escape(subject), " ", text, flags=re.IGNORECASE)
    text = _COMPARE.sub(" ", text)
    words = [w for w in _WORD.findall(text) if w.lower() not in _FUNCTION_WORDS]
    return " ".join(words)


_FUNCTION_WORDS = set("""
a an the and or of in on for to with what which how does do did is are was were be than between about better worse
this that these those it its their they there any from by as at into when where who why can could should would will
find found say says report reported compare compared difference differences outcomes studies study papers evidence
""".split())


def named_paper(text: str) -> str | None:
    """The paper a question names, by id ("PMC4816447") or as "the <phrase> trial/study/paper" ("FIELT"); None
    when it names none, or names a body of work ("the evidence on ..." is not a paper)."""
    ids = paper_ids(text)
    if ids:
        return ids[0]
    named = _NAMED_PAPER.search(text)
    if not named or (named.group("phrase") and _TOPIC_WORDS.search(named.group("phrase"))):
        return None
    return _named_phrase(text)


def named_papers(text: str) -> list[str]:
    """Every paper a question names, by id or as "the <phrase> trial/study/paper", in its order, each once."""
    names = paper_ids(text) + [phrase for phrase in _named_phrases(text) if not _TOPIC_WORDS.search(phrase)]
    return list(dict.fromkeys(names))


def _names_a_paper(name: str | None) -> bool:
    """Whether a question's "the X study" names one paper rather than a kind of study ("the Dutch study", "the
    elderly cohort"): an id, or a name with a word no English lexicon has (an acronym, a drug: "FIELT")."""
    return bool(name) and (bool(paper_ids(name)) or not all(known_word(w) for w in _WORD.findall(name)))


def _paper_phrase(question: str) -> str:
    """The words that name the paper in a summary request: "Summarise the FIELT trial" -> "FIELT"."""
    return _named_phrase(question) or _SUMMARY_VERB.sub(" ", question).strip(" ?.:")


def _named_phrase(question: str) -> str | None:
    return next(_named_phrases(question), None)


def _named_phrases(question: str) -> Iterator[str]:
    # Tried at each "the" and quotation mark in turn: in "the key results of the meta-analysis of p16INK4a", the
    # first names what is asked for, the second the paper.
    for start in (m.start() for m in re.finditer(r"\bthe\b|['\"\u2018\u201c]", question, re.IGNORECASE)):
        named = _NAMED_PAPER.match(question, start)
        if not named:
            continue
        found = named.group("phrase") or named.group("subject") or named.group("quoted") or ""
        if named.group("phrase"):  # "methods and results of the ACE I/D polymorphism" -> "ACE I/D polymorphism"
            found = re.sub(r"^.*\b(?:of|on|about|from|in|for|with|by) the\b", "", found, flags=re.IGNORECASE)
        found = re.sub(r"\s+(?:find|found|report|reported|show|showed|conclude|concluded)$", "", found.strip())
        found = found.strip("'\"\u2018\u2019\u201c\u201d ")
        if found:
            yield found
