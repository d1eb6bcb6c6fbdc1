"""``flagctl migrate``: the migration of the flags item to a new shape (``FLAGS#V1`` -> ``FLAGS#V2``).

- ``--declarations NEW.json --mapping MAP.json --reason TEXT --dry-run``: the plan, read-only. The mapping is checked
  alone, then against the current declarations (the API's ``GET /flags/declarations``) and the new ones (NEW.json,
  checked as the service checks a declarations file), then against the current values (``GET /flags``). The plan
  says per flag what V2 would hold, the values that do not convert (the migration would be refused), and what a
  reader still configured for V1 would serve once it follows the pointer (a flag V1 cannot express: its declared
  fallback). Nothing is written.
- the same without ``--dry-run``: ``POST /flags/migration`` (``apply``), which checks it all again against the item
  as it is when it writes, and refuses (nothing written) with each cause listed.
- ``--status``: ``GET /flags/migration``.

``finalise`` posts ``POST /flags/migration/finalise``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from flagctl.client import Answer, FlagsClient
from flagctl.errors import BAD_INPUT, SERVER, FlagctlError
from flagctl.text import safe, table
from singleton_flags.declarations import Declarations, FlagValue, load_declarations, parse_declarations
from singleton_flags.errors import DeclarationError, FlagsError
from singleton_flags.migration import Mapping, MappingError, NotConvertible, parse_mapping_text

__all__ = [
    "MIGRATION",
    "apply",
    "build_plan",
    "current_state",
    "finalise",
    "load_inputs",
    "refusal_causes",
    "render",
    "render_applied",
    "render_status",
    "status",
]

MIGRATION = "/flags/migration"
FINALISE = MIGRATION + "/finalise"
_HEADERS = ["FLAG (V1)", "V2", "NOW", "V2 VALUE", "V1 READERS SERVE"]


def load_inputs(declarations: Path, mapping: Path) -> tuple[Declarations, Mapping]:
    """NEW.json and MAP.json, each checked alone; a bad one is bad input naming the file and the problem."""
    try:
        new = load_declarations(declarations)
    except DeclarationError as exc:
        raise FlagctlError(f"--declarations: {exc}", BAD_INPUT, "BAD_INPUT") from exc
    try:
        text = mapping.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FlagctlError(f"--mapping: cannot read {mapping}: {exc}", BAD_INPUT, "BAD_INPUT") from exc
    try:
        return new, parse_mapping_text(text)
    except MappingError as exc:
        raise FlagctlError(f"--mapping: {exc}", BAD_INPUT, "BAD_MAPPING") from exc


def current_state(client: FlagsClient) -> tuple[Declarations, dict[str, FlagValue], int]:
    """The current declarations, values and version, from the API; stored values only (a read that served the
    declared fallbacks is no base for a plan)."""
    answer = client.request("GET", "/flags/declarations")
    documents = answer.body.get("declarations") if isinstance(answer.body, dict) else None
    if answer.status != 200 or not isinstance(documents, list):
        raise FlagctlError(
            f"GET /flags/declarations answered HTTP {answer.status}, no declarations", SERVER, "BAD_ANSWER"
        )
    try:
        current = parse_declarations({"flags": documents})
    except DeclarationError as exc:
        raise FlagctlError(f"GET /flags/declarations: {exc}", SERVER, "BAD_ANSWER") from exc
    read = client.flags()
    body = read.body if isinstance(read.body, dict) else {}
    values, version = body.get("flags"), body.get("version")
    if read.status != 200 or not isinstance(values, dict) or not isinstance(version, int):
        raise FlagctlError(
            f"GET /flags answered HTTP {read.status} without stored values (reason {body.get('reason')!r}): a plan "
            "needs the item's values; check `flagctl get`",
            SERVER,
            "NO_VALUES",
        )
    return current, values, version


def build_plan(
    current: Declarations, new: Declarations, mapping: Mapping, values: dict[str, FlagValue], version: int
) -> dict[str, Any]:
    """The plan as data: per flag what V2 holds and what a V1 reader serves, the refused values, the added flags."""
    try:
        mapping.check(current, new)
    except MappingError as exc:
        raise FlagctlError(f"--mapping: {exc}", BAD_INPUT, "BAD_MAPPING") from exc
    flags, refused, fallbacks = [], [], []
    v2_values: dict[str, FlagValue] = {}
    for name, spec in current.items():
        move = mapping.move(name)
        entry: dict[str, Any] = {"flag": name, "v2_flag": move.new, "conversion": move.conversion, "now": values[name]}
        if move.new is None:
            entry.update(action="remove", v1_readers={"fallback": spec.fallback, "why": "removed"})
            fallbacks.append(name)
            flags.append(entry)
            continue
        try:
            converted = new[move.new].validate(move.forward(values[name]))
        except (NotConvertible, FlagsError) as exc:
            entry.update(action="refused", why=_why(exc))
            refused.append({"flag": name, "value": values[name], "why": entry["why"]})
            flags.append(entry)
            continue
        v2_values[move.new] = converted
        entry.update(action=_action(move.new != name, move.conversion), v2_value=converted)
        flags.append(entry)
    served, causes = mapping.backward(current, v2_values)
    for entry in flags:
        name = entry["flag"]
        if entry["action"] in ("remove", "refused"):
            continue
        if name in causes:
            entry["v1_readers"] = {"fallback": current[name].fallback, "why": causes[name]}
            fallbacks.append(name)
        else:
            entry["v1_readers"] = {"value": served[name]}
    added = [{"flag": name, "initial": mapping.initial(name, new[name])} for name in new if name in mapping.added]
    return {
        "from": mapping.source,
        "to": mapping.target,
        "current_version": version,
        "v2_version": version + 1,
        "flags": flags,
        "added": added,
        "refused": refused,
        "v1_reader_fallbacks": fallbacks,
        "would_apply": not refused,
        "written": False,
    }


def _why(exc: Exception) -> str:
    message = getattr(exc, "message", None)
    return message if isinstance(message, str) else str(exc)


def _action(renamed: bool, conversion: str | None) -> str:
    if renamed and conversion:
        return "rename+convert"
    if renamed:
        return "rename"
    return "convert" if conversion else "keep"


def render(plan: dict[str, Any]) -> str:
    """The plan for a terminal: one row per current flag, then the added flags, the refusals and the fallbacks."""
    rows = []
    for entry in plan["flags"]:
        target = entry["v2_flag"] or "(removed)"
        if entry["conversion"]:
            target += f" [{entry['conversion']}]"
        v2_value = (
            _shown(entry["v2_value"]) if "v2_value" in entry else "REFUSED" if entry["action"] == "refused" else "-"
        )
        readers = entry.get("v1_readers")
        if readers is None:
            served = "-"
        elif "value" in readers:
            served = _shown(readers["value"])
        else:
            served = f"fallback {_shown(readers['fallback'])}"
        rows.append([entry["flag"], target, _shown(entry["now"]), v2_value, served])
    lines = [table(_HEADERS, rows)]
    lines += [safe(f"new in {plan['to']}: {added['flag']} = {_shown(added['initial'])}") for added in plan["added"]]
    lines += [safe(f"refused: {item['flag']} = {_shown(item['value'])}: {item['why']}") for item in plan["refused"]]
    for entry in plan["flags"]:
        readers = entry.get("v1_readers") or {}
        if "why" in readers:
            lines.append(safe(f"a V1 reader serves the fallback of {entry['flag']}: {readers['why']}"))
    if plan["would_apply"]:
        lines.append(
            safe(
                f"plan: {plan['to']} at version {plan['v2_version']} (after {plan['from']}'s "
                f"{plan['current_version']}), {plan['from']} pointing to it with the mapping; dry run: nothing written"
            )
        )
    else:
        lines.append(
            safe(f"the migration would be refused: {len(plan['refused'])} value(s) do not convert; nothing written")
        )
    return "\n".join(lines)


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def apply(client: FlagsClient, new: Declarations, mapping: Mapping, reason: str) -> Answer:
    """``POST /flags/migration``: the new declarations and the mapping as sent documents, and the reason."""
    body = {"declarations": new.document(), "mapping": json.loads(mapping.text), "reason": reason}
    return client.request("POST", MIGRATION, body=body)


def status(client: FlagsClient) -> Answer:
    """``GET /flags/migration``: the migration this service's flags item takes part in (404 when none)."""
    return client.request("GET", MIGRATION)


def finalise(client: FlagsClient, reason: str) -> dict[str, Any]:
    """``POST /flags/migration/finalise``: the answer's body (``{"migration": ...}``, now finalised), or the
    ``FlagctlError`` of the refusal (its exit code by the HTTP status, each cause of a ``MIGRATION_REFUSED`` in its
    message). Whether readers of the earlier item are still seen is the caller's to check first."""
    from flagctl.cli import exit_code  # the CLI's one mapping of an HTTP status to an exit code

    answer = client.request("POST", FINALISE, body={"reason": reason})
    if answer.status == 200 and isinstance(answer.body, dict) and isinstance(answer.body.get("migration"), dict):
        return answer.body
    error = answer.body.get("error") if isinstance(answer.body, dict) else None
    if not isinstance(error, dict):
        raise FlagctlError(f"POST {FINALISE} answered HTTP {answer.status}", SERVER, "BAD_ANSWER")
    lines = [safe(f"HTTP {answer.status} {error.get('code')}: {error.get('message')}"), *refusal_causes(error)]
    raise FlagctlError(
        "\n".join(lines),
        exit_code(answer.status),
        str(error.get("code")),
        {key: value for key, value in error.items() if key not in ("code", "message")},
    )


def refusal_causes(error: dict[str, Any]) -> list[str]:
    """Each cause of a ``MIGRATION_REFUSED`` (``refused``: what it names, and why), one line each."""
    causes = error.get("refused") if error.get("code") == "MIGRATION_REFUSED" else None
    if not isinstance(causes, list):
        return []
    lines = []
    for cause in causes:
        if not isinstance(cause, dict):
            continue
        named = next((f"{key} {cause[key]}" for key in ("flag", "schedule", "guard", "item") if key in cause), "")
        lines.append(safe(f"refused ({cause.get('cause')}){': ' + named if named else ''}: {cause.get('why', '')}"))
    return lines


def render_applied(body: dict[str, Any]) -> str:
    """What a migration wrote: the later item's version and values, and the flags V1 readers serve as fallbacks."""
    migration = body["migration"]
    rows = [[name, _shown(value)] for name, value in body["flags"].items()]
    lines = [
        safe(
            f"migrated {migration['source']} -> {migration['target']}: {body['item']} written at version "
            f"{body['version']}; writes land in it and are mirrored into {migration['source']} until it is finalised"
        ),
        table([f"FLAG ({body['item']})", "VALUE"], rows),
    ]
    lines.extend(
        safe(
            f"a reader configured for {migration['source']} serves the fallback of {fallback['flag']} "
            f"({_shown(fallback['fallback'])}): {fallback['why']}"
        )
        for fallback in body["v1_reader_fallbacks"]
    )
    lines.append(
        safe(
            f"next: switch readers and writers to {migration['target']}, then finalise the migration "
            "(docs/lifecycle.md)"
        )
    )
    return "\n".join(lines)


def render_status(body: dict[str, Any]) -> str:
    """``GET /flags/migration`` for a terminal: which items, its state, who and why, the mapping."""
    migration = body["migration"]
    lines = [
        safe(
            f"migration {migration['source']} -> {migration['target']}: {migration['state']} (this service's item: "
            f"{migration['item']})"
        ),
        safe(
            f"migrated at version {migration['migrated_at']}, {migration['at']}, by {migration['actor']}: "
            f"{migration['reason']}"
        ),
    ]
    if migration.get("finalised_at"):
        lines.append(
            safe(
                f"finalised {migration['finalised_at']} by {migration.get('finalised_by')}: "
                f"{migration.get('finalise_reason')}"
            )
        )
    lines.append(safe(f"mapping: {json.dumps(migration['mapping'], ensure_ascii=False, sort_keys=True)}"))
    return "\n".join(lines)
