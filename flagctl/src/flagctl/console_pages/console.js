// The operator console: plain JavaScript over the API (same origin, no build step, no dependency).
// It reads GET /flags, /flags/declarations, /flags/history, /flags/schedules, /flags/guards, /flags/windows,
// /flags/change-requests and the console's own lifecycle report (GET /_console/report), and writes through PATCH /flags and POST /flags/revert (always with If-Match naming
// the version the operator saw and a reason), POST /flags/restore (a reason and an Idempotency-Key),
// DELETE /flags/schedules/{id}, and, for a protected flag, POST /flags/change-requests (the same edit as a
// request bound to the version seen) and its approve and reject (each with an Idempotency-Key).
// Values the API sends are put in the page as text (textContent), never as markup.
//
// The rule that does not move: a read with reason DEFAULT is the declared fallbacks (features off, maintenance
// on), never a stored state. The page says so, offers the restore, and lets no editor write over it.

const HISTORY_PAGE_SIZE = 20;
const REREAD_ATTEMPTS = 6; // the read function serves its cache for its max age: re-read until it has caught up
const REREAD_DELAY_MS = 1000;

// #token=<t> in the fragment (never sent to a server): sent as X-Console-Token on every API call.
const TOKEN = new URLSearchParams(window.location.hash.slice(1)).get("token");

const KINDS = {
  change: "change",
  revert: "revert",
  seed: "seed (newly declared flags added)",
  restore: "restore (the missing item written back from the trail)",
  "window-start": "maintenance window start",
  "window-end": "maintenance window end",
  scheduled: "scheduled change applied",
  "guard-revert": "reverted by a guard (an alarm fired during the bake)",
  change_request_applied: "change request applied (approved by others)",
  break_glass: "break glass (a protected change applied alone, without approvals)",
  migration: "migration (the flags written into a later item's shape)",
  seeded: "the seeded state (the values the table was created with)",
};
const DEFAULT_REASON = "DEFAULT"; // the declared fallbacks: never a stored state
const MAINTENANCE_FLAG = "maintenance_mode";
const SCHEDULE_PAGE_SIZE = 20;


class ApiError extends Error {
  constructor(status, code, message, detail) {
    super(message);
    this.status = status;
    this.code = code;
    this.detail = detail || {};
  }
}

function newIdempotencyKey() {
  if (window.crypto && typeof window.crypto.randomUUID === "function") return window.crypto.randomUUID();
  const bytes = window.crypto.getRandomValues(new Uint8Array(16));
  return [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
}

async function api(method, path, { body, ifMatch, query, idempotencyKey } = {}) {
  const headers = { Accept: "application/json" };
  if (TOKEN) headers["X-Console-Token"] = TOKEN;
  if (idempotencyKey) headers["Idempotency-Key"] = idempotencyKey;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (ifMatch !== undefined && ifMatch !== null) headers["If-Match"] = `"${ifMatch}"`;
  const url = query ? `${path}?${new URLSearchParams(query)}` : path;
  let response;
  try {
    response = await fetch(url, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
      credentials: "same-origin",
    });
  } catch (error) {
    throw new ApiError(0, "UNREACHABLE", `cannot reach the API (${error.message})`);
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    const error = (data && data.error) || {};
    const message = error.message || `${response.status} ${response.statusText}`;
    throw new ApiError(response.status, error.code || `HTTP_${response.status}`, message, error);
  }
  return data;
}

// ---------------------------------------------------------------- state

const state = {
  declarations: [],
  flags: {},
  version: null,
  reason: null,
  fetchedAt: null,
  maintenance: null,
  maintenanceEndedBy: null,
  pending: new Map(), // flag name -> the operator's new value
  invalid: new Map(), // flag name -> the page's refusal of what is typed
  conflict: null,
  history: { records: [], cursor: null, loaded: false, flag: "" },
  schedules: { items: [], cursor: null, loaded: false, confirming: null },
  guards: { items: [], cursor: null, loaded: false },
  requests: { items: [], cursor: null, loaded: false, state: "pending" },
  windows: null,
  revertTarget: null,
  revertOpener: null, // what had the focus when the revert dialog opened: it gets it back
};

const $ = (id) => document.getElementById(id);

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name === "text") node.textContent = value;
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

function show(value) {
  return value === undefined ? "(none)" : JSON.stringify(value);
}

function same(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

function announce(text) {
  const region = $("announce");
  region.textContent = "";
  // A fresh text node after the clear makes screen readers read a repeated message again.
  window.requestAnimationFrame(() => {
    region.textContent = text;
  });
}

function fail(error, prefix) {
  const box = $("failure");
  let text = `${prefix}: ${error.message}`;
  if (error.code === "CONSOLE_TOKEN_REQUIRED") {
    text += " Open the console with the address flagctl console printed: it carries the token.";
  }
  // Failures add up until the next action clears them (a page load can fail on several reads).
  const line = error.code && error.status ? `${text} (${error.status} ${error.code})` : text;
  if (![...box.children].some((child) => child.textContent === line)) box.append(el("span", { text: line }));
  box.hidden = false;
}

function clearFailure() {
  $("failure").hidden = true;
  $("failure").replaceChildren();
}

const REASON_REQUIRED = "A reason is required: it goes into the audit trail.";

// The reason typed in box `boxId`, trimmed; or null, with the refusal in `errorId`, the box marked invalid and
// focused: every write that needs a reason asks the same way.
function requiredReason(boxId, errorId) {
  const box = $(boxId);
  const reason = box.value.trim();
  if (!reason) {
    $(errorId).textContent = REASON_REQUIRED;
    box.setAttribute("aria-invalid", "true");
    box.focus();
    return null;
  }
  box.removeAttribute("aria-invalid");
  return reason;
}

// ---------------------------------------------------------------- protection

function declarationOf(name) {
  return state.declarations.find((d) => d.name === name);
}

// How many approvals a change to `name` needs (0: none, a direct write).
function approvalsFor(name) {
  const declaration = declarationOf(name);
  const protection = declaration && declaration.protection;
  return protection && Number.isInteger(protection.approvals) ? protection.approvals : 0;
}

// The protected flags among `names`, and the strictest count among them (a change needs its flags' strictest).
function protectionOf(names) {
  const flags = names.filter((name) => approvalsFor(name) > 0);
  return { flags, approvals: Math.max(0, ...flags.map(approvalsFor)) };
}

function approvalsText(count) {
  return `${count} approval${count === 1 ? "" : "s"}`;
}

// ---------------------------------------------------------------- times

const BROWSER_ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone;

function formatIn(iso, timeZone) {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return new Intl.DateTimeFormat(undefined, {
    timeZone,
    weekday: "short",
    year: "numeric",
    month: "short",
    day: "numeric",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
    timeZoneName: "short",
  }).format(date);
}

function timeElement(iso, { zone, label } = {}) {
  if (!iso) return document.createTextNode("-");
  const node = el("time", { datetime: iso, title: iso, text: formatIn(iso, zone || BROWSER_ZONE) });
  if (!label) return node;
  return el("span", { class: "when" }, node, el("span", { class: "zone", text: ` ${label}` }));
}

// ---------------------------------------------------------------- values: checks of the page

// The page checks what the server checks: the type, and min, max and max length from the control's own
// constraint attributes (set from the declarations), an enum against the declaration. The server stays the
// authority: whatever it refuses is shown with its own message.
function readControl(declaration, control) {
  const name = declaration.name;
  if (declaration.type === "bool") return { value: control.checked };
  if (declaration.type === "int" || declaration.type === "float") {
    const raw = control.value.trim();
    if (control.validity.badInput || raw === "") {
      return { error: `${name}: enter a ${declaration.type === "int" ? "whole number" : "number"}` };
    }
    const value = Number(raw);
    if (!Number.isFinite(value)) return { error: `${name}: ${raw} is not a number` };
    if (declaration.type === "int" && !Number.isInteger(value)) {
      return { error: `${name}: must be a whole number, got ${raw}` };
    }
    if (control.hasAttribute("min") && value < Number(control.getAttribute("min"))) {
      return { error: `${name}: must be at least ${control.getAttribute("min")}, got ${raw}` };
    }
    if (control.hasAttribute("max") && value > Number(control.getAttribute("max"))) {
      return { error: `${name}: must be at most ${control.getAttribute("max")}, got ${raw}` };
    }
    return { value };
  }
  if (declaration.enum !== undefined) {
    const allowed = declaration.enum;
    if (!allowed.includes(control.value)) {
      return { error: `${name}: must be one of ${allowed.join(", ")}` };
    }
    return { value: control.value };
  }
  const value = control.value;
  const limit = control.hasAttribute("maxlength") ? Number(control.getAttribute("maxlength")) : null;
  const length = [...value].length;
  if (limit !== null && length > limit) {
    return { error: `${name}: at most ${limit} characters, got ${length}` };
  }
  return { value };
}

function constraintText(declaration) {
  const parts = [];
  if (declaration.min !== undefined) parts.push(`min ${declaration.min}`);
  if (declaration.max !== undefined) parts.push(`max ${declaration.max}`);
  if (declaration.enum !== undefined) parts.push(`one of ${declaration.enum.join(", ")}`);
  if (declaration.max_length !== undefined) parts.push(`at most ${declaration.max_length} characters`);
  return parts.join("; ") || "-";
}

// ---------------------------------------------------------------- flags view

function buildEditor(declaration) {
  const name = declaration.name;
  const errorId = `error-${name}`;
  let control;
  if (declaration.type === "bool") {
    control = el("input", { type: "checkbox", role: "switch", "aria-label": name });
  } else if (declaration.type === "int" || declaration.type === "float") {
    control = el("input", {
      type: "number",
      inputmode: declaration.type === "int" ? "numeric" : "decimal",
      step: declaration.type === "int" ? "1" : "any",
      min: declaration.min,
      max: declaration.max,
      "aria-label": `New value of ${name}`,
    });
  } else if (declaration.enum !== undefined) {
    control = el("select", { "aria-label": `New value of ${name}` });
    for (const option of declaration.enum) control.append(el("option", { value: option, text: option }));
  } else {
    control = el("input", {
      type: "text",
      maxlength: declaration.max_length,
      spellcheck: "false",
      "aria-label": `New value of ${name}`,
    });
  }
  control.id = `edit-${name}`;
  control.dataset.flag = name;
  control.setAttribute("aria-describedby", errorId);
  control.addEventListener(declaration.type === "bool" ? "change" : "input", () => onEdit(declaration, control));
  if (declaration.type !== "bool") control.addEventListener("change", () => onEdit(declaration, control));
  const wrap = el("div", { class: "editor" }, control);
  if (declaration.type === "bool") {
    wrap.append(el("span", { class: "switch-text", id: `switch-text-${name}`, "aria-hidden": "true" }));
  }
  wrap.append(el("span", { class: "error", id: errorId }));
  return wrap;
}

// A deprecated (or removed) flag's badge: its state and date, its note as the badge's title.
function lifecycleBadge(declaration) {
  if (declaration.state !== "deprecated" && declaration.state !== "removed") return null;
  const since = declaration.deprecated_on ? ` since ${declaration.deprecated_on}` : "";
  return el("span", {
    class: `badge badge-lifecycle badge-${declaration.state}`,
    text: `${declaration.state}${since}`,
    title: declaration.note || null,
  });
}

function buildFlagsTable() {
  const body = $("flags-body");
  body.replaceChildren();
  for (const declaration of state.declarations) {
    const row = el(
      "tr",
      { id: `row-${declaration.name}`, "data-flag": declaration.name },
      el(
        "th",
        { scope: "row", "data-label": "Name" },
        el("code", { text: declaration.name }),
        approvalsFor(declaration.name) > 0
          ? el("span", {
              class: "badge badge-protected",
              text: `protected: ${approvalsText(approvalsFor(declaration.name))}`,
            })
          : null,
        lifecycleBadge(declaration),
      ),
      el("td", { "data-label": "Type", text: declaration.type }),
      el("td", { "data-label": "Current value", class: "current" }),
      el("td", { "data-label": "Fallback", text: show(declaration.fallback) }),
      el("td", { "data-label": "Description", text: declaration.description || "" }),
      el("td", { "data-label": "Constraints", text: constraintText(declaration) }),
      el("td", { "data-label": "New value" }, buildEditor(declaration)),
    );
    body.append(row);
  }
  applySearch();
}

function setControl(declaration, control, value) {
  if (declaration.type === "bool") {
    control.checked = value === true;
    const text = $(`switch-text-${declaration.name}`);
    if (text) text.textContent = control.checked ? "on" : "off";
  } else if (value !== undefined) {
    control.value = String(value);
  }
}

function setError(name, message) {
  const box = $(`error-${name}`);
  const control = $(`edit-${name}`);
  if (!box || !control) return;
  box.textContent = message || "";
  if (message) control.setAttribute("aria-invalid", "true");
  else control.removeAttribute("aria-invalid");
}

function onEdit(declaration, control) {
  const name = declaration.name;
  const read = readControl(declaration, control);
  if (declaration.type === "bool") setControl(declaration, control, control.checked);
  if (read.error) {
    state.invalid.set(name, read.error);
    state.pending.delete(name);
    setError(name, read.error);
  } else {
    state.invalid.delete(name);
    setError(name, "");
    if (same(read.value, state.flags[name])) state.pending.delete(name);
    else state.pending.set(name, read.value);
  }
  renderPending();
}

function renderFlags() {
  for (const declaration of state.declarations) {
    const name = declaration.name;
    const row = $(`row-${name}`);
    if (!row) continue;
    row.querySelector(".current").textContent = show(state.flags[name]);
    const control = $(`edit-${name}`);
    if (!state.pending.has(name) && !state.invalid.has(name)) setControl(declaration, control, state.flags[name]);
    row.classList.toggle("edited", state.pending.has(name));
  }
  renderPending();
}

function renderPending() {
  const list = $("pending-list");
  list.replaceChildren();
  for (const [name, value] of state.pending) {
    list.append(el("li", { text: `${name}: ${show(state.flags[name])} → ${show(value)}` }));
  }
  $("pending-none").hidden = state.pending.size > 0 || state.invalid.size > 0;
  for (const [name, message] of state.invalid) list.append(el("li", { class: "error", text: message }));
  const guarded = protectionOf([...state.pending.keys()]);
  $("approval-note").hidden = guarded.flags.length === 0;
  if (guarded.flags.length === 0) $("break-glass").checked = false;
  $("approval-text").textContent = guarded.flags.length
    ? `${guarded.flags.join(", ")} ${guarded.flags.length === 1 ? "is" : "are"} protected: applying sends a change ` +
      `request that needs ${approvalsText(guarded.approvals)} by others before it is written.`
    : "";
  $("apply").textContent = guarded.flags.length ? "Request approval" : "Apply changes";
}

function applySearch() {
  const text = $("search").value.trim().toLowerCase();
  let shown = 0;
  for (const row of $("flags-body").rows) {
    const match = row.dataset.flag.toLowerCase().includes(text);
    row.hidden = !match;
    if (match) shown += 1;
  }
  $("no-match").hidden = shown > 0;
}

function renderState() {
  $("state-version").textContent = state.version === null ? "-" : String(state.version);
  const reason = $("state-reason");
  reason.textContent = state.reason || "-";
  reason.className = `reason reason-${(state.reason || "none").toLowerCase()}`;
  const fetched = $("state-fetched");
  fetched.textContent = state.fetchedAt ? formatIn(state.fetchedAt, BROWSER_ZONE) : "-";
  if (state.fetchedAt) fetched.setAttribute("datetime", state.fetchedAt);
  const on = maintenanceOn();
  const badge = $("state-maintenance");
  badge.textContent = on === null ? "maintenance -" : `maintenance ${on ? "ON" : "off"}`;
  badge.className = `badge ${on ? "badge-on" : "badge-off"}`;

  const banner = $("banner");
  const lines = [];
  if (state.reason === "STALE") {
    lines.push(
      "STALE: the API could not read the flags table and serves the last good values it read " +
        `(fetched at ${state.fetchedAt || "an unknown time"}). They may be out of date.`,
    );
  } else if (fallbacks()) {
    lines.push(
      "DEFAULT: the flags item is missing (or the table cannot be read). Readers are served the declared " +
        "FALLBACKS, fail-closed: every feature off, maintenance ON. These are not stored values and nobody " +
        "switched maintenance on.",
    );
    lines.push("Editing is disabled: restore the flags item first (below).");
  }
  if (on && !fallbacks()) lines.push(`Maintenance mode is ON: ${holderText()}.`);
  if (state.maintenanceEndedBy === "deadline") {
    lines.push("A window's deadline passed: maintenance is served off although the item still says on.");
  }
  banner.replaceChildren(...lines.map((line) => el("p", { text: line })));
  banner.hidden = lines.length === 0;
  banner.className = `banner ${state.reason === "STALE" || fallbacks() ? "banner-bad" : "banner-warn"}`;
  $("restore").hidden = !fallbacks();
  renderEditable();
  renderKill();
}

function fallbacks() {
  return state.reason === DEFAULT_REASON;
}

// With the fallbacks served there is no stored state to edit: every editor and write button is disabled
// (the restore is the way back); the server would refuse nothing, so the page must.
function renderEditable() {
  const off = fallbacks();
  for (const control of document.querySelectorAll("#flags-body [id^='edit-']")) control.disabled = off;
  for (const id of ["apply", "reset", "reason", "kill-confirm", "kill-reason", "kill-break-glass"]) {
    $(id).disabled = off;
  }
  for (const button of document.querySelectorAll("#history-list button.revert")) button.disabled = off;
}

function renderKill() {
  const on = maintenanceOn();
  const badge = $("kill-state");
  badge.textContent = on === null ? "-" : on ? (fallbacks() ? "ON (fallback)" : "ON") : "off";
  badge.className = `badge ${on ? "badge-on" : "badge-off"}`;
  const needed = approvalsFor(MAINTENANCE_FLAG);
  const verb = on ? "Switch maintenance off" : "Switch maintenance ON";
  $("kill-confirm").textContent = needed > 0 ? `Request: ${verb.toLowerCase()}` : verb;
  $("kill-protected").hidden = needed === 0;
  $("kill-glass").hidden = needed === 0;
  $("kill-protected").textContent =
    needed > 0
      ? `${MAINTENANCE_FLAG} is protected: the switch sends a change request that needs ${approvalsText(needed)}.`
      : "";
}

// ---------------------------------------------------------------- maintenance view

function maintenanceOn() {
  if (state.maintenance && typeof state.maintenance.on === "boolean") return state.maintenance.on;
  if (typeof state.flags.maintenance_mode === "boolean") return state.flags.maintenance_mode;
  return null;
}

function holderText() {
  const m = state.maintenance;
  if (!m || !m.held_by) return maintenanceOn() ? "holder unknown" : "nobody";
  if (m.held_by === "window") {
    const until = m.deadline ? ` until ${formatIn(m.deadline, BROWSER_ZONE)}` : "";
    return `held by window ${m.window}${until}`;
  }
  if (m.held_by === "manual") return "switched on by hand";
  return `held by ${m.held_by}`;
}

function renderMaintenance() {
  const on = maintenanceOn();
  const m = state.maintenance;
  $("mnt-on").replaceChildren(el("span", { class: `badge ${on ? "badge-on" : "badge-off"}`, text: on ? "ON" : "off" }));
  const holder = $("mnt-holder");
  if (!m) holder.textContent = "not reported by this API";
  else if (!m.held_by) holder.textContent = "nobody (maintenance is off)";
  else if (m.held_by === "window") holder.replaceChildren("window ", el("code", { text: m.window }));
  else if (m.held_by === "manual" && state.reason === "DEFAULT") {
    holder.textContent = "manual: the fail-closed fallback (the flags cannot be read)";
  } else if (m.held_by === "manual") holder.textContent = "manual (switched on by hand)";
  else holder.textContent = m.held_by;
  const deadline = $("mnt-deadline");
  if (m && m.deadline) {
    deadline.replaceChildren(
      timeElement(m.deadline, { zone: "UTC", label: "" }),
      el("br"),
      timeElement(m.deadline, { label: `(your time, ${BROWSER_ZONE})` }),
    );
  } else {
    deadline.textContent = on ? "none (on until switched off)" : "-";
  }
}

function renderWindows() {
  const body = $("windows-body");
  body.replaceChildren();
  const windows = state.windows || [];
  $("windows-empty").hidden = windows.length > 0;
  $("windows-table").hidden = windows.length === 0;
  for (const w of windows) {
    const when = (label, local, utc) => {
      if (!local || !utc) return el("td", { "data-label": label, text: "never again (no later occurrence)" });
      return el(
        "td",
        { "data-label": label },
        el("time", { datetime: local, title: local, text: formatIn(local, w.timezone) }),
        el("span", { class: "zone", text: ` (${w.timezone})` }),
        el("br"),
        el("time", { datetime: utc, title: utc, text: formatIn(utc, BROWSER_ZONE) }),
        el("span", { class: "zone", text: ` (your time, ${BROWSER_ZONE})` }),
      );
    };
    const held = state.maintenance && state.maintenance.held_by === "window" && state.maintenance.window === w.name;
    body.append(
      el(
        "tr",
        { "data-window": w.name },
        el(
          "th",
          { scope: "row", "data-label": "Window" },
          el("code", { text: w.name }),
          held ? el("span", { class: "badge badge-on held", text: "holds maintenance now" }) : null,
        ),
        el(
          "td",
          { "data-label": "Schedule" },
          "start ",
          el("code", { text: w.start }),
          el("br"),
          "end ",
          el("code", { text: w.end }),
        ),
        when("Next start", w.next_start, w.next_start_utc),
        when("Next end", w.next_end, w.next_end_utc),
      ),
    );
  }
}

// ---------------------------------------------------------------- loading

function adopt(answer) {
  // A read or write answer: {"flags", "version", "reason", "fetched_at", ...}.
  state.flags = answer.flags || {};
  state.version = answer.version;
  if (answer.reason) state.reason = answer.reason;
  if (answer.fetched_at) state.fetchedAt = answer.fetched_at;
  if ("maintenance" in answer) state.maintenance = answer.maintenance;
  if ("maintenance_ended_by" in answer || "maintenance" in answer) {
    state.maintenanceEndedBy = answer.maintenance_ended_by || null;
  }
}

async function loadFlags({ atLeast = null } = {}) {
  for (let attempt = 0; ; attempt += 1) {
    const answer = await api("GET", "/flags");
    if (atLeast === null || answer.version >= atLeast || attempt >= REREAD_ATTEMPTS - 1) {
      if (atLeast === null || answer.version >= atLeast) adopt(answer);
      break;
    }
    await new Promise((resolve) => window.setTimeout(resolve, REREAD_DELAY_MS));
  }
  renderState();
  renderFlags();
  renderMaintenance();
  renderWindows();
}

async function loadDeclarations() {
  const answer = await api("GET", "/flags/declarations");
  state.declarations = answer.declarations || [];
  buildFlagsTable();
  buildHistoryFilter();
}

async function loadWindows() {
  const answer = await api("GET", "/flags/windows");
  state.windows = answer.windows || [];
  renderWindows();
}

async function refresh() {
  clearFailure();
  try {
    if (state.declarations.length === 0) await loadDeclarations();
    await loadFlags();
  } catch (error) {
    fail(error, "Could not read the flags");
  }
  try {
    await loadWindows();
  } catch (error) {
    fail(error, "Could not read the maintenance windows");
  }
  if (state.history.loaded) await loadHistory();
  if (state.schedules.loaded) await loadSchedules();
  if (state.guards.loaded) await loadGuards();
  if (state.requests.loaded) await loadRequests();
}

// After a write: the answer is the new state at once; the read function may serve its cache a moment
// longer, so GET /flags (which also says who holds maintenance) is adopted only once it has caught up.
function afterWrite(answer) {
  adopt(answer);
  renderState();
  renderFlags();
  renderMaintenance();
  const version = answer.version;
  loadFlags({ atLeast: version }).catch((error) => fail(error, "Could not re-read the flags"));
  if (state.history.loaded) loadHistory().catch((error) => fail(error, "Could not read the history"));
  if (state.guards.loaded) loadGuards();
}

// ---------------------------------------------------------------- writing

async function apply(event) {
  if (event) event.preventDefault();
  clearFailure();
  const reasonBox = $("reason");
  $("reason-error").textContent = "";
  reasonBox.removeAttribute("aria-invalid");
  if (state.invalid.size > 0) {
    announce(`Not sent: ${[...state.invalid.values()].join("; ")}`);
    $(`edit-${state.invalid.keys().next().value}`).focus();
    return;
  }
  if (state.pending.size === 0) {
    announce("Nothing to apply: no value was changed.");
    return;
  }
  if (fallbacks()) {
    announce("Not sent: the API serves the declared fallbacks, not stored values. Restore the flags item first.");
    return;
  }
  if (state.version === null) {
    announce("Not sent: the flags could not be read, so there is no version to write against. Refresh first.");
    return;
  }
  const reason = requiredReason("reason", "reason-error");
  if (reason === null) {
    announce("Not sent: a reason is required.");
    return;
  }
  const edits = Object.fromEntries(state.pending);
  const seen = { version: state.version, flags: { ...state.flags } };
  if (protectionOf(Object.keys(edits)).flags.length > 0) {
    await requestChange({ flags: edits, reason, if_version: seen.version }, seen, edits);
    return;
  }
  $("apply").disabled = true;
  try {
    const answer = await api("PATCH", "/flags", { body: { flags: edits, reason }, ifMatch: seen.version });
    state.pending.clear();
    state.conflict = null;
    $("conflict").hidden = true;
    reasonBox.value = "";
    for (const name of Object.keys(edits)) setError(name, "");
    afterWrite(answer);
    announce(
      answer.applied
        ? `Applied: now at version ${answer.version} (${Object.keys(answer.changed || {}).join(", ")}).`
        : `Nothing changed: the flags already held these values (version ${answer.version}).`,
    );
  } catch (error) {
    if (movedState(error)) {
      showConflict(seen, edits, error.detail);
    } else {
      if (error.detail.flag) setError(error.detail.flag, `${error.message} (refused by the server)`);
      if (error.detail.rule === "reason") $("reason-error").textContent = error.message;
      fail(error, "The server refused the change");
      announce(`Refused by the server: ${error.message}`);
    }
  } finally {
    $("apply").disabled = false;
  }
}

// A change touching a protected flag: sent as a change request bound to the version seen (or, with break glass,
// applied at once by a principal allowed to). Nothing is written until its approvals are in.
async function requestChange(body, seen, edits) {
  const breakGlass = $("break-glass").checked;
  $("apply").disabled = true;
  try {
    const answer = await api("POST", "/flags/change-requests", {
      body: breakGlass ? { ...body, break_glass: true } : body,
      idempotencyKey: newIdempotencyKey(),
    });
    const request = answer.change_request;
    state.pending.clear();
    state.conflict = null;
    $("conflict").hidden = true;
    $("reason").value = "";
    $("break-glass").checked = false;
    renderFlags();
    announce(requestCreatedText(request));
    afterRequest(request);
  } catch (error) {
    if (movedState(error)) {
      showConflict(seen, edits, error.detail);
    } else {
      if (error.detail.flag) setError(error.detail.flag, `${error.message} (refused by the server)`);
      if (error.detail.rule === "reason") $("reason-error").textContent = error.message;
      fail(error, "The server refused the change request");
      announce(`Refused by the server: ${error.message}`);
    }
  } finally {
    $("apply").disabled = false;
  }
}

function requestCreatedText(request) {
  if (request.state === "applied") {
    return `Applied at once (break glass): now at version ${request.applied_version}. An alarm was raised.`;
  }
  return (
    `Change request ${request.id} sent: it needs ${approvalsText(request.required_approvals)} by others ` +
    "(see Requests)."
  );
}

// After a request was created or decided: the Requests view and, once one applied, the flags and history.
function afterRequest(request) {
  if (state.requests.loaded) loadRequests();
  if (request && request.applied_version !== null && request.applied_version !== undefined) {
    loadFlags({ atLeast: request.applied_version }).catch((error) => fail(error, "Could not re-read the flags"));
    if (state.history.loaded) loadHistory().catch((error) => fail(error, "Could not read the history"));
  }
}

// A 412 that carries the current flags (the write's version precondition failed), as opposed to a 412 naming
// the flags a change request binds that moved (REQUEST_STALE: a list of names).
function movedState(error) {
  const flags = error.detail.flags;
  return error.status === 412 && flags !== null && typeof flags === "object" && !Array.isArray(flags);
}

function showConflict(seen, edits, detail) {
  const theirs = detail.flags;
  const theirsVersion = detail.current_version;
  state.conflict = { seen, edits, theirs, theirsVersion };
  state.flags = { ...theirs };
  state.version = theirsVersion;
  renderState();
  renderFlags();
  const body = $("conflict-body");
  body.replaceChildren();
  const names = state.declarations
    .map((d) => d.name)
    .filter((name) => name in edits || !same(seen.flags[name], theirs[name]));
  for (const name of names) {
    const changed = !same(seen.flags[name], theirs[name]);
    body.append(
      el(
        "tr",
        { "data-flag": name, class: changed ? "changed" : "" },
        el("th", { scope: "row" }, el("code", { text: name })),
        el("td", { "data-label": "You saw (old)", text: show(seen.flags[name]) }),
        el("td", { "data-label": "Now (theirs)", text: `${show(theirs[name])}${changed ? " (changed)" : ""}` }),
        el("td", { "data-label": "Your edit (mine)", text: name in edits ? show(edits[name]) : "(not edited)" }),
      ),
    );
  }
  $("conflict-summary").textContent =
    `You saw version ${seen.version}; someone else wrote since: the flags are now at version ${theirsVersion}. ` +
    "Nothing of yours was written.";
  $("reapply").textContent = `Re-apply on version ${theirsVersion}`;
  $("conflict").hidden = false;
  announce(`Not applied: the flags changed meanwhile (now version ${theirsVersion}). Re-apply or discard your edit.`);
  $("conflict-title").setAttribute("tabindex", "-1");
  $("conflict-title").focus();
}

function reapply() {
  if (!state.conflict) return;
  // The edits stand (still pending); the version seen is now theirs.
  for (const [name, value] of Object.entries(state.conflict.edits)) {
    if (same(value, state.flags[name])) state.pending.delete(name);
    else state.pending.set(name, value);
  }
  apply();
}

function discard() {
  state.pending.clear();
  state.invalid.clear();
  state.conflict = null;
  $("conflict").hidden = true;
  for (const d of state.declarations) setError(d.name, "");
  renderFlags();
  announce(`Your edit was discarded: showing version ${state.version}.`);
}

function resetEdits() {
  state.pending.clear();
  state.invalid.clear();
  for (const d of state.declarations) setError(d.name, "");
  renderFlags();
  announce("Your edits were undone.");
}

// ---------------------------------------------------------------- history

function kindText(record) {
  const known = KINDS[record.kind];
  if (known === undefined) return record.kind;
  if (record.kind === "revert" && record.reverted_to !== undefined) return `revert to version ${record.reverted_to}`;
  if (record.kind.startsWith("window-") && record.window) return `${known} (${record.window})`;
  if (record.kind === "scheduled" && record.schedule) {
    const by = record.requested_by ? `, requested by ${record.requested_by}` : "";
    return `${known} (${record.schedule}${by})`;
  }
  if (record.kind === "change_request_applied" || record.kind === "break_glass") {
    // The request it applied, who asked (the record's actor is the author too) and who approved, when.
    const parts = [];
    if (record.change_request) parts.push(`request ${record.change_request}`);
    if (record.requested_by) parts.push(`requested by ${record.requested_by}`);
    const approvals = Array.isArray(record.approved_by) ? record.approved_by : [];
    if (approvals.length) {
      const who = approvals.map((a) => (a && typeof a === "object" ? `${a.principal} (${a.at})` : String(a)));
      parts.push(`approved by ${who.join(", ")}`);
    }
    return parts.length ? `${known}: ${parts.join(", ")}` : known;
  }
  if (record.kind === "guard-revert" && record.guard && typeof record.guard === "object") {
    const guarded = record.guard.version !== undefined ? `version ${record.guard.version}` : "the guarded change";
    const alarm = record.guard.alarm ? `: ${record.guard.alarm} went into ALARM` : "";
    return `${known}: undid ${guarded}${alarm}`;
  }
  return known;
}

function diffTable(rows, headings, caption) {
  return el(
    "table",
    { class: "diff" },
    el("caption", { class: "visually-hidden", text: caption }),
    el("thead", {}, el("tr", {}, ...headings.map((h) => el("th", { scope: "col", text: h })))),
    el(
      "tbody",
      {},
      ...rows.map(([name, before, after]) =>
        el(
          "tr",
          { "data-flag": name },
          el("th", { scope: "row" }, el("code", { text: name })),
          el("td", { "data-label": headings[1], text: show(before) }),
          el("td", { "data-label": headings[2], text: show(after) }),
        ),
      ),
    ),
  );
}

function historyItem(record) {
  const changes = Object.entries(record.changes || {}).map(([name, change]) => [name, change.old, change.new]);
  const titleId = `version-${record.version}`;
  const item = el(
    "li",
    { "data-version": record.version },
    el(
      "article",
      { "aria-labelledby": titleId },
      el("h3", { id: titleId, text: record.version === 0 ? "Version 0: the seeded state" : `Version ${record.version}` }),
      el(
        "dl",
        { class: "facts" },
        el("dt", { text: "Kind" }),
        el("dd", {}, el("code", { class: "kind", text: record.kind }), " ", kindText(record)),
        el("dt", { text: "Actor" }),
        el("dd", { class: "actor", text: record.actor || "-" }),
        el("dt", { text: "Reason" }),
        el("dd", { class: "record-reason", text: record.reason || "-" }),
        el("dt", { text: "Time" }),
        el("dd", {}, timeElement(record.at)),
      ),
      changes.length
        ? diffTable(changes, ["Flag", "Old", "New"], `What version ${record.version} changed`)
        : el("p", {
            text:
              record.version === 0
                ? "The values the table was created with (version 1's old values): revert to it to go back there."
                : "No value changed (bookkeeping only).",
          }),
    ),
  );
  if (record.version === state.version && !fallbacks()) {
    item.firstChild.append(el("p", { class: "current-note", text: "This is the current version." }));
  } else if (record.state) {
    const button = el("button", { type: "button", class: "revert", text: "Revert to this version" });
    button.setAttribute("aria-label", `Revert to version ${record.version}`);
    button.disabled = fallbacks();
    button.addEventListener("click", () => openRevert(record));
    item.firstChild.append(button);
  }
  return item;
}

// Version 0 (the seeded state) has no audit record: the API rebuilds it from version 1's record (its state,
// each changed flag's old value put back, a flag version 1 added left out). The page shows it the same way,
// once version 1's record is loaded, so the seeded state can be reverted to from here as from flagctl.
function seededRecord(records) {
  const first = records.find((record) => record.version === 1);
  if (!first || !first.state) return null;
  const seeded = { ...first.state };
  for (const [name, change] of Object.entries(first.changes || {})) {
    if (change && change.old !== undefined && change.old !== null) seeded[name] = change.old;
    else delete seeded[name];
  }
  return { version: 0, kind: "seeded", state: seeded, changes: {}, actor: null, reason: null, at: null };
}

function historyShown() {
  const records = [...state.history.records];
  if (!state.history.cursor) {
    const seeded = seededRecord(records);
    if (seeded) records.push(seeded);
  }
  const flag = state.history.flag;
  if (!flag) return records;
  return records.filter((record) => record.version === 0 || Object.hasOwn(record.changes || {}, flag));
}

function renderHistory() {
  const shown = historyShown();
  $("history-list").replaceChildren(...shown.map(historyItem));
  $("history-empty").hidden = state.history.records.length > 0;
  $("history-none").hidden = !state.history.flag || shown.some((record) => record.version !== 0);
  $("history-more").hidden = !state.history.cursor;
}

function buildHistoryFilter() {
  const select = $("history-flag");
  const chosen = select.value;
  select.replaceChildren(
    el("option", { value: "", text: "any flag" }),
    ...state.declarations.map((d) => el("option", { value: d.name, text: d.name })),
  );
  select.value = chosen;
}

async function loadHistory({ more = false } = {}) {
  const query = { limit: String(HISTORY_PAGE_SIZE) };
  if (more && state.history.cursor) query.cursor = state.history.cursor;
  try {
    const answer = await api("GET", "/flags/history", { query });
    const records = answer.records || [];
    state.history.records = more ? [...state.history.records, ...records] : records;
    state.history.cursor = answer.next_cursor || null;
    state.history.loaded = true;
  } catch (error) {
    fail(error, "Could not read the history");
    return;
  }
  renderHistory();
  if (more) announce(`Loaded ${state.history.records.length} versions.`);
}

// ---------------------------------------------------------------- revert

function renderRevertPreview() {
  const record = state.revertTarget;
  const rows = state.declarations
    .map((d) => d.name)
    .filter((name) => name in record.state && !same(state.flags[name], record.state[name]))
    .map((name) => [name, state.flags[name], record.state[name]]);
  $("revert-title").textContent = `Revert to version ${record.version}`;
  const what =
    record.version === 0
      ? "Writes the seeded values (version 0) again, as a new version."
      : `Writes the values right after version ${record.version} again, as a new version.`;
  $("revert-summary").textContent = `${what} Compared with the current state (version ${state.version}):`;
  const body = $("revert-body");
  body.replaceChildren(
    ...rows.map(([name, now, after]) =>
      el(
        "tr",
        { "data-flag": name },
        el("th", { scope: "row" }, el("code", { text: name })),
        el("td", { "data-label": "Now", text: show(now) }),
        el("td", { "data-label": "After the revert", text: show(after) }),
      ),
    ),
  );
  $("revert-table").hidden = rows.length === 0;
  $("revert-nothing").hidden = rows.length > 0;
  const guarded = revertProtection(record);
  $("revert-confirm").textContent = guarded.flags.length
    ? `Request approval: revert to version ${record.version}`
    : `Revert to version ${record.version}`;
  $("revert-protected").hidden = guarded.flags.length === 0;
  $("revert-protected").textContent = guarded.flags.length
    ? `It changes ${guarded.flags.join(", ")} (protected): it is sent as a change request that needs ` +
      `${approvalsText(guarded.approvals)} by others.`
    : "";
}

// The protected flags a revert to `record` would change.
function revertProtection(record) {
  const names = state.declarations
    .map((d) => d.name)
    .filter((name) => name in record.state && !same(state.flags[name], record.state[name]));
  return protectionOf(names);
}

function openRevert(record) {
  state.revertTarget = record;
  state.revertOpener = document.activeElement;
  $("revert-reason").value = "";
  $("revert-error").textContent = "";
  renderRevertPreview();
  $("revert-dialog").showModal();
  $("revert-reason").focus();
}

function closeRevert() {
  $("revert-dialog").close();
}

async function confirmRevert(event) {
  event.preventDefault();
  const record = state.revertTarget;
  const errorBox = $("revert-error");
  errorBox.textContent = "";
  const reason = requiredReason("revert-reason", "revert-error");
  if (reason === null) return;
  $("revert-confirm").disabled = true;
  try {
    if (revertProtection(record).flags.length > 0) {
      const created = await api("POST", "/flags/change-requests", {
        body: { revert_to: record.version, reason },
        idempotencyKey: newIdempotencyKey(),
      });
      closeRevert();
      announce(requestCreatedText(created.change_request));
      afterRequest(created.change_request);
      return;
    }
    const answer = await api("POST", "/flags/revert", {
      body: { version: record.version, reason },
      ifMatch: state.version,
    });
    closeRevert();
    afterWrite(answer);
    announce(
      answer.applied
        ? `Reverted to version ${record.version}: now at version ${answer.version}.`
        : `Nothing changed: the flags already held version ${record.version}'s values.`,
    );
  } catch (error) {
    if (movedState(error)) {
      state.flags = { ...error.detail.flags };
      state.version = error.detail.current_version;
      renderState();
      renderFlags();
      renderRevertPreview();
      errorBox.textContent =
        `The flags changed meanwhile (now version ${state.version}): the preview above is updated; ` +
        "confirm again to revert from this state.";
    } else {
      errorBox.textContent = `Refused by the server: ${error.message} (${error.status} ${error.code})`;
    }
  } finally {
    $("revert-confirm").disabled = false;
  }
}

// ---------------------------------------------------------------- restore (the item missing)

async function restore(event) {
  event.preventDefault();
  clearFailure();
  const box = $("restore-reason");
  const errorBox = $("restore-error");
  errorBox.textContent = "";
  const reason = requiredReason("restore-reason", "restore-error");
  if (reason === null) return;
  $("restore-confirm").disabled = true;
  try {
    // One key per restore the operator asks for: a retry of a lost answer replays it, never a second one.
    const answer = await api("POST", "/flags/restore", { body: { reason }, idempotencyKey: newIdempotencyKey() });
    box.value = "";
    state.reason = null; // the restore's answer is a stored state; the re-read below confirms what readers get
    afterWrite(answer);
    announce(
      answer.applied
        ? `Restored the flags item from its audit trail: now at version ${answer.version}.`
        : `Nothing restored: the flags item exists (version ${answer.version}). Refresh to read it again.`,
    );
  } catch (error) {
    errorBox.textContent = `Refused by the server: ${error.message} (${error.status} ${error.code})`;
    fail(error, "Could not restore the flags item");
  } finally {
    $("restore-confirm").disabled = false;
  }
}

// ---------------------------------------------------------------- kill switch

// One tap plus a reason: maintenance_mode flipped by the same PATCH /flags as any edit (If-Match, the reason,
// the audit trail), whatever else is being edited below.
async function killSwitch(event) {
  event.preventDefault();
  clearFailure();
  const box = $("kill-reason");
  const errorBox = $("kill-error");
  errorBox.textContent = "";
  const on = maintenanceOn();
  if (fallbacks() || state.version === null || on === null) {
    errorBox.textContent = "Not sent: the flags could not be read as stored. Restore or refresh first.";
    return;
  }
  const reason = requiredReason("kill-reason", "kill-error");
  if (reason === null) return;
  $("kill-confirm").disabled = true;
  try {
    if (approvalsFor(MAINTENANCE_FLAG) > 0) {
      const body = { flags: { [MAINTENANCE_FLAG]: !on }, reason, if_version: state.version };
      if ($("kill-break-glass").checked) body.break_glass = true;
      const created = await api("POST", "/flags/change-requests", { body, idempotencyKey: newIdempotencyKey() });
      box.value = "";
      $("kill-break-glass").checked = false;
      announce(requestCreatedText(created.change_request));
      afterRequest(created.change_request);
      return;
    }
    const answer = await api("PATCH", "/flags", {
      body: { flags: { [MAINTENANCE_FLAG]: !on }, reason },
      ifMatch: state.version,
    });
    box.value = "";
    state.pending.delete(MAINTENANCE_FLAG);
    afterWrite(answer);
    announce(`Maintenance switched ${on ? "off" : "ON"}: now at version ${answer.version}.`);
  } catch (error) {
    if (movedState(error)) {
      state.flags = { ...error.detail.flags };
      state.version = error.detail.current_version;
      renderState();
      renderFlags();
      errorBox.textContent =
        `Not switched: the flags changed meanwhile (now version ${state.version}, maintenance ` +
        `${maintenanceOn() ? "ON" : "off"}). Check, then switch again.`;
    } else {
      errorBox.textContent = `Refused by the server: ${error.message} (${error.status} ${error.code})`;
    }
  } finally {
    $("kill-confirm").disabled = fallbacks();
  }
}

// ---------------------------------------------------------------- scheduled changes

const SCHEDULE_STATUS = {
  pending: "pending",
  applied: "applied",
  skipped: "skipped (the flags had moved on)",
  failed: "failed",
  cancelled: "cancelled",
};

function scheduleRow(schedule) {
  const flags = Object.entries(schedule.flags || {}).map(([name, value]) => `${name} = ${show(value)}`);
  let outcome = schedule.detail || "";
  if (schedule.version !== undefined && schedule.version !== null) outcome = `wrote version ${schedule.version}`;
  if (schedule.status === "cancelled" && schedule.cancelled_by) outcome = `cancelled by ${schedule.cancelled_by}`;
  const action = el("td", { "data-label": "Action" });
  if (schedule.status === "pending") {
    const confirming = state.schedules.confirming === schedule.id;
    const button = el("button", {
      type: "button",
      class: confirming ? "danger" : "",
      text: confirming ? "Confirm: cancel it" : "Cancel…",
      "aria-label": confirming ? `Confirm: cancel scheduled change ${schedule.id}` : `Cancel scheduled change ${schedule.id}`,
    });
    button.addEventListener("click", () => (confirming ? cancelSchedule(schedule) : askCancel(schedule)));
    action.append(button);
    if (confirming) {
      const keep = el("button", { type: "button", text: "Keep it", "aria-label": `Keep scheduled change ${schedule.id}` });
      keep.addEventListener("click", () => {
        state.schedules.confirming = null;
        renderSchedules();
      });
      action.append(" ", keep);
    }
  } else {
    action.textContent = "-";
  }
  const zone = schedule.timezone && schedule.timezone !== "UTC" ? schedule.timezone : null;
  return el(
    "tr",
    { "data-schedule": schedule.id, "data-status": schedule.status },
    el("th", { scope: "row", "data-label": "Change" }, el("code", { text: schedule.id })),
    el("td", { "data-label": "Status", class: "status", text: SCHEDULE_STATUS[schedule.status] || schedule.status }),
    el(
      "td",
      { "data-label": "Applies at" },
      timeElement(schedule.at, { zone: "UTC", label: "(UTC)" }),
      zone ? el("br") : null,
      zone ? el("span", { class: "zone", text: `asked as ${schedule.local_time} ${zone}` }) : null,
      el("br"),
      timeElement(schedule.at, { label: `(your time, ${BROWSER_ZONE})` }),
    ),
    el("td", { "data-label": "Flags", class: "flags-cell", text: flags.join("; ") }),
    el("td", { "data-label": "Reason", text: schedule.reason || "-" }),
    el("td", { "data-label": "Outcome", class: "outcome", text: outcome || "-" }),
    action,
  );
}

function renderSchedules() {
  const items = state.schedules.items;
  $("schedules-body").replaceChildren(...items.map(scheduleRow));
  $("schedules-table").hidden = items.length === 0;
  $("schedules-empty").hidden = items.length > 0;
  $("schedules-more").hidden = !state.schedules.cursor;
  $("view-schedules").dataset.loaded = "true";
}

async function loadSchedules({ more = false } = {}) {
  const query = { limit: String(SCHEDULE_PAGE_SIZE) };
  if (more && state.schedules.cursor) query.cursor = state.schedules.cursor;
  try {
    const answer = await api("GET", "/flags/schedules", { query });
    const items = answer.schedules || [];
    state.schedules.items = more ? [...state.schedules.items, ...items] : items;
    state.schedules.cursor = answer.next_cursor || null;
    state.schedules.loaded = true;
  } catch (error) {
    fail(error, "Could not read the scheduled changes");
    return;
  }
  renderSchedules();
}

function askCancel(schedule) {
  state.schedules.confirming = schedule.id;
  renderSchedules();
  const confirm = document.querySelector(`#schedules-body tr[data-schedule="${CSS.escape(schedule.id)}"] button`);
  if (confirm) confirm.focus();
}

async function cancelSchedule(schedule) {
  clearFailure();
  try {
    const answer = await api("DELETE", `/flags/schedules/${encodeURIComponent(schedule.id)}`);
    state.schedules.confirming = null;
    const note = answer.schedule_deleted ? "" : " (its schedule was already gone)";
    announce(`Cancelled scheduled change ${schedule.id}${note}.`);
  } catch (error) {
    state.schedules.confirming = null;
    fail(error, `Could not cancel ${schedule.id}`);
  }
  await loadSchedules();
}

// ---------------------------------------------------------------- guards

const GUARD_STATE = {
  baking: "baking (watched now)",
  closed: "closed (the bake ended quietly)",
  reverted: "reverted (an alarm fired)",
  skipped: "skipped (an alarm fired after a newer change)",
};

function guardRow(guard) {
  const outcome = [guard.outcome, guard.alarm ? `alarm ${guard.alarm}` : null]
    .concat(guard.reverted_by ? [`reverted by version ${guard.reverted_by}`] : [])
    .filter(Boolean)
    .join("; ");
  return el(
    "tr",
    { "data-guard": guard.version, "data-state": guard.state },
    el("th", { scope: "row", "data-label": "Version", text: `Version ${guard.version}` }),
    el("td", { "data-label": "State", class: "status", text: GUARD_STATE[guard.state] || guard.state }),
    el("td", { "data-label": "Alarms", text: (guard.alarms || []).join(", ") }),
    el("td", { "data-label": "Bake ends" }, timeElement(guard.bake_ends_at, { label: `(your time, ${BROWSER_ZONE})` })),
    el("td", { "data-label": "Outcome", class: "outcome", text: outcome || "-" }),
  );
}

async function loadGuards({ more = false } = {}) {
  const query = { limit: String(SCHEDULE_PAGE_SIZE) };
  if (more && state.guards.cursor) query.cursor = state.guards.cursor;
  try {
    const answer = await api("GET", "/flags/guards", { query });
    const items = answer.guards || [];
    state.guards.items = more ? [...state.guards.items, ...items] : items;
    state.guards.cursor = answer.next_cursor || null;
    state.guards.loaded = true;
  } catch (error) {
    fail(error, "Could not read the guards");
    return;
  }
  $("guards-body").replaceChildren(...state.guards.items.map(guardRow));
  $("guards-table").hidden = state.guards.items.length === 0;
  $("guards-empty").hidden = state.guards.items.length > 0;
  $("guards-more").hidden = !state.guards.cursor;
  $("view-guards").dataset.loaded = "true";
}

// ---------------------------------------------------------------- change requests

const REQUEST_STATE = {
  pending: "pending: waiting for approvals",
  applied: "applied",
  scheduled: "scheduled: approved; its scheduled change applies it at its time",
  rejected: "rejected",
  withdrawn: "withdrawn by its author",
  expired: "expired before enough approvals",
  stale: "stale: a flag it binds moved since it was asked",
};
const REQUEST_KIND = {
  change: "change",
  revert: "revert",
  break_glass: "break glass (applied at once, alone)",
};

// Each flag the request binds: its value at the request's base, now, and what it asks for. A flag that moved
// since the base is marked: the last approval would be refused (412) and the request marked stale.
function requestRows(request) {
  const base = request.base_values || {};
  const asked = request.flags || {};
  const names = [...new Set([...Object.keys(asked), ...Object.keys(base)])];
  return names.map((name) => ({
    name,
    base: base[name],
    now: state.flags[name],
    asked: name in asked ? show(asked[name]) : request.revert_to !== null && request.revert_to !== undefined
      ? `version ${request.revert_to}'s value`
      : "(unchanged)",
    moved: name in base && !same(base[name], state.flags[name]),
    protected: (request.protected_flags || []).includes(name),
  }));
}

function requestDiff(request, rows) {
  return el(
    "table",
    { class: "diff" },
    el("caption", { text: `What request ${request.id} changes, against its base (version ${request.base_version}) and now (version ${state.version}).` }),
    el(
      "thead",
      {},
      el(
        "tr",
        {},
        ...["Flag", `At its base (version ${request.base_version})`, `Now (version ${state.version})`, "Requested"].map(
          (h) => el("th", { scope: "col", text: h }),
        ),
      ),
    ),
    el(
      "tbody",
      {},
      ...rows.map((row) =>
        el(
          "tr",
          { "data-flag": row.name, class: row.moved ? "moved" : "" },
          el(
            "th",
            { scope: "row" },
            el("code", { text: row.name }),
            row.protected ? el("span", { class: "badge badge-protected", text: "protected" }) : null,
          ),
          el("td", { "data-label": "At its base", text: show(row.base) }),
          el("td", { "data-label": "Now", text: `${show(row.now)}${row.moved ? " (moved since the request)" : ""}` }),
          el("td", { "data-label": "Requested", text: row.asked }),
        ),
      ),
    ),
  );
}

function requestItem(request) {
  const rows = requestRows(request);
  const titleId = `request-${request.id}`;
  const approvals = request.approvals || [];
  const count = `${approvals.length} of ${request.required_approvals}`;
  const who = approvals.map((a) => `${a.principal} (${a.at})`).join("; ");
  const decided = request.decided
    ? `${request.decided.by} at ${request.decided.at}${request.decided.reason ? `: ${request.decided.reason}` : ""}`
    : null;
  const article = el(
    "article",
    { "aria-labelledby": titleId },
    el("h3", { id: titleId }, "Change request ", el("code", { text: request.id })),
    el(
      "dl",
      { class: "facts" },
      el("dt", { text: "State" }),
      el("dd", { class: "request-state", text: REQUEST_STATE[request.state] || request.state }),
      el("dt", { text: "Kind" }),
      el("dd", {}, REQUEST_KIND[request.kind] || request.kind, request.revert_to !== null && request.revert_to !== undefined ? ` to version ${request.revert_to}` : ""),
      el("dt", { text: "Asked by" }),
      el("dd", { class: "author", text: request.author }),
      el("dt", { text: "Reason" }),
      el("dd", { class: "record-reason", text: request.reason || "-" }),
      el("dt", { text: "Asked" }),
      el("dd", {}, timeElement(request.created_at)),
      el("dt", { text: "Expires" }),
      el("dd", {}, timeElement(request.expires_at)),
      el("dt", { text: "Approvals" }),
      el("dd", { class: "approvals", text: who ? `${count}: ${who}` : count }),
      decided ? el("dt", { text: "Decided" }) : null,
      decided ? el("dd", { text: decided }) : null,
      request.applied_version !== null && request.applied_version !== undefined ? el("dt", { text: "Applied" }) : null,
      request.applied_version !== null && request.applied_version !== undefined
        ? el("dd", { text: `as version ${request.applied_version}` })
        : null,
    ),
    requestDiff(request, rows),
  );
  if (rows.some((row) => row.moved) && request.state === "pending") {
    article.append(
      el("p", {
        class: "moved-note",
        text: "A flag it binds moved since it was asked: approving it will be refused and the request marked stale.",
      }),
    );
  }
  if (request.state === "pending") article.append(decisionForm(request));
  return el("li", { "data-request": request.id, "data-state": request.state }, article);
}

function decisionForm(request) {
  const boxId = `decision-reason-${request.id}`;
  const errorId = `decision-error-${request.id}`;
  const approve = el("button", { type: "button", class: "approve", text: "Approve", "aria-label": `Approve change request ${request.id}` });
  const reject = el("button", { type: "button", class: "danger reject", text: "Reject", "aria-label": `Reject change request ${request.id}` });
  approve.addEventListener("click", () => decide(request, "approve", boxId, errorId));
  reject.addEventListener("click", () => decide(request, "reject", boxId, errorId));
  return el(
    "form",
    { class: "decision", novalidate: true },
    el("label", { for: boxId, text: `Reason for your decision on ${request.id}` }),
    el("textarea", { id: boxId, rows: "2", maxlength: "500", "aria-describedby": errorId }),
    el("p", { id: errorId, class: "error", role: "alert" }),
    el("div", { class: "actions" }, approve, reject),
  );
}

// Approve (a reason optional) or reject (a reason required) as the identity the API call carries.
async function decide(request, decision, boxId, errorId) {
  clearFailure();
  $(errorId).textContent = "";
  let reason = $(boxId).value.trim();
  if (decision === "reject") {
    reason = requiredReason(boxId, errorId);
    if (reason === null) return;
  }
  const buttons = document.querySelectorAll(`li[data-request="${CSS.escape(request.id)}"] button`);
  for (const button of buttons) button.disabled = true;
  try {
    const answer = await api("POST", `/flags/change-requests/${encodeURIComponent(request.id)}/${decision}`, {
      body: reason ? { reason } : {},
      idempotencyKey: newIdempotencyKey(),
    });
    const decided = answer.change_request;
    if (decision === "reject") announce(`Rejected change request ${request.id}.`);
    else if (answer.applied) announce(`Approved change request ${request.id}: applied, now at version ${answer.version}.`);
    else {
      const got = (decided.approvals || []).length;
      announce(`Approved change request ${request.id}: ${got} of ${decided.required_approvals} approvals, not applied yet.`);
    }
    afterRequest(decided);
    if (!state.requests.loaded) await loadRequests();
  } catch (error) {
    for (const button of buttons) button.disabled = false;
    $(errorId).textContent = `Refused by the server: ${error.message} (${error.status} ${error.code})`;
    announce(`Refused by the server: ${error.message}`);
    if (error.code === "REQUEST_STALE" || error.code === "REQUEST_CLOSED") {
      loadRequests({ keepError: { id: request.id, text: $(errorId).textContent } });
    }
  }
}

function renderRequests() {
  const items = state.requests.items;
  $("requests-list").replaceChildren(...items.map(requestItem));
  $("requests-empty").hidden = items.length > 0;
  $("requests-empty").textContent = state.requests.state === "pending" ? "No change request is waiting." : "No change request yet.";
  $("requests-more").hidden = !state.requests.cursor;
  $("view-requests").dataset.loaded = "true";
}

async function loadRequests({ more = false, keepError = null } = {}) {
  const query = { limit: String(SCHEDULE_PAGE_SIZE) };
  if (state.requests.state) query.state = state.requests.state;
  if (more && state.requests.cursor) query.cursor = state.requests.cursor;
  try {
    const answer = await api("GET", "/flags/change-requests", { query });
    const items = answer.change_requests || [];
    state.requests.items = more ? [...state.requests.items, ...items] : items;
    state.requests.cursor = answer.next_cursor || null;
    state.requests.loaded = true;
  } catch (error) {
    fail(error, "Could not read the change requests");
    return;
  }
  renderRequests();
  if (keepError) {
    const item = document.querySelector(`li[data-request="${CSS.escape(keepError.id)}"]`);
    if (item) item.firstChild.append(el("p", { class: "error", text: keepError.text }));
  }
}

// ---------------------------------------------------------------- lifecycle

// The report is computed by the server that served this page (flagctl report's functions): the page renders the
// stale candidates it marked, and decides none itself.
const REPORT_PATH = "/_console/report";

function lifecycleState(flag) {
  if (flag.state === "deprecated" && flag.deprecated_on) return `deprecated since ${flag.deprecated_on}`;
  if (flag.state === "removed" && flag.deprecated_on) return `removed (deprecated since ${flag.deprecated_on})`;
  return flag.state;
}

function lifecycleRow(flag) {
  const change = flag.last_change;
  const last = el("td", { "data-label": "Last change" });
  if (change && change.version !== undefined && change.version !== null) {
    last.append(`version ${change.version}`, el("br"), timeElement(change.at, { label: `(your time, ${BROWSER_ZONE})` }));
    if (change.actor) last.append(el("br"), el("span", { class: "zone", text: `by ${change.actor}` }));
  } else {
    last.textContent = "- (no audit record changed it)";
  }
  const mark = el("td", { "data-label": "Stale candidate", class: "stale" });
  if (flag.stale_candidate) {
    mark.append(el("strong", { class: "badge badge-stale", text: "STALE CANDIDATE" }), " ", flag.why || "");
  } else if (flag.permanent) {
    mark.textContent = "never: permanent";
  } else if (flag.reads === null || flag.reads === undefined) {
    mark.textContent = "not known: reads unknown";
  } else {
    mark.textContent = "no: read in the window";
  }
  const state = el("td", { "data-label": "State", text: lifecycleState(flag) });
  if (flag.note) state.append(el("br"), el("span", { class: "zone", text: flag.note }));
  return el(
    "tr",
    { id: `lifecycle-${flag.name}`, "data-flag": flag.name, "data-stale": flag.stale_candidate ? "true" : "false" },
    el("th", { scope: "row", "data-label": "Flag" }, el("code", { text: flag.name })),
    state,
    el("td", { "data-label": "Owner", text: flag.owner || "-" }),
    el("td", { "data-label": "Permanent", text: flag.permanent ? "yes" : "no" }),
    last,
    el("td", {
      "data-label": "Reads by name",
      class: "reads",
      text: flag.reads === null || flag.reads === undefined ? "unknown" : String(flag.reads),
    }),
    mark,
  );
}

function renderLifecycle(report) {
  $("lifecycle-body").replaceChildren(...(report.flags || []).map(lifecycleRow));
  const unknown = $("lifecycle-unknown");
  if (report.reads_unknown) {
    $("lifecycle-window").textContent =
      `Last ${report.days} day(s) asked; reads unknown, so no flag is marked a stale candidate.`;
    unknown.textContent = `Reads unknown: ${report.reads_unknown}`;
    unknown.hidden = false;
  } else {
    $("lifecycle-window").textContent =
      `Reads since ${report.window_start} (last ${report.days} day(s) asked) from ${report.reads_source}; ` +
      "counts are lower bounds; reads of every flag at once, which name none: " +
      `${report.reads_of_every_flag}.`;
    unknown.hidden = true;
  }
  $("view-lifecycle").dataset.loaded = "true";
}

async function loadLifecycle(event) {
  if (event) event.preventDefault();
  clearFailure();
  delete $("view-lifecycle").dataset.loaded;
  try {
    const days = $("lifecycle-days").value.trim();
    renderLifecycle(await api("GET", REPORT_PATH, { query: { days } }));
  } catch (error) {
    fail(error, "Could not make the lifecycle report");
    $("view-lifecycle").dataset.loaded = "failed";
  }
}

// ---------------------------------------------------------------- views

function showView(name) {
  for (const tab of document.querySelectorAll(".tab")) {
    const current = tab.dataset.view === name;
    if (current) tab.setAttribute("aria-current", "page");
    else tab.removeAttribute("aria-current");
    $(`view-${tab.dataset.view}`).hidden = !current;
  }
  if (name === "history" && !state.history.loaded) loadHistory();
  if (name === "schedules") loadSchedules();
  if (name === "requests") {
    // "Now" in each request's diff is the flags as read: read them again first.
    loadFlags()
      .catch((error) => fail(error, "Could not read the flags"))
      .then(() => loadRequests());
  }
  if (name === "guards") loadGuards();
  if (name === "lifecycle") loadLifecycle();
  if (name === "maintenance") {
    loadWindows().catch((error) => fail(error, "Could not read the maintenance windows"));
  }
}

function start() {
  // flagctl console (the one server that gives a token) forwards the API's routes only: no Swagger UI there.
  if (TOKEN) document.querySelector("footer.bottom").hidden = true;
  for (const tab of document.querySelectorAll(".tab")) {
    tab.addEventListener("click", () => showView(tab.dataset.view));
  }
  $("search").addEventListener("input", applySearch);
  $("edit-form").addEventListener("submit", apply);
  $("reapply").addEventListener("click", reapply);
  $("discard").addEventListener("click", discard);
  $("reset").addEventListener("click", resetEdits);
  $("refresh").addEventListener("click", () => refresh().then(() => announce(`Read version ${state.version}.`)));
  $("history-more").addEventListener("click", () => loadHistory({ more: true }));
  $("revert-form").addEventListener("submit", confirmRevert);
  $("restore-form").addEventListener("submit", restore);
  $("kill-form").addEventListener("submit", killSwitch);
  $("history-flag").addEventListener("change", () => {
    state.history.flag = $("history-flag").value;
    renderHistory();
  });
  $("schedules-more").addEventListener("click", () => loadSchedules({ more: true }));
  $("guards-more").addEventListener("click", () => loadGuards({ more: true }));
  $("lifecycle-form").addEventListener("submit", loadLifecycle);
  $("requests-more").addEventListener("click", () => loadRequests({ more: true }));
  $("requests-state").addEventListener("change", () => {
    state.requests.state = $("requests-state").value;
    loadRequests();
  });
  $("revert-cancel").addEventListener("click", closeRevert);
  $("revert-dialog").addEventListener("close", () => {
    if (state.revertOpener && document.contains(state.revertOpener)) state.revertOpener.focus();
  });
  refresh().then(() => {
    document.body.dataset.ready = "true";
  });
}

start();
