"""Switches in time on the page (SEMANTICS rules 20-22), keyboard only: a
tried change kept, undone, and reverted by closing the tab; a timed value
("Turn off for 1 hour", "until tomorrow") and its end; a hold's end.

The page runs with `?tried=yes`: its Connectivity switches are tried
changes although the browser is on the machine (loopback). Real deadlines
are long (30 s, an hour); every step waits for a condition, never a time.
"""

import re
from datetime import datetime, timedelta, timezone

import pytest
from playwright.sync_api import expect

from harness import Cockpit, Daemon, wait_until

SWITCHES = """[wifi]
Label=Wi-Fi
Group=Connectivity
Default=on

[bluetooth]
Label=Bluetooth
Group=Connectivity
Default=off

[notifications.system]
Label=System notifications
Group=Notifications
Default=on

[notifications.chat]
Label=Chat notifications
Group=Notifications
Default=on
Scope=user

[updates.auto]
Label=Automatic updates
Group=Updates
Default=on

[updates.reboot]
Label=Reboot after updates
Group=Updates
Default=off
"""


@pytest.fixture(scope="module")
def daemon():
    d = Daemon(switches=SWITCHES).start()
    yield d
    d.cleanup()


@pytest.fixture(scope="module")
def cockpit():
    c = Cockpit().start()
    yield c
    c.stop()


def open_page(browser, cockpit, daemon):
    context = browser.new_context()
    page = context.new_page()
    page.goto(cockpit.url(daemon.socket) + "&tried=yes")
    expect(page.get_by_role("switch", name="Wi-Fi")).to_be_visible(timeout=30000)
    return context, page


@pytest.fixture(scope="module")
def page(browser, cockpit, daemon):
    context, page = open_page(browser, cockpit, daemon)
    yield page
    context.close()


def switch(page, label):
    return page.get_by_role("switch", name=label, exact=True)


def button(page, name):
    return page.get_by_role("button", name=name, exact=True)


def wait_daemon(page, daemon, key, what, check):
    def current():
        s = daemon.get(key)
        return s if check(s) else None
    return wait_until(f"{key}: {what}", current, pause=page.wait_for_timeout)


def newest_cause(daemon, key):
    return daemon.call("history", {"key": key, "limit": 1})["entries"][0]["cause"]


def parse(iso):
    return datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S.%f%z")


def clock(iso):
    """HH:MM in local time, as the page writes it (the browser's zone is the machine's)."""
    return parse(iso).astimezone().strftime("%H:%M")


def try_a_change(page, daemon, key, label):
    """Space on a Connectivity switch: a tried change, with its prompt."""
    before = daemon.get(key)
    switch(page, label).focus()
    page.keyboard.press("Space")
    tried = wait_daemon(page, daemon, key, "pending", lambda s: s["pendingUntil"] is not None)
    assert tried["checked"] != before["checked"]
    left = (parse(tried["pendingUntil"]) - datetime.now(timezone.utc)).total_seconds()
    assert 0 < left <= 30
    row = page.locator(f'li[data-key="{key}"]')
    expect(row.get_by_text("Keep this change?")).to_be_visible()
    expect(row.get_by_text(re.compile(r"It goes back in \d+ seconds?\."))).to_be_visible()
    # Drawn from the answer (while the `set` is out the page is aria-busy and
    # takes no further activation).
    expect(switch(page, label)).not_to_have_attribute("aria-busy", "true")
    expect(switch(page, label)).to_have_attribute("aria-checked", "true" if tried["checked"] else "false")
    return before, tried


def test_keep_a_tried_change(page, daemon):
    before, tried = try_a_change(page, daemon, "wifi", "Wi-Fi")
    # The count-down counts down (a condition, not a pause).
    row = page.locator('li[data-key="wifi"]')
    first = row.locator(".countdown").text_content()
    expect(row.locator(".countdown")).not_to_have_text(first)
    page.keyboard.press("Tab")
    keep = button(page, "Keep this change of Wi-Fi")
    expect(keep).to_be_focused()
    page.keyboard.press("Enter")
    kept = wait_daemon(page, daemon, "wifi", "kept", lambda s: s["pendingUntil"] is None)
    assert kept["checked"] == tried["checked"]
    assert newest_cause(daemon, "wifi") == "confirm"
    expect(row.get_by_text("Keep this change?")).to_be_hidden()
    # Keep went away with the prompt: the focus is back on the switch.
    expect(switch(page, "Wi-Fi")).to_be_focused()


def test_undo_a_tried_change(page, daemon):
    before, tried = try_a_change(page, daemon, "wifi", "Wi-Fi")
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    expect(button(page, "Undo this change of Wi-Fi")).to_be_focused()
    page.keyboard.press("Space")
    undone = wait_daemon(page, daemon, "wifi", "reverted", lambda s: s["pendingUntil"] is None)
    assert undone["checked"] == before["checked"]
    assert newest_cause(daemon, "wifi") == "revert"
    expect(switch(page, "Wi-Fi")).to_have_attribute("aria-checked", "true" if before["checked"] else "false")
    expect(switch(page, "Wi-Fi")).to_be_focused()


def test_a_pending_switch_does_not_move_and_sends_nothing_until_settled(browser, cockpit, daemon):
    """Rule 20: while a tried change waits, every write to the value is
    refused. Space on the pending switch neither moves it (SWT: it shows
    nothing that will not happen) nor sends a `set`: the row says to keep or
    undo the change first, and the switch keeps the focus."""
    context = browser.new_context()
    sent = []

    def carry(route):
        server = route.connect_to_server()

        def to_server(message):
            if isinstance(message, str):
                sent.append(message)
            server.send(message)
        route.on_message(to_server)
        server.on_message(route.send)

    context.route_web_socket(re.compile(r".*/cockpit/socket$"), carry)
    before = daemon.get("bluetooth")
    try:
        page = context.new_page()
        page.goto(cockpit.url(daemon.socket) + "&tried=yes")
        expect(switch(page, "Bluetooth")).to_be_visible(timeout=30000)
        _, tried = try_a_change(page, daemon, "bluetooth", "Bluetooth")
        shown = "true" if tried["checked"] else "false"
        sets = len([line for line in sent if '"method":"set"' in line])
        assert sets >= 1
        page.keyboard.press("Space")
        note = page.get_by_role("alert").filter(has_text="Keep or undo the tried change first.")
        expect(note).to_be_visible()
        expect(switch(page, "Bluetooth")).to_have_attribute("aria-checked", shown)
        expect(switch(page, "Bluetooth")).to_be_focused()
        expect(switch(page, "Bluetooth")).to_have_accessible_description(
            re.compile(r"Keep or undo the tried change first\."))
        switch(page, "Bluetooth").click()
        expect(switch(page, "Bluetooth")).to_have_attribute("aria-checked", shown)
        # Keep goes through the same socket after them: once it is sent, no
        # `set` was before it.
        page.keyboard.press("Tab")
        expect(button(page, "Keep this change of Bluetooth")).to_be_focused()
        page.keyboard.press("Enter")
        wait_daemon(page, daemon, "bluetooth", "kept", lambda s: s["pendingUntil"] is None)
        assert any('"method":"confirm"' in line for line in sent)
        assert len([line for line in sent if '"method":"set"' in line]) == sets
        assert daemon.get("bluetooth")["checked"] == tried["checked"]
        # The note goes with the tried change.
        expect(note).to_be_hidden()
        expect(switch(page, "Bluetooth")).to_have_attribute("aria-checked", shown)
    finally:
        context.close()
        # Back as it was, for the tests after this one (a plain write: no prompt).
        daemon.call("set", {"key": "bluetooth", "checked": before["checked"]})


def test_closing_the_tab_reverts_its_tried_change(browser, cockpit, daemon, page):
    context, other = open_page(browser, cockpit, daemon)
    try:
        before, tried = try_a_change(other, daemon, "bluetooth", "Bluetooth")
        # The first page sees the other's tried change: the count-down, and
        # (root administers) Keep and Undo.
        row = page.locator('li[data-key="bluetooth"]')
        expect(row.get_by_text("Keep this change?")).to_be_visible()
        expect(button(page, "Keep this change of Bluetooth")).to_be_visible()
        other.close()
    finally:
        context.close()
    reverted = wait_daemon(page, daemon, "bluetooth", "reverted on close", lambda s: s["pendingUntil"] is None)
    assert reverted["checked"] == before["checked"]
    entry = daemon.call("history", {"key": "bluetooth", "limit": 1})["entries"][0]
    assert entry["cause"] == "revert" and entry["revision"] > tried["revision"]
    expect(row.get_by_text("Keep this change?")).to_be_hidden()
    expect(switch(page, "Bluetooth")).to_have_attribute("aria-checked", "true" if before["checked"] else "false")


def test_a_change_tried_elsewhere_can_be_undone_here(page, daemon):
    # Another client's tried change that outlives its connection.
    daemon.call("set", {"key": "updates.reboot", "checked": True, "confirmWithin": 600,
                        "revertOnDisconnect": False})
    row = page.locator('li[data-key="updates.reboot"]')
    expect(row.get_by_text("Keep this change?")).to_be_visible()
    expect(row.get_by_text(re.compile(r"It goes back in \d+ seconds\."))).to_be_visible()
    switch(page, "Reboot after updates").focus()
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    expect(button(page, "Undo this change of Reboot after updates")).to_be_focused()
    page.keyboard.press("Enter")
    wait_daemon(page, daemon, "updates.reboot", "reverted", lambda s: s["pendingUntil"] is None and not s["checked"])
    assert newest_cause(daemon, "updates.reboot") == "revert"
    expect(switch(page, "Reboot after updates")).to_be_focused()


def test_turn_off_for_one_hour(page, daemon):
    assert daemon.get("notifications.system")["checked"]
    switch(page, "System notifications").focus()
    page.keyboard.press("Tab")
    offer = button(page, "Turn off for 1 hour: System notifications")
    expect(offer).to_be_focused()
    page.keyboard.press("Enter")
    timed = wait_daemon(page, daemon, "notifications.system", "timed off", lambda s: s["expiresAt"] is not None)
    assert not timed["checked"]
    ahead = (parse(timed["expiresAt"]) - datetime.now(timezone.utc)).total_seconds()
    assert 3600 - 60 < ahead <= 3600
    row = page.locator('li[data-key="notifications.system"]')
    expect(row.get_by_text(re.compile(r"^Off for (59|60) more minutes\.$"))).to_be_visible()
    expect(switch(page, "System notifications")).to_have_accessible_description(re.compile("more minutes"))
    # The offers went while it is off: the focus is on the switch, and Space
    # turns it back on, which ends the timer.
    expect(offer).to_be_hidden()
    expect(switch(page, "System notifications")).to_be_focused()
    page.keyboard.press("Space")
    on = wait_daemon(page, daemon, "notifications.system", "on again", lambda s: s["checked"])
    assert on["expiresAt"] is None
    expect(row.get_by_text(re.compile("more minutes"))).to_be_hidden()
    expect(offer).to_be_visible()


def test_turn_off_until_tomorrow(page, daemon):
    switch(page, "System notifications").focus()
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    expect(button(page, "Turn off until tomorrow (8:00): System notifications")).to_be_focused()
    page.keyboard.press("Space")
    timed = wait_daemon(page, daemon, "notifications.system", "off until morning",
                        lambda s: s["expiresAt"] is not None)
    assert not timed["checked"]
    ends = parse(timed["expiresAt"]).astimezone()
    now = datetime.now().astimezone()
    assert (ends.hour, ends.minute, ends.second) == (8, 0, 0)
    assert now < ends <= now + timedelta(days=1)
    row = page.locator('li[data-key="notifications.system"]')
    # (Within two hours of it, the page counts minutes instead.)
    expect(row.get_by_text(re.compile(r"^Off (until .*08:00|for \d+ more minutes?)\.$"))).to_be_visible()
    daemon.call("set", {"key": "notifications.system", "checked": True})
    expect(button(page, "Turn off for 1 hour: System notifications")).to_be_visible()


def test_a_user_scope_switch_is_turned_off_for_this_user_alone(page, daemon):
    # The session's user (root here) times their own value; nobody else's moves.
    expect(switch(page, "Chat notifications")).to_have_attribute("aria-checked", "true")
    switch(page, "Chat notifications").focus()
    page.keyboard.press("Tab")
    offer = button(page, "Turn off for 1 hour: Chat notifications")
    expect(offer).to_be_focused()
    page.keyboard.press("Enter")
    timed = wait_daemon(page, daemon, "notifications.chat", "timed off", lambda s: s["expiresAt"] is not None)
    assert not timed["checked"] and timed["user"] == 0
    other = daemon.call("get", {"key": "notifications.chat", "user": 1000})
    assert other["checked"] and other["expiresAt"] is None
    row = page.locator('li[data-key="notifications.chat"]')
    expect(row.get_by_text(re.compile(r"^Off for (59|60) more minutes\.$"))).to_be_visible()
    expect(switch(page, "Chat notifications")).to_be_focused()
    page.keyboard.press("Space")
    on = wait_daemon(page, daemon, "notifications.chat", "on again", lambda s: s["checked"])
    assert on["expiresAt"] is None
    expect(offer).to_be_visible()


def test_a_timed_hold_shows_its_end(page, daemon):
    locked = daemon.call("lock", {"key": "updates.auto", "reason": "Held for the test.", "for": 600})["switch"]
    control = switch(page, "Automatic updates")
    expect(control).to_have_attribute("aria-readonly", "true")
    expect(control).to_have_accessible_description(
        re.compile(r"Read-only until (.* )?" + re.escape(clock(locked["readOnlyUntil"]) + ".")))
    # A reason without a full stop still ends its sentence before the end's.
    relocked = daemon.call("lock", {"key": "updates.auto", "reason": "Maintenance window", "for": 600})["switch"]
    expect(control).to_have_accessible_description(re.compile(
        r"Read-only: Maintenance window\. Read-only until " + re.escape(clock(relocked["readOnlyUntil"]) + ".")))
    until = (datetime.now(timezone.utc) + timedelta(minutes=20)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    disabled = daemon.call("disable", {"key": "updates.auto", "until": until})["switch"]
    expect(control).to_have_attribute("aria-disabled", "true")
    expect(page.get_by_text(re.compile(r"Disabled until (.* )?" + re.escape(clock(disabled["disabledUntil"]) + "."))))\
        .to_be_visible()
    daemon.call("enable", {"key": "updates.auto"})
    daemon.call("unlock", {"key": "updates.auto"})
    expect(control).not_to_have_attribute("aria-readonly", "true")
    expect(page.get_by_text(re.compile("until \\d\\d:\\d\\d"))).to_have_count(0)


def test_a_scheduled_hold_shows_its_windows_end(page, daemon):
    # A policy that holds from a minute ago for an hour, in the local time
    # the daemon and the browser share (a window past midnight runs on).
    now = datetime.now().astimezone()
    start, end = now - timedelta(minutes=1), now + timedelta(minutes=60)
    policy = daemon.config / "policy.d" / "50-exam.conf"
    policy.write_text("[updates.reboot]\nReadOnly=yes\nReason=Exam.\n"
                      f"Schedule=Mon..Sun {start:%H:%M}-{end:%H:%M}\n")
    try:
        daemon.call("reload")
        held = daemon.get("updates.reboot")
        assert held["heldBy"] == "policy" and held["readOnlyUntil"] is not None
        assert clock(held["readOnlyUntil"]) == f"{end:%H:%M}"
        control = switch(page, "Reboot after updates")
        expect(control).to_have_attribute("aria-readonly", "true")
        expect(control).to_have_accessible_description(
            re.compile(r"Read-only until (.* )?" + re.escape(f"{end:%H:%M}") + r" \(schedule\)\."))
    finally:
        policy.unlink()
        daemon.call("reload")
    expect(switch(page, "Reboot after updates")).not_to_have_attribute("aria-readonly", "true")


@pytest.mark.parametrize("skew", [timedelta(minutes=10), timedelta(minutes=-10)], ids=["fast", "slow"])
def test_the_time_left_is_counted_on_the_machines_clock_not_the_browsers(browser, cockpit, daemon, skew):
    """The browser's clock 10 minutes off: the count-downs and minutes left
    are still those of the daemon's deadlines (its wall clock, the
    machine's), for a tried change pending before the page loaded, one made
    here, and a timed value."""
    daemon.call("set", {"key": "updates.reboot", "checked": True, "confirmWithin": 600,
                        "revertOnDisconnect": False})
    context = browser.new_context()
    try:
        page = context.new_page()
        page.clock.install(time=datetime.now(timezone.utc) + skew)
        page.goto(cockpit.url(daemon.socket) + "&tried=yes")
        expect(switch(page, "Wi-Fi")).to_be_visible(timeout=30000)
        # Pending before the page loaded (600 s): 10 minutes fast, the
        # browser's clock says it is due; 10 minutes slow, 1200 s to go.
        row = page.locator('li[data-key="updates.reboot"]')
        expect(row.locator(".countdown")).to_have_text(re.compile(r"^It goes back in (5\d\d|600) seconds\.$"))
        # Made here (TRIED_SECONDS, 30): 0 or 630 by the browser's clock.
        before, tried = try_a_change(page, daemon, "bluetooth", "Bluetooth")
        row = page.locator('li[data-key="bluetooth"]')
        expect(row.locator(".countdown")).to_have_text(re.compile(r"^It goes back in ([12]\d|30) seconds\.$"))
        page.keyboard.press("Tab")
        page.keyboard.press("Tab")
        expect(button(page, "Undo this change of Bluetooth")).to_be_focused()
        page.keyboard.press("Enter")
        wait_daemon(page, daemon, "bluetooth", "reverted", lambda s: s["pendingUntil"] is None)
        # An hour off: 50 or 70 minutes by the browser's clock.
        switch(page, "System notifications").focus()
        page.keyboard.press("Tab")
        expect(button(page, "Turn off for 1 hour: System notifications")).to_be_focused()
        page.keyboard.press("Enter")
        wait_daemon(page, daemon, "notifications.system", "timed off", lambda s: s["expiresAt"] is not None)
        row = page.locator('li[data-key="notifications.system"]')
        expect(row.get_by_text(re.compile(r"^Off for (59|60) more minutes\.$"))).to_be_visible()
    finally:
        context.close()
        daemon.call("revert", {"key": "updates.reboot"})
        daemon.call("set", {"key": "notifications.system", "checked": True})


def count_date_spawns(context, refuse=False):
    """The page's frames to the bridge pass through this: each spawn of
    `date` (the machine's clock) is recorded in the list returned, and with
    `refuse` it is made to run `false` instead."""
    spawned = []

    def carry(route):
        server = route.connect_to_server()

        def to_server(message):
            if isinstance(message, str) and '"spawn":["date"' in message:
                spawned.append(message)
                if refuse:
                    message = re.sub(r'"spawn":\[[^\]]*\]', '"spawn":["false"]', message)
            server.send(message)
        route.on_message(to_server)
        server.on_message(route.send)

    context.route_web_socket(re.compile(r".*/cockpit/socket$"), carry)
    return spawned


def test_a_fast_browser_is_corrected_by_the_daemons_times_when_the_machine_cannot_be_asked(
        browser, cockpit, daemon):
    """The browser's clock 10 minutes fast and `date` on the machine
    failing (the page's spawn is made to run `false`): a write's answer
    (its `changedAt`, the daemon's clock of a moment ago) still sets the
    count-down, not the browser's clock."""
    context = browser.new_context()
    spawned = count_date_spawns(context, refuse=True)
    try:
        page = context.new_page()
        page.clock.install(time=datetime.now(timezone.utc) + timedelta(minutes=10))
        page.goto(cockpit.url(daemon.socket) + "&tried=yes")
        expect(switch(page, "Wi-Fi")).to_be_visible(timeout=30000)
        assert spawned, "the page asked the machine's clock"
        try_a_change(page, daemon, "bluetooth", "Bluetooth")
        row = page.locator('li[data-key="bluetooth"]')
        expect(row.locator(".countdown")).to_have_text(re.compile(r"^It goes back in ([12]\d|30) seconds\.$"))
        button(page, "Undo this change of Bluetooth").click()
        wait_daemon(page, daemon, "bluetooth", "reverted", lambda s: s["pendingUntil"] is None)
    finally:
        context.close()


def test_the_machines_clock_is_measured_again_when_a_count_down_starts(browser, cockpit, daemon):
    """The machine's clock is asked (`date` through the bridge) at the
    connection, and again when a count-down starts, once the last asking is
    10 s old (the page's fake clock is moved on, not waited for)."""
    context = browser.new_context()
    spawned = count_date_spawns(context)
    try:
        page = context.new_page()
        page.clock.install()
        page.goto(cockpit.url(daemon.socket) + "&tried=yes")
        expect(switch(page, "Wi-Fi")).to_be_visible(timeout=30000)
        wait_until("the clock asked at the connection", lambda: spawned, pause=page.wait_for_timeout)
        assert len(spawned) == 1
        page.clock.fast_forward("00:11")
        try_a_change(page, daemon, "bluetooth", "Bluetooth")
        wait_until("the clock asked again", lambda: len(spawned) >= 2, pause=page.wait_for_timeout)
        button(page, "Undo this change of Bluetooth").click()
        wait_daemon(page, daemon, "bluetooth", "reverted", lambda s: s["pendingUntil"] is None)
    finally:
        context.close()


def test_keep_and_the_offers_say_so_while_the_page_is_offline(page, daemon):
    """Keep and "Turn off for 1 hour" (Undo is Keep's twin: one guard)
    clicked while switchd is away say beside their switch that nothing
    changed, as the switch does (they were ignored without a word; an
    audit), until the page is back; Undo then works."""
    daemon.call("set", {"key": "updates.reboot", "checked": True, "confirmWithin": 600,
                        "revertOnDisconnect": False})
    daemon.call("set", {"key": "notifications.system", "checked": True})
    tried = page.locator('li[data-key="updates.reboot"]')
    expect(tried.get_by_text("Keep this change?")).to_be_visible()
    offer = button(page, "Turn off for 1 hour: System notifications")
    expect(offer).to_be_visible()
    daemon.stop()
    expect(page.locator("body.offline")).to_have_count(1)
    notes = []
    for clicked, key in [(button(page, "Keep this change of Reboot after updates"), "updates.reboot"),
                         (offer, "notifications.system")]:
        clicked.click()
        note = page.locator(f'li[data-key="{key}"]').locator(".alert")
        expect(note).to_contain_text("Not changed: this page is not connected to switchd.")
        notes.append(note)
    daemon.start()
    expect(page.locator("body.offline")).to_have_count(0)
    for note in notes:
        expect(note).to_be_hidden()
    # Nothing went while it was away: the tried change still waits, the
    # switch is on with no timer.
    assert daemon.get("updates.reboot")["pendingUntil"] is not None
    system = daemon.get("notifications.system")
    assert system["checked"] and system["expiresAt"] is None
    button(page, "Undo this change of Reboot after updates").click()
    wait_daemon(page, daemon, "updates.reboot", "reverted", lambda s: s["pendingUntil"] is None)
