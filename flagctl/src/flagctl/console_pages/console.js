// The operator console: plain JavaScript over the API (same origin, no build step, no dependency).
// It reads GET /flags, /flags/declarations, /flags/history and /flags/windows, and writes through PATCH /flags
// and POST /flags/revert, always with If-Match naming the version the operator saw and a reason. Values the
// API sends are put in the page as text (textContent), never as markup.

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
};


class ApiError extends Error {
  constructor(status, code, message, detail) {
    super(message);
    this.status = status;
    this.code = code;
    this.detail = detail || {};
  }
}

async function api(method, path, { body, ifMatch, query } = {}) {
  const headers = { Accept: "application/json" };
  if (TOKEN) headers["X-Console-Token"] = TOKEN;
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
  history: { records: [], cursor: null, loaded: false },
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

function buildFlagsTable() {
  const body = $("flags-body");
  body.replaceChildren();
  for (const declaration of state.declarations) {
    const row = el(
      "tr",
      { id: `row-${declaration.name}`, "data-flag": declaration.name },
      el("th", { scope: "row", "data-label": "Name" }, el("code", { text: declaration.name })),
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
  } else if (state.reason === "DEFAULT") {
    lines.push(
      "DEFAULT: the API serves the declared fallbacks, not stored values (features off, maintenance on). " +
        "The flags item is missing or the table cannot be read.",
    );
  }
  if (on) lines.push(`Maintenance mode is ON: ${holderText()}.`);
  if (state.maintenanceEndedBy === "deadline") {
    lines.push("A window's deadline passed: maintenance is served off although the item still says on.");
  }
  banner.replaceChildren(...lines.map((line) => el("p", { text: line })));
  banner.hidden = lines.length === 0;
  banner.className = `banner ${state.reason === "STALE" || state.reason === "DEFAULT" ? "banner-bad" : "banner-warn"}`;
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
}

// ---------------------------------------------------------------- writing

async function apply(event) {
  if (event) event.preventDefault();
  clearFailure();
  const reasonBox = $("reason");
  const reason = reasonBox.value.trim();
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
  if (state.version === null) {
    announce("Not sent: the flags could not be read, so there is no version to write against. Refresh first.");
    return;
  }
  if (!reason) {
    $("reason-error").textContent = "A reason is required: it goes into the audit trail.";
    reasonBox.setAttribute("aria-invalid", "true");
    reasonBox.focus();
    announce("Not sent: a reason is required.");
    return;
  }
  const edits = Object.fromEntries(state.pending);
  const seen = { version: state.version, flags: { ...state.flags } };
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
    if (error.status === 412 && error.detail.flags) {
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
      el("h3", { id: titleId, text: `Version ${record.version}` }),
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
        : el("p", { text: "No value changed (bookkeeping only)." }),
    ),
  );
  if (record.state) {
    const button = el("button", { type: "button", class: "revert", text: "Revert to this version" });
    button.setAttribute("aria-label", `Revert to version ${record.version}`);
    button.addEventListener("click", () => openRevert(record));
    item.firstChild.append(button);
  }
  return item;
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
  const list = $("history-list");
  list.replaceChildren(...state.history.records.map(historyItem));
  $("history-empty").hidden = state.history.records.length > 0;
  $("history-more").hidden = !state.history.cursor;
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
  $("revert-summary").textContent =
    `Writes the values right after version ${record.version} again, as a new version. ` +
    `Compared with the current state (version ${state.version}):`;
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
  $("revert-confirm").textContent = `Revert to version ${record.version}`;
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
  const reason = $("revert-reason").value.trim();
  const errorBox = $("revert-error");
  errorBox.textContent = "";
  if (!reason) {
    errorBox.textContent = "A reason is required: it goes into the audit trail.";
    $("revert-reason").setAttribute("aria-invalid", "true");
    $("revert-reason").focus();
    return;
  }
  $("revert-reason").removeAttribute("aria-invalid");
  $("revert-confirm").disabled = true;
  try {
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
    if (error.status === 412 && error.detail.flags) {
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

// ---------------------------------------------------------------- views

function showView(name) {
  for (const tab of document.querySelectorAll(".tab")) {
    const current = tab.dataset.view === name;
    if (current) tab.setAttribute("aria-current", "page");
    else tab.removeAttribute("aria-current");
    $(`view-${tab.dataset.view}`).hidden = !current;
  }
  if (name === "history" && !state.history.loaded) loadHistory();
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
  $("revert-cancel").addEventListener("click", closeRevert);
  $("revert-dialog").addEventListener("close", () => {
    if (state.revertOpener && document.contains(state.revertOpener)) state.revertOpener.focus();
  });
  refresh().then(() => {
    document.body.dataset.ready = "true";
  });
}

start();
