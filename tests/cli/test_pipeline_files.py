"""Pipeline files: each variant says what it changes relative to its base, and nothing else differs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from haystack import Pipeline

from pmc_rag.pipeline_files import PipelineFileError, apply_changes, read_yaml, resolve_pipeline_spec
from pmc_rag.pipelines import ALLOWED_MODULES

from conftest import PROJECT_ROOT

PIPELINES = PROJECT_ROOT / "pipelines"
SHIPPED = sorted(p for p in PIPELINES.glob("*.yml") if p.name != "document_store.yml")
VARIANTS = [p for p in SHIPPED if "extends" in read_yaml(p)]


def _component(socket: str) -> str:
    return socket.split(".", 1)[0]


def undeclared_differences(base: dict, variant: dict, changes: dict) -> list[str]:
    """What differs between two resolved pipelines that the variant file's changes do not account for."""
    removed = set(changes.get("remove") or [])
    named = set(changes.get("components") or {}) | removed
    found = []
    base_components, variant_components = base.get("components", {}), variant.get("components", {})
    for name in set(base_components) | set(variant_components):
        if base_components.get(name) != variant_components.get(name) and name not in named:
            found.append(f"component {name}")
    base_connections = base.get("connections", [])
    variant_connections = variant.get("connections", [])
    for connection in base_connections:
        if connection not in variant_connections and connection not in (changes.get("remove_connections") or []) \
                and not {_component(connection["sender"]), _component(connection["receiver"])} & removed:
            found.append(f"connection removed {connection}")
    for connection in variant_connections:
        if connection not in base_connections and connection not in (changes.get("connections") or []):
            found.append(f"connection added {connection}")
    for section in ("inputs", "outputs"):
        base_declared, variant_declared = base.get(section, {}), variant.get(section, {})
        for name in set(base_declared) | set(variant_declared):
            if name in (changes.get(section) or {}):
                continue
            before = base_declared.get(name)
            kept = ([t for t in before if _component(t) not in removed] if isinstance(before, list)
                    else before if before is not None and _component(before) not in removed else None)
            if (kept or None) != variant_declared.get(name):
                found.append(f"{section}.{name}")
    for key in (set(base) | set(variant)) - {"components", "connections", "inputs", "outputs", "extends"}:
        if base.get(key) != variant.get(key) and key not in changes:
            found.append(f"top-level {key}")
    return found


@pytest.mark.parametrize("path", VARIANTS, ids=lambda p: p.stem)
def test_a_variant_differs_from_its_base_only_in_what_it_declares(path: Path):
    changes = read_yaml(path)
    base = resolve_pipeline_spec(path.parent / changes["extends"])
    assert undeclared_differences(base, resolve_pipeline_spec(path), changes) == []


def test_the_difference_check_catches_an_undeclared_change():
    base = resolve_pipeline_spec(PIPELINES / "rag.yml")
    variant = apply_changes(base, {"components": {"ranker": {"init_parameters": {"top_k": 9}}}})
    variant["components"]["fusion"]["init_parameters"]["top_k"] = 20  # a hand edit the file does not declare
    del variant["components"]["carried"]
    assert sorted(undeclared_differences(base, variant, {"components": {"ranker": {}}})) == [
        "component carried", "component fusion"]


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_every_shipped_pipeline_resolves_to_yaml_haystack_loads(path: Path):
    spec = resolve_pipeline_spec(path)
    assert "extends" not in spec and "$include" not in yaml.safe_dump(spec)
    Pipeline.loads(yaml.safe_dump(spec), allowed_modules=ALLOWED_MODULES)


def test_the_bases_are_plain_haystack_yaml():
    """rag.yml and indexing.yml load as they are, with no resolving (Hayhooks or Pipeline.loads directly)."""
    for name in ("rag.yml", "indexing.yml"):
        Pipeline.loads((PIPELINES / name).read_text(), allowed_modules=ALLOWED_MODULES)


def test_the_default_pipeline_file_holds_the_route_stage():
    """Issue 34: the route stage is in rag.yml itself (not a variant), readable and loadable as it stands; a user
    turns a route off by deleting it from the router's `routes`."""
    from pmc_rag.components.question_router import ROUTES

    pipeline = Pipeline.loads((PIPELINES / "rag.yml").read_text(), allowed_modules=ALLOWED_MODULES)
    router = pipeline.get_component("router")
    assert sorted(router.routes) == sorted(r for r in ROUTES if r != "single")
    spec = read_yaml(PIPELINES / "rag.yml")
    assert spec["outputs"]["route"] == "router.route"
    searched = {c["receiver"] for c in spec["connections"] if c["sender"] == "search_for.value"}
    assert {"bm25.query", "ranker.query", "search_embedder.text"} <= searched
    single = resolve_pipeline_spec(PIPELINES / "rag_single.yml")
    assert "router" not in single["components"] and "route" not in single["outputs"]


def test_the_store_is_the_same_everywhere_and_written_only_in_the_bases():
    files_naming_it = sorted(p.name for p in PIPELINES.glob("*.yml") if "PgvectorDocumentStore" in p.read_text())
    assert files_naming_it == ["document_store.yml", "indexing.yml", "rag.yml"]
    store = read_yaml(PIPELINES / "document_store.yml")
    reads = store["init_parameters"].pop("connection_string")
    assert reads == {"type": "env_var", "strict": True, "env_vars": ["PG_READ_CONN_STR", "PG_CONN_STR"]}
    for path in SHIPPED:
        for name, component in resolve_pipeline_spec(path)["components"].items():
            if "document_store" in component.get("init_parameters", {}):
                used = component["init_parameters"]["document_store"]
                # the one permitted difference: where it connects (reads may go to replicas; writes may not)
                connection = used["init_parameters"].pop("connection_string", None)
                assert used == store, f"{path.name}: {name}"
                writes = "writer" in name
                assert connection == (None if writes else reads), f"{path.name}: {name}"


def test_the_listed_drifts_are_gone():
    """Every answering pipeline keeps conversation carry-over, and every retriever skips chunks of a few words
    and captions and adds a request's filters to that one (the /retrieve pipeline included)."""
    readable = {"operator": "AND", "conditions": [{"field": "meta.word_count", "operator": ">=", "value": 8},
                                                  {"field": "meta.section_kind", "operator": "!=", "value": "caption"}]}
    for path in SHIPPED:
        spec = resolve_pipeline_spec(path)
        if "answer" in spec.get("outputs", {}):
            assert spec["inputs"]["carried_chunk_ids"] == ["carried.chunk_ids"], path.name
            assert {"sender": "carried.documents", "receiver": "fusion.documents"} in spec["connections"], path.name
        for name, component in spec["components"].items():
            if "retriever" in component["type"].lower() and "Window" not in component["type"]:
                parameters = component["init_parameters"]
                # A retriever that runs another one (Haystack's MultiQueryTextRetriever): the inner one is checked.
                parameters = parameters["retriever"]["init_parameters"] if "retriever" in parameters else parameters
                assert parameters["filters"] == readable, f"{path.name}: {name}"
                assert parameters["filter_policy"] == "merge", f"{path.name}: {name}"


# rag_multi_query.yml nests a retriever in each of Haystack's two multi-query retrievers, and gives the model
# its prompt and JSON schema; rag_rewrite_retry.yml writes out its second search leg by leg, so that it runs
# only when the first turned the question away, and sends its search text (a follow-up's with its topic) to it.
LONGER_VARIANTS = {"rag_multi_query.yml": 60, "rag_rewrite_retry.yml": 72}


def test_variants_stay_short():
    """A reader sees a variant's changes on one screen."""
    for path in VARIANTS:
        lines = [line for line in path.read_text().splitlines() if line.strip() and not line.lstrip().startswith("#")]
        assert len(lines) <= LONGER_VARIANTS.get(path.name, 40), f"{path.name} has {len(lines)} lines of YAML"


@pytest.mark.parametrize(("text", "message"), [
    ("extends: rag.yml\nremove: [nope]\n", "`remove` names `nope`"),
    ("extends: missing.yml\n", "names no file"),
    ("extends: loop.yml\n", "goes round in a circle"),
    ("extends: rag.yml\ncomponents:\n  extra: {init_parameters: {}}\n", "needs a `type:`"),
    ("extends: rag.yml\nremove_connections:\n  - {sender: a.b, receiver: c.d}\n", "which the base does not have"),
    ("components:\n  x: {type: t, init_parameters: {s: {$include: nothing.yml}}}\n", "names no file"),
    ("components: [\n", "not valid YAML"),
])
def test_a_bad_variant_file_gets_an_error_naming_it_and_the_problem(tmp_path: Path, text: str, message: str):
    for source in PIPELINES.glob("*.yml"):
        (tmp_path / source.name).write_text(source.read_text())
    path = tmp_path / "loop.yml"
    path.write_text(text)
    with pytest.raises(PipelineFileError, match="loop.yml") as raised:
        resolve_pipeline_spec(path)
    assert message in str(raised.value)


def test_pmc_rag_pipeline_show_prints_the_yaml_a_variant_stands_for(capsys):
    from pmc_rag.cli import main

    assert main(["pipeline", "show", "rag_rerank"]) == 0
    spec = yaml.safe_load(capsys.readouterr().out)
    assert spec["components"]["fusion"]["init_parameters"]["top_k"] == 20
    assert "SimilarityRanker" in spec["components"]["ranker"]["type"] and "carried" in spec["components"]
    Pipeline.loads(yaml.safe_dump(spec), allowed_modules=ALLOWED_MODULES)
