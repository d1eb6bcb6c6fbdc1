"""``flagctl`` (``python -m flagctl``): read and change the flags, for people (tables) and scripts (``--json``, exit
codes).

    flagctl [--url URL | --stack-output-file cdk-outputs.json] [--json] [--timeout SECONDS] COMMAND
      get [NAME]                                   every flag, or one
      set NAME=VALUE ... --reason TEXT [--if-match VERSION] [--wait [--wait-timeout S] [--wait-namespace NS]]
      history [--limit N] [--cursor C]
      revert VERSION --reason TEXT [--if-match VERSION]
      restore --reason TEXT
      console [--port N] [--open] [--log-group NAME ...]  the console on 127.0.0.1, its API calls signed and forwarded
      schedule create NAME=VALUE ... --at TIME [--timezone ZONE] --reason TEXT [--if-version VERSION]
      schedule list [--limit N] [--cursor C]
      schedule cancel ID
      request create (NAME=VALUE ... | --revert-to VERSION) --reason TEXT [--if-version VERSION]
                     [--at TIME [--timezone ZONE]]
      request list [--state STATE] [--limit N] [--cursor C]
      request show ID
      request approve ID [--reason TEXT]
      request reject ID --reason TEXT
      request withdraw ID [--reason TEXT]
      request break-glass (NAME=VALUE ... | --revert-to VERSION) --reason TEXT [--if-version VERSION]
      refs PATH ... [--declarations FILE] [--json]  flag names the code reads, against the declarations
      report [--days N] [--declarations FILE] [--log-group NAME ...] [--json]  lifecycle, last change, reads
      migrate --declarations NEW.json --mapping MAP.json --reason TEXT [--dry-run]  FLAGS#V1 -> FLAGS#V2 (or its plan)
      migrate --status                             the migration the flags item takes part in
      migrate --finalise --reason TEXT [--days N] [--log-group NAME ...]  V1 superseded, once no V1 reader is seen
      migrate --rollback --reason TEXT             undo it before it is finalised

VALUE is JSON when it parses as JSON (true, 12, 0.5, "x"), else the text as given (semantic).
Exit codes: 0 ok, 1 ``refs``: code and declarations disagree, ``migrate --dry-run``: a value does not convert,
2 bad input (400/404/413, usage), 3 conflict (409/412: a refused migration, each cause said), 4 auth (401/403),
5 server or network (5xx, 429, a redirect, a malformed answer, no whole answer within --timeout),
6 a read served the declared fallbacks (reason DEFAULT: the flags item is missing or unreadable), said on stderr,
7 ``set --wait``: the change was applied, but it could not be known within --wait-timeout that readers serve it
(none was heard from since the change, or some still serve an older version), said on stderr.

The server is not trusted: a redirect is never followed (its Location is shown, exit 5); everything printed
(tables, messages, --json, stderr) goes through ``flagctl.text``, so no raw control or format character from an
answer reaches the terminal.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from flagctl.change_requests import REQUEST_STATES, render_decision, render_request, render_requests
from flagctl.client import (
    DEFAULT_URL,
    Answer,
    FlagsClient,
    Transport,
    default_signer,
    http_transport,
    is_loopback,
    new_idempotency_key,
    region_for,
    url_from_stack_outputs,
)
from flagctl.errors import AUTH, BAD_INPUT, CONFLICT, DISAGREE, FALLBACKS, NOT_SEEN, OK, SERVER, FlagctlError
from flagctl.http_client import DEADLINE_SECONDS
from flagctl.text import excerpt, layout, safe, safe_json, shown as _show, table

MAX_TIMEOUT_SECONDS = 600
DEFAULT_WAIT_SECONDS = 180  # deployed, readers' records reach CloudWatch a minute late or more
DEFAULT_REASON = "DEFAULT"  # the read reason of the declared fallbacks (singleton_flags.vocabulary.DEFAULT)


def exit_code(status: int) -> int:
    """2xx ok; a 3xx is an answer flagctl never follows nor asks for (server); then by the API's error."""
    if status < 300:
        return OK
    if status < 400:
        return SERVER
    if status in (401, 403):
        return AUTH
    if status in (409, 412):
        return CONFLICT
    if status == 429 or status >= 500:
        return SERVER
    return BAD_INPUT


def parse_value(text: str) -> Any:
    """JSON when the text is JSON (true, 12, 0.5, "x", null), else the text itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_assignments(items: Sequence[str]) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    for item in items:
        name, sign, raw = item.partition("=")
        name = name.strip()
        if not sign or not name:
            raise FlagctlError(f"expected NAME=VALUE, got {item!r}", BAD_INPUT, "USAGE")
        if name in changes:
            raise FlagctlError(f"flag {name!r} is given twice", BAD_INPUT, "USAGE")
        changes[name] = parse_value(raw)
    return changes


_DIGITS = re.compile(r"[0-9]{1,18}")


def parse_version(text: str) -> int:
    """A version as the API writes it: 7, or the ETag form "7" (ASCII digits; 0 is the seeded state)."""
    digits = text.strip().strip('"')
    if not _DIGITS.fullmatch(digits):
        raise argparse.ArgumentTypeError(f"a version is a non-negative integer, got {text!r}")
    return int(digits)


def parse_timeout(text: str) -> float:
    """Seconds, more than 0 and at most MAX_TIMEOUT_SECONDS: 10, 2.5."""
    if not re.fullmatch(r"[0-9]{1,4}(\.[0-9]{1,3})?", text) or not 0 < float(text) <= MAX_TIMEOUT_SECONDS:
        raise argparse.ArgumentTypeError(f"a timeout is a number of seconds, above 0 and at most 600, got {text!r}")
    return float(text)


def parse_limit(text: str) -> int:
    """Records per page as the API takes them: ASCII digits, 1-100."""
    if not _DIGITS.fullmatch(text) or not 1 <= int(text) <= 100:
        raise argparse.ArgumentTypeError(f"a limit is an integer from 1 to 100, got {text!r}")
    return int(text)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="flagctl",
        description="Read and change singleton-flags through its API (the local runner, or a deployed stack).",
        epilog="Exit codes: 0 ok, 1 refs: code and declarations disagree, 2 bad input, 3 conflict (409/412), "
        "4 auth (401/403), 5 server or network, 6 a read served the declared fallbacks (reason DEFAULT).",
    )
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--url", help=f"the API's base URL (default {DEFAULT_URL}; non-loopback URLs are SigV4-signed)")
    target.add_argument("--stack-output-file", type=Path, metavar="FILE", help="cdk deploy --outputs-file JSON")
    parser.add_argument("--json", action="store_true", help="print the API's JSON instead of tables")
    parser.add_argument(
        "--timeout",
        type=parse_timeout,
        default=DEADLINE_SECONDS,
        metavar="SECONDS",
        help=f"the longest a request may take, connecting and the whole answer included (default {DEADLINE_SECONDS:g}; "
        "not the console's)",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    get = commands.add_parser("get", help="every flag, or one")
    get.add_argument("name", nargs="?")

    change = commands.add_parser("set", help="change flags: NAME=VALUE ... --reason TEXT")
    change.add_argument("assignments", nargs="+", metavar="NAME=VALUE")
    change.add_argument("--reason", required=True, help="why (goes into the audit trail)")
    change.add_argument("--if-match", type=parse_version, metavar="VERSION", help="only if still at VERSION (else 412)")
    change.add_argument(
        "--wait",
        action="store_true",
        help="then wait until readers are seen serving the new version (the local runner's readers, or CloudWatch's "
        "ServedVersion for a deployed stage, a minute late or more); exit 7 when it cannot be known in time",
    )
    change.add_argument(
        "--wait-timeout",
        type=parse_timeout,
        default=DEFAULT_WAIT_SECONDS,
        metavar="S",
        help=f"the longest --wait waits (default {DEFAULT_WAIT_SECONDS:g} s, at most {MAX_TIMEOUT_SECONDS})",
    )
    change.add_argument(
        "--wait-namespace",
        metavar="NS",
        help="a deployed stage's metrics namespace (default SingletonFlags/<the stage in the API URL>)",
    )
    _guard_arguments(change)

    history = commands.add_parser("history", help="audit records, newest first")
    history.add_argument("--limit", type=parse_limit, help="records per page (1-100, API default 20)")
    history.add_argument("--cursor", help="the next-page cursor a previous page printed")

    revert = commands.add_parser("revert", help="restore the values of VERSION as a new version")
    revert.add_argument("version", type=parse_version)
    revert.add_argument("--reason", required=True)
    revert.add_argument("--if-match", type=parse_version, metavar="VERSION")
    _guard_arguments(revert)

    guards = commands.add_parser("guards", help="guards of guarded changes, newest first")
    guards.add_argument("--limit", type=parse_limit, help="guards per page (1-100, API default 20)")
    guards.add_argument("--cursor", help="the next-page cursor a previous page printed")

    restore = commands.add_parser("restore", help="bring a missing flags item back from its audit trail")
    restore.add_argument("--reason", required=True)

    console = commands.add_parser("console", help="serve the console on 127.0.0.1, signing its API calls")
    console.add_argument("--port", type=parse_port, default=0, help="port on 127.0.0.1 (default 0: a free one)")
    console.add_argument("--open", action="store_true", help="open the console in the default browser")
    console.add_argument(
        "--log-group",
        action="append",
        default=[],
        metavar="NAME",
        help="the Lifecycle view's reads: a readers' log group to query, as report --log-group (repeat)",
    )
    schedule = commands.add_parser("schedule", help="changes applied at a set time: create, list, cancel")
    schedule_commands = schedule.add_subparsers(dest="schedule_command", required=True, metavar="ACTION")
    create = schedule_commands.add_parser("create", help="schedule NAME=VALUE ... --at TIME --reason TEXT")
    create.add_argument("assignments", nargs="+", metavar="NAME=VALUE")
    create.add_argument(
        "--at",
        required=True,
        metavar="TIME",
        help="RFC 3339 with an offset (2027-03-01T09:00:00+01:00), or a local time with --timezone; whole minutes",
    )
    create.add_argument("--timezone", metavar="ZONE", help="IANA time zone of a local --at (Europe/Paris)")
    create.add_argument("--reason", required=True, help="why (goes into the audit trail with the change)")
    create.add_argument(
        "--if-version", type=parse_version, metavar="VERSION", help="apply only if still at VERSION (else skipped)"
    )
    listing = schedule_commands.add_parser("list", help="scheduled changes, newest first")
    listing.add_argument("--limit", type=parse_limit, help="per page (1-100, API default 20)")
    listing.add_argument("--cursor", help="the next-page cursor a previous page printed")
    cancel = schedule_commands.add_parser("cancel", help="cancel a pending scheduled change")
    cancel.add_argument("id")
    _request_commands(commands)
    _lifecycle_commands(commands)
    return parser


def parse_days(text: str) -> int:
    """Days of reads a report covers: ASCII digits, 1-365."""
    if not _DIGITS.fullmatch(text) or not 1 <= int(text) <= 365:
        raise argparse.ArgumentTypeError(f"days are an integer from 1 to 365, got {text!r}")
    return int(text)


def _lifecycle_commands(commands: Any) -> None:
    """``flagctl refs`` and ``flagctl report`` (docs/lifecycle.md)."""
    refs = commands.add_parser(
        "refs",
        help="flag names the code under PATH reads, against the declarations (exit 1 when they disagree)",
    )
    refs.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    report = commands.add_parser("report", help="per flag: lifecycle, last change, reads in the last N days")
    report.add_argument("--days", type=parse_days, default=30, metavar="N", help="the reads' window (default 30)")
    report.add_argument(
        "--log-group",
        action="append",
        metavar="NAME",
        help="a deployed stage: a readers' log group to query (repeat; the read function's, your functions')",
    )
    migrate = commands.add_parser(
        "migrate",
        help="migrate the flags item to a new shape (FLAGS#V1 -> FLAGS#V2), or print its plan (--dry-run) or the "
        "migration under way (--status)",
    )
    migrate.add_argument("--declarations", type=Path, metavar="NEW.json", help="the new declarations")
    migrate.add_argument("--mapping", type=Path, metavar="MAP.json", help="the mapping (lifecycle.md)")
    migrate.add_argument("--reason", help="why (the migration's audit record)")
    migrate.add_argument("--dry-run", action="store_true", help="print the plan; write nothing")
    migrate.add_argument("--status", action="store_true", help="print the migration the flags item takes part in")
    migrate.add_argument(
        "--finalise",
        action="store_true",
        help="finalise it (the earlier item superseded): only when no reader of the earlier item was seen in --days",
    )
    migrate.add_argument("--rollback", action="store_true", help="roll it back before it is finalised")
    migrate.add_argument(
        "--days", type=parse_days, default=7, metavar="N", help="--finalise: the readers' window (default 7)"
    )
    migrate.add_argument(
        "--log-group",
        action="append",
        metavar="NAME",
        help="--finalise on a deployed stage: a readers' log group to ask (repeat)",
    )
    migrate.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")
    for command in (refs, report):
        command.add_argument(
            "--declarations",
            type=Path,
            metavar="FILE",
            help="the declarations file (default: the API's GET /flags/declarations)",
        )
        command.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")


def _request_commands(commands: Any) -> None:
    """``flagctl request ...``: change requests, the way to change a protected flag (docs/approvals.md)."""
    request = commands.add_parser("request", help="change requests for protected flags: create, approve, ...")
    actions = request.add_subparsers(dest="request_command", required=True, metavar="ACTION")
    create = actions.add_parser("create", help="ask for a change: NAME=VALUE ... (or --revert-to V) --reason TEXT")
    _requested_change(create)
    create.add_argument(
        "--at",
        metavar="TIME",
        help="apply at TIME instead of at the last approval, which then schedules it (as schedule create --at)",
    )
    create.add_argument("--timezone", metavar="ZONE", help="IANA time zone of a local --at (Europe/Paris)")
    glass = actions.add_parser(
        "break-glass",
        help="apply a protected change at once, alone (break-glass principals only; it raises an alarm)",
    )
    _requested_change(glass)
    listing = actions.add_parser("list", help="change requests, newest first (the pending ones unless --state)")
    listing.add_argument(
        "--state", choices=(*REQUEST_STATES, "all"), default="pending", help="which requests (default pending)"
    )
    listing.add_argument("--limit", type=parse_limit, help="per page (1-100, API default 20)")
    listing.add_argument("--cursor", help="the next-page cursor a previous page printed")
    show = actions.add_parser("show", help="one change request: its diff, approvals and state")
    show.add_argument("id")
    approve = actions.add_parser("approve", help="approve a request (never your own); the last approval applies it")
    approve.add_argument("id")
    approve.add_argument("--reason", help="why (recorded with your approval)")
    reject = actions.add_parser("reject", help="reject a request: it can no longer be approved")
    reject.add_argument("id")
    reject.add_argument("--reason", required=True, help="why (recorded with the rejection)")
    withdraw = actions.add_parser("withdraw", help="withdraw a request of your own")
    withdraw.add_argument("id")
    withdraw.add_argument("--reason", help="why")


def _requested_change(command: argparse.ArgumentParser) -> None:
    command.add_argument("assignments", nargs="*", metavar="NAME=VALUE")
    command.add_argument("--revert-to", type=parse_version, metavar="VERSION", help="a revert to VERSION instead")
    command.add_argument("--reason", required=True, help="why (goes into the audit trail with the change)")
    command.add_argument(
        "--if-version", type=parse_version, metavar="VERSION", help="only if the flags are still at VERSION (else 412)"
    )


def _guard_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--guard-alarm",
        action="append",
        metavar="NAME",
        help="revert by itself if this CloudWatch alarm goes into ALARM during the bake (repeat for up to 5)",
    )
    command.add_argument("--bake-minutes", type=parse_bake_minutes, metavar="N", help="how long to watch (1-1440)")


def parse_bake_minutes(text: str) -> int:
    if not _DIGITS.fullmatch(text) or not 1 <= int(text) <= 1440:
        raise argparse.ArgumentTypeError(f"a bake is 1 to 1440 minutes, got {text!r}")
    return int(text)


def guard_of(args: argparse.Namespace) -> dict[str, Any] | None:
    """The write's guard from --guard-alarm and --bake-minutes (both or neither), as the API takes it."""
    alarms, minutes = args.guard_alarm, args.bake_minutes
    if alarms is None and minutes is None:
        return None
    if alarms is None or minutes is None:
        raise FlagctlError("--guard-alarm and --bake-minutes go together", BAD_INPUT, "USAGE")
    return {"alarms": list(alarms), "bake_minutes": minutes}


def parse_port(text: str) -> int:
    """A TCP port: ASCII digits, 0-65535 (0 picks a free one)."""
    if not re.fullmatch(r"[0-9]{1,5}", text) or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"a port is an integer from 0 to 65535, got {text!r}")
    return int(text)


# -- tables ----------------------------------------------------------------------------------------------


def _state_line(body: dict[str, Any]) -> str:
    version = body.get("version")
    line = f"version {version if version is not None else '-'} · {body.get('reason')}"
    if body.get("fetched_at"):
        line += f" · fetched {body['fetched_at']}"
    if body.get("maintenance_ended_by"):
        line += f" · maintenance ended by its {body['maintenance_ended_by']}"
    return safe(line)


def render_flags(body: dict[str, Any]) -> str:
    rows = [(name, _show(value)) for name, value in body["flags"].items()]
    return table(("FLAG", "VALUE"), rows) + "\n" + _state_line(body)


def render_flag(body: dict[str, Any]) -> str:
    return f"{safe(body['name'])} = {_show(body['value'])}\n{_state_line(body)}"


def render_change(body: dict[str, Any]) -> str:
    if not body.get("applied"):
        return safe(f"no change: the flags already hold these values (version {body.get('version')})")
    rows = [(name, _show(change.get("old")), _show(change.get("new"))) for name, change in body["changed"].items()]
    if body.get("restored") and not rows:
        return safe(f"restored the missing flags item from its audit trail: now at version {body['version']}")
    text = table(("FLAG", "OLD", "NEW"), rows) + "\nnow at version " + safe(body["version"])
    if body.get("restored"):
        text += "\n(the missing flags item was restored from its audit trail first)"
    guard = body.get("guard")
    if isinstance(guard, dict):
        # safe() on the answer's text only: the line break is flagctl's own, never escaped.
        text += "\n" + safe(
            f"guarded by {', '.join(map(str, guard.get('alarms', [])))} until {guard.get('bake_ends_at')}"
            + ("" if guard.get("close_scheduled") else " (its close was not scheduled: it ends at its bake end)")
        )
    return text


def render_guards(body: dict[str, Any]) -> str:
    rows = [
        (
            str(guard["version"]),
            guard["state"],
            ", ".join(guard["alarms"]),
            guard["bake_ends_at"],
            guard.get("outcome") or "",
        )
        for guard in body["guards"]
    ]
    text = table(("VERSION", "STATE", "ALARMS", "BAKE ENDS", "OUTCOME"), rows) if rows else "no guards"
    if body.get("next_cursor"):
        text += f"\nolder guards: --cursor {safe(body['next_cursor'])}"
    return text


def _owner(name: Any) -> str:
    return "manual" if name is None else str(name)


def _request_of(record: dict[str, Any]) -> str:
    """A version a change request wrote: the request, who asked and who approved it (each approval's time)."""
    if not record.get("change_request"):
        return ""
    text = f" {record['change_request']}"
    if record.get("requested_by"):
        text += f" requested by {record['requested_by']}"
    approvals = record.get("approved_by") or []
    if approvals:
        text += ", approved by " + ", ".join(f"{a.get('principal')} at {a.get('at')}" for a in approvals)
    return text


def render_history(body: dict[str, Any]) -> str:
    rows = []
    for record in body["records"]:
        described = [f"{name} {_show(c.get('old'))} -> {_show(c.get('new'))}" for name, c in record["changes"].items()]
        owner = record.get("maintenance_owner")
        if isinstance(owner, dict):  # who holds maintenance changed (a window took it, or it went back to manual)
            described.append(f"maintenance owner {_owner(owner.get('old'))} -> {_owner(owner.get('new'))}")
        changes = "; ".join(described)
        kind = record["kind"] + (f" to {record['reverted_to']}" if record.get("reverted_to") is not None else "")
        kind += _request_of(record)
        rows.append((str(record["version"]), record["at"], record["actor"], kind, record["reason"], changes))
    text = table(("VERSION", "AT", "ACTOR", "KIND", "REASON", "CHANGES"), rows) if rows else "no audit records"
    if body.get("next_cursor"):
        text += f"\nolder records: --cursor {safe(body['next_cursor'])}"
    return text


def _schedule_row(schedule: dict[str, Any]) -> tuple[str, ...]:
    when = schedule["at"] if schedule["timezone"] == "UTC" else f"{schedule['local_time']} {schedule['timezone']}"
    flags = "; ".join(f"{name} = {_show(value)}" for name, value in schedule["flags"].items())
    outcome = schedule.get("detail") or (f"version {schedule['version']}" if schedule.get("version") else "")
    return (schedule["id"], schedule["status"], when, flags, schedule["reason"], outcome)


_SCHEDULE_HEADERS = ("ID", "STATUS", "AT", "CHANGES", "REASON", "OUTCOME")


def render_schedule(body: dict[str, Any]) -> str:
    return table(_SCHEDULE_HEADERS, [_schedule_row(body)]) + "\n" + safe(f"applies at {body['at']}")


def render_schedules(body: dict[str, Any]) -> str:
    rows = [_schedule_row(schedule) for schedule in body["schedules"]]
    text = table(_SCHEDULE_HEADERS, rows) if rows else "no scheduled changes"
    if body.get("next_cursor"):
        text += f"\nolder: --cursor {safe(body['next_cursor'])}"
    return text


def render_cancellation(body: dict[str, Any]) -> str:
    note = "" if body["schedule_deleted"] else " (its schedule was already gone)"
    return safe(f"cancelled {body['schedule']['id']}{note}")


def _schedule_call(args: argparse.Namespace, client: FlagsClient) -> tuple[Answer, Callable[[dict[str, Any]], str]]:
    if args.schedule_command == "create":
        changes = parse_assignments(args.assignments)
        answer = client.schedule(
            changes, args.reason, args.at, args.timezone, args.if_version, idempotency_key=new_idempotency_key()
        )
        return answer, render_schedule
    if args.schedule_command == "list":
        return client.schedules(args.limit, args.cursor), render_schedules
    return client.cancel_schedule(args.id), render_cancellation


def _request_call(args: argparse.Namespace, client: FlagsClient) -> tuple[Answer, Callable[[dict[str, Any]], str]]:
    action = args.request_command
    if action in ("create", "break-glass"):
        return _create_request(args, client, break_glass=action == "break-glass"), render_request
    if action == "list":
        state = None if args.state == "all" else args.state
        return client.change_requests(state, args.limit, args.cursor), render_requests
    if action == "show":
        return client.change_request(args.id), render_request
    answer = client.decide(args.id, action, args.reason, idempotency_key=new_idempotency_key())
    return answer, functools.partial(render_decision, action)


def _create_request(args: argparse.Namespace, client: FlagsClient, *, break_glass: bool) -> Answer:
    """A change (NAME=VALUE ...) or a revert (--revert-to), never both nor neither."""
    if bool(args.assignments) == (args.revert_to is not None):
        raise FlagctlError("give either NAME=VALUE ... or --revert-to VERSION", BAD_INPUT, "USAGE")
    flags = parse_assignments(args.assignments) if args.assignments else None
    return client.create_change_request(
        args.reason,
        flags=flags,
        revert_to=args.revert_to,
        if_version=args.if_version,
        break_glass=break_glass,
        at=getattr(args, "at", None),
        timezone=getattr(args, "timezone", None),
        idempotency_key=new_idempotency_key(),
    )


# -- main ------------------------------------------------------------------------------------------------


def _error_text(answer: Answer) -> str:
    error = (answer.body or {}).get("error") if isinstance(answer.body, dict) else None
    if not isinstance(error, dict):
        body = answer.body if isinstance(answer.body, str) else json.dumps(answer.body, ensure_ascii=False)
        return safe(f"HTTP {answer.status}: {excerpt(body) if answer.body is not None else 'no body'}")
    details = {key: value for key, value in error.items() if key not in ("code", "message")}
    # Each detail as JSON (true, null, {"a": 1}), as the API sent it: never Python's repr (True, None).
    shown = (f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in details.items())
    extra = f" ({', '.join(shown)})" if details else ""
    return safe(f"HTTP {answer.status} {error.get('code')}: {error.get('message')}{extra}")


def redirect_refused(answer: Answer) -> FlagctlError:
    """A 3xx is never followed: the request carries a signature made for its own URL, and only that host may
    see it. The Location is shown (as text fit for a terminal) for the operator to check ``--url``."""
    location = answer.header("Location")
    where = f"to {safe(excerpt(location))}" if location is not None else "without a Location"
    return FlagctlError(
        f"HTTP {answer.status}: the API answered with a redirect {where}; flagctl never follows one (it would "
        "send your request and its signature elsewhere): check --url",
        SERVER,
        "REDIRECT",
        {"status": answer.status, "location": location},
    )


def _url(args: argparse.Namespace) -> str:
    return url_from_stack_outputs(args.stack_output_file) if args.stack_output_file else (args.url or DEFAULT_URL)


def _client(args: argparse.Namespace, transport: Transport | None) -> FlagsClient:
    return FlagsClient(_url(args), transport=transport or functools.partial(http_transport, deadline=args.timeout))


def run_console(url: str, port: int, open_browser: bool, out: TextIO, log_groups: Sequence[str] = ()) -> int:
    """Serve the console until Ctrl-C; the URL to open (with this start's token in its fragment) on ``out``."""
    import webbrowser

    from flagctl.console import ConsoleProxy, console_url, new_token, signer_for
    from flagctl.http_server import LocalServer
    from flagctl.report import log_group_reads

    FlagsClient(url)  # an http(s) URL, or bad input
    reads = log_group_reads(url, log_groups)
    signer = signer_for(url)
    token = new_token()
    try:
        server = LocalServer(port, ConsoleProxy(url, token, signer=signer, reads=reads))
    except OSError as exc:
        raise FlagctlError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}", BAD_INPUT, "BAD_INPUT") from exc
    link = console_url(server.port, token)
    signing = "signed with your AWS credentials" if signer is not None else "unsigned: no AWS credentials found"
    print(f"console: {link}\nAPI calls go to {url} ({signing}). Ctrl-C stops it.", file=out, flush=True)
    if open_browser:
        webbrowser.open(link)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return OK


def _call(args: argparse.Namespace, client: FlagsClient) -> tuple[Answer, Callable[[dict[str, Any]], str]]:
    if args.command == "get" and args.name is not None:
        return client.flag(args.name), render_flag
    if args.command == "get":
        return client.flags(), render_flags
    if args.command == "set":
        changes = parse_assignments(args.assignments)
        guard = guard_of(args)
        return client.change(changes, args.reason, args.if_match, new_idempotency_key(), guard), render_change
    if args.command == "history":
        return client.history(args.limit, args.cursor), render_history
    if args.command == "restore":
        return client.restore(args.reason, idempotency_key=new_idempotency_key()), render_change
    if args.command == "guards":
        return client.guards(args.limit, args.cursor), render_guards
    if args.command == "schedule":
        return _schedule_call(args, client)
    if args.command == "request":
        return _request_call(args, client)
    if args.command == "migrate":
        return _migrate_call(args, client)
    guard = guard_of(args)
    return client.revert(args.version, args.reason, args.if_match, new_idempotency_key(), guard), render_change


def main(
    argv: Sequence[str] | None = None,
    *,
    transport: Transport | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    parser = build_parser()
    args = parser.parse_args(argv)  # usage errors exit 2 (argparse)
    if args.command == "migrate":
        _check_migrate_usage(parser, args)
    try:
        if args.command == "console":
            return run_console(_url(args), args.port, args.open, out, args.log_group)
        if args.command in ("refs", "report"):
            return run_lifecycle(args, transport, out)
        if args.command == "migrate" and args.dry_run:
            return run_migrate(args, transport, out)
        sent_at = time.time()
        client = _client(args, transport)
        answer, render = _call(args, client)
        if 300 <= answer.status < 400:
            raise redirect_refused(answer)
    except FlagctlError as exc:
        error = {"code": exc.code, "message": str(exc), **exc.details}
        _say(err, safe_json({"error": error}) if args.json else f"flagctl: {exc}")
        return exc.exit_code
    code = exit_code(answer.status)
    if code != OK:
        _say(err, safe_json(answer.body) if args.json else f"flagctl: {_error_text(answer)}{_hint(args, answer)}")
        return code
    if args.json:
        _say(out, safe_json(with_reasons(answer.body) if args.command == "get" else answer.body, indent=2))
    else:
        try:
            text = render(answer.body)
        except (KeyError, TypeError, AttributeError, ValueError):
            _say(err, f"flagctl: unexpected answer from the API (HTTP {answer.status}): {_excerpt(answer.body)}")
            return SERVER
        _say(out, text)
    if args.command == "get" and isinstance(answer.body, dict) and answer.body.get("reason") == DEFAULT_REASON:
        _say(err, safe_json({"error": fallbacks_error()}) if args.json else f"flagctl: {fallbacks_error()['message']}")
        return FALLBACKS
    if args.command == "set" and args.wait:
        return wait_for_readers(args, client, answer, sent_at, transport, out, err)
    return OK


def run_lifecycle(args: argparse.Namespace, transport: Transport | None, out: TextIO) -> int:
    """``refs``: 0 when code and declarations agree, ``DISAGREE`` (1) when not; ``report``: 0."""
    from flagctl import refs, report

    if args.command == "refs":
        client = None if args.declarations is not None else _client(args, transport)
        declared = refs.declared_flags(args.declarations, client)
        answer = refs.compare(declared, refs.scan(args.paths))
        _say(out, safe_json(answer, indent=2) if args.json else refs.render(answer))
        return OK if answer["agree"] else DISAGREE
    client = _client(args, transport)
    declared = refs.declared_flags(args.declarations, client)
    reads: report.ReadsSource | None = None
    if is_loopback(client.base_url):
        reads = report.runner_reads(client)
    else:
        reads = report.log_group_reads(
            client.base_url, args.log_group or [], transport or functools.partial(http_transport, deadline=args.timeout)
        )
    built = report.collect(client, declared, args.days, reads, report.READS_NEED_LOG_GROUPS)
    _say(out, safe_json(built, indent=2) if args.json else report.render(built))
    return OK


def _check_migrate_usage(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """``--status`` alone; ``--finalise`` or ``--rollback`` with ``--reason``; else ``--declarations``,
    ``--mapping`` and ``--reason`` (a usage error exits 2)."""
    steps = [name for name in ("status", "finalise", "rollback", "dry_run") if getattr(args, name)]
    files = [name for name in ("declarations", "mapping") if getattr(args, name) is not None]
    if len(steps) > 1:
        parser.error(f"migrate takes one of --status, --finalise, --rollback, --dry-run; got {len(steps)}")
    if (args.log_group or args.days != 7) and not args.finalise:
        parser.error("--days and --log-group are for migrate --finalise")
    if args.status and (files or args.reason is not None):
        parser.error("migrate --status takes no --declarations, --mapping or --reason")
    elif args.finalise or args.rollback:
        if files or args.reason is None:
            parser.error(f"migrate --{steps[0]} takes --reason alone (no --declarations, --mapping)")
    elif not args.status:
        missing = [f"--{name}" for name in ("declarations", "mapping", "reason") if getattr(args, name) is None]
        if missing:
            parser.error(f"migrate needs {', '.join(missing)} (or --status, --finalise, --rollback)")


def _migrate_call(args: argparse.Namespace, client: FlagsClient) -> tuple[Answer, Callable[[dict[str, Any]], str]]:
    """``migrate --status`` (GET /flags/migration), or the migration itself (POST /flags/migration)."""
    from flagctl import migrate

    if args.status:
        return migrate.status(client), migrate.render_status
    if args.rollback:
        return migrate.end(client, migrate.ROLLBACK, args.reason), migrate.render_status
    if args.finalise:
        from flagctl.readers_seen import readers_seen, source_for, unless_seen

        under_way = migrate.status(client)
        if under_way.status != 200:
            return under_way, migrate.render_status  # none: the API's 404 says so
        earlier = migrate.earlier_item(under_way)
        seen = readers_seen(earlier, args.days, source_for(client, args.log_group or []))
        return unless_seen(seen, lambda: migrate.end(client, migrate.FINALISE, args.reason)), migrate.render_status
    new, mapping = migrate.load_inputs(args.declarations, args.mapping)
    return migrate.apply(client, new, mapping, args.reason), migrate.render_applied


def run_migrate(args: argparse.Namespace, transport: Transport | None, out: TextIO) -> int:
    """``migrate --dry-run``: 0 when the plan would apply, ``DISAGREE`` (1) when a value does not convert."""
    from flagctl import migrate

    new, mapping = migrate.load_inputs(args.declarations, args.mapping)
    current, values, version = migrate.current_state(_client(args, transport))
    plan = migrate.build_plan(current, new, mapping, values, version)
    _say(out, safe_json(plan, indent=2) if args.json else migrate.render(plan))
    return OK if plan["would_apply"] else DISAGREE


def wait_for_readers(
    args: argparse.Namespace,
    client: FlagsClient,
    answer: Answer,
    sent_at: float,
    transport: Transport | None,
    out: TextIO,
    err: TextIO,
) -> int:
    """``set --wait``: until the version just written is seen served (0), or ``NOT_SEEN`` (7) at the timeout."""
    from flagctl import wait

    version = answer.body.get("version") if isinstance(answer.body, dict) else None
    if not isinstance(version, int):
        _say(err, f"flagctl: unexpected answer from the API (no version to wait for): {_excerpt(answer.body)}")
        return SERVER
    try:
        if is_loopback(client.base_url):
            observe, poll = wait.runner_observer(client), wait.POLL_SECONDS_LOCAL
        else:
            namespace = args.wait_namespace or wait.stage_namespace(client.base_url)
            region = region_for(client.base_url, None)
            observe = wait.cloudwatch_observer(
                region,
                namespace,
                default_signer(client.base_url, service="monitoring"),
                transport or functools.partial(http_transport, deadline=args.timeout),
            )
            poll = wait.POLL_SECONDS_CLOUDWATCH
        sighting = wait.wait_until_served(observe, version, sent_at, args.wait_timeout, poll=poll)
    except FlagctlError as exc:
        _say(err, safe_json({"error": {"code": exc.code, "message": str(exc)}}) if args.json else f"flagctl: {exc}")
        return exc.exit_code
    words = sighting.words(version)
    if sighting.seen:
        _say(out, safe_json({"served": {"version": version, "readers": sighting.readers}}) if args.json else words)
        return OK
    message = f"version {version} is applied, but not seen served within {args.wait_timeout:g} s: {words}"
    _say(err, safe_json({"error": {"code": "NOT_SEEN", "message": message}}) if args.json else f"flagctl: {message}")
    return NOT_SEEN


def _hint(args: argparse.Namespace, answer: Answer) -> str:
    """What to do next after a refusal flagctl can say more about: a direct write to a protected flag, each cause
    of a refused migration."""
    error = answer.body.get("error") if isinstance(answer.body, dict) else None
    if isinstance(error, dict) and error.get("code") == "MIGRATION_REFUSED":
        from flagctl.migrate import refusal_causes

        return "".join(f"\nflagctl: {line}" for line in refusal_causes(error))
    if not (isinstance(error, dict) and error.get("code") == "APPROVAL_REQUIRED"):
        return ""
    if args.command == "set":
        asked = " ".join(shlex.quote(item) for item in args.assignments)
        return (
            f"\nflagctl: ask for approval instead: flagctl request create {asked} --reason {shlex.quote(args.reason)}"
        )
    if args.command == "revert":
        return (
            "\nflagctl: ask for approval instead: flagctl request create "
            f"--revert-to {args.version} --reason {shlex.quote(args.reason)}"
        )
    return ""


def with_reasons(body: Any) -> Any:
    """``GET /flags``' answer with ``reasons``: each flag's reason, by name (DEFAULT for a flag the answer lists in
    ``fallen_back``, served as its declared fallback; the read's reason for the others); any other answer as it
    came."""
    if not (isinstance(body, dict) and isinstance(body.get("flags"), dict)):
        return body
    fallen_back = body.get("fallen_back")
    fallen = set(fallen_back) if isinstance(fallen_back, list) else set()
    return {
        **body,
        "reasons": {name: DEFAULT_REASON if name in fallen else body.get("reason") for name in body["flags"]},
    }


def fallbacks_error() -> dict[str, str]:
    return {
        "code": "FALLBACKS_SERVED",
        "message": "WARNING: these are the declared FALLBACKS (reason DEFAULT), not stored values: features off, "
        "maintenance ON. The flags item is missing or the table cannot be read (for one flag: its stored value "
        "is unusable): check `flagctl history`, then `flagctl restore --reason ...` (docs/operations.md)",
    }


def _say(stream: TextIO, text: str) -> None:
    """The one way flagctl prints: its own newlines kept, any other control or format character escaped."""
    print(layout(text), file=stream)


def _excerpt(body: Any) -> str:
    return excerpt(json.dumps(body, ensure_ascii=False) if not isinstance(body, str) else body, 200)
