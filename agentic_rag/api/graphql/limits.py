"""Bounds on what one GraphQL operation may ask for, checked before anything runs.

Strawberry's own validators bound the document (its tokens, its aliases, its depth); :func:`cost_limiter`
bounds the work: each field costs one per time it resolves, and a page multiplies what is under it by its
``limit`` (a variable counts as the largest page, a missing one as the field's default). So
``search(limit: 20) { entity { ... on Anime { studios { name } characters { name } } } }`` costs a few
hundred, while four nested pages of fifty cost millions and are refused with the number. A run of the agent
(``searchAi``, ``clarify``, the ``searchAiRun`` and ``clarifyRun`` subscriptions) is worth :data:`RUN_COST`, and
an operation starts at most one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLInterfaceType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLSchema,
    GraphQLUnionType,
    InlineFragmentNode,
    IntValueNode,
    ListValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    ValidationContext,
    ValidationRule,
)
from graphql.type.definition import GraphQLNamedType
from strawberry.extensions import AddValidationRules, MaxAliasesLimiter, MaxTokensLimiter, QueryDepthLimiter
from strawberry.extensions.base_extension import SchemaExtension

__all__ = ["MAX_ALIASES", "MAX_COST", "MAX_DEPTH", "MAX_TOKENS", "RUN_COST", "RUN_FIELDS", "cost_limiter", "limits"]

MAX_DEPTH = 10  # search > hits > entity > characters > anime > studios > name is 7
MAX_TOKENS = 2000
MAX_ALIASES = 30
MAX_COST = 20_000
RUN_COST = 1000
RUN_FIELDS = frozenset({"searchAi", "clarify", "searchAiRun", "clarifyRun"})
LIST_GUESS = 10  # a list without a limit argument (citations, warnings, events): its typical size


def _named(schema: GraphQLSchema, name: str) -> GraphQLNamedType | None:
    return schema.type_map.get(name)


class _Costing:
    """Walks one operation with its fragments; ``runs`` counts the fields that start a run of the agent."""

    def __init__(self, schema: GraphQLSchema, fragments: dict[str, FragmentDefinitionNode], max_page: int) -> None:
        self.schema = schema
        self.fragments = fragments
        self.max_page = max_page
        self.runs = 0

    def cost(self, selections: SelectionSetNode | None, parent: GraphQLNamedType | None, times: int,
             seen: frozenset[str] = frozenset()) -> int:
        if selections is None:
            return 0
        total = 0
        for node in selections.selections:
            if isinstance(node, FieldNode):
                total += self._field(node, parent, times, seen)
            elif isinstance(node, InlineFragmentNode):
                scope = _named(self.schema, node.type_condition.name.value) if node.type_condition else parent
                total += self.cost(node.selection_set, scope, times, seen)
            elif isinstance(node, FragmentSpreadNode) and node.name.value not in seen:
                fragment = self.fragments.get(node.name.value)
                if fragment is not None:  # an unknown fragment is another rule's error
                    total += self.cost(fragment.selection_set, _named(self.schema, fragment.type_condition.name.value),
                                       times, seen | {node.name.value})
        return total

    def _field(self, node: FieldNode, parent: GraphQLNamedType | None, times: int, seen: frozenset[str]) -> int:
        name = node.name.value
        if name.startswith("__"):
            return times
        fields = parent.fields if isinstance(parent, GraphQLObjectType | GraphQLInterfaceType) else {}
        definition = fields.get(name)
        if definition is None:  # an unknown field is another rule's error
            return times
        if isinstance(parent, GraphQLObjectType) and parent.name in ("Query", "Mutation", "Subscription") \
                and name in RUN_FIELDS:
            self.runs += 1
            own = RUN_COST
        else:
            own = times
        kind: Any = definition.type
        many = 1
        while isinstance(kind, GraphQLNonNull | GraphQLList):
            if isinstance(kind, GraphQLList):
                many = self._page(node, definition.args)
            kind = kind.of_type
        below = kind if isinstance(kind, GraphQLObjectType | GraphQLInterfaceType | GraphQLUnionType) else None
        return own + self.cost(node.selection_set, below, times * many, seen)

    def _page(self, node: FieldNode, args: dict[str, Any]) -> int:
        """How many items a list field may hold: its ``limit``, or as many as the references it is given."""
        given = {a.name.value: a.value for a in node.arguments or ()}
        for name in ("limit", "refs"):
            if name not in args:
                continue
            value = given.get(name)
            if isinstance(value, IntValueNode):
                return max(1, min(int(value.value), self.max_page))
            if isinstance(value, ListValueNode):
                return max(1, min(len(value.values), self.max_page))
            if value is not None:  # a variable: the largest it may be
                return self.max_page
            default = args[name].default_value
            return default if isinstance(default, int) else LIST_GUESS
        return LIST_GUESS


def cost_limiter(max_cost: int, *, max_page: int) -> type[ValidationRule]:
    """A validation rule that refuses an operation costing more than ``max_cost``, or starting two runs."""

    class CostLimit(ValidationRule):
        def __init__(self, context: ValidationContext) -> None:
            super().__init__(context)
            document = context.document
            fragments = {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}
            for op in document.definitions:
                if not isinstance(op, OperationDefinitionNode):
                    continue
                root = context.schema.get_root_type(op.operation)
                costing = _Costing(context.schema, fragments, max_page)
                cost = costing.cost(op.selection_set, root, 1)
                name = f"'{op.name.value}'" if op.name else "the operation"
                if costing.runs > 1:
                    self.report_error(GraphQLError(
                        f"{name} starts {costing.runs} runs of the agent; send one searchAi or clarify per request",
                        op, extensions={"code": "validation_error"}))
                elif cost > max_cost:
                    self.report_error(GraphQLError(
                        f"{name} costs {cost}, over the limit of {max_cost}: ask for smaller pages (limit) or "
                        f"nest fewer relations", op, extensions={"code": "validation_error"}))

    return CostLimit


def limits(*, max_page: int) -> list[Callable[[], SchemaExtension]]:
    """Factories of the extensions that bound every operation (tokens, aliases, depth, cost), one set per
    operation."""
    cost = cost_limiter(MAX_COST, max_page=max_page)
    return [
        lambda: MaxTokensLimiter(max_token_count=MAX_TOKENS),
        lambda: MaxAliasesLimiter(max_alias_count=MAX_ALIASES),
        lambda: QueryDepthLimiter(max_depth=MAX_DEPTH),
        lambda: AddValidationRules([cost]),
    ]
