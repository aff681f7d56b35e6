"""Reading pipeline files: a variant names its base and says only what it changes; the store is written once.

Every file in pipelines/ resolves to plain Haystack pipeline YAML (the kind `Pipeline.loads` and Hayhooks read);
`pmc-rag pipeline show NAME` prints it. Two additions make that possible:

A variant file starts with `extends:` and lists its changes to the base, each of them visible:

    extends: rag.yml                  # the base, relative to this file (itself a variant or not)
    remove: [ranker]                  # components taken out, with their connections and declared inputs
    components:
      fusion:                         # no `type:`: these parameters are merged into the base's component
        init_parameters: {top_k: 20}
      reranker:                       # with `type:`: a new component, or one that replaces the base's whole
        type: haystack.components.rankers...
        init_parameters: {...}
    connections: [...]                # added
    remove_connections: [...]         # taken out
    inputs: {top_k: [fusion.top_k]}   # set, by name (null removes one); the base's other inputs stay
    outputs: {documents: fusion.documents}

Any other top-level key (`local_model:`) replaces the base's; null removes it.

Anywhere in a file, `{$include: FILE}` stands for the contents of FILE (relative to the file that names it):
pipelines/document_store.yml is the one definition of the document store, and every pipeline includes it.

Usage:
```python
spec = resolve_pipeline_spec(Path("pipelines/rag_rerank.yml"))     # a dict, plain pipeline YAML once dumped
text = resolved_pipeline_yaml(Path("pipelines/rag_rerank.yml"))
```
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

VARIANT_KEYS = ("extends", "remove", "components", "connections", "remove_connections", "inputs", "outputs")
INCLUDE = "$include"


class PipelineFileError(ValueError):
    """A pipeline file (or a file it extends or includes) cannot be read; the message names it and the problem."""


def read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise PipelineFileError(f"{path}: cannot read it: {error.strerror or error}") from None
    except yaml.YAMLError as error:
        raise PipelineFileError(f"{path}: not valid YAML: {' '.join(str(error).split())}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise PipelineFileError(f"{path}: a pipeline file holds a mapping (components:, connections:, ...)")
    return data


def resolve_pipeline_spec(path: Path, _seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The plain pipeline YAML (as a dict) that a pipeline file stands for: its base with its changes applied,
    every `$include` replaced by the included file's contents."""
    path = path.resolve()
    if path in _seen:
        chain = " -> ".join(p.name for p in (*_seen, path))
        raise PipelineFileError(f"{path}: `extends` goes round in a circle ({chain})")
    spec = _expand_includes(read_yaml(path), path.parent, path)
    if "extends" not in spec:
        return spec
    base_path = path.parent / str(spec["extends"])
    if not base_path.is_file():
        raise PipelineFileError(f"{path}: `extends: {spec['extends']}` names no file next to it")
    return apply_changes(resolve_pipeline_spec(base_path, (*_seen, path)), spec, path)


def resolved_pipeline_yaml(path: Path) -> str:
    return yaml.safe_dump(resolve_pipeline_spec(path), sort_keys=False, width=120)


def apply_changes(base: dict[str, Any], variant: dict[str, Any], path: Path | str = "variant") -> dict[str, Any]:
    """The base spec with a variant's changes applied (the base itself is not changed)."""
    spec = copy.deepcopy(base)
    components: dict[str, Any] = spec.setdefault("components", {})
    removed = list(variant.get("remove") or [])
    for name in removed:
        if name not in components:
            raise PipelineFileError(f"{path}: `remove` names `{name}`, which the base has no component of")
        del components[name]
    gone = set(removed)
    spec["connections"] = [c for c in spec.get("connections") or []
                           if _component(c["sender"]) not in gone and _component(c["receiver"]) not in gone]
    for section in ("inputs", "outputs"):
        if section in spec:
            spec[section] = _without_targets_in(spec[section] or {}, gone)
    for name, change in (variant.get("components") or {}).items():
        if not isinstance(change, dict):
            raise PipelineFileError(f"{path}: `components.{name}` must be a mapping (type:, init_parameters:)")
        if "type" in change or name not in components:
            if "type" not in change:
                raise PipelineFileError(f"{path}: `components.{name}` is new, so it needs a `type:`")
            components[name] = copy.deepcopy(change)
        else:
            components[name] = _merged(components[name], change)
    for connection in variant.get("remove_connections") or []:
        if connection not in spec["connections"]:
            raise PipelineFileError(f"{path}: `remove_connections` names {connection}, which the base does not have")
        spec["connections"].remove(connection)
    spec["connections"].extend(copy.deepcopy(variant.get("connections") or []))
    for section in ("inputs", "outputs"):
        for name, targets in (variant.get(section) or {}).items():
            spec.setdefault(section, {})
            if targets is None:
                spec[section].pop(name, None)
            else:
                spec[section][name] = copy.deepcopy(targets)
    for key, value in variant.items():
        if key in VARIANT_KEYS:
            continue
        if value is None:
            spec.pop(key, None)
        else:
            spec[key] = copy.deepcopy(value)
    return spec


def _component(socket: str) -> str:
    return socket.split(".", 1)[0]


def _without_targets_in(declared: dict[str, Any], gone: set[str]) -> dict[str, Any]:
    """Declared inputs or outputs with the sockets of removed components taken out (names left empty go too)."""
    kept: dict[str, Any] = {}
    for name, targets in declared.items():
        if isinstance(targets, str):
            if _component(targets) not in gone:
                kept[name] = targets
            continue
        remaining = [t for t in targets if _component(t) not in gone]
        if remaining:
            kept[name] = remaining
    return kept


def _merged(base: Any, change: Any) -> Any:
    """Mappings merge key by key (recursively); anything else in `change` replaces what the base has."""
    if isinstance(base, dict) and isinstance(change, dict):
        merged = dict(base)
        for key, value in change.items():
            merged[key] = _merged(base.get(key), value) if key in base else copy.deepcopy(value)
        return merged
    return copy.deepcopy(change)


def _expand_includes(node: Any, folder: Path, path: Path) -> Any:
    if isinstance(node, dict):
        if INCLUDE in node:
            if len(node) != 1:
                raise PipelineFileError(f"{path}: `{INCLUDE}` stands alone in its mapping (found {sorted(node)})")
            included = folder / str(node[INCLUDE])
            if not included.is_file():
                raise PipelineFileError(f"{path}: `{INCLUDE}: {node[INCLUDE]}` names no file next to it")
            return _expand_includes(read_yaml(included), included.parent, included)
        return {key: _expand_includes(value, folder, path) for key, value in node.items()}
    if isinstance(node, list):
        return [_expand_includes(item, folder, path) for item in node]
    return node
