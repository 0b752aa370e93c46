"""Read a campaign YAML file into a :class:`CampaignConfig`, or fail with one line.

Every failure is a :class:`~tuner._errors.ConfigError` reading
``<file>: <key.path> <rule>, got <value>.``; nothing is written anywhere.
"""

from __future__ import annotations

import os
import re
import types
import typing
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from tuner._errors import ConfigError
from tuner.config._foreign import is_mindoptimizer_config, mindoptimizer_message
from tuner.config._messages import config_error, format_path, message, unknown_key
from tuner.config._model import CampaignConfig
from tuner.config._types import RuleError, UnknownKey, format_value, suggest

__all__ = ["config_error", "expand_env", "format_path", "load_config", "parse_config"]


# ----- YAML ----------------------------------------------------------------------------------


class _Loader(yaml.SafeLoader):
    """SafeLoader that reads ``1e-3`` as a float (YAML 1.2) and refuses duplicate keys."""


# YAML 1.1 (PyYAML) reads `1e-3` as a string, which every learning rate is written as.
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
        |\.[0-9_]+(?:[eE][-+][0-9]+)?
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        re.X,
    ),
    list("-+0123456789."),
)


class _DuplicateKey(Exception):
    def __init__(self, key: Any, first: int, second: int) -> None:
        super().__init__(
            f"line {second}: key {format_value(key)} appears twice (first on line {first})"
        )


def _construct_mapping(
    loader: _Loader, node: yaml.MappingNode, deep: bool = False
) -> dict[Any, Any]:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue  # `<<: *defaults` may be overridden by explicit keys
        key = loader.construct_object(key_node, deep=deep)
        try:
            if key in seen:
                raise _DuplicateKey(key, seen[key], key_node.start_mark.line + 1)
            seen[key] = key_node.start_mark.line + 1
        except TypeError:
            pass
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


# ----- ${VAR} expansion --------------------------------------------------------------------

_VAR = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand_env(
    data: Any, env: typing.Mapping[str, str] | None = None, path: tuple[Any, ...] = ()
) -> Any:
    """Replace ``${VAR}`` and ``${VAR:-default}`` in every string; ``$$`` writes ``$``.

    A string that is exactly one ``${VAR}`` is read as a YAML scalar, so ``trials: ${N}``
    gives a number. An unset variable without a default raises :class:`RuleError`.
    """
    env = os.environ if env is None else env
    if isinstance(data, dict):
        return {k: expand_env(v, env, (*path, k)) for k, v in data.items()}
    if isinstance(data, list):
        return [expand_env(v, env, (*path, i)) for i, v in enumerate(data)]
    if not isinstance(data, str) or "$" not in data:
        return data

    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        name, default = m.group(1), m.group(2)
        if name in env:
            return env[name]
        if default is not None:
            return default
        raise RuleError(
            path, f"uses ${{{name}}}, which is not set (write ${{{name}:-default}})", data
        )

    whole = _VAR.fullmatch(data)
    expanded = _VAR.sub(sub, data)
    if whole and whole.group(1):
        try:
            value = yaml.load(expanded, Loader=_Loader)
        except yaml.YAMLError:
            return expanded
        if value is None or isinstance(value, bool | int | float | str):
            return value
    return expanded


# ----- errors ------------------------------------------------------------------------------


def _user_path(loc: tuple[Any, ...], data: Any, *, keep_last: bool) -> list[Any]:
    """``loc`` without pydantic's union/validator tags: only keys present in the input."""
    out: list[Any] = []
    cur = data
    for i, part in enumerate(loc):
        if (isinstance(cur, dict) and part in cur) or (
            isinstance(cur, list) and isinstance(part, int) and 0 <= part < len(cur)
        ):
            # A mapping key is a name even when YAML read it as a number: parameters.1, not [1].
            out.append(str(part) if isinstance(cur, dict) else part)
            cur = cur[part]
        elif keep_last and i == len(loc) - 1:
            out.append(part)
    return out


def _model_at(path: typing.Sequence[Any], data: Any = None) -> type[BaseModel] | None:
    """The model class that holds the keys at ``path`` (for did-you-mean hints). ``data``,
    the config as written, picks the member of a union told apart by its ``name`` (a
    ``scheduler:`` is ASHA's or PBT's keys by the name it gives)."""
    current: Any = CampaignConfig
    for part in [*path, None]:
        current = _by_name(_unwrap(current), data)
        if part is None:
            break
        data = _child(data, part)
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = _fields_by_key(current).get(str(part))
            if field is None:
                return None
            current = field.annotation
        else:
            origin = typing.get_origin(current)
            args = typing.get_args(current)
            if origin is dict and len(args) == 2:
                current = args[1]
            elif origin is list and args:
                current = args[0]
            else:
                return None
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _child(data: Any, part: Any) -> Any:
    if isinstance(data, dict):
        return data.get(part)
    if isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
        return data[part]
    return None


def _by_name(tp: Any, data: Any) -> Any:
    """The member of a union of models whose ``name`` literal is the one ``data`` gives."""
    if typing.get_origin(tp) not in (typing.Union, types.UnionType) or not isinstance(data, dict):
        return tp
    for member in typing.get_args(tp):
        if isinstance(member, type) and issubclass(member, BaseModel):
            field = member.model_fields.get("name")
            if field is not None and data.get("name") in typing.get_args(field.annotation):
                return member
    return tp


def _fields_by_key(model: type[BaseModel]) -> dict[str, Any]:
    """A model's fields by the YAML key that sets them (the alias when it has one: a key
    such as ``from`` is a Python keyword)."""
    return {f.alias or name: f for name, f in model.model_fields.items()}


def _unwrap(tp: Any) -> Any:
    """``X | None`` and ``Annotated[X, ...]`` -> ``X``."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            tp = args[0]
    if typing.get_origin(tp) is typing.Annotated:
        return _unwrap(typing.get_args(tp)[0])
    return tp


_RULES = {
    "missing": "is required",
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "int_from_float": "must be an integer",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "string_type": "must be a string",
    "dict_type": "must be a mapping",
    "model_type": "must be a mapping",
    "model_attributes_type": "must be a mapping",
    "list_type": "must be a list",
    "path_type": "must be a path",
    "string_too_short": "must not be empty",
    "too_short": "must not be empty",
}


def _first(errors: list[Any]) -> Any:
    """The error to report: an unknown key before anything else.

    A misspelled key (``paramters:``) also leaves the right one missing; naming the typo
    with its did-you-mean says what to fix, ``parameters is required`` does not.
    """
    for err in errors:
        if err["type"] == "extra_forbidden":
            return err
    return errors[0]


def _from_validation(where: str, exc: ValidationError, data: Any) -> ConfigError:
    errors = exc.errors()
    err = _first(errors)
    kind = err["type"]
    loc = tuple(err["loc"])
    value = err.get("input", ...)
    ctx = err.get("ctx") or {}
    cause = ctx.get("error")
    if isinstance(cause, UnknownKey):
        path = [*_user_path(loc, data, keep_last=False), *cause.path]
        return ConfigError(unknown_key(where, path, cause.known, owner=cause.owner))
    if isinstance(cause, RuleError):
        path = [*_user_path(loc, data, keep_last=False), *cause.path]
        return ConfigError(
            message(where, path, cause.rule, cause.value if cause.show_value else ...)
        )
    path = _user_path(loc, data, keep_last=kind in ("missing", "extra_forbidden"))
    if kind == "missing":
        return ConfigError(message(where, path, "is required"))
    if kind == "extra_forbidden":
        model = _model_at(path[:-1], data)
        known = list(_fields_by_key(model)) if model else []
        text = unknown_key(where, path, known, present=_keys_at(data, path[:-1]))
        others = [
            format_path(_user_path(tuple(e["loc"]), data, keep_last=True))
            for e in errors
            if e["type"] == "extra_forbidden" and e is not err
        ]
        if others:
            text = text[:-1] + "; also unknown: " + ", ".join(repr(o) for o in others) + "."
        return ConfigError(text)
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        expected = str(ctx.get("expected_tags", ""))
        tag = ctx.get("tag", ...)
        return ConfigError(
            message(
                where,
                [*path, ctx.get("discriminator", "name").strip("'")],
                f"must be one of {expected}" + suggest(tag, re.findall(r"'([^']*)'", expected))
                if tag is not ...
                else "is required",
                tag,
            )
        )
    if kind == "literal_error":
        expected = str(ctx.get("expected", ""))
        rule = f"must be one of {expected}" + suggest(value, re.findall(r"'([^']*)'", expected))
    elif kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        op = {
            "greater_than_equal": ">=",
            "greater_than": ">",
            "less_than_equal": "<=",
            "less_than": "<",
        }[kind]
        bound = next(iter(ctx.values()), "")
        rule = f"must be {op} {bound}"
    elif kind in _RULES:
        rule = _RULES[kind]
    else:
        msg = str(err.get("msg", kind))
        msg = msg.removeprefix("Value error, ")
        rule = msg[:1].lower() + msg[1:] if msg[:2] != msg[:2].upper() else msg
    return ConfigError(message(where, path, rule, value))


def _keys_at(data: Any, path: typing.Sequence[Any]) -> list[str]:
    for part in path:
        if isinstance(data, dict):
            data = data.get(part, data.get(int(part)) if str(part).isdigit() else None)
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        else:
            return []
    return [str(k) for k in data] if isinstance(data, dict) else []


# ----- entry points ------------------------------------------------------------------------


def parse_config(
    data: Any,
    *,
    source: str | Path | None = None,
    base_dir: str | Path | None = None,
    check_options: bool = True,
) -> CampaignConfig:
    """Validate already-parsed YAML ``data`` (``${VAR}`` expanded here).

    ``check_options=False`` skips checking sampler/pruner options against Optuna's
    signatures, which imports Optuna (~0.5 s): for commands that only read a campaign."""
    where = str(source) if source is not None else "config"
    if not isinstance(data, dict):
        if data is None:
            raise ConfigError(
                f"{where}: is empty; a campaign needs at least name, command, target, "
                "parameters and budget."
            )
        raise ConfigError(
            f"{where}: must be a mapping of keys at the top level, got {format_value(data)}."
        )
    # Top-level `x-...` keys hold YAML anchors for reuse (as in docker compose); not settings.
    data = {k: v for k, v in data.items() if not (isinstance(k, str) and k.startswith("x-"))}
    try:
        data = expand_env(data)
    except RuleError as exc:
        raise ConfigError(message(where, exc.path, exc.rule, exc.value)) from None
    base = (
        Path(base_dir)
        if base_dir is not None
        else (Path(source).resolve().parent if source is not None else Path.cwd())
    )
    try:
        return CampaignConfig.model_validate(
            data,
            context={
                "base_dir": base,
                "source_path": Path(source).expanduser() if source else None,
                "display": where,
                "check_options": check_options,
            },
        )
    except ValidationError as exc:
        raise _from_validation(where, exc, data) from None


def _yaml_problem(exc: yaml.MarkedYAMLError) -> str:
    """``line L, column C: invalid YAML (what, since where it began)``."""
    mark, begun = exc.problem_mark or exc.context_mark, exc.context_mark
    parts = []
    if exc.context:
        context = exc.context
        if begun is not None and mark is not None and begun.line != mark.line:
            context += f" from line {begun.line + 1}, column {begun.column + 1}"
        parts.append(context)
    if exc.problem:
        parts.append(exc.problem)
    what = " ".join(", ".join(parts or ["invalid YAML"]).split())
    at = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
    return f"{at}invalid YAML ({what})"


def load_config(path: str | Path, *, check_options: bool = True) -> CampaignConfig:
    """Read and validate the campaign at ``path``. Raises :class:`ConfigError` (exit code 2).

    ``check_options=False``: see :func:`parse_config` (``tuner status`` reads with it)."""
    where = str(path)
    file = Path(path).expanduser()
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{where}: no such file.") from None
    except IsADirectoryError:
        raise ConfigError(f"{where}: is a directory, not a config file.") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{where}: is not UTF-8 text (byte {exc.start}).") from None
    except OSError as exc:
        raise ConfigError(f"{where}: cannot be read ({exc.strerror or exc}).") from None
    try:
        data = yaml.load(text, Loader=_Loader)
    except _DuplicateKey as exc:
        raise ConfigError(f"{where}: {exc}.") from None
    except yaml.MarkedYAMLError as exc:
        raise ConfigError(f"{where}: {_yaml_problem(exc)}.") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: invalid YAML ({' '.join(str(exc).split())}).") from None
    if is_mindoptimizer_config(data):
        raise ConfigError(mindoptimizer_message(where))
    return parse_config(
        data, source=where, base_dir=file.resolve().parent, check_options=check_options
    )
