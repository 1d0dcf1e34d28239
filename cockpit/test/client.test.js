// Unit tests of switchd-client.js with Node's own runner: node --test cockpit/test/
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const { LineFramer, RpcConnection, SwitchTable, ResumableWatch } = require("../switchd-client.js");

function fakeTransport() {
    return { sent: [], closedByUs: false, send(text) { this.sent.push(text); }, close() { this.closedByUs = true; } };
}

const wifi = (over) => ({ key: "wifi", label: "Wi-Fi", checked: false, readOnly: false, disabled: false,
                          revision: 0, writable: true, ...over });
const change = (revision, checked, key = "wifi") => ({
    watch: "w1", revision, key, time: "2026-12-01T00:00:00.000Z", cause: "set", fields: ["checked"],
    state: { checked, readOnly: false, readOnlyReason: null, heldBy: null,
             disabled: false, disabledReason: null, disabledBy: null },
});

test("a line cut into chunks anywhere comes out whole, blank lines dropped", () => {
    const framer = new LineFramer();
    assert.deepEqual(framer.push('{"a":'), []);
    assert.deepEqual(framer.push('1}\n\n{"b"'), ['{"a":1}']);
    assert.deepEqual(framer.push(':2}\n{"c":3}\n'), ['{"b":2}', '{"c":3}']);
});

test("answers are matched to their calls by id, in any order", async () => {
    const t = fakeTransport();
    const c = new RpcConnection(t);
    const first = c.call("get", { key: "a" });
    const second = c.call("get", { key: "b" });
    const ids = t.sent.map(line => JSON.parse(line).id);
    assert.equal(new Set(ids).size, 2);
    assert.ok(t.sent.every(line => line.endsWith("\n")));
    c.receive(JSON.stringify({ jsonrpc: "2.0", id: ids[1], result: "B" }) + "\n");
    c.receive(JSON.stringify({ jsonrpc: "2.0", id: ids[0], result: "A" }) + "\n");
    assert.equal(await first, "A");
    assert.equal(await second, "B");
});

test("an error answer rejects with the daemon's name, sentence and data", async () => {
    const t = fakeTransport();
    const c = new RpcConnection(t);
    const call = c.call("set", { key: "wifi", checked: true });
    const id = JSON.parse(t.sent[0]).id;
    c.receive(JSON.stringify({ jsonrpc: "2.0", id, error: { code: -32002, message: "wifi is read-only: held.",
                                                              data: { name: "ReadOnly", reason: "held" } } }) + "\n");
    await assert.rejects(call, e => e.name === "ReadOnly" && e.code === -32002 &&
                         e.message === "wifi is read-only: held." && e.data.reason === "held");
});

test("notifications go to the handler; a closed transport fails what waits", async () => {
    const seen = [];
    const c = new RpcConnection(fakeTransport(), (method, params) => seen.push([method, params.revision]));
    const call = c.call("status");
    c.receive('{"jsonrpc":"2.0","method":"changed","params":{"revision":7}}\n');
    assert.deepEqual(seen, [["changed", 7]]);
    c.closed("gone");
    await assert.rejects(call, e => e.name === "Disconnected");
    await assert.rejects(c.call("status"), e => e.name === "Disconnected");
});

test("the table keeps the newest state whatever order updates come in", () => {
    const table = new SwitchTable();
    table.reset([wifi({ revision: 3 })], 5);
    assert.equal(table.revision, 5);
    assert.equal(table.applyEvent(change(6, true)), true);
    assert.equal(table.applyEvent(change(6, true)), false, "seen twice");
    // A write's answer of an older revision brings no stale state…
    table.mergeSwitch(wifi({ revision: 4, checked: false, label: "Wireless" }));
    assert.equal(table.switches.get("wifi").checked, true);
    // …but its schema members still count.
    assert.equal(table.switches.get("wifi").label, "Wireless");
    table.mergeSwitch(wifi({ revision: 8, checked: false }));
    assert.equal(table.switches.get("wifi").checked, false);
    assert.equal(table.applyEvent(change(7, true)), false, "older than the merged write");
    assert.equal(table.revision, 7, "since follows events only");
});

test("a switch that is neither held nor disabled but not writable stays so after events", () => {
    const table = new SwitchTable();
    table.reset([wifi({ writable: false })], 1);
    table.applyEvent(change(2, true));
    assert.equal(table.switches.get("wifi").writable, false);
    const free = new SwitchTable();
    free.reset([wifi({ writable: true })], 1);
    free.applyEvent({ ...change(2, false), state: { ...change(2, false).state, readOnly: true } });
    assert.equal(free.switches.get("wifi").writable, false);
    free.applyEvent(change(3, false));
    assert.equal(free.switches.get("wifi").writable, true);
});

test("the daemon's reason why this caller may not write outlives events, a hold's does not", () => {
    const table = new SwitchTable();
    const why = "You may not change wifi: only members of the group staff may change system switches.";
    table.reset([wifi({ writable: false, writableReason: why })], 1);
    table.applyEvent(change(2, true));
    assert.equal(table.switches.get("wifi").writableReason, why);
    // Held: the hold says why (the page shows its reason) until it is lifted.
    const held = { readOnly: true, heldBy: "admin", readOnlyReason: "Held." };
    table.applyEvent({ ...change(3, true), state: { ...change(3, true).state, ...held } });
    assert.equal(table.switches.get("wifi").writable, false);
    assert.equal(table.switches.get("wifi").writableReason, null);
    table.applyEvent(change(4, true));
    assert.equal(table.switches.get("wifi").writable, false);
    assert.equal(table.switches.get("wifi").writableReason, why);
    // A writer's switch says nothing.
    const free = new SwitchTable();
    free.reset([wifi({ writable: true, writableReason: null })], 1);
    free.applyEvent({ ...change(2, false), state: { ...change(2, false).state, ...held } });
    free.applyEvent(change(3, false));
    assert.equal(free.switches.get("wifi").writable, true);
    assert.equal(free.switches.get("wifi").writableReason, null);
});

test("an administrator's writable on a held switch survives a change of its value", () => {
    const table = new SwitchTable();
    const held = { readOnly: true, heldBy: "admin", readOnlyReason: "Held." };
    table.reset([wifi({ ...held, writable: true })], 1);
    table.applyEvent({ ...change(2, true), state: { ...change(2, true).state, ...held } });
    assert.equal(table.switches.get("wifi").writable, true);
});

// A daemon in memory: answers watch/list, and can drop the connection.
function fakeDaemon() {
    const daemon = { revision: 2, switches: [wifi({ revision: 2, checked: true })], connections: [], watchCalls: [] };
    daemon.connect = (onNotification, onClosed) => {
        const transport = fakeTransport();
        const connection = new RpcConnection(transport, onNotification);
        transport.send = (text) => {
            const request = JSON.parse(text);
            let result;
            if (request.method === "watch" && "since" in request.params && daemon.compacted) {
                daemon.watchCalls.push(request.params);
                const error = { code: -32009, message: "Changes after revision 3 are no longer retained.",
                                data: { name: "HistoryCompacted", oldest: 9 } };
                queueMicrotask(() => connection.receive(JSON.stringify({ jsonrpc: "2.0", id: request.id, error }) + "\n"));
                return;
            }
            if (request.method === "watch") {
                daemon.watchCalls.push(request.params);
                result = "since" in request.params ? { watch: "w1", revision: daemon.revision }
                    : { watch: "w1", revision: daemon.revision, switches: daemon.switches };
            } else if (request.method === "list") {
                result = { revision: daemon.revision, switches: daemon.switches };
            }
            queueMicrotask(() => connection.receive(JSON.stringify({ jsonrpc: "2.0", id: request.id, result }) + "\n"));
        };
        daemon.drop = () => { connection.closed("daemon stopped"); onClosed("daemon stopped"); };
        daemon.notify = (method, params) => connection.receive(JSON.stringify({ jsonrpc: "2.0", method, params }) + "\n");
        daemon.connections.push(connection);
        return Promise.resolve(connection);
    };
    return daemon;
}

test("a watch draws the snapshot, resumes with since after a drop and re-reads the schema", async () => {
    const daemon = fakeDaemon();
    const statuses = [];
    let pendingRetry = null;
    const watch = new ResumableWatch({
        connect: daemon.connect,
        onChange: () => {},
        onStatus: (s) => statuses.push(s),
        schedule: (fn) => { pendingRetry = fn; return 1; },
    });
    watch.start();
    await new Promise(r => setTimeout(r, 0));
    assert.deepEqual(statuses, ["connected"]);
    assert.equal(watch.table.switches.get("wifi").checked, true);
    daemon.notify("changed", change(3, false));
    assert.equal(watch.table.revision, 3);
    daemon.drop();
    assert.deepEqual(statuses, ["connected", "disconnected"]);
    // Meanwhile: wifi relabelled (a schema change) and a new switch added.
    daemon.revision = 4;
    daemon.switches = [wifi({ revision: 3, checked: false, label: "Wireless" }),
                       wifi({ key: "bluetooth", label: "Bluetooth", revision: 4, checked: true })];
    pendingRetry();
    await new Promise(r => setTimeout(r, 0));
    assert.deepEqual(daemon.watchCalls, [{}, { since: 3 }]);
    assert.deepEqual(statuses, ["connected", "disconnected", "connected"]);
    // The replay of 4 (bluetooth) arrives after the list: seen once only.
    daemon.notify("changed", change(4, true, "bluetooth"));
    assert.equal(watch.table.switches.get("wifi").label, "Wireless");
    assert.equal(watch.table.switches.get("bluetooth").checked, true);
    assert.equal(watch.table.revision, 4);
    // Events of the old connection's watch are no longer taken.
    daemon.connections[0].receive(JSON.stringify({ jsonrpc: "2.0", method: "changed", params: change(9, true) }) + "\n");
    assert.equal(watch.table.switches.get("wifi").checked, false);
    watch.stop();
});

test("schemaChanged re-reads the list: removed switches go, relabelled ones change", async () => {
    const daemon = fakeDaemon();
    const reasons = [];
    const watch = new ResumableWatch({ connect: daemon.connect, onChange: (t, why) => reasons.push(why) });
    watch.start();
    await new Promise(r => setTimeout(r, 0));
    daemon.switches = [wifi({ key: "bluetooth", label: "Bluetooth" })];
    daemon.notify("schemaChanged", { watch: "w1", added: ["bluetooth"], removed: ["wifi"], updated: [] });
    await new Promise(r => setTimeout(r, 0));
    assert.deepEqual([...watch.table.switches.keys()], ["bluetooth"]);
    assert.deepEqual(reasons, ["snapshot", "schema"]);
    watch.stop();
});

test("a resume the daemon can no longer replay starts over from a snapshot", async () => {
    const daemon = fakeDaemon();
    let pendingRetry = null;
    const watch = new ResumableWatch({
        connect: daemon.connect, onChange: () => {}, schedule: (fn) => { pendingRetry = fn; return 1; },
    });
    watch.start();
    await new Promise(r => setTimeout(r, 0));
    daemon.notify("changed", change(3, false));
    daemon.drop();
    daemon.compacted = true;
    daemon.revision = 12;
    daemon.switches = [wifi({ revision: 11, checked: true, label: "Wireless" })];
    pendingRetry();
    await new Promise(r => setTimeout(r, 0));
    assert.deepEqual(daemon.watchCalls, [{}, { since: 3 }, {}]);
    assert.equal(watch.table.switches.get("wifi").checked, true);
    assert.equal(watch.table.revision, 12);
    watch.stop();
});

test("an event's times (pendingUntil, expiresAt, readOnlyUntil, disabledUntil) are kept, and cleared", () => {
    const table = new SwitchTable();
    table.reset([wifi({ revision: 1 })], 1);
    const tried = change(2, true);
    tried.cause = "set";
    tried.state.pendingUntil = "2026-12-01T00:00:30.000Z";
    tried.state.expiresAt = null;
    assert.equal(table.applyEvent(tried), true);
    assert.equal(table.switches.get("wifi").pendingUntil, "2026-12-01T00:00:30.000Z");
    const kept = change(3, true);
    kept.cause = "confirm";
    kept.state.pendingUntil = null;
    kept.state.readOnlyUntil = "2026-12-01T01:00:00.000Z";
    assert.equal(table.applyEvent(kept), true);
    assert.equal(table.switches.get("wifi").pendingUntil, null);
    assert.equal(table.switches.get("wifi").readOnlyUntil, "2026-12-01T01:00:00.000Z");
});

test("a connection the daemon turns away says the daemon's reason", async () => {
    const statuses = [];
    const refusal = { code: -32008, data: { name: "Overloaded" },
                      message: "The daemon is at a limit: too many connections for uid 1001 (MaxConnectionsPerUser=1)." };
    const connect = (onNotification, onClosed) => {
        const connection = new RpcConnection(fakeTransport(), onNotification);
        setTimeout(() => {
            connection.receive(JSON.stringify({ jsonrpc: "2.0", id: null, error: refusal }) + "\n");
            onClosed("switchd closed the connection (it stopped or restarted).");
        }, 0);
        return Promise.resolve(connection);
    };
    const watch = new ResumableWatch({
        connect, onChange: () => {}, onStatus: (status, problem) => statuses.push([status, problem]),
        schedule: () => 1,
    });
    watch.start();
    await new Promise(r => setTimeout(r, 0)); // after the transport's message and close
    assert.deepEqual(statuses, [["disconnected", refusal.message]]);
    // An error with id null that the conversation went on after is not why it closed.
    const c = new RpcConnection(fakeTransport());
    c.receive(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error.",
                                                                 data: { name: "ParseError" } } }) + "\n");
    c.receive('{"jsonrpc":"2.0","method":"changed","params":{"revision":7}}\n');
    assert.equal(c.farewell, null);
});

test("a watch for another user (an administrator acting for the person) names it, and starts over when it changes", async () => {
    const daemon = fakeDaemon();
    let pendingRetry = null;
    const lists = [];
    const connect = (onNotification, onClosed) => daemon.connect(onNotification, onClosed).then(connection => {
        const send = connection.transport.send;
        connection.transport.send = (text) => {
            const request = JSON.parse(text);
            if (request.method === "list")
                lists.push(request.params);
            send(text);
        };
        return connection;
    });
    let uid = 1001;
    const watch = new ResumableWatch({
        connect, onChange: () => {}, schedule: (fn) => { pendingRetry = fn; return 1; },
        prepare: async () => { watch.user = uid; },
    });
    watch.start();
    await new Promise(r => setTimeout(r, 0));
    assert.deepEqual(watch.asUser({ key: "wifi" }), { key: "wifi", user: 1001 });
    // The snapshot's `writable` is the person's; the list's, the caller's.
    assert.deepEqual(lists, [{ user: 1001 }]);
    daemon.notify("changed", change(3, false));
    daemon.drop();
    pendingRetry();
    await new Promise(r => setTimeout(r, 0));
    assert.deepEqual(lists, [{ user: 1001 }, { user: 1001 }], "the resume's list is the person's too");
    daemon.drop();
    uid = null; // this time the daemon sees the person (no administrative access)
    pendingRetry();
    await new Promise(r => setTimeout(r, 0));
    assert.deepEqual(daemon.watchCalls, [{ user: 1001 }, { user: 1001, since: 3 }, {}],
                     "another user's values are a new snapshot, not a resume");
    watch.stop();
});

test("a switch held in the snapshot is not taken as writable once the hold is lifted", () => {
    // Held when first seen: `writable: false` then says nothing of whether
    // this caller may write it when free (SEMANTICS: the Writers group).
    const table = new SwitchTable();
    const held = { readOnly: true, heldBy: "admin", readOnlyReason: "Held." };
    table.reset([wifi({ ...held, writable: false, writableReason: null })], 1);
    const freed = change(2, false);
    assert.equal(table.applyEvent(freed), "hold", "an event that changes the hold asks for the switch");
    const s = table.switches.get("wifi");
    assert.equal(s.readOnly, false);
    assert.equal(s.writable, false, "not guessed writable");
    assert.equal(s.writableUnknown, true);
    // The daemon's answer (a `get`) says; its sentence is kept through events.
    const why = "You may not change wifi: only members of the group root may change system switches.";
    table.mergeSwitch(wifi({ revision: 2, writable: false, writableReason: why }));
    assert.equal(s.writable, false);
    assert.equal(s.writableReason, why);
    assert.equal(s.writableUnknown, false);
    table.applyEvent({ ...change(3, false), state: { ...change(3, false).state, ...held } });
    table.applyEvent(change(4, false));
    assert.equal(s.writable, false);
    assert.equal(s.writableReason, why);
    // A Writer's switch held at first: free again, writable once the daemon says so.
    const writer = new SwitchTable();
    writer.reset([wifi({ ...held, writable: false })], 1);
    writer.applyEvent(change(2, false));
    writer.mergeSwitch(wifi({ revision: 2, writable: true }));
    assert.equal(writer.switches.get("wifi").writable, true);
});

test("an older answer still brings writable and policySource when it shows the same hold", () => {
    const table = new SwitchTable();
    table.reset([wifi({ revision: 1, readOnly: true, heldBy: "admin", writable: false })], 1);
    table.applyEvent(change(5, true)); // lifted at 5
    // A `get` answered at 4 (before the lift): another hold, nothing taken.
    table.mergeSwitch(wifi({ revision: 4, readOnly: true, heldBy: "admin", writable: true }));
    assert.equal(table.switches.get("wifi").writable, false);
    // A `get` answered at 5, its answer after an event of 6: the same hold.
    table.applyEvent(change(6, false));
    table.mergeSwitch(wifi({ revision: 5, checked: true, writable: true }));
    assert.equal(table.switches.get("wifi").writable, true);
    assert.equal(table.switches.get("wifi").checked, false, "no older state");
});

test("the policy line goes when no policy holds the switch, and a get brings the new one", () => {
    const table = new SwitchTable();
    const byPolicy = { readOnly: true, heldBy: "policy", readOnlyReason: "Policy says no.",
                       policySource: "50-test.conf:1" };
    table.reset([wifi({ ...byPolicy, writable: false })], 1);
    // A reload removed the policy (cause policy), then an administrator locked it.
    table.applyEvent(change(2, false));
    assert.equal(table.switches.get("wifi").policySource, null);
    const byAdmin = { readOnly: true, heldBy: "admin", readOnlyReason: "Admin hold." };
    assert.equal(table.applyEvent({ ...change(3, false), state: { ...change(3, false).state, ...byAdmin } }),
                 "hold");
    assert.equal(table.switches.get("wifi").policySource, null);
    // Held by another policy: the event cannot say which line; the get does.
    table.applyEvent({ ...change(4, false), state: { ...change(4, false).state, heldBy: "policy" } });
    table.mergeSwitch(wifi({ revision: 4, readOnly: true, heldBy: "policy", policySource: "60-other.conf:3" }));
    assert.equal(table.switches.get("wifi").policySource, "60-other.conf:3");
});

test("a watch asks for the switch (get) after an event that changed its hold, as its user", async () => {
    const daemon = fakeDaemon();
    const gets = [];
    const connect = (onNotification, onClosed) => daemon.connect(onNotification, onClosed).then(connection => {
        const send = connection.transport.send;
        connection.transport.send = (text) => {
            const request = JSON.parse(text);
            if (request.method !== "get")
                return send(text);
            gets.push(request.params);
            const result = wifi({ revision: 3, writable: false, writableReason: "Not yours." });
            queueMicrotask(() => connection.receive(JSON.stringify({ jsonrpc: "2.0", id: request.id, result }) + "\n"));
        };
        return connection;
    });
    daemon.switches = [wifi({ revision: 2, readOnly: true, heldBy: "admin", writable: false })];
    const watch = new ResumableWatch({ connect, onChange: () => {}, user: 1001 });
    watch.start();
    await new Promise(r => setTimeout(r, 0));
    assert.deepEqual(daemon.watchCalls, [{ user: 1001 }]);
    daemon.notify("changed", change(3, false)); // unlocked
    assert.equal(watch.table.switches.get("wifi").writable, false);
    await new Promise(r => setTimeout(r, 0));
    assert.deepEqual(gets, [{ key: "wifi", user: 1001 }]);
    assert.equal(watch.table.switches.get("wifi").writableReason, "Not yours.");
    daemon.notify("changed", change(4, true)); // only the value: nothing asked
    await new Promise(r => setTimeout(r, 0));
    assert.equal(gets.length, 1);
    watch.stop();
});

test("a watch for another user takes what this caller may change from a list, before the first draw", async () => {
    // switchd computes a snapshot's `writable` for the watch's user, a list's for the caller.
    const daemon = fakeDaemon();
    const theirs = wifi({ revision: 2, writable: false, writableReason: "You may not change wifi." });
    const callers = wifi({ revision: 2, writable: true, writableReason: null });
    const connect = (onNotification, onClosed) => daemon.connect(onNotification, onClosed).then(connection => {
        const send = connection.transport.send;
        connection.transport.send = (text) => {
            const request = JSON.parse(text);
            daemon.switches = [request.method === "list" ? callers : theirs];
            send(text);
        };
        return connection;
    });
    const drawn = [];
    const watch = new ResumableWatch({
        connect, user: 1001, onChange: (table) => drawn.push(table.switches.get("wifi").writable),
    });
    watch.start();
    await new Promise(r => setTimeout(r, 0));
    assert.deepEqual(drawn, [true]);
    assert.equal(watch.table.switches.get("wifi").writableReason, null);
    watch.stop();
});

/** Lets timers of 0 ms run (a flush, then what its answers scheduled). */
const ticks = async () => {
    for (let i = 0; i < 3; i++)
        await new Promise(r => setTimeout(r, 0));
};

test("many events that change holds ask a bounded number of times: one list, one get per key at a time", async () => {
    const daemon = fakeDaemon();
    const asked = [];
    let answer = null; // held answers: the test lets them through
    const held = [];
    const keys = Array.from({ length: 20 }, (_, i) => `s${i}`);
    const lockedState = { checked: false, readOnly: true, heldBy: "policy", readOnlyReason: "Policy.",
                          disabled: false, disabledReason: null, disabledBy: null };
    const connect = (onNotification, onClosed) => daemon.connect(onNotification, onClosed).then(connection => {
        const send = connection.transport.send;
        connection.transport.send = (text) => {
            const request = JSON.parse(text);
            if (request.method === "get" || (request.method === "list" && answer !== null)) {
                asked.push([request.method, request.params.key]);
                const result = request.method === "get" ? wifi({ key: request.params.key, revision: daemon.revision })
                    : { revision: daemon.revision, switches: daemon.switches };
                held.push(() => connection.receive(JSON.stringify({ jsonrpc: "2.0", id: request.id, result }) + "\n"));
                return;
            }
            send(text);
        };
        return connection;
    });
    daemon.switches = keys.map(key => wifi({ key, revision: 2 }));
    let draws = 0;
    const watch = new ResumableWatch({ connect, onChange: () => { draws += 1; } });
    watch.start();
    await ticks();
    answer = true;
    const hold = (revision, key, state) => ({ ...change(revision, false, key), cause: "policy", state });
    const free = { ...lockedState, readOnly: false, heldBy: null, readOnlyReason: null };
    // A policy reload holds all twenty, each event in a chunk of its own.
    keys.forEach((key, i) => daemon.notify("changed", hold(3 + i, key, lockedState)));
    await ticks();
    assert.deepEqual(asked, [["list", undefined]], "one list, not twenty gets");
    // Lifted again while the list is out: asked once more, after it.
    daemon.revision = 30;
    daemon.switches = keys.map(key => wifi({ key, revision: 30 }));
    keys.forEach((key, i) => daemon.notify("changed", hold(23 + i, key, free)));
    await ticks();
    assert.equal(asked.length, 1, "nothing more while the list is out");
    const drawsBefore = draws;
    held.shift()();
    await ticks();
    assert.equal(draws - drawsBefore, 1, "the list draws once");
    assert.deepEqual(asked, [["list", undefined], ["list", undefined]]);
    held.shift()();
    await ticks();
    // Few keys: a get each, one per key at a time.
    daemon.revision = 50;
    daemon.notify("changed", hold(50, "s1", lockedState));
    daemon.notify("changed", hold(51, "s1", free));
    daemon.notify("changed", hold(52, "s2", lockedState));
    await ticks();
    assert.deepEqual(asked.slice(2), [["get", "s1"], ["get", "s2"]]);
    daemon.notify("changed", hold(53, "s1", lockedState));
    daemon.notify("changed", hold(54, "s1", free));
    await ticks();
    assert.equal(asked.length, 4, "s1 is being asked about: not again at once");
    held.shift()();
    await ticks();
    assert.deepEqual(asked.slice(4), [["get", "s1"]], "asked again once, after its answer");
    while (held.length)
        held.shift()();
    await ticks();
    assert.equal(asked.length, 5);
    watch.stop();
});

test("a policy that hands its hold to another policy asks for the new policy line", () => {
    const table = new SwitchTable();
    const byPolicy = { readOnly: true, heldBy: "policy", readOnlyReason: "Policy says no.",
                       policySource: "50-test.conf:1" };
    table.reset([wifi({ ...byPolicy, writable: false })], 1);
    const state = (over) => ({ ...change(2, false).state, ...byPolicy, ...over });
    // Another policy's reason, the same holder: asked (get).
    assert.equal(table.applyEvent({ ...change(2, false), cause: "set",
                                     state: state({ readOnlyReason: "Another policy." }) }), "hold");
    // A reload (cause policy) with the same reason: asked too.
    assert.equal(table.applyEvent({ ...change(3, false), cause: "policy", state: state({ readOnlyReason: "Another policy." }) }),
                 "hold");
    // Not held by a policy: a reason's change alone asks nothing.
    const admin = new SwitchTable();
    admin.reset([wifi({ readOnly: true, heldBy: "admin", readOnlyReason: "A." })], 1);
    assert.equal(admin.applyEvent({ ...change(2, false), cause: "lock",
                                     state: { ...change(2, false).state, readOnly: true, heldBy: "admin", readOnlyReason: "B." } }),
                 true);
});
