"""Loading pipeline YAML with pmc-rag's own components allowed, and running it through its declared inputs."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from pmc_rag.environment import ALLOWED_MODULES
from pmc_rag.local_llm.spec import ForeignModelServer, LocalModelError, LocalModelSpec
from pmc_rag.local_llm.spec import api_key as local_llm_api_key
from pmc_rag.local_llm.supervisor import local_model_server
from pmc_rag.paths import PIPELINES_DIR
from pmc_rag.pipeline_files import PipelineFileError, resolve_pipeline_spec

if TYPE_CHECKING:  # Haystack (and with it torch) is imported when a pipeline is built, not to read a file
    from haystack import Pipeline


# Declared outputs the answering code reads (see pmc_rag/answering/pipeline_run.py): what the model is shown, and each
# retriever's list (`retrieved_semantic: semantic.documents`).
EXCERPTS = "excerpts"
RETRIEVED_PREFIX = "retrieved_"
# The closest papers' excerpts an answer quotes as related findings when the papers do not answer the question.
RELATED = "related"
# The question's words the relevance gate turned it away for (a word no paper uses, or two no paper names together):
# an English question is reworded and asked again only when the rewording replaces one of them.
OBJECTED = "objected"


class PipelineError(RuntimeError):
    """A pipeline file cannot be loaded or used; the message names the file and the problem."""


def resolve_pipeline_path(name_or_path: str | Path) -> Path:
    """A path as given, or a bare name ("indexing") looked up in the project's pipelines/ folder."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    candidate = PIPELINES_DIR / (path.name if path.suffix else f"{path.name}.yml")
    if candidate.is_file():
        return candidate
    raise PipelineError(f"pipeline file {name_or_path} not found (looked in the current folder and {PIPELINES_DIR})")


def pipeline_spec(name_or_path: str | Path) -> tuple[Path, dict[str, Any]]:
    """The file a name stands for, and the plain pipeline YAML it resolves to (a variant's base and changes
    applied, the shared store included; see pmc_rag/pipeline_files.py)."""
    path = resolve_pipeline_path(name_or_path)
    try:
        return path, resolve_pipeline_spec(path)
    except PipelineFileError as error:
        raise PipelineError(str(error)) from None


def load_pipeline(name_or_path: str | Path) -> Pipeline:
    path, spec = pipeline_spec(name_or_path)
    return _load(path, yaml.safe_dump(spec, sort_keys=False))


def document_store_of(pipeline: Pipeline) -> Any | None:
    """The document store of the first component that has one (a writer, a retriever), or None."""
    for name in pipeline.graph.nodes:
        store = getattr(pipeline.get_component(name), "document_store", None)
        if store is not None:
            return store
    return None


def _load(path: Path, text: str) -> Pipeline:
    from haystack import Pipeline

    try:
        return Pipeline.loads(text, allowed_modules=ALLOWED_MODULES)
    except Exception as error:  # Haystack raises several types for bad YAML, unknown types and bad parameters
        raise PipelineError(f"{path}: cannot load the pipeline: {type(error).__name__}: {error}") from error


@dataclass
class DeclaredPipeline:
    """A pipeline with the `inputs:` and `outputs:` its YAML declares (the format Hayhooks reads).

        inputs:
          question: [query_embedder.text, bm25.query]   # one name can feed several sockets
          filters: [semantic.filters, bm25.filters]
        outputs:
          documents: ranker.documents   # an answering pipeline: `answer` and `excerpts` (see pmc_rag/answering/pipeline_run.py)
        local_model:            # optional: pmc-rag starts this model server before the pipeline runs
          model: qwen2.5-0.5b-instruct
          url: http://127.0.0.1:1417/v1
        other_local_models:     # optional: more servers it starts, each on its own port (a translator's model)
          - model: qwen2.5-coder-1.5b-instruct
            url: http://127.0.0.1:1418/v1
    """

    path: Path
    pipeline: Pipeline
    inputs: dict[str, list[str]]
    outputs: dict[str, str]
    local_model: LocalModelSpec | None = field(default=None)
    other_local_models: tuple[LocalModelSpec, ...] = field(default=())
    warmed_up: bool = field(default=False, init=False)

    @property
    def local_models(self) -> tuple[LocalModelSpec, ...]:
        """Every model server the pipeline declares: `local_model` (the answers' model) first."""
        return ((self.local_model,) if self.local_model is not None else ()) + self.other_local_models

    def warm_up(self) -> None:
        """Load every component's models now; a model that cannot be loaded stops here, naming its YAML key.

        The declared local model server (`local_model`) is started (or reused); `other_local_models` start
        when first needed (`start_other_local_models`), so an English question never waits for the translator's.
        One that cannot start does not stop the pipeline: its generator fails over to the next, and the answers'
        notes say why.
        """
        if self.local_model is not None:
            _start_or_warn(self.local_model)
        for name in self.pipeline.graph.nodes:
            component = self.pipeline.get_component(name)
            if not hasattr(component, "warm_up"):
                continue
            try:
                component.warm_up()
            except Exception as error:  # model loaders raise OSError, ValueError, RuntimeError and more
                problem = f"{self.path}: component `{name}` could not start: {type(error).__name__}: " \
                          f"{' '.join(str(error).split())}"
                if not hasattr(component, "model"):  # its own message says what to do (a missing index, say)
                    raise PipelineError(problem) from error
                offline = " (models load from the local cache only while HF_HUB_OFFLINE=1)" \
                    if os.environ.get("HF_HUB_OFFLINE") == "1" else ""
                raise PipelineError(f"{problem} Change `components.{name}.init_parameters.model` in the YAML to a "
                                    f"model this machine has{offline}.") from error
        self.warmed_up = True

    def start_other_local_models(self) -> None:
        """Start `other_local_models` not yet running (each start waits for the server to answer, about 10 s for
        the 1.5B on 2 cores). Asked before a component that uses one runs: the translator, for a question in
        another language."""
        for spec in self.other_local_models:
            server = local_model_server(spec)
            if not server.watching and server.may_try_start():
                try:
                    server.ensure_running()
                except LocalModelError as error:  # another home's server too: it refuses our key, and the
                    logging.getLogger("pmc_rag").warning("%s", error)  # component fails over to the next model

    def run(self, component_inputs: dict[str, dict[str, Any]] | None = None, **values: Any) -> dict[str, Any]:
        """Run with values for declared inputs (None leaves an input out); return every declared output.

        `component_inputs` sets inputs of named components directly (a streaming callback, say).
        """
        unknown = set(values) - set(self.inputs)
        if unknown:
            raise PipelineError(f"{self.path}: no declared input named {sorted(unknown)}; it has {sorted(self.inputs)}")
        data: dict[str, dict[str, Any]] = {}
        for name, value in values.items():
            if value is None:
                continue
            for target in self.inputs[name]:
                component, socket = target.split(".", 1)
                data.setdefault(component, {})[socket] = value
        for component, sockets in (component_inputs or {}).items():
            data.setdefault(component, {}).update(sockets)
        producers = {target.split(".", 1)[0] for target in self.outputs.values()}
        result = self.pipeline.run(data, include_outputs_from=producers)
        return {name: result.get(target.split(".", 1)[0], {}).get(target.split(".", 1)[1])
                for name, target in self.outputs.items()}


def _start_or_warn(spec: LocalModelSpec) -> None:
    try:
        local_model_server(spec).ensure_running()
    except ForeignModelServer:
        raise  # its generator would send every prompt to another data folder's server: stop, and say so
    except LocalModelError as error:
        logging.getLogger("pmc_rag").warning("%s", error)


def declared_local_model(name_or_path: str | Path) -> LocalModelSpec | None:
    """The model server a pipeline file's `local_model:` declares (None: none), read without building the
    pipeline: `pmc-rag model` and `pmc-rag status` need no models loaded to say where it is."""
    return _local_model_of(*pipeline_spec(name_or_path))


def declared_local_models(name_or_path: str | Path) -> tuple[LocalModelSpec, ...]:
    """Every model server a pipeline file declares, `local_model:` first, then `other_local_models:`."""
    path, spec = pipeline_spec(name_or_path)
    main = _local_model_of(path, spec)
    return ((main,) if main is not None else ()) + _other_local_models_of(path, spec, main)


def declared_document_store(name_or_path: str | Path) -> Any:
    """The document store of a pipeline file's first component that has one, built alone: no component and no model
    is loaded (`pmc-rag status`). The store's type passes Haystack's deserialization allowlist, as in a pipeline."""
    from haystack.core.serialization import import_class_by_name

    path, spec = pipeline_spec(name_or_path)
    for component in (spec.get("components") or {}).values():
        store = (component.get("init_parameters") or {}).get("document_store")
        if isinstance(store, dict) and store.get("type"):
            try:
                return import_class_by_name(store["type"]).from_dict(store)
            except Exception as error:
                raise PipelineError(f"{path}: cannot build its document store: {type(error).__name__}: {error}") \
                    from error
    raise PipelineError(f"{path}: no component has a document_store")


def _local_model_of(path: Path, spec: dict[str, Any]) -> LocalModelSpec | None:
    if not spec.get("local_model"):
        return None
    try:
        return LocalModelSpec.from_yaml(spec["local_model"], str(path))
    except ValueError as error:
        raise PipelineError(str(error)) from None


def _other_local_models_of(path: Path, spec: dict[str, Any],
                           main: LocalModelSpec | None) -> tuple[LocalModelSpec, ...]:
    """`other_local_models:`, each address once: one that is `local_model`'s address is that server (a test's
    copy points every model at one server), and two models cannot share a port."""
    sections = spec.get("other_local_models") or []
    if not isinstance(sections, list):
        raise PipelineError(f"{path}: `other_local_models` must be a list of sections like `local_model`'s")
    others: dict[str, LocalModelSpec] = {}
    for section in sections:
        try:
            other = LocalModelSpec.from_yaml(section, f"{path}: other_local_models")
        except ValueError as error:
            raise PipelineError(str(error)) from None
        if main is not None and other.url == main.url:
            continue
        if other.url in others:
            raise PipelineError(f"{path}: two of `other_local_models` use {other.url}; give each its own port")
        others[other.url] = other
    return tuple(others.values())


def load_declared_pipeline(name_or_path: str | Path,
                           edit: Callable[[dict[str, Any]], None] | None = None) -> DeclaredPipeline:
    """Load a pipeline YAML together with its declared inputs and outputs, checking that they exist.

    `edit`, if given, changes the parsed YAML in place before the pipeline is built (the evaluation uses it to
    leave generation out); the file itself is not touched.
    """
    path, spec = pipeline_spec(name_or_path)
    if edit is not None:
        edit(spec)
    text = yaml.safe_dump(spec, sort_keys=False)
    local_model = _local_model_of(path, spec)
    other_local_models = _other_local_models_of(path, spec, local_model)
    if local_model is not None or other_local_models:
        local_llm_api_key()  # exported before the generator that sends it is built
    pipeline = _load(path, text)
    inputs = {name: [targets] if isinstance(targets, str) else list(targets)
              for name, targets in (spec.get("inputs") or {}).items()}
    outputs = dict(spec.get("outputs") or {})
    if not inputs or not outputs:
        raise PipelineError(f"{path}: declare `inputs:` and `outputs:` (which sockets take and give what)")
    sockets = pipeline.inputs(include_components_with_connected_inputs=True)
    for name, targets in inputs.items():
        for target in targets:
            component, _, socket = target.partition(".")
            if socket not in sockets.get(component, {}):
                raise PipelineError(f"{path}: input `{name}` names {target}, which is not an input of the pipeline")
    produced = pipeline.outputs(include_components_with_connected_outputs=True)
    for name, target in outputs.items():
        component, _, socket = str(target).partition(".")
        if socket not in produced.get(component, {}):
            raise PipelineError(f"{path}: output `{name}` names {target}, which is not an output of the pipeline")
    if "answer" in outputs and EXCERPTS not in outputs:
        raise PipelineError(f"{path}: an answering pipeline declares `{EXCERPTS}:` in `outputs:`, the socket whose "
                            "documents the model is shown (e.g. budget.documents); streamed citations are checked "
                            "against them")
    return DeclaredPipeline(path, pipeline, inputs, outputs, local_model, other_local_models)
