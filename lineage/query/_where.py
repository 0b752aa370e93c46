"""``--where``: a small boolean language over runs, parsed into a tree of predicates.

Grammar (keywords are case-insensitive)::

    expr       := term (OR term)*
    term       := factor (AND factor)*
    factor     := NOT factor | '(' expr ')' | comparison
    comparison := key op literal
                | key [NOT] IN '(' literal (',' literal)* ')'
                | key [NOT] (LIKE | ILIKE) string
                | key IS [NOT] NULL
    op         := = | == | != | <> | < | <= | > | >=
    key        := params.K | metrics.K | tags.K | attribute      (K may be `back quoted`)

Values: a param or tag is compared as a number when both sides look numeric, else as text;
metrics are numbers; ``start_time``/``end_time`` take milliseconds or an ISO date
(``'2026-12-01'``, local time); ``duration`` is in seconds; ``status`` ignores case.
A run without the key fails every positive test (``=``, ``<``, ``in``, ``like``...) and passes
every negative one (``!=``, ``not in``, ``not like``), so ``not (k = v)`` equals ``k != v``.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Iterator

from lineage._errors import QuerySyntaxError, UsageError
from lineage._values import Value
from lineage.query._fields import NUMERIC_ATTRIBUTES, Field, make_field, to_number
from lineage.query._lexer import Token, syntax_error, tokenize
from lineage.store import RunRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

Predicate = Callable[[RunRecord], bool]

_ORDER: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


class Node(Value):
    """A parsed expression: ``fields()`` it reads, ``compile()`` into a predicate.

    Plain classes, not dataclasses: see ``lineage/_values.py``."""

    __slots__ = ()
    __hash__ = None  # type: ignore[assignment]  # lists inside

    def fields(self) -> Iterator[Field]:
        raise NotImplementedError

    def compile(self) -> Predicate:
        raise NotImplementedError


class BoolOp(Node):
    _fields = ("op", "items")
    __slots__ = _fields

    def __init__(self, op: str, items: list[Node]) -> None:
        self.op = op  # "and" | "or"
        self.items = items

    def fields(self) -> Iterator[Field]:
        for item in self.items:
            yield from item.fields()

    def compile(self) -> Predicate:
        preds = [item.compile() for item in self.items]
        if self.op == "and":
            return lambda run: all(p(run) for p in preds)
        return lambda run: any(p(run) for p in preds)


class Not(Node):
    _fields = ("item",)
    __slots__ = _fields

    def __init__(self, item: Node) -> None:
        self.item = item

    def fields(self) -> Iterator[Field]:
        yield from self.item.fields()

    def compile(self) -> Predicate:
        pred = self.item.compile()
        return lambda run: not pred(run)


class Compare(Node):
    _fields = ("field", "op", "values", "negate")
    __slots__ = _fields

    def __init__(self, field: Field, op: str, values: list[Any], negate: bool = False) -> None:
        self.field = field
        self.op = op  # = != < <= > >= in like ilike null
        self.values = values
        self.negate = negate  # for in / like / null

    def fields(self) -> Iterator[Field]:
        yield self.field

    def compile(self) -> Predicate:
        get = self.field.value
        if self.op == "null":
            return (lambda r: get(r) is not None) if self.negate else (lambda r: get(r) is None)
        test = _test(self.field, self.op, self.values)
        invert = self.negate or self.op == "!="

        def predicate(run: RunRecord) -> bool:
            value = get(run)
            if value is None:
                return invert
            return test(value) != invert

        return predicate


def _test(field: Field, op: str, values: list[Any]) -> Callable[[Any], bool]:
    kind = value_kind(field)
    if op in ("like", "ilike"):
        flags = re.IGNORECASE if op == "ilike" else 0
        regex = re.compile(_like_to_regex(str(values[0])), flags | re.DOTALL)
        return lambda v: regex.fullmatch(_text(v)) is not None
    literals = [coerce_literal(field, kind, v) for v in values]
    if op == "in":
        tests = [_compare(kind, "=", lit) for lit in literals]
        return lambda v: any(t(v) for t in tests)
    return _compare(kind, op, literals[0])


def value_kind(field: Field) -> str:
    if field.kind == "metrics" or field.key in NUMERIC_ATTRIBUTES:
        return "number"
    if field.key == "status":
        return "status"
    return "text"  # params, tags, names and ids: numeric when both sides look numeric


def coerce_literal(field: Field, kind: str, literal: Any) -> Any:
    if kind == "status":
        return str(literal).upper()
    if kind != "number" or isinstance(literal, float):
        return literal
    number = to_number(literal)
    if number is not None:
        return number
    if field.key in ("start_time", "end_time"):
        try:
            from datetime import datetime

            return datetime.fromisoformat(str(literal)).timestamp() * 1000.0
        except ValueError:
            pass
        raise UsageError(
            f"{field} compares to milliseconds or an ISO date like '2026-12-01T10:00', "
            f"got {literal!r}"
        )
    raise UsageError(f"{field} compares to numbers, got {literal!r}")


def _compare(kind: str, op: str, literal: Any) -> Callable[[Any], bool]:
    if kind == "number":
        number = float(literal)
        if op == "=":
            return lambda v: float(v) == number
        if op == "!=":
            return lambda v: float(v) == number  # negated by the caller
        cmp = _ORDER[op]
        return lambda v: cmp(float(v), number)
    lit_text = _text(literal)
    lit_num = to_number(literal)
    if op in ("=", "!="):
        if lit_num is None:
            return lambda v: _text(v) == lit_text

        def equal(v: Any) -> bool:
            num = to_number(v)
            return num == lit_num if num is not None else _text(v) == lit_text

        return equal
    cmp = _ORDER[op]
    if lit_num is None:
        return lambda v: cmp(_text(v), lit_text)

    def ordered(v: Any) -> bool:
        num = to_number(v)
        return num is not None and cmp(num, lit_num)

    return ordered


def _text(value: Any) -> str:
    if isinstance(value, float):
        if value.is_integer() and math.isfinite(value):
            return str(int(value))
        return repr(value)
    return str(value)


def _like_to_regex(pattern: str) -> str:
    out = []
    for c in pattern:
        out.append(".*" if c == "%" else "." if c == "_" else re.escape(c))
    return "".join(out)


class _Parser:
    def __init__(self, expr: str) -> None:
        self.expr = expr
        self.tokens = tokenize(expr)
        self.i = 0

    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def error(self, message: str, tok: Token | None = None) -> Exception:
        tok = tok or self.tok
        got = "the end of the expression" if tok.kind == "end" else repr(tok.text)
        return syntax_error(self.expr, tok.pos, f"{message}, got {got}")

    def take(self) -> Token:
        tok = self.tok
        self.i += 1
        return tok

    def is_kw(self, *words: str) -> bool:
        return self.tok.kind == "kw" and self.tok.value in words

    def parse(self) -> Node:
        if self.tok.kind == "end":
            raise self.error("expected a condition such as metrics.loss < 0.5")
        node = self.expr_()
        if self.tok.kind != "end":
            raise self.error("expected 'and', 'or' or the end of the expression")
        return node

    def expr_(self) -> Node:
        items = [self.term()]
        while self.is_kw("or"):
            self.take()
            items.append(self.term())
        return items[0] if len(items) == 1 else BoolOp("or", items)

    def term(self) -> Node:
        items = [self.factor()]
        while self.is_kw("and"):
            self.take()
            items.append(self.factor())
        return items[0] if len(items) == 1 else BoolOp("and", items)

    def factor(self) -> Node:
        if self.is_kw("not"):
            self.take()
            return Not(self.factor())
        if self.tok.kind == "(":
            opening = self.take()
            node = self.expr_()
            if self.tok.kind != ")":
                raise self.error(f"expected ')' to close the '(' at column {opening.pos + 1}")
            self.take()
            return node
        return self.comparison()

    def literal(self) -> Any:
        if self.tok.kind in ("string", "number"):
            return self.take().value
        raise self.error("expected a number or a quoted string")

    def comparison(self) -> Node:
        tok = self.tok
        if tok.kind != "field":
            raise self.error("expected a key such as params.lr, metrics.loss or status")
        self.take()
        prefix, key = tok.value
        try:
            field = make_field(prefix, key)
        except UsageError as exc:
            raise syntax_error(self.expr, tok.pos, str(exc)) from None
        node = self.operation(field)
        try:
            node.compile()  # type-checks the literals now, with the position at hand
        except QuerySyntaxError:
            raise
        except UsageError as exc:
            raise syntax_error(self.expr, tok.pos, str(exc)) from None
        return node

    def operation(self, field: Field) -> Compare:
        if self.tok.kind == "op":
            op = str(self.take().value)
            return Compare(field, op, [self.literal()])
        if self.is_kw("is"):
            self.take()
            negate = self.is_kw("not")
            if negate:
                self.take()
            if not self.is_kw("null"):
                raise self.error("expected 'null' after 'is'")
            self.take()
            return Compare(field, "null", [], negate)
        negate = self.is_kw("not")
        if negate:
            self.take()
        if self.is_kw("in"):
            self.take()
            if self.tok.kind != "(":
                raise self.error("expected '(' after 'in'")
            self.take()
            values = [self.literal()]
            while self.tok.kind == ",":
                self.take()
                values.append(self.literal())
            if self.tok.kind != ")":
                raise self.error("expected ',' or ')' in the 'in' list")
            self.take()
            return Compare(field, "in", values, negate)
        if self.is_kw("like", "ilike"):
            op = str(self.take().value)
            if self.tok.kind != "string":
                raise self.error(f"expected a quoted pattern after '{op}'")
            return Compare(field, op, [self.take().value], negate)
        raise self.error(
            f"expected an operator (=, !=, <, <=, >, >=, in, like, is null) after {field}"
        )


def parse_where(expr: str) -> Node:
    """Parse a ``--where`` expression; :class:`~lineage.QuerySyntaxError` shows where it broke."""
    return _Parser(expr).parse()
