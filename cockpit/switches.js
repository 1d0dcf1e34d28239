/*
 * The "Switches" page: draws switchd's switches as a settings page and
 * keeps it live. The protocol is switchd-client.js; this file is the page:
 * the Cockpit transport, sections and rows, the switch's behaviour (the
 * seeds' SWT-1/2/25), the "why" panel and the administrator's controls.
 *
 * The page shows what the daemon holds: a click sends `set` with the
 * revision drawn, and the row is redrawn from the answer (or, refused, from
 * the switch the error carries). Only while that call is out does the
 * switch show where the click goes, marked aria-busy (as the seeds' web
 * switch flips before it fires change); an apply command that then fails
 * puts it back, and says why beside it.
 */
"use strict";

const { ResumableWatch, RpcConnection } = window.SwitchdClient;

const DEFAULT_SOCKET = "/run/switchd/switchd.sock";
const query = new URLSearchParams(window.location.search);
const socketPath = query.get("socket") || DEFAULT_SOCKET;

/**
 * When the page itself makes tried changes (SEMANTICS rule 20): a switch in
 * the group "Connectivity" (the radios, which can cut the very session the
 * page runs over) is switched with `confirmWithin` TRIED_SECONDS whenever the
 * browser is not on the machine itself (the page is not served from a
 * loopback address), as Cockpit's network page does. The page's own
 * connection is the maker (`revertOnDisconnect` true): closing the tab, or
 * losing the session, puts the radio back. `?tried=yes` or `?tried=no`
 * decides it for a session whatever the address (as `?socket=` picks the
 * socket). Only system-scope switches: switchd takes `confirmWithin` on
 * system switches alone (InvalidParams on a user-scope one).
 */
const TRIED_GROUP = "Connectivity";
const TRIED_SECONDS = 30;
const LOOPBACK = ["localhost", "127.0.0.1", "[::1]", "::1"];
const triedAlways = query.get("tried") === "yes" ||
    (query.get("tried") !== "no" && !LOOPBACK.includes(window.location.hostname));

/** The group whose switches offer "Turn off for 1 hour" and "until tomorrow". */
const QUIET_GROUP = "Notifications";
/** "Until tomorrow" ends at this local hour. */
const MORNING_HOUR = 8;

const sectionsNode = document.getElementById("sections");
const connectionNode = document.getElementById("connection");

/** What the page knows beyond the switches. */
const page = {
    connected: false,
    everConnected: false,
    /** true, false, or null while not yet known. */
    administrator: null,
    /** This connection's uid (`status` says it), or null. */
    uid: null,
    rows: new Map(), // key → row view
    sections: new Map(), // section title → {node, list}
};

// ---------------------------------------------------------------- transport

/** Why a Cockpit channel to the socket closed, as a sentence. */
function describeClose(options) {
    const problem = options && options.problem;
    if (problem === "not-found")
        return `switchd is not running: there is no socket at ${socketPath}.`;
    if (problem === "access-denied")
        return `This account may not open switchd's socket ${socketPath}.`;
    if (!problem)
        return "switchd closed the connection (it stopped or restarted).";
    return `The connection to switchd failed (${cockpit.message(options)}).`;
}

/** Opens switchd's socket through the Cockpit bridge: one stream channel. */
function connectThroughCockpit(onNotification, onClosed) {
    const channel = cockpit.channel({ payload: "stream", unix: socketPath, superuser: "try" });
    const connection = new RpcConnection({
        send: text => channel.send(text),
        close: () => channel.close(),
    }, onNotification);
    channel.addEventListener("message", (event, data) => connection.receive(data));
    // Turned away (a limit), switchd says why in an error before it closes.
    channel.addEventListener("close", (event, options) =>
        onClosed(connection.farewell ? connection.farewell.message : describeClose(options)));
    return Promise.resolve(connection);
}

const watch = new ResumableWatch({
    connect: connectThroughCockpit,
    prepare: learnWhoTheDaemonSees,
    onChange: changed,
    onStatus: connectionChanged,
    retryDelays: [200, 400, 800, 1000],
});

function changed(table, why, key) {
    // An event is the daemon's clock of a moment ago (see serverClock).
    if (why === "event" && table.switches.has(key))
        serverClock.atLeast(table.switches.get(key).changedAt);
    draw(table);
}

/** The logged-in person's uid (a promise; null if Cockpit cannot say). */
let loginUidAsked = null;
function loginUid() {
    if (!loginUidAsked) {
        loginUidAsked = new Promise(resolve => {
            cockpit.user().then(user => resolve(typeof user.id === "number" ? user.id : null),
                                () => resolve(null));
        }).then(uid => {
            if (uid === null)
                loginUidAsked = null; // asked again on the next connection
            return uid;
        });
    }
    return loginUidAsked;
}

/**
 * Before each watch: whom switchd sees on this connection (`status`), and
 * whose values the page shows. With administrative access the channel
 * (`superuser: "try"`) is root's, and a user-scope switch read or written
 * as root is root's own value (SEMANTICS rule 11): the page then names the
 * logged-in person (`"user": uid`, an administrator's right) on everything
 * it reads and writes of user-scope switches, so "Your own setting." is.
 * Anyone else is seen as the person (the bridge runs as them).
 */
async function learnWhoTheDaemonSees(connection) {
    serverClock.measure();
    let status = null;
    try {
        status = await connection.call("status", {});
    } catch (e) {
        // A daemon without `status` (older): learnWhoIAm asks another way.
        // Anything else is not taken as "root's values will do": the
        // connection fails and is tried again.
        if (e.code !== -32601 && e.name !== "MethodNotFound")
            throw e;
    }
    const caller = status && status.caller ? status.caller : {};
    page.status = status;
    page.uid = typeof caller.uid === "number" ? caller.uid : null;
    const person = caller.administrator === true && page.uid !== null ? await loginUid() : null;
    watch.user = person !== null && person !== page.uid ? person : null;
}

/** The parameters of a call about `s`, with the person's uid where the page acts for them. */
function forUser(s, params) {
    return s && s.scope === "user" ? watch.asUser(params) : params;
}

function connectionChanged(status, problem) {
    page.connected = status === "connected";
    document.body.classList.toggle("offline", !page.connected);
    let said;
    if (page.connected) {
        page.everConnected = true;
        said = "";
        learnWhoIAm(page.status);
        for (const row of page.rows.values()) {
            if (row.alertOffline)
                showAlert(row, "");
        }
    } else if (page.everConnected) {
        said = `${problem} The page reconnects by itself; what it shows may be out of date.`;
    } else {
        said = `${problem} The page keeps trying.`;
    }
    // A live region: written when what it says changes, not on every retry
    // (a screen reader read the same sentence once a second; an audit).
    setText(connectionNode, said);
    sectionsNode.setAttribute("aria-busy", page.connected ? "false" : "true");
}

/**
 * Whether this caller administers switchd: `status` (asked before the
 * watch) says so in `caller`; a daemon without it is asked by a `disable`
 * without a key, which an administrator gets `InvalidParams` for and anyone
 * else `PermissionDenied` (the method's check comes first), changing nothing.
 */
async function learnWhoIAm(status) {
    let administrator;
    if (status && status.caller && typeof status.caller.administrator === "boolean") {
        administrator = status.caller.administrator;
    } else {
        try {
            await watch.call("disable", {});
            administrator = true;
        } catch (e) {
            if (e.name === "Disconnected")
                return; // asked again on the next connection
            administrator = e.name === "InvalidParams";
        }
    }
    if (administrator !== page.administrator) {
        page.administrator = administrator;
        for (const row of page.rows.values())
            drawAdminControls(row);
    }
}

// ---------------------------------------------------------------- layout

/** The section a switch is drawn under: its Group=, else its key's first segment. */
function sectionTitle(s) {
    if (s.group)
        return s.group;
    const dot = s.key.indexOf(".");
    if (dot < 0)
        return "";
    const first = s.key.slice(0, dot).replace(/-/g, " ");
    return first.charAt(0).toUpperCase() + first.slice(1);
}

/** Schema order (`order`; by key where a daemon does not send it). */
function schemaOrder(a, b) {
    const oa = typeof a.order === "number" ? a.order : Infinity;
    const ob = typeof b.order === "number" ? b.order : Infinity;
    if (oa !== ob)
        return oa - ob;
    return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

function element(tag, attributes, text) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {}))
        node.setAttribute(name, value);
    if (text !== undefined)
        node.textContent = text;
    return node;
}

let idCounter = 0;
function newId(prefix) {
    idCounter += 1;
    return `${prefix}-${idCounter}`;
}

/**
 * Puts `nodes` into `parent` in this order, moving only those out of place:
 * a moved node loses the keyboard focus it holds, so nothing moves needlessly.
 */
function placeInOrder(parent, nodes) {
    let previous = null;
    for (const node of nodes) {
        const expected = previous ? previous.nextSibling : parent.firstChild;
        if (node !== expected) {
            // Where a move cannot be avoided (a schema change reorders),
            // the focus goes back to the very element that held it.
            const focused = node.contains(document.activeElement) ? document.activeElement : null;
            parent.insertBefore(node, expected);
            if (focused && document.activeElement !== focused)
                focused.focus();
        }
        previous = node;
    }
}

/** Draws the whole table: sections and rows in schema order, updated in place. */
function draw(table) {
    const switches = [...table.switches.values()].sort(schemaOrder);
    // The untitled section (keys without a dot or group) comes first.
    const titles = [];
    if (switches.some(s => sectionTitle(s) === ""))
        titles.push("");
    for (const s of switches) {
        const title = sectionTitle(s);
        if (!titles.includes(title))
            titles.push(title);
    }
    for (const [key, row] of page.rows) {
        if (!table.switches.has(key)) {
            row.node.remove();
            page.rows.delete(key);
        }
    }
    for (const title of titles) {
        let section = page.sections.get(title);
        if (!section) {
            const node = element("section", { class: "section" });
            if (title !== "") {
                const headingId = newId("section");
                node.setAttribute("aria-labelledby", headingId);
                node.append(element("h2", { id: headingId, dir: "auto" }, title));
            } else {
                node.setAttribute("aria-label", "General");
            }
            const list = element("ul", { class: "rows", role: "list" });
            node.append(list);
            section = { node, list };
            page.sections.set(title, section);
            // In the page before any row moves into it: a row moved into a
            // node outside the document would lose the focus it holds.
            sectionsNode.append(node);
        }
        const rows = [];
        for (const s of switches.filter(one => sectionTitle(one) === title)) {
            let row = page.rows.get(s.key);
            if (!row) {
                row = makeRow(s.key);
                page.rows.set(s.key, row);
            }
            rows.push(row.node);
            drawRow(row, s);
        }
        placeInOrder(section.list, rows);
    }
    // Sections left empty go only now, once their rows have moved out (a
    // focused row removed with its section would drop the focus).
    for (const [title, section] of page.sections) {
        if (!titles.includes(title)) {
            section.node.remove();
            page.sections.delete(title);
        }
    }
    placeInOrder(sectionsNode, titles.map(title => page.sections.get(title).node));
    if (switches.length === 0)
        sectionsNode.setAttribute("data-empty", "true");
    else
        sectionsNode.removeAttribute("data-empty");
}

// ---------------------------------------------------------------- a row

function makeRow(key) {
    const row = { key, switch: null, busy: false, pending: null, alert: "", alertRevision: null, madeHere: false };
    const base = newId("switch");
    row.node = element("li", { class: "row", "data-key": key });

    const main = element("div", { class: "row-main" });
    const text = element("div", { class: "row-text" });
    row.button = element("button", { id: `${base}-control`, type: "button", role: "switch", class: "switch" });
    // dir="auto": the daemon's text (a label, a reason) may be right-to-left
    // in a left-to-right page, and is laid out as its own (SWT-24).
    row.label = element("label", { id: `${base}-label`, class: "label", dir: "auto" }); // `for` while not disabled (drawRow)
    row.description = element("p", { id: `${base}-description`, class: "description", dir: "auto" });
    row.reason = element("p", { id: `${base}-reason`, class: "reason", dir: "auto" });
    row.alertNode = element("p", { id: `${base}-alert`, class: "alert", role: "alert" });
    text.append(row.label, row.description, row.reason, row.alertNode);

    row.button.setAttribute("aria-labelledby", row.label.id);
    const track = element("span", { class: "track", "aria-hidden": "true" });
    const handle = element("span", { class: "handle" });
    row.icon = element("span", { class: "icon" });
    handle.append(row.icon);
    track.append(handle);
    row.button.append(track);
    main.append(text, row.button);

    row.whyButton = element("button", { type: "button", class: "why", "aria-expanded": "false" }, "Why?");
    row.panel = element("div", { id: `${base}-panel`, class: "panel", role: "region" });
    row.panel.hidden = true;
    row.whyButton.setAttribute("aria-controls", row.panel.id);
    row.history = element("div", { class: "history" });
    row.admin = element("div", { class: "admin" });
    row.panel.append(row.history, row.admin);
    const tools = element("div", { class: "row-tools" });
    row.quick = element("span", { class: "admin-quick" });
    tools.append(row.whyButton, row.quick);

    // Time: a tried change's prompt (Keep / Undo and the seconds left), a
    // timed value's end, and the offers of one. The nodes are made once and
    // shown or hidden, so that a redraw never takes the focus from them.
    row.time = element("div", { class: "time" });
    row.prompt = element("p", { id: `${base}-prompt`, class: "prompt", "aria-live": "polite" });
    row.promptText = element("span", { class: "prompt-text" });
    // The seconds tick every second: shown, but not announced every time.
    row.countdown = element("span", { class: "countdown", "aria-live": "off" });
    row.prompt.append(row.promptText, " ", row.countdown);
    row.keep = element("button", { type: "button", class: "quick settle" }, "Keep");
    row.undo = element("button", { type: "button", class: "quick settle" }, "Undo");
    row.timed = element("p", { id: `${base}-timed`, class: "timed" });
    row.offHour = element("button", { type: "button", class: "quick offer" }, "Turn off for 1 hour");
    row.offMorning = element("button", { type: "button", class: "quick offer" }, "Turn off until tomorrow");
    row.settleTools = element("span", { class: "settle-tools" });
    row.settleTools.append(row.keep, row.undo);
    row.offers = element("span", { class: "offers" });
    row.offers.append(row.offHour, row.offMorning);
    row.time.append(row.prompt, row.settleTools, row.timed, row.offers);
    row.keep.addEventListener("click", () => settle(row, "confirm"));
    row.undo.addEventListener("click", () => settle(row, "revert"));
    row.offHour.addEventListener("click", () => turnOffFor(row, { for: 3600 }));
    row.offMorning.addEventListener("click", () => turnOffFor(row, { until: nextMorning().toISOString() }));

    row.node.append(main, row.time, tools, row.panel);

    // SWT-1: a click, a click on the label and Space switch it; Enter does not
    // (on the web Enter submits a form). A button turns Enter into a click on
    // keydown, so that keydown is cancelled.
    row.button.addEventListener("keydown", event => {
        if (event.key === "Enter")
            event.preventDefault();
    });
    // Disabled is out of reach (SWT-2): not even a click focuses it.
    row.button.addEventListener("mousedown", event => {
        if (row.switch && row.switch.disabled)
            event.preventDefault();
    });
    row.button.addEventListener("click", event => {
        event.preventDefault();
        activate(row);
    });
    row.whyButton.addEventListener("click", () => toggleWhy(row));
    return row;
}

/** Whether a person may switch it here: not disabled, not held, allowed to write. */
function canSwitch(s) {
    return !s.disabled && !s.readOnly && s.writable !== false;
}

/** The reason shown next to a switch (disabled wins: SWT-25, rule 5). */
function reasonText(s) {
    const lines = [];
    if (s.disabled) {
        const by = { policy: "by policy", admin: "by an administrator", dependency: "" }[s.disabledBy] || "";
        lines.push(s.disabledReason ? `Disabled: ${s.disabledReason}` : `Disabled ${by}.`.replace(" .", "."));
    } else if (s.readOnly) {
        const by = { policy: "by policy", admin: "by an administrator" }[s.heldBy] || "";
        lines.push(s.readOnlyReason ? `Read-only: ${s.readOnlyReason}` : `Read-only, held ${by}.`.replace(" .", "."));
    } else if (s.writable === false && !s.writableUnknown) {
        // The daemon's sentence, the one a write would be refused with (say why).
        // (Unknown just after a hold is lifted: until the daemon says, read-only
        // and no sentence.)
        lines.push(s.writableReason || "You may not change this setting.");
    }
    if (s.disabled && s.disabledUntil)
        lines.push(`Disabled until ${clockTime(s.disabledUntil)}${s.disabledBy === "policy" ? " (schedule)" : ""}.`);
    else if (!s.disabled && s.readOnly && s.readOnlyUntil)
        // A policy's hold ends with its schedule's window (Schedule=).
        lines.push(`Read-only until ${clockTime(s.readOnlyUntil)}${s.heldBy === "policy" ? " (schedule)" : ""}.`);
    if (s.invalid)
        lines.push(`Not applied: ${s.invalidReason || "the system did not take this value"}`);
    // Each line a sentence: a reason of the daemon's has no full stop of its
    // own ("Read-only: Maintenance window Read-only until 17:36." ran on; an audit).
    return lines.map(line => /[.!?…]$/.test(line) ? line : `${line}.`).join(" ");
}

function drawRow(row, s) {
    row.switch = s;
    row.label.textContent = s.label || s.key;
    // A user-scope switch (Scope=user) holds a value per person: say so.
    const description = [s.description || "", s.scope === "user" ? "Your own setting." : ""]
        .filter(Boolean).join(" ");
    row.description.textContent = description;
    row.description.hidden = !description;
    row.panel.setAttribute("aria-label", `Why: ${s.label || s.key}`);
    row.whyButton.setAttribute("aria-label", `Why? History of ${s.label || s.key}`);

    const reason = reasonText(s);
    row.reason.textContent = reason;
    row.reason.hidden = reason === "";
    // The note of a tried change (activate) goes with it.
    if (row.alertOf && row.alertOf !== s.pendingUntil) {
        row.alert = "";
        row.alertOf = null;
    }
    // A refusal or failure said of one revision of the switch is not true
    // of a later one (someone else changed it since: an audit found
    // "Applying … failed" beside a switch applied since).
    if (row.alert && row.alertRevision === "next") {
        row.alertRevision = s.revision;
    } else if (row.alert && row.alertRevision !== null && s.revision !== row.alertRevision) {
        row.alert = "";
        row.alertRevision = null;
    }
    // role="alert": written when it changes, not again on every event of
    // any switch (each write is announced again).
    setText(row.alertNode, row.alert);
    row.alertNode.hidden = row.alert === "";

    const b = row.button;
    // While a click's `set` is on its way the switch shows where it goes
    // (as the seeds' web switch flips before it fires change); the answer, or
    // the refusal, then draws what the daemon holds.
    const shown = row.pending !== null ? row.pending : s.checked;
    b.setAttribute("aria-checked", shown ? "true" : "false");
    const described = [];
    if (description)
        described.push(row.description.id);
    if (reason)
        described.push(row.reason.id);
    if (row.alert)
        described.push(row.alertNode.id);
    if (described.length)
        b.setAttribute("aria-describedby", described.join(" "));
    else
        b.removeAttribute("aria-describedby");

    // Disabled: announced, out of the focus order (SWT-2), and it wins over
    // read-only. Read-only: focusable, announced, not switchable (SWT-25).
    setFlag(b, "aria-disabled", s.disabled);
    setFlag(b, "aria-readonly", !s.disabled && (s.readOnly || s.writable === false));
    setFlag(b, "aria-invalid", s.invalid);
    setFlag(b, "aria-busy", row.busy);
    // Where the focus goes when the switch is disabled under it (its
    // "Why?"): it says why, as the switch did (an audit: the focus moved
    // and nothing said so).
    if (s.disabled && reason)
        row.whyButton.setAttribute("aria-describedby", row.reason.id);
    else
        row.whyButton.removeAttribute("aria-describedby");
    if (s.disabled) {
        b.setAttribute("tabindex", "-1");
        // Nor does a click on its label reach it (SWT-2): a label's click
        // focuses and clicks its control, whatever the control's tabindex.
        row.label.removeAttribute("for");
        // Disabled while it has the focus (an event): the focus (and its
        // ring) goes on, as when a control goes away (handFocus).
        if (document.activeElement === b)
            handFocus(row, []);
    } else {
        b.removeAttribute("tabindex");
        row.label.setAttribute("for", b.id);
    }
    row.node.classList.toggle("is-disabled", !!s.disabled);
    row.node.classList.toggle("is-readonly", !s.disabled && !canSwitch(s));
    row.node.classList.toggle("is-invalid", !!s.invalid);

    // The glyph is decoration (SWT-14): hidden from assistive technology,
    // and drawn only when the icon set has it (SWT-17).
    const iconName = shown ? s.checkedIcon : s.uncheckedIcon;
    const glyph = window.SwitchdIcons ? window.SwitchdIcons.svg(iconName) : null;
    row.icon.replaceChildren(...(glyph ? [glyph] : []));
    row.node.classList.toggle("has-icon", glyph !== null);

    drawTime(row);
    if (row.pendingText)
        described.push(row.prompt.id);
    if (row.timedText)
        described.push(row.timed.id);
    if (described.length)
        b.setAttribute("aria-describedby", described.join(" "));

    drawAdminControls(row);
    // An open "Why?" is read again when its switch changed, not on every
    // event of any switch (it was rebuilt each time, moving a screen
    // reader's place; an audit).
    if (!row.panel.hidden && row.historyRevision !== s.revision)
        loadHistory(row);
}

/** Sets `node`'s text only when it differs: a live region announces every write. */
function setText(node, text) {
    if (node.textContent !== text)
        node.textContent = text;
}

function setFlag(node, name, on) {
    if (on)
        node.setAttribute(name, "true");
    else
        node.removeAttribute(name);
}

function showAlert(row, text) {
    if (!text)
        row.alertOf = null;
    row.alert = text;
    row.alertRevision = null;
    row.alertOffline = false;
    if (row.switch)
        drawRow(row, row.switch);
}

// ---------------------------------------------------------------- time

/**
 * The machine's clock, which switchd's times (`pendingUntil`, `expiresAt`,
 * `changedAt`…) are written in, as this page knows it: the browser's clock
 * may be off by any amount (another computer, a wrong time zone setting, a
 * clock never synchronised), and a count-down of "Keep this change?" read
 * against it is wrong by as much. `offset` (ms) is the machine's time minus
 * the browser's: measured at each connection by asking the machine (`date`
 * through the bridge, half the round trip either way), again when a
 * count-down starts (at most once per MEASURE_AGAIN_MS), and never less than
 * what the daemon's own fresh times say (an event's `time`, a write's
 * `changedAt`, stamped before they reached the page). Until the machine
 * answers (or if it cannot), those times alone say, whichever way the
 * browser is off.
 */
const MEASURE_AGAIN_MS = 10000;
const serverClock = {
    /** null until measured: then the daemon's fresh times alone say (a fast browser too). */
    offset: null,
    /** The largest `time − Date.now()` seen since the last measurement. */
    lowest: -Infinity,
    now() {
        if (this.offset === null)
            return Date.now() + (isFinite(this.lowest) ? this.lowest : 0);
        return Date.now() + Math.max(this.offset, this.lowest);
    },
    /** When (performance.now(), ms) it was last asked: null, never. */
    askedAt: null,
    /**
     * Asked again when a count-down starts (drawTime): a clock stepped since
     * the connection (NTP, a person) would make it wrong by as much. At most
     * once per MEASURE_AGAIN_MS.
     */
    measureAgain() {
        if (this.askedAt !== null && performance.now() - this.askedAt < MEASURE_AGAIN_MS)
            return;
        this.measure();
    },
    measure() {
        this.askedAt = performance.now();
        const sent = Date.now();
        cockpit.spawn(["date", "-u", "+%s.%N"], { err: "ignore" }).then(output => {
            const received = Date.now();
            const machine = parseFloat(output) * 1000;
            if (!isFinite(machine))
                return;
            this.offset = machine - (sent + received) / 2;
            this.lowest = -Infinity;
            redrawTimes();
        }, () => {}); // without it, the daemon's times alone (atLeast)
    },
    /** `iso` was the daemon's time a moment ago (a fresh event or answer). */
    atLeast(iso) {
        const at = Date.parse(iso || "");
        if (isNaN(at))
            return;
        this.lowest = Math.max(this.lowest, at - Date.now());
    },
};

/** A time as the clock on the wall says it: "14:05", with the day if not today. */
function clockTime(iso) {
    const at = new Date(iso);
    if (isNaN(at))
        return iso;
    const time = at.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", hourCycle: "h23" });
    if (at.toDateString() === new Date(serverClock.now()).toDateString())
        return time;
    return `${at.toLocaleDateString([], { weekday: "short", day: "numeric", month: "short" })} ${time}`;
}

/** The next MORNING_HOUR:00 local time (tomorrow's, or today's if still ahead). */
function nextMorning(now = new Date(serverClock.now())) {
    const at = new Date(now);
    at.setHours(MORNING_HOUR, 0, 0, 0);
    if (at <= now)
        at.setDate(at.getDate() + 1);
    return at;
}

/** Seconds until `iso` on the machine's clock (not the browser's). */
function secondsLeft(iso) {
    return Math.max(0, Math.ceil((new Date(iso) - serverClock.now()) / 1000));
}

/** Whether this page uses tried changes for this switch (see TRIED_GROUP). */
function triesChanges(s) {
    return triedAlways && s.group === TRIED_GROUP && s.scope !== "user";
}

/**
 * Shows or hides a control of `row`. One that goes while it holds the focus
 * hands it on (a hidden node drops it): to the first of `next` shown, else to
 * the switch, else (the switch disabled, out of reach: SWT-2) to its "Why?".
 */
function showControl(row, node, on, next = []) {
    const focused = !on && !node.hidden && node.contains(document.activeElement);
    node.hidden = !on;
    if (focused)
        handFocus(row, next);
}

/** showControl for several `[node, on, next]`: those shown first, so that one going can hand them the focus. */
function showControls(row, controls) {
    for (const [node, on, next] of controls) {
        if (on)
            showControl(row, node, on, next);
    }
    for (const [node, on, next] of controls) {
        if (!on)
            showControl(row, node, on, next);
    }
}

function handFocus(row, next) {
    const candidates = [...next];
    if (!(row.switch && row.switch.disabled))
        candidates.push(row.button);
    candidates.push(row.whyButton);
    const target = candidates.find(node => node && node.isConnected && !node.closest("[hidden]"));
    if (target)
        target.focus();
}

/** The prompt of a tried change, the end of a timed value, the offers of one. */
function drawTime(row) {
    const s = row.switch;
    row.pendingText = "";
    row.timedText = "";
    // A count-down that starts is read against the machine's clock as it is now.
    const deadline = s.pendingUntil || s.expiresAt || null;
    if (deadline && deadline !== row.countingTo)
        serverClock.measureAgain();
    row.countingTo = deadline;
    // Keep / Undo: for a tried change of this uid (this page's, or made
    // elsewhere by the same account: the history says who) or for an
    // administrator; anyone else sees the count-down only (the daemon
    // refuses them: PermissionDenied), and is not asked what they cannot
    // answer (an audit).
    if (s.pendingUntil && !row.madeHere && page.administrator !== true && row.makerOf !== s.pendingUntil)
        learnMaker(row, s.pendingUntil);
    const maySettle = !!s.pendingUntil && (row.madeHere || page.administrator === true ||
        (page.uid !== null && row.makerUid === page.uid));
    if (s.pendingUntil) {
        row.pendingText = maySettle ? "Keep this change?" : "Someone is trying this change.";
        const left = secondsLeft(s.pendingUntil);
        row.countdown.textContent = `It goes back in ${left} ${left === 1 ? "second" : "seconds"}.`;
    } else {
        row.madeHere = false;
        row.makerUid = null;
        row.makerOf = null;
        row.countdown.textContent = "";
    }
    if (row.promptText.textContent !== row.pendingText)
        row.promptText.textContent = row.pendingText;
    row.prompt.hidden = !s.pendingUntil;
    showControl(row, row.settleTools, maySettle);
    row.keep.setAttribute("aria-label", `Keep this change of ${s.label || s.key}`);
    row.undo.setAttribute("aria-label", `Undo this change of ${s.label || s.key}`);
    // aria-disabled, not disabled: a disabled button drops the focus.
    setFlag(row.keep, "aria-disabled", !!row.settling);
    setFlag(row.undo, "aria-disabled", !!row.settling);

    if (s.expiresAt) {
        const minutes = Math.max(1, Math.ceil(secondsLeft(s.expiresAt) / 60));
        const state = s.checked ? "On" : "Off";
        // Under a hold the value shown may be the one it fixes (a user's
        // own timed value beneath it), and the hold may keep it at the end:
        // the timer claims no value there (as switchctl says it).
        row.timedText = s.readOnly || s.disabled
            ? `A timed value ends at ${clockTime(s.expiresAt)}, ${s.disabled ? "while disabled" : "under the hold"}.`
            : minutes <= 120
            ? `${state} for ${minutes} more ${minutes === 1 ? "minute" : "minutes"}.`
            : `${state} until ${clockTime(s.expiresAt)}.`;
    }
    row.timed.textContent = row.timedText;
    row.timed.hidden = !row.timedText;

    // A timed value: of the machine's switch, or on a user-scope switch of
    // this user's own value (the timer is theirs, rule 21).
    // While its call is out they stay (the event may come before the
    // answer): the focus moves to the switch only once it can be used.
    const offers = (row.busy && !row.offers.hidden) ||
        (s.group === QUIET_GROUP && s.checked && !s.expiresAt &&
         !s.pendingUntil && canSwitch(s) && row.pending === null);
    showControl(row, row.offers, offers);
    // The visible words first, then whose (WCAG 2.5.3: a name that starts
    // with what is shown is what speech input says; an audit).
    row.offHour.setAttribute("aria-label", `Turn off for 1 hour: ${s.label || s.key}`);
    row.offMorning.setAttribute("aria-label",
                                `Turn off until tomorrow (${MORNING_HOUR}:00): ${s.label || s.key}`);
    row.time.hidden = !s.pendingUntil && !row.timedText && !offers;
}

/** Who made the tried change pending until `until`: the change that set it. */
async function learnMaker(row, until) {
    row.makerOf = until;
    row.makerUid = null;
    let entries;
    try {
        entries = (await watch.call("history", forUser(row.switch, { key: row.key, limit: 10 }))).entries;
    } catch (e) {
        row.makerOf = null; // asked again on the next draw
        return;
    }
    // Newest first: the oldest entry still pending until then made it so.
    const made = entries.filter(entry => entry.state && entry.state.pendingUntil === until).pop();
    if (row.makerOf !== until || !made || !made.actor)
        return;
    row.makerUid = made.actor.uid;
    if (row.switch)
        drawRow(row, row.switch);
}

/** The count-downs and minutes left, where any runs: once a second, and when the clock is measured. */
function redrawTimes() {
    for (const row of page.rows.values()) {
        if (row.switch && (row.switch.pendingUntil || row.switch.expiresAt))
            drawTime(row);
    }
}
setInterval(redrawTimes, 1000);

/** Keep (`confirm`) or Undo (`revert`) a tried change. */
async function settle(row, method) {
    const s = row.switch;
    if (!s || !s.pendingUntil || row.settling || saidOffline(row))
        return;
    row.settling = true;
    setFlag(row.keep, "aria-disabled", true);
    setFlag(row.undo, "aria-disabled", true);
    showAlert(row, "");
    try {
        const answer = await watch.call(method, forUser(s, { key: s.key }));
        row.settling = false;
        takeAnswer(answer);
    } catch (e) {
        row.settling = false;
        await refused(row, e);
    }
    drawRow(row, watch.table.switches.get(row.key) || row.switch);
}

/** "Turn off for 1 hour" / "until tomorrow": a timed value (rule 21). */
async function turnOffFor(row, time) {
    const s = row.switch;
    if (!s || row.busy || !canSwitch(s) || !s.checked || saidOffline(row))
        return;
    row.busy = true;
    showAlert(row, "");
    try {
        const answer = await watch.call("set", forUser(s, { key: s.key, checked: false, ifRevision: s.revision || 0,
                                                           ...time }));
        row.busy = false;
        takeAnswer(answer);
    } catch (e) {
        row.busy = false;
        await refused(row, e);
    }
    drawRow(row, watch.table.switches.get(row.key) || row.switch);
}

// ---------------------------------------------------------------- switching

/**
 * Whether the page is offline, which a click on `row` then hears beside it
 * (it was ignored without a word; an audit) until the page is connected
 * again (connectionChanged clears it). Keep, Undo and the offers say it as
 * the switch does.
 */
function saidOffline(row) {
    if (page.connected)
        return false;
    showAlert(row, "Not changed: this page is not connected to switchd. It reconnects by itself.");
    row.alertOffline = true;
    return true;
}

async function activate(row) {
    const s = row.switch;
    if (!s || row.busy || !canSwitch(s) || saidOffline(row))
        return; // read-only, disabled or offline: activation changes nothing
    if (s.pendingUntil) {
        // Rule 20: while a tried change waits, every write to the value is
        // refused (Conflict). The switch does not move to a value that will
        // not be (SWT): it stays, and says what waits (Keep / Undo, where
        // this page may settle it). No `set` goes.
        row.alertOf = s.pendingUntil;
        showAlert(row, row.settleTools.hidden
            ? "A tried change of this switch waits to be kept or undone."
            : "Keep or undo the tried change first.");
        return;
    }
    row.busy = true;
    row.pending = !s.checked;
    showAlert(row, "");
    const params = forUser(s, { key: s.key, checked: !s.checked, ifRevision: s.revision || 0 });
    const tried = triesChanges(s);
    if (tried)
        params.confirmWithin = TRIED_SECONDS; // revertOnDisconnect: true, the default
    try {
        const answer = await watch.call("set", params);
        row.busy = false;
        row.pending = null;
        if (tried && answer.changed)
            row.madeHere = true;
        takeAnswer(answer);
    } catch (e) {
        row.busy = false;
        row.pending = null;
        await refused(row, e);
    }
    drawRow(row, watch.table.switches.get(row.key) || row.switch);
}

/** A write's answer: the switch as the daemon holds it now, and (changed) the daemon's clock of just now. */
function takeAnswer(answer) {
    if (answer.changed && answer.switch)
        serverClock.atLeast(answer.switch.changedAt);
    watch.takeSwitch(answer.switch);
}

/**
 * A refused or failed call: the daemon's sentence next to the switch, and the
 * switch redrawn as the daemon holds it (from the error's `data.switch`, or
 * a `get` where the daemon sends none).
 */
async function refused(row, error, rootsView = false) {
    row.alert = error.message;
    // A call cut off by a lost connection: said until the page is back
    // (connectionChanged clears it), like a click made while offline.
    row.alertOffline = error.name === "Disconnected";
    // A Conflict in the page's words: the daemon's sentence speaks of
    // revisions, which the person never saw (an audit).
    if (error.name === "Conflict" && error.data && error.data.pending)
        row.alert = "A tried change of this switch waits to be kept or undone.";
    else if (error.name === "Conflict")
        row.alert = "Not changed: it was changed elsewhere since this page showed it. It shows what it is now.";
    // Said of the switch as the refusal found it (the revision it draws
    // next): a later revision clears it (drawRow).
    row.alertRevision = error.data && error.data.switch ? error.data.switch.revision : "next";
    if (rootsView) {
        // The daemon's switch is root's own value (see adminCall): the person's is asked for.
        if (error.name !== "Disconnected")
            await watch.refreshSwitch(row.key);
        return;
    }
    if (error.data && error.data.switch) {
        watch.takeSwitch(error.data.switch);
        return;
    }
    if (error.name === "Disconnected")
        return;
    try {
        watch.takeSwitch(await watch.call("get", forUser(row.switch, { key: row.key })));
    } catch (e) {
        // the switch went away or the daemon did: the watch redraws
    }
}

// ---------------------------------------------------------------- why

function toggleWhy(row, open = row.panel.hidden) {
    row.panel.hidden = !open;
    row.whyButton.setAttribute("aria-expanded", open ? "true" : "false");
    if (open)
        loadHistory(row);
}

function formatTime(iso) {
    if (!iso)
        return "";
    const at = new Date(iso);
    return isNaN(at) ? iso : at.toLocaleString();
}

function actorText(actor) {
    if (!actor)
        return "";
    if (actor.source === "policy")
        return "a policy file";
    if (actor.uid === null || actor.uid === undefined)
        return actor.source || "someone else";
    return actor.uid === 0 ? "root (uid 0)" : `uid ${actor.uid}`;
}

function stateText(state) {
    const parts = [state.checked ? "on" : "off"];
    if (state.disabled)
        parts.push("disabled" + (state.disabledReason ? ` (${state.disabledReason})` : ""));
    else if (state.readOnly)
        parts.push("read-only" + (state.readOnlyReason ? ` (${state.readOnlyReason})` : ""));
    if (state.invalid)
        parts.push("not applied" + (state.invalidReason ? ` (${state.invalidReason})` : ""));
    return parts.join(", ");
}

let historySerial = 0;

/** Fills the "why" panel: who holds the switch, since when, the last changes. */
async function loadHistory(row) {
    row.historyRevision = row.switch ? row.switch.revision : null;
    const serial = ++historySerial;
    row.loadingHistory = serial;
    let entries;
    try {
        entries = (await watch.call("history", forUser(row.switch, { key: row.key, limit: 10 }))).entries;
    } catch (e) {
        if (row.loadingHistory === serial)
            row.history.replaceChildren(element("p", { class: "muted" }, `The history could not be read: ${e.message}`));
        return;
    }
    if (row.loadingHistory !== serial)
        return;
    const s = row.switch;
    const nodes = [];
    const summary = [`It is ${s.checked ? "on" : "off"}`];
    summary.push(s.defaultChecked ? "(default: on)." : "(default: off).");
    nodes.push(element("p", {}, summary.join(" ")));
    const holding = s.disabled ? "disabled" : s.readOnly ? "readOnly" : null;
    if (holding) {
        const by = holding === "disabled" ? s.disabledBy : s.heldBy;
        const since = entries.find(entry => entry.fields.includes(holding));
        let text = holding === "disabled" ? "Disabled" : "Held read-only";
        text += { policy: " by a policy", admin: " by an administrator", dependency: " by another switch" }[by] || "";
        // The policy line, where a policy holds it (the daemon's, refreshed
        // whenever the holder changes: events do not carry it).
        if (by === "policy" && s.policySource)
            text += ` (${s.policySource})`;
        if (since)
            text += ` since ${formatTime(since.time)}` + (by === "policy" ? "" : `, by ${actorText(since.actor)}`);
        nodes.push(element("p", {}, text + "."));
    }
    if (entries.length === 0) {
        nodes.push(element("p", { class: "muted" }, "It has never changed."));
    } else {
        const list = element("ol", { class: "entries", "aria-label": "Last changes, newest first" });
        for (const entry of entries) {
            const by = actorText(entry.actor);
            const what = entry.cause === "policy" ? by : `${entry.cause}${by ? " by " + by : ""}`;
            list.append(element("li", {}, `${formatTime(entry.time)}: ${what} → ${stateText(entry.state)}`));
        }
        nodes.push(list);
    }
    row.history.replaceChildren(...nodes);
}

// ---------------------------------------------------------------- administrators

/**
 * Lock/unlock (a reason and a fixed value) and disable/enable (a reason),
 * for administrators only; nobody else gets them in the page at all.
 * Unlock and Enable act at once from the row; Lock… and Disable… open the
 * "why" panel at their form, which asks for the reason (and fixed value).
 *
 * The controls are made once per row and then only shown, hidden and
 * relabelled: a redraw (an event, a write's answer, however late it comes)
 * never replaces the field an administrator is typing in or the button they
 * are on. One that goes away hands the focus to the control taking its
 * place (Unlock to Lock…, Disable… and its form to Enable, and back).
 */
function drawAdminControls(row) {
    const s = row.switch;
    if (!s)
        return;
    if (page.administrator !== true) {
        if (row.adminView) {
            const focused = row.admin.contains(document.activeElement) ||
                row.quick.contains(document.activeElement);
            row.admin.replaceChildren();
            row.quick.replaceChildren();
            row.adminView = null;
            if (focused)
                handFocus(row, []);
        }
        return;
    }
    const v = row.adminView || (row.adminView = makeAdminControls(row));
    const name = s.label || s.key;
    v.lock.setAttribute("aria-label", `Lock ${name}`);
    v.disable.setAttribute("aria-label", `Disable ${name}`);
    for (const button of [v.unlock, v.lockOpener, v.enable, v.disableOpener]) {
        if (button.nameTail.textContent !== ` ${name}`)
            button.nameTail.textContent = ` ${name}`;
    }
    const lockText = s.readOnly ? "Lock again" : "Lock";
    if (v.lockSubmit.textContent !== lockText)
        v.lockSubmit.textContent = lockText;
    showControls(row, [
        [v.unlock, s.readOnly && s.heldBy === "admin", [v.lockOpener]],
        [v.lockOpener, !s.readOnly && !s.disabled, [v.unlock]],
        [v.enable, s.disabled && s.disabledBy === "admin", [v.disableOpener]],
        [v.disableOpener, !s.disabled, [v.enable]],
        [v.disable, !s.disabled, [v.enable]],
    ]);
}

/** The administrator's controls of a row, made once (see drawAdminControls). */
function makeAdminControls(row) {
    const v = {};
    v.lock = element("form", { class: "admin-form" });
    const lockReason = element("input", { type: "text", id: newId("lock-reason"), autocomplete: "off" });
    const lockValue = element("select", { id: newId("lock-value") });
    lockValue.append(element("option", { value: "" }, "as it is"), element("option", { value: "on" }, "on"),
                     element("option", { value: "off" }, "off"));
    v.lockSubmit = element("button", { type: "submit" }, "Lock");
    v.lock.append(
        element("label", { for: lockReason.id }, "Reason for the lock"), lockReason,
        element("label", { for: lockValue.id }, "Fixed value"), lockValue, v.lockSubmit);
    v.lock.addEventListener("submit", event => {
        event.preventDefault();
        const params = { key: row.key };
        if (lockReason.value.trim())
            params.reason = lockReason.value.trim();
        if (lockValue.value)
            params.checked = lockValue.value === "on";
        adminCall(row, "lock", params, v.lock);
    });

    v.disable = element("form", { class: "admin-form" });
    const disableReason = element("input", { type: "text", id: newId("disable-reason"), autocomplete: "off" });
    v.disable.append(element("label", { for: disableReason.id }, "Reason for disabling"), disableReason,
                     element("button", { type: "submit" }, "Disable"));
    v.disable.addEventListener("submit", event => {
        event.preventDefault();
        const params = { key: row.key };
        if (disableReason.value.trim())
            params.reason = disableReason.value.trim();
        adminCall(row, "disable", params, v.disable);
    });
    row.admin.replaceChildren(element("h3", {}, "Administrator"), v.lock, v.disable);

    // Named with their switch (drawAdminControls): "Unlock Wi-Fi", as Keep
    // and Undo are, since every row has the same ones. The name is the
    // visible text and then the switch's, in text only assistive technology
    // reads ("Lock… Wi-Fi"): it starts with what is seen, so that saying
    // "Lock…" or "Unlock" reaches the button (WCAG 2.5.3, label in name).
    const quick = text => {
        const button = element("button", { type: "button", class: "quick" }, text);
        button.nameTail = element("span", { class: "visually-hidden" });
        button.append(button.nameTail);
        return button;
    };
    const opener = (text, field) => {
        const button = quick(text);
        button.addEventListener("click", () => {
            toggleWhy(row, true);
            field.focus();
        });
        return button;
    };
    const direct = (text, method) => {
        const button = quick(text);
        button.addEventListener("click", () => adminCall(row, method, { key: row.key }));
        return button;
    };
    v.unlock = direct("Unlock", "unlock");
    v.lockOpener = opener("Lock…", lockReason);
    v.enable = direct("Enable", "enable");
    v.disableOpener = opener("Disable…", disableReason);
    for (const node of [v.unlock, v.lockOpener, v.enable, v.disableOpener, v.disable])
        node.hidden = true;
    row.quick.replaceChildren(v.unlock, v.lockOpener, v.enable, v.disableOpener);
    return v;
}

/**
 * An administrator's call; `form`, the form that asked for it, is emptied
 * once it is done. `lock`, `unlock`, `disable`, `enable` and `apply` take
 * no `user` (PROTOCOL "Acting as a user"): when the page shows the person's
 * values (watch.user), the switch in their answer or error is root's own
 * value of a user-scope switch, and of the same revision as the person's:
 * merged, it would stand for "Your own setting." and the watch's event of
 * that revision would be dropped as seen. The person's is asked for (`get`
 * with `user`) instead.
 */
async function adminCall(row, method, params, form) {
    showAlert(row, "");
    const rootsView = watch.user !== null && !!row.switch && row.switch.scope === "user";
    try {
        const answer = await watch.call(method, params);
        if (form)
            form.reset();
        if (!rootsView) {
            takeAnswer(answer);
        } else {
            if (answer.changed && answer.switch)
                serverClock.atLeast(answer.switch.changedAt);
            await watch.refreshSwitch(row.key);
        }
    } catch (e) {
        await refused(row, e, rootsView);
        drawRow(row, watch.table.switches.get(row.key) || row.switch);
    }
}

// ---------------------------------------------------------------- start

watch.start();
