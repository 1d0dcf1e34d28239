/*
 * switchd-client.js: the switchd protocol (docs/protocol.md) for a page or a
 * script, over any transport that carries bytes both ways.
 *
 *   LineFramer      text in (chunks cut anywhere), whole lines out
 *   RpcConnection   JSON-RPC 2.0 over one transport: requests answered by
 *                   id, notifications handed on
 *   ResumableWatch  a watch that survives the transport closing: it opens a
 *                   new one, resumes with `since` from the last revision it
 *                   saw, and merges by each switch's revision, so a change
 *                   is never missed nor applied twice
 *
 * A transport is `{send(text), close()}` made by the caller's `connect()`;
 * the caller feeds what arrives to `connection.receive(text)` and tells
 * `connection.closed(problem)` when it ends. Cockpit's stream channel, a
 * Node socket or a WebSocket bridge all fit. No dependencies, no build step:
 * loaded as a plain script it defines `window.SwitchdClient`; under Node
 * `require()` returns the same object.
 */
(function (root, factory) {
    const api = factory();
    if (typeof module === "object" && module.exports)
        module.exports = api;
    else
        root.SwitchdClient = api;
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    /** Splits a stream of text into lines; a line may arrive in many chunks. */
    class LineFramer {
        constructor() {
            this.pending = "";
        }

        /** Returns the whole lines `chunk` completes (blank lines dropped). */
        push(chunk) {
            this.pending += chunk;
            const parts = this.pending.split("\n");
            this.pending = parts.pop();
            return parts.filter(line => line.trim() !== "");
        }
    }

    /** A JSON-RPC error answer, or a transport that closed under a call. */
    class RpcError extends Error {
        constructor(code, message, data) {
            super(message);
            this.code = code;
            this.data = data || {};
            /** `data.name` (`Conflict`, `ReadOnly`…), or `Disconnected`. */
            this.name = this.data.name || "RpcError";
        }
    }

    /** One JSON-RPC conversation over one transport. */
    class RpcConnection {
        /**
         * `transport.send(text)` writes; `onNotification(method, params)`
         * receives what the daemon sends unasked (`changed`, `schemaChanged`).
         */
        constructor(transport, onNotification) {
            this.transport = transport;
            this.onNotification = onNotification || function () {};
            this.framer = new LineFramer();
            this.nextId = 1;
            this.pending = new Map();
            this.isClosed = false;
            /**
             * The last error the daemon sent with `id: null` and nothing
             * after it (an RpcError), or null: a connection turned away (a
             * limit: `Overloaded`) gets one such error and is closed, and
             * this is why.
             */
            this.farewell = null;
        }

        /** Sends a request; resolves with its result, rejects with RpcError. */
        call(method, params) {
            if (this.isClosed)
                return Promise.reject(new RpcError(0, "The connection to switchd is closed.",
                                                   { name: "Disconnected" }));
            const id = this.nextId++;
            const request = { jsonrpc: "2.0", id, method, params: params || {} };
            return new Promise((resolve, reject) => {
                this.pending.set(id, { resolve, reject });
                this.transport.send(JSON.stringify(request) + "\n");
            });
        }

        /** Feeds bytes that arrived (as text). */
        receive(chunk) {
            for (const line of this.framer.push(chunk)) {
                let message;
                try {
                    message = JSON.parse(line);
                } catch (e) {
                    continue; // not ours to repair; the daemon never sends it
                }
                for (const one of Array.isArray(message) ? message : [message])
                    this.dispatch(one);
            }
        }

        dispatch(message) {
            if (message.id === null && message.error) {
                const e = message.error;
                this.farewell = new RpcError(e.code, e.message, e.data);
                return;
            }
            this.farewell = null; // the conversation went on after it
            if (message.method !== undefined && message.id === undefined) {
                this.onNotification(message.method, message.params || {});
                return;
            }
            const waiter = this.pending.get(message.id);
            if (!waiter)
                return;
            this.pending.delete(message.id);
            if (message.error) {
                const e = message.error;
                waiter.reject(new RpcError(e.code, e.message, e.data));
            } else {
                waiter.resolve(message.result);
            }
        }

        /**
         * The transport ended: every call still waiting fails, with the
         * daemon's own sentence when it said why (`farewell`).
         */
        closed(problem) {
            if (this.isClosed)
                return;
            this.isClosed = true;
            const said = this.farewell ? this.farewell.message : null;
            const error = new RpcError(0, said || problem || "The connection to switchd closed.",
                                       { name: "Disconnected" });
            for (const waiter of this.pending.values())
                waiter.reject(error);
            this.pending.clear();
        }

        close() {
            if (!this.isClosed)
                this.transport.close();
            this.closed();
        }
    }

    const STATE_FIELDS = ["checked", "readOnly", "readOnlyReason", "heldBy", "disabled",
        "disabledReason", "disabledBy", "invalid", "invalidReason",
        // Time (SEMANTICS rules 20–22): null, or when it ends (UTC).
        "pendingUntil", "expiresAt", "readOnlyUntil", "disabledUntil"];

    /** Who holds or disables a switch: an event that changes one of these asks for the whole switch. */
    const HOLD_FIELDS = ["readOnly", "heldBy", "disabled", "disabledBy"];

    /**
     * Members of a Switch that follow its hold but are not in events: what
     * this caller may do with it and the policy line that holds it. An
     * older answer still brings them when it shows the same hold.
     */
    const HOLD_FOLLOWERS = ["writable", "writableReason", "policySource"];

    /** More switches than this to ask about at once: one `list` instead of a `get` each. */
    const ASK_ONE_BY_ONE = 4;

    /** Whether `a` and `b` are held and disabled alike (absent counts as null). */
    function sameHold(a, b) {
        return HOLD_FIELDS.every(name => (a[name] ?? null) === (b[name] ?? null));
    }

    /**
     * Notes on `s` whether this caller may write it at all (`mayWrite`), and
     * why not (`mayWriteReason`), from a whole Switch the daemon sent
     * (`said`): `writable: true` says it may; `writable: false` on a switch
     * that is neither held nor disabled says it may not (not a Writer), and
     * its `writableReason` is the daemon's sentence for that. `writable:
     * false` on a held or disabled switch says nothing either way (the hold
     * is reason enough), so `mayWrite` stays as it was: unknown, until the
     * daemon is asked again. `writable` absent (an older daemon) leaves it
     * to trying.
     */
    function noteWritable(s, said) {
        if (said.writable === undefined) {
            s.mayWrite = true;
            s.writable = !s.disabled && !s.readOnly;
            s.writableReason = null;
        } else if (said.writable === true) {
            s.mayWrite = true;
        } else if (!s.disabled && !s.readOnly) {
            s.mayWrite = false;
            s.mayWriteReason = s.writableReason || null;
        }
        s.writableUnknown = false;
        return s;
    }

    /**
     * `writable` and `writableReason` after an event changed the hold or the
     * disable (events carry neither), until the daemon's answer to `get`
     * says (ResumableWatch asks it): a free switch is writable by whoever is
     * known to write it, says the daemon's reason to whoever is known not
     * to, and is not writable, with no reason yet (`writableUnknown`), for
     * a caller the daemon has not said either of (it was held or disabled
     * in every Switch seen so far). A held or disabled one is taken as not
     * writable (an administrator may still set some: `get` says so) and its
     * hold or disable says why.
     */
    function guessWritable(s) {
        const free = !s.disabled && !s.readOnly;
        s.writable = free && s.mayWrite === true;
        s.writableReason = free && s.mayWrite === false ? s.mayWriteReason || null : null;
        s.writableUnknown = free && s.mayWrite === undefined;
    }

    /**
     * The switches as the daemon last told them, by key. Every update says
     * the revision it is of; an older or equal one than what is held is
     * dropped, so a snapshot, a replay, a `list` and a write's answer can
     * arrive in any order and still leave the newest state.
     */
    class SwitchTable {
        constructor() {
            this.switches = new Map();
            /** The highest revision of any change seen: `since` for a resume. */
            this.revision = 0;
        }

        /** Replaces everything with a snapshot (`watch` or `list` result). */
        reset(switches, revision) {
            this.switches = new Map();
            for (const s of switches)
                this.switches.set(s.key, noteWritable({ ...s }, s));
            this.revision = Math.max(revision || 0, ...switches.map(s => s.revision || 0));
        }

        /**
         * Takes whole Switch objects (a write's answer, `data.switch` of a
         * Conflict, a `list`, a `get`): schema members always, State only
         * when newer, and what follows the hold (HOLD_FOLLOWERS) when newer
         * or of the same hold. Returns true if anything changed.
         */
        mergeSwitch(incoming) {
            const held = this.switches.get(incoming.key);
            if (!held) {
                this.switches.set(incoming.key, noteWritable({ ...incoming }, incoming));
                return true;
            }
            const before = JSON.stringify(held);
            const newer = (incoming.revision || 0) >= (held.revision || 0);
            const followers = newer || sameHold(held, incoming);
            for (const [name, value] of Object.entries(incoming)) {
                const isState = STATE_FIELDS.includes(name) || name === "revision" ||
                    name === "changedAt" || name === "effective";
                if (HOLD_FOLLOWERS.includes(name) ? followers : !isState || newer)
                    held[name] = value;
            }
            if (followers)
                noteWritable(held, incoming);
            return JSON.stringify(held) !== before;
        }

        /**
         * Applies a `changed` event; false if it was seen already or
         * unknown, "hold" if it changed who holds or disables the switch
         * (then what the event cannot say, `writable` and `policySource`,
         * is best asked again: `get`), true otherwise.
         */
        applyEvent(event) {
            this.revision = Math.max(this.revision, event.revision);
            const held = this.switches.get(event.key);
            if (!held || (held.revision || 0) >= event.revision)
                return false;
            const was = Object.fromEntries([...HOLD_FIELDS, "readOnlyReason", "disabledReason"]
                .map(name => [name, held[name]]));
            for (const name of STATE_FIELDS) {
                if (event.state && name in event.state)
                    held[name] = event.state[name];
            }
            held.effective = held.checked && !held.disabled;
            held.revision = event.revision;
            held.changedAt = event.time;
            // One policy may hand the hold to another (heldBy stays
            // "policy"): its line is asked again after a policy's event, or
            // when a policy's reason changed.
            const byPolicy = held.heldBy === "policy" || held.disabledBy === "policy";
            const policyMoved = byPolicy && (event.cause === "policy" ||
                (held.readOnlyReason ?? null) !== (was.readOnlyReason ?? null) ||
                (held.disabledReason ?? null) !== (was.disabledReason ?? null));
            if (sameHold(held, was))
                return policyMoved ? "hold" : true;
            // An event carries neither `writable` nor `policySource`: the
            // daemon's stay while the hold stays, and are guessed when it
            // changed, until the daemon says again. A policy line no longer
            // names anything once no policy holds the switch.
            guessWritable(held);
            if (held.heldBy !== "policy" && held.disabledBy !== "policy")
                held.policySource = null;
            return "hold";
        }

        /** Keeps only `keys` (a `list` after a schema change). */
        retain(keys) {
            const keep = new Set(keys);
            for (const key of [...this.switches.keys()]) {
                if (!keep.has(key))
                    this.switches.delete(key);
            }
        }
    }

    /**
     * A watch of every switch (or `keys`) that outlives its connections.
     *
     * options.connect(onNotification, onClosed) → Promise<RpcConnection>
     *   opens a transport; the caller calls `onClosed(problem)` when that
     *   transport ends (and rejects if it cannot be opened).
     * options.onChange(table, why) after every update ("snapshot", "event",
     *   "schema", "write").
     * options.onStatus("connected" | "disconnected", problem) on each turn.
     * options.retryDelays: milliseconds between reconnection tries.
     * options.prepare(connection) → Promise: called on each new connection
     *   before its `watch` (to learn who the daemon sees, and set `user`).
     *
     * `user`: null, or the uid whose values of user-scope switches the watch
     * (and its `list` and `get`) shows: an administrator acting for a person
     * (PROTOCOL "Acting as a user"). A connection that watches for another
     * user than the last one starts from a snapshot, not with `since`. Such
     * a snapshot's `writable` is that user's (what they could change), so
     * it is followed by a `list`, whose `writable` is this caller's: what
     * the caller, who makes the writes, may change.
     */
    class ResumableWatch {
        constructor(options) {
            this.options = options;
            this.keys = options.keys;
            this.user = options.user === undefined ? null : options.user;
            this.snapshotUser = null;
            this.table = new SwitchTable();
            this.connection = null;
            this.watchId = null;
            this.hasSnapshot = false;
            this.stopped = false;
            this.attempt = 0;
            this.timer = null;
            this.schedule = options.schedule || ((fn, ms) => setTimeout(fn, ms));
            /** Whether open() is under way: what it lists or snapshots covers what events ask. */
            this.opening = false;
            /** Keys to ask about (askAbout), sent together once per tick. */
            this.waiting = new Set();
            /** Keys asked about and not answered yet, and those an event made stale meanwhile. */
            this.asking = new Set();
            this.askAgain = new Set();
            this.flushTimer = null;
        }

        start() {
            this.open();
        }

        stop() {
            this.stopped = true;
            if (this.timer !== null)
                clearTimeout(this.timer);
            if (this.connection)
                this.connection.close();
        }

        /** Calls a method on the current connection (fails while disconnected). */
        call(method, params) {
            if (!this.connection || this.connection.isClosed)
                return Promise.reject(new RpcError(0, "switchd is not connected.",
                                                   { name: "Disconnected" }));
            return this.connection.call(method, params);
        }

        async open() {
            let connection = null;
            try {
                connection = await this.options.connect(
                    (method, params) => this.notified(connection, method, params),
                    problem => this.lost(connection, problem));
            } catch (problem) {
                this.lost(null, problem && problem.message ? problem.message : String(problem));
                return;
            }
            if (this.stopped) {
                connection.close();
                return;
            }
            this.connection = connection;
            this.opening = true;
            this.waiting.clear();
            let listed = false; // a `list` after the watch answer covers the events meanwhile
            try {
                if (this.options.prepare)
                    await this.options.prepare(connection);
                const params = this.asUser(this.keys ? { keys: this.keys } : {});
                if (this.hasSnapshot && this.snapshotUser === this.user) {
                    // Resume: the replay from `since` comes as events, and a
                    // `list` brings what the schema may have changed meanwhile.
                    params.since = this.table.revision;
                    let answer;
                    try {
                        answer = await connection.call("watch", params);
                    } catch (e) {
                        if (e.name !== "HistoryCompacted" && e.name !== "InvalidParams")
                            throw e;
                        // Too far behind (or the daemon's store is younger
                        // than what we saw): start over from a snapshot.
                        delete params.since;
                        answer = await connection.call("watch", params);
                        this.table.reset(answer.switches, answer.revision);
                    }
                    this.watchId = answer.watch;
                    await this.refreshSchema();
                    listed = true;
                } else {
                    const answer = await connection.call("watch", params);
                    this.watchId = answer.watch;
                    this.table.reset(answer.switches, answer.revision);
                    this.hasSnapshot = true;
                    this.snapshotUser = this.user;
                    if (this.user !== null) {
                        await this.refreshSchema();
                        listed = true;
                    }
                }
            } catch (e) {
                this.opening = false;
                this.waiting.clear();
                if (!connection.isClosed)
                    connection.close();
                this.lost(connection, e.message);
                return;
            }
            this.opening = false;
            this.attempt = 0;
            this.report("connected");
            this.options.onChange(this.table, "snapshot");
            // Events between the snapshot and the end: asked now, unless a list answered after them.
            if (listed)
                this.waiting.clear();
            else
                this.flushSoon();
        }

        /** `params` with `user` when the watch is for someone else than the caller. */
        asUser(params) {
            return this.user === null ? params : { ...params, user: this.user };
        }

        /** Re-reads the schema with `list` and merges it by revision. */
        async refreshSchema() {
            this.takeList(await this.connection.call("list", this.asUser({})));
        }

        /** Merges a `list` answer by revision, and forgets switches it no longer has. */
        takeList(listed) {
            const matching = listed.switches.filter(s => this.matches(s.key));
            for (const s of matching)
                this.table.mergeSwitch(s);
            this.table.retain(matching.map(s => s.key));
        }

        matches(key) {
            if (!this.keys)
                return true;
            return this.keys.some(p => p.endsWith("*") ? key.startsWith(p.slice(0, -1)) : key === p);
        }

        notified(connection, method, params) {
            if (connection !== this.connection || (this.watchId !== null && params.watch !== this.watchId))
                return;
            if (method === "changed") {
                const applied = this.table.applyEvent(params);
                if (applied)
                    this.options.onChange(this.table, "event", params.key);
                if (applied === "hold")
                    this.askAbout(params.key);
            } else if (method === "schemaChanged") {
                this.refreshSchema()
                    .then(() => this.options.onChange(this.table, "schema"))
                    .catch(() => {}); // a closed connection resumes and re-reads anyway
            }
        }

        /**
         * Asks the daemon for the whole switch (`get`), for what events do
         * not carry: whether this caller may write it now (`writable`, and
         * why not) and the policy line that holds it.
         */
        async refreshSwitch(key) {
            const connection = this.connection;
            let s;
            try {
                s = await connection.call("get", this.asUser({ key }));
            } catch (e) {
                return; // gone, or disconnected: the resume's `list` brings it
            }
            if (connection === this.connection)
                this.takeSwitch(s);
        }

        /**
         * Asks the daemon about `key` (see refreshSwitch) soon: the keys of
         * one tick go together, a `get` each, or one `list` for more than a
         * few (a policy reload, a schedule, a cascade holds many at once);
         * never twice at once for one key (asked again once answered if an
         * event came meanwhile); nothing while open() is under way, as its
         * snapshot or `list` says it all.
         */
        askAbout(key) {
            if (this.asking.has(key)) {
                this.askAgain.add(key);
                return;
            }
            this.waiting.add(key);
            if (!this.opening)
                this.flushSoon();
        }

        flushSoon() {
            if (this.flushTimer !== null || this.waiting.size === 0)
                return;
            this.flushTimer = setTimeout(() => {
                this.flushTimer = null;
                this.flush();
            }, 0);
        }

        async flush() {
            const keys = [...this.waiting];
            this.waiting.clear();
            const connection = this.connection;
            if (this.opening || !connection || connection.isClosed || keys.length === 0)
                return; // the next open() brings everything
            for (const key of keys)
                this.asking.add(key);
            const done = (asked) => {
                for (const key of asked) {
                    this.asking.delete(key);
                    if (this.askAgain.delete(key) && connection === this.connection)
                        this.askAbout(key);
                }
            };
            if (keys.length > ASK_ONE_BY_ONE) {
                try {
                    const listed = await connection.call("list", this.asUser({}));
                    if (connection === this.connection) {
                        this.takeList(listed);
                        this.options.onChange(this.table, "write");
                    }
                } catch (e) {
                    // disconnected: the resume's `list` brings it
                }
                done(keys);
                return;
            }
            await Promise.all(keys.map(key => this.refreshSwitch(key).then(() => done([key]))));
        }

        /** Takes a whole Switch from a write's answer or a Conflict's data. */
        takeSwitch(s) {
            if (s && this.table.mergeSwitch(s))
                this.options.onChange(this.table, "write", s.key);
        }

        /**
         * `connection` ended (or, null, could not be opened): try again
         * later. Once per connection, however many paths report it.
         */
        lost(connection, problem) {
            if (connection) {
                if (connection.lostReported)
                    return;
                connection.lostReported = true;
                // The daemon said why it closed (a limit): that, not a guess.
                if (connection.farewell)
                    problem = connection.farewell.message;
                connection.closed(problem);
                if (connection !== this.connection && this.connection !== null)
                    return;
            }
            this.connection = null;
            this.watchId = null;
            this.waiting.clear();
            if (this.stopped)
                return;
            this.report("disconnected", problem);
            const delays = this.options.retryDelays || [250, 500, 1000, 2000];
            const delay = delays[Math.min(this.attempt, delays.length - 1)];
            this.attempt += 1;
            if (this.timer !== null)
                clearTimeout(this.timer);
            this.timer = this.schedule(() => {
                this.timer = null;
                if (!this.stopped)
                    this.open();
            }, delay);
        }

        report(status, problem) {
            if (this.options.onStatus)
                this.options.onStatus(status, problem);
        }
    }

    return { LineFramer, RpcConnection, RpcError, SwitchTable, ResumableWatch };
}));
