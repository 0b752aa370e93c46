"""Tokens of a ``--where`` expression, each with the column it starts at."""

from __future__ import annotations

from lineage._errors import QuerySyntaxError
from lineage._values import Value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

KEYWORDS = frozenset({"and", "or", "not", "in", "like", "ilike", "is", "null"})
OPERATORS = ("<=", ">=", "!=", "<>", "==", "=", "<", ">")
_FIELD_PREFIXES = frozenset(
    {"params", "param", "metrics", "metric", "tags", "tag", "attributes", "attribute", "attr"}
)
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-/:")


class Token(Value):
    """``kind``: ``field`` (value = (prefix|None, key)), ``string``, ``number``, ``op``,
    ``kw`` (lower-cased keyword), ``(``, ``)``, ``,`` or ``end``; ``pos``: 0-based offset
    into the expression."""

    _fields = ("kind", "value", "pos", "text")
    __slots__ = _fields

    def __init__(self, kind: str, value: Any, pos: int, text: str) -> None:
        self.kind = kind
        self.value = value
        self.pos = pos
        self.text = text


def syntax_error(expr: str, pos: int, message: str) -> QuerySyntaxError:
    """A :class:`QuerySyntaxError` whose text shows the expression with a caret under ``pos``."""
    col = pos + 1
    err = QuerySyntaxError(
        f"malformed --where at column {col}: {message}\n  {expr}\n  {' ' * pos}^"
    )
    err.expression = expr  # type: ignore[attr-defined]
    err.column = col  # type: ignore[attr-defined]
    return err


def _quoted(expr: str, i: int) -> tuple[str, int]:
    """Read a quoted run starting at ``expr[i]``; a doubled quote or a backslash escapes it."""
    quote = expr[i]
    out = []
    j = i + 1
    while j < len(expr):
        c = expr[j]
        if c == "\\" and j + 1 < len(expr):
            out.append(expr[j + 1])
            j += 2
            continue
        if c == quote:
            if j + 1 < len(expr) and expr[j + 1] == quote:
                out.append(quote)
                j += 2
                continue
            return "".join(out), j + 1
        out.append(c)
        j += 1
    raise syntax_error(expr, i, f"unterminated {quote} quote")


def tokenize(expr: str) -> list[Token]:
    tokens: list[Token] = []
    i, n = 0, len(expr)
    while i < n:
        c = expr[i]
        if c.isspace():
            i += 1
            continue
        start = i
        if c in "(),":
            tokens.append(Token(c, c, i, c))
            i += 1
            continue
        op = next((o for o in OPERATORS if expr.startswith(o, i)), None)
        if op is not None:
            tokens.append(Token("op", {"==": "=", "<>": "!="}.get(op, op), i, op))
            i += len(op)
            continue
        if c in "'\"":
            value, i = _quoted(expr, i)
            tokens.append(Token("string", value, start, expr[start:i]))
            continue
        if c.isdigit() or (
            c in "+-." and i + 1 < n and (expr[i + 1].isdigit() or expr[i + 1] == ".")
        ):
            j = i + 1
            while j < n and (expr[j].isalnum() or expr[j] in ".+-_"):
                if expr[j] in "+-" and expr[j - 1] not in "eE":
                    break
                j += 1
            text = expr[i:j]
            try:
                number = float(text)
            except ValueError:
                raise syntax_error(expr, i, f"{text!r} is not a number") from None
            tokens.append(Token("number", number, i, text))
            i = j
            continue
        if c.isalpha() or c in "_`":
            if c == "`":
                raise syntax_error(
                    expr, i, "a quoted key needs a prefix: params., metrics. or tags."
                )
            j = i
            while j < n and (expr[j].isalnum() or expr[j] == "_"):
                j += 1
            word = expr[i:j]
            if j < n and expr[j] == "." and word.lower() in _FIELD_PREFIXES:
                k = j + 1
                if k < n and expr[k] in '`"':
                    key, k = _quoted(expr, k)
                else:
                    while k < n and expr[k] in _KEY_CHARS:
                        k += 1
                    key = expr[j + 1 : k]
                    if not key:
                        raise syntax_error(expr, k, f"expected a key name after {word}.")
                tokens.append(Token("field", (word, key), i, expr[i:k]))
                i = k
                continue
            if word.lower() in KEYWORDS:
                tokens.append(Token("kw", word.lower(), i, word))
            elif word.lower() in ("true", "false"):
                tokens.append(Token("string", word.lower(), i, word))
            else:
                tokens.append(Token("field", (None, word), i, word))
            i = j
            continue
        raise syntax_error(expr, i, f"unexpected character {c!r}")
    tokens.append(Token("end", None, n, ""))
    return tokens
