"""Haystack metadata filters as a SQL condition over a pgvector chunk table, for queries of our own.

The pgvector store translates filters only inside its own queries (its translator is private), so the BM25
retriever, which writes its own SQL, translates them here, with the same meaning: `meta.*` fields are read from
the JSONB `meta` column and cast to the type of the value they are compared with (integer, real, boolean;
text otherwise); other fields name columns (`id`, `content`). Values are always bound parameters.

Usage:
```python
condition, params = filter_condition({"field": "meta.year", "operator": ">=", "value": 2015}, table_alias="chunks")
# condition: (chunks.meta->>'year')::integer >= %s      params: [2015]
```
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from haystack.errors import FilterError
from psycopg import sql

_CASTS = {bool: "boolean", int: "integer", float: "real"}
_COMPARISONS = {"==": "=", "!=": "IS DISTINCT FROM", ">": ">", ">=": ">=", "<": "<", "<=": "<="}
_LOGICAL = {"AND", "OR", "NOT"}


def filter_condition(filters: dict[str, Any], table_alias: str | None = None) -> tuple[sql.Composed, list[Any]]:
    """A SQL condition (to join with AND into a WHERE clause) and its parameters, in order.

    :param filters: A Haystack filter: a comparison `{field, operator, value}` or `{operator, conditions}`.
    :param table_alias: Qualifies the columns (`chunks.meta`), for queries that join several tables.
    :raises FilterError: For an unknown operator or a malformed filter; the message says which part.
    """
    if not isinstance(filters, dict):
        raise FilterError(f"a filter is a mapping, got {type(filters).__name__}")
    if "field" in filters:
        return _comparison(filters, table_alias)
    operator, conditions = filters.get("operator"), filters.get("conditions")
    if operator not in _LOGICAL or not isinstance(conditions, list) or not conditions:
        raise FilterError(f"a logical filter needs `operator` (one of {sorted(_LOGICAL)}) and a non-empty "
                          f"`conditions` list; got {filters}")
    parts, params = [], []
    for condition in conditions:
        part, values = filter_condition(condition, table_alias)
        parts.append(part)
        params.extend(values)
    if operator == "NOT":
        return sql.SQL("NOT ({})").format(sql.SQL(" AND ").join(parts)), params
    return sql.SQL("({})").format(sql.SQL(f" {operator} ").join(parts)), params


def _comparison(condition: dict[str, Any], table_alias: str | None) -> tuple[sql.Composed, list[Any]]:
    field, operator = condition["field"], condition.get("operator")
    if "value" not in condition:
        raise FilterError(f"the filter on `{field}` has no `value`")
    value = condition["value"]
    if operator in ("in", "not in"):
        if not isinstance(value, list):
            raise FilterError(f"`{operator}` on `{field}` needs a list value, got {value!r}")
        column = _column(field, value[0] if value else None, table_alias)
        negated = "NOT " if operator == "not in" else ""
        return sql.SQL(negated + "({} = ANY(%s))").format(column), [value]
    if operator not in _COMPARISONS:
        raise FilterError(f"unknown operator `{operator}` on `{field}`; use one of "
                          f"{sorted([*_COMPARISONS, 'in', 'not in'])}")
    column = _column(field, value, table_alias)
    if value is None and operator == "==":
        return sql.SQL("{} IS NULL").format(column), []
    if isinstance(value, list | dict) or (isinstance(value, str) and operator in (">", ">=", "<", "<=")):
        if not (isinstance(value, str) and _is_iso_date(value)):
            raise FilterError(f"`{operator}` on `{field}` compares numbers or ISO dates, got {value!r}")
    return sql.SQL("{} " + _COMPARISONS[operator] + " %s").format(column), [value]


def _column(field: str, value: Any, table_alias: str | None) -> sql.Composable:
    qualified = (lambda name: sql.Identifier(table_alias, name)) if table_alias else sql.Identifier
    if not field.startswith("meta."):
        return qualified(field)
    text = sql.SQL("{}->>{}").format(qualified("meta"), sql.Literal(field.split(".", 1)[1]))
    cast = _CASTS.get(type(value))
    return sql.SQL("({})::" + cast).format(text) if cast else text


def _is_iso_date(value: str) -> bool:
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return False
    return True
