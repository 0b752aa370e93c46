"""The generated references: the CLI (from the argparse parsers) and the campaign config
(from the pydantic model's JSON Schema).

They read only public entry points, ``lineage.cli.build_parser()``, ``tuner.cli.build_parser()``
and ``tuner.config.CampaignConfig``, so a regrouping of either package's internals does not
touch this file, and a new command, flag or config key shows up in the docs by itself.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterator
from typing import Any

__all__ = ["cli_commands", "cli_reference", "config_keys", "config_reference"]

_SUPPRESS = argparse.SUPPRESS


# --------------------------------------------------------------------------- Markdown helpers


def _md(text: str) -> str:
    """Escape prose for a Markdown table cell; spans in backquotes are kept as code."""
    parts = re.split(r"(`[^`]*`)", " ".join(text.split()))
    out = []
    for part in parts:
        if part.startswith("`") and part.endswith("`") and len(part) > 1:
            out.append(part.replace("|", "\\|"))
        else:
            for char in "\\*_[]|<>":
                part = part.replace(char, "\\" + char if char not in "<>" else _ENTITY[char])
            out.append(part)
    return "".join(out)


_ENTITY = {"<": "&lt;", ">": "&gt;"}


def _code(text: str) -> str:
    """Inline code that survives a table cell (backquotes inside, pipes)."""
    text = " ".join(str(text).split()).replace("|", "\\|")
    fence = "``" if "`" in text else "`"
    pad = " " if fence == "``" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


# --------------------------------------------------------------------------- CLI reference


def _parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    from lineage.cli import build_parser as lineage_parser
    from tuner.cli import build_parser as tuner_parser

    return [("lineage", lineage_parser()), ("tuner", tuner_parser())]


# argparse offers no public way to walk a parser's arguments; every documentation tool
# (sphinx-argparse, mkdocs-click's argparse cousins) reads ``_actions``. It is confined here.
def _actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return list(parser._actions)


def _subcommands(
    parser: argparse.ArgumentParser,
) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    for action in _actions(parser):
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield name, helps.get(name, ""), sub


def _walk(
    prog: str, parser: argparse.ArgumentParser
) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    for name, help_text, sub in _subcommands(parser):
        full = f"{prog} {name}"
        yield full, help_text, sub
        yield from _walk(full, sub)


def cli_commands() -> list[str]:
    """Every command, as typed: ``lineage runs``, ``tuner run``, ... (nested ones too)."""
    return [full for prog, parser in _parsers() for full, _, _ in _walk(prog, parser)]


def _expand_help(action: argparse.Action, prog: str) -> str:
    if not action.help or action.help == _SUPPRESS:
        return ""
    params: dict[str, Any] = {k: v for k, v in vars(action).items() if v is not _SUPPRESS}
    params["prog"] = prog
    for key in ("default", "choices"):
        value = params.get(key)
        if isinstance(value, list | tuple | set | dict):
            params[key] = ", ".join(str(v) for v in value)
        elif value is not None and hasattr(value, "__name__"):
            params[key] = value.__name__
    try:
        return action.help % params
    except (KeyError, TypeError, ValueError):
        return action.help


def _metavar(action: argparse.Action) -> str:
    if action.nargs == 0:
        return ""
    if action.metavar is not None:
        metavar = action.metavar if isinstance(action.metavar, str) else " ".join(action.metavar)
    elif action.choices is not None:
        metavar = "{" + ",".join(str(c) for c in action.choices) + "}"
    elif action.option_strings:
        metavar = action.dest.upper()
    else:
        metavar = action.dest
    nargs = action.nargs
    if nargs == "?":
        return f"[{metavar}]"
    if nargs == "*":
        return f"[{metavar} ...]"
    if nargs == "+":
        return f"{metavar} [{metavar} ...]"
    if isinstance(nargs, int) and nargs > 1:
        return " ".join([metavar] * nargs)
    return metavar


def _argument_entry(action: argparse.Action, prog: str) -> list[str]:
    """One argument as a definition-list entry: the full width of the page for its help."""
    if action.help == _SUPPRESS or isinstance(
        action, argparse._SubParsersAction | argparse._HelpAction
    ):
        return []
    metavar = _metavar(action)
    if action.option_strings:
        first, *others = action.option_strings
        term = ", ".join([_code(f"{first} {metavar}".strip()), *map(_code, others)])
    else:
        term = _code(metavar)
    notes = []
    if action.choices is not None and not isinstance(action.choices, dict):
        notes.append("one of " + ", ".join(_code(c) for c in action.choices))
    if isinstance(action, argparse._AppendAction | argparse._ExtendAction) and "repeat" not in (
        action.help or ""
    ):
        notes.append("repeatable")
    if action.required and action.option_strings:
        notes.append("required")
    default = action.default
    shown = (
        action.option_strings
        and action.nargs != 0
        and default not in (None, _SUPPRESS, [], ())
        and "%(default)" not in (action.help or "")
    )
    if shown:
        notes.append("default " + _code(default if isinstance(default, str) else repr(default)))
    help_text = _md(_expand_help(action, prog))
    extra = "; ".join(notes)
    body = help_text + (f" ({extra})" if extra and help_text else extra)
    return [term, f":   {body or 'no help text'}", ""]


def _usage(parser: argparse.ArgumentParser) -> str:
    text = parser.format_usage().strip()
    return re.sub(r"^usage:\s*", "", text)


def _command_section(
    full: str, help_text: str, parser: argparse.ArgumentParser, level: int
) -> list[str]:
    anchor = full.replace(" ", "-")
    lines = [f"{'#' * level} `{full}` {{#{anchor}}}", ""]
    description = parser.description or help_text
    if description:
        lines += [_md_prose(description), ""]
    lines += ["```text", _usage(parser), "```", ""]
    for action in _actions(parser):
        lines += _argument_entry(action, full)
    if parser.epilog:
        lines += [_md_prose(parser.epilog), ""]
    return lines


def _md_prose(text: str) -> str:
    """Descriptions are written for a terminal: keep their words, escape Markdown."""
    return _md(text)


def cli_reference() -> str:
    """The CLI reference page's generated body (Markdown)."""
    out: list[str] = []
    for prog, parser in _parsers():
        out += [f"## `{prog}`", ""]
        if parser.description:
            out += [_md_prose(parser.description), ""]
        out += ["```text", _usage(parser), "```", ""]
        summary = ["| command | what it does |", "|---|---|"]
        for full, help_text, _ in _walk(prog, parser):
            summary.append(f"| [`{full}`](#{full.replace(' ', '-')}) | {_md(help_text)} |")
        out += [*summary, ""]
        for full, help_text, sub in _walk(prog, parser):
            level = 3 + full.count(" ") - 1
            out += _command_section(full, help_text, sub, min(level, 6))
    return "\n".join(out).rstrip() + "\n"


# --------------------------------------------------------------------------- config reference


def _schema() -> dict[str, Any]:
    from tuner.config import CampaignConfig

    return CampaignConfig.model_json_schema()


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    options = [n for n in node.get("anyOf", ()) if n.get("type") != "null"]
    if len(options) == 1 and "$ref" in options[0]:
        # An optional section (`warm_start: ... | None`): the section's own keys.
        node = {**{k: v for k, v in node.items() if k != "anyOf"}, **options[0]}
    ref = node.get("$ref")
    if ref:
        merged = dict(defs[ref.rsplit("/", 1)[-1]])
        merged.update({k: v for k, v in node.items() if k != "$ref"})
        return merged
    return node


def _variants(node: dict[str, Any], defs: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """``[(tag, section)]`` of a section that is one of several, told apart by a key
    (``scheduler: {name: asha, ...} | {name: pbt, ...}``); [] for any other node."""
    options = [n for n in node.get("anyOf", [node]) if n.get("type") != "null"]
    if len(options) != 1 or "oneOf" not in options[0]:
        return []
    out = []
    key = options[0].get("discriminator", {}).get("propertyName", "name")
    for variant in options[0]["oneOf"]:
        model = _resolve(variant, defs)
        tag = model.get("properties", {}).get(key, {}).get("const", model.get("title", "?"))
        out.append((str(tag), model))
    return out


def _type(node: dict[str, Any], defs: dict[str, Any]) -> str:
    variants = _variants(node, defs)
    if variants:
        return "mapping, one of: " + ", ".join(_code(tag) for tag, _ in variants)
    node = _resolve(node, defs)
    if "anyOf" in node:
        # null only says the key may be left out: the default column shows that.
        kinds = [_type(n, defs) for n in node["anyOf"] if n.get("type") != "null"]
        return " or ".join(dict.fromkeys(kinds))
    if "const" in node:
        return _code(json.dumps(node["const"]))
    if "enum" in node:
        return " \\| ".join(_code(v) for v in node["enum"])
    kind = node.get("type")
    if isinstance(kind, list):
        names = [k for k in kind if not (k == "integer" and "number" in kind)]
        text = "/".join(names)
    elif kind == "array":
        items = node.get("items")
        text = "list"
        if isinstance(items, dict):
            inner = _type(items, defs)
            text = f"list of ({inner})" if " or " in inner else f"list of {inner}"
        if "minItems" in node:
            text += f" (at least {node['minItems']})"
        return text
    elif kind == "object" and "properties" in node:
        return "mapping (below)"
    elif kind == "object":
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            return f"mapping of name to {_type(extra, defs)}"
        return "mapping"
    else:
        text = str(kind or "any")
    rules = []
    for key, sign in (
        ("minimum", ">="),
        ("exclusiveMinimum", ">"),
        ("maximum", "<="),
        ("exclusiveMaximum", "<"),
    ):
        if key in node:
            rules.append(f"{sign} {node[key]}")
    if "minLength" in node:
        rules.append("not empty" if node["minLength"] == 1 else f"length >= {node['minLength']}")
    if "pattern" in node:
        rules.append("matching " + _code(node["pattern"]))
    if "format" in node:
        rules.append(node["format"])
    return text + (f" ({', '.join(rules)})" if rules else "")


def _default(name: str, node: dict[str, Any], required: set[str], defs: dict[str, Any]) -> str:
    if name in required:
        return "**required**"
    if "default" in node:
        value = node["default"]
        return "none" if value is None else _code(json.dumps(value))
    kind = _resolve(node, defs).get("type")
    if kind == "object":
        return _code("{}")
    if kind == "array":
        return _code("[]")
    return "see below"


def _fields(
    prefix: str, model: dict[str, Any], defs: dict[str, Any]
) -> Iterator[tuple[str, dict[str, Any], bool]]:
    """(dotted key, schema node, required) for every leaf field under ``model``."""
    required = set(model.get("required", ()))
    for name, node in model.get("properties", {}).items():
        key = f"{prefix}{name}"
        variants = _variants(node, defs)
        if variants:  # every variant's keys, each once
            seen: set[str] = set()
            for _, model in variants:
                for leaf in _fields(f"{key}.", model, defs):
                    if leaf[0] not in seen:
                        seen.add(leaf[0])
                        yield leaf
            continue
        resolved = _resolve(node, defs)
        extra = resolved.get("additionalProperties")
        items = resolved.get("items")
        if "properties" in resolved:
            yield from _fields(f"{key}.", resolved, defs)
        elif isinstance(extra, dict) and "properties" in _resolve(extra, defs):
            yield key, node, name in required
            yield from _fields(f"{key}.NAME.", _resolve(extra, defs), defs)
        elif isinstance(items, dict) and "properties" in _resolve(items, defs):
            yield key, node, name in required
            yield from _fields(f"{key}[].", _resolve(items, defs), defs)
        else:
            yield key, node, name in required


def config_keys() -> list[str]:
    """Every key of a campaign config as the reference names it (``budget.trials``,
    ``parameters.NAME.low``, ``objectives[].metric``)."""
    schema = _schema()
    return [key for key, _, _ in _fields("", schema, schema.get("$defs", {}))]


def config_reference() -> str:
    """The configuration reference page's generated body (Markdown)."""
    schema = _schema()
    defs = schema.get("$defs", {})
    out = ["## Top level", ""]
    if schema.get("description"):
        out += [_md(schema["description"]), ""]
    top_required = set(schema.get("required", ()))
    out += ["| key | type | default | meaning |", "|---|---|---|---|"]
    sections: list[tuple[str, dict[str, Any], bool]] = []
    variant_sections: list[tuple[str, str, dict[str, Any]]] = []
    for name, node in schema.get("properties", {}).items():
        variants = _variants(node, defs)
        if variants:  # one table per variant, after the other sections
            description = node.get("description") or ""
            first = f"{name}-{variants[0][0]}"
            out.append(
                f"| [`{name}`](#{first}) | {_type(node, defs)} | "
                f"{_default(name, node, top_required, defs)} | {_md(description)} |"
            )
            variant_sections += [(name, tag, model) for tag, model in variants]
            continue
        resolved = _resolve(node, defs)
        description = node.get("description") or resolved.get("description") or ""
        if "properties" in resolved:
            out.append(
                f"| [`{name}`](#{name}) | mapping | {_default(name, node, top_required, defs)} | {_md(description)} |"
            )
            sections.append((name, resolved, name in top_required))
            continue
        extra = resolved.get("additionalProperties")
        items = resolved.get("items")
        for inner in (extra, items):
            if isinstance(inner, dict) and "properties" in _resolve(inner, defs):
                sections.append((name, _resolve(inner, defs), name in top_required))
        out.append(
            f"| `{name}` | {_type(node, defs)} | {_default(name, node, top_required, defs)} | {_md(description)} |"
        )
    out.append("")
    pending = [(name, schema["properties"][name], model) for name, model, _ in sections]
    while pending:
        name, node, model = pending.pop(0)
        resolved = _resolve(node, defs)
        if "properties" in resolved:
            prefix = f"{name}."
        elif isinstance(resolved.get("additionalProperties"), dict):
            prefix = f"{name}.NAME."
        else:
            prefix = f"{name}[]."
        anchor = re.sub(r"[^A-Za-z0-9_]+", "-", name).strip("-")
        out += [f"## `{name}` {{#{anchor}}}", ""]
        if model.get("description"):
            out += [_md(model["description"]), ""]
        if model.get("additionalProperties") is False:
            out += ["Unknown keys are refused.", ""]
        required = set(model.get("required", ()))
        out += ["| key | type | default | meaning |", "|---|---|---|---|"]
        for field, fnode in model.get("properties", {}).items():
            inner = _resolve(fnode, defs)
            for sub in (inner.get("items"), inner.get("additionalProperties")):
                # A list (or mapping) of sections inside a section: its own table below.
                if isinstance(sub, dict) and "properties" in _resolve(sub, defs):
                    pending.append((f"{prefix}{field}", fnode, _resolve(sub, defs)))
            if "properties" in inner:  # a section inside a section (`parameters.NAME.focus`)
                pending.append((f"{prefix}{field}", fnode, inner))
            out.append(
                f"| `{prefix}{field}` | {_type(fnode, defs)} | "
                f"{_default(field, fnode, required, defs)} | {_md(fnode.get('description', ''))} |"
            )
        out.append("")
    for name, tag, model in variant_sections:
        out += _variant_section(name, tag, model, defs)
    return "\n".join(out).rstrip() + "\n"


def _variant_section(name: str, tag: str, model: dict[str, Any], defs: dict[str, Any]) -> list[str]:
    """The table of one variant of a section told apart by its ``name``."""
    out = [f"## `{name}` with `name: {tag}` {{#{name}-{tag}}}", ""]
    if model.get("description"):
        out += [_md(model["description"]), ""]
    if model.get("additionalProperties") is False:
        out += ["Unknown keys are refused.", ""]
    required = set(model.get("required", ()))
    out += ["| key | type | default | meaning |", "|---|---|---|---|"]
    nested: list[tuple[str, dict[str, Any]]] = []
    for field, fnode in model.get("properties", {}).items():
        inner = _resolve(fnode, defs)
        extra = inner.get("additionalProperties")
        if isinstance(extra, dict) and "properties" in _resolve(extra, defs):
            nested.append((f"{name}.{field}.NAME.", _resolve(extra, defs)))
        out.append(
            f"| `{name}.{field}` | {_type(fnode, defs)} | "
            f"{_default(field, fnode, required, defs)} | {_md(fnode.get('description', ''))} |"
        )
    out.append("")
    for prefix, sub in nested:  # a mapping of sections (``scheduler.perturb.NAME``)
        if sub.get("description"):
            out += [_md(sub["description"]), ""]
        sub_required = set(sub.get("required", ()))
        out += ["| key | type | default | meaning |", "|---|---|---|---|"]
        for field, fnode in sub.get("properties", {}).items():
            out.append(
                f"| `{prefix}{field}` | {_type(fnode, defs)} | "
                f"{_default(field, fnode, sub_required, defs)} | {_md(fnode.get('description', ''))} |"
            )
        out.append("")
    return out
