"""The page in a root (administrator's) Cockpit session, driven by role and
name as a mouse and a keyboard user would, with the daemon's state checked
over its own socket after every step."""

import re

import pytest
from playwright.sync_api import expect

from harness import Cockpit, Daemon, wait_until

# A policy that fixes a value, so that even root is refused something.
POLICY = """[notifications.mail]
ReadOnly=yes
Checked=off
Reason=Mail notifications are off on this machine.
"""


class Relay:
    """Carries the page's Cockpit WebSocket, and can hold back the daemon's
    `changed` events for a while: the page then draws a stale switch, as
    when a change elsewhere races a click. `holding_everything` holds back
    all that comes to the page (answers too), as a loaded machine delays it."""

    def __init__(self):
        self.holding = False
        self.holding_everything = False
        self.held = []
        self.sent = []
        self.route = None

    def handle(self, route):
        server = route.connect_to_server()
        self.route = route

        def to_server(message):
            self.sent.append(message if isinstance(message, str) else message.decode("utf-8", "replace"))
            server.send(message)

        def to_page(message):
            text = message if isinstance(message, str) else message.decode("utf-8", "replace")
            if self.holding_everything or self.holding and '"method":"changed"' in text:
                self.held.append(message)
            else:
                route.send(message)

        route.on_message(to_server)
        server.on_message(to_page)

    def release(self):
        self.holding = False
        self.holding_everything = False
        held, self.held = self.held, []
        for message in held:
            self.route.send(message)

    def watch_requests(self):
        return [line for line in self.sent if '"method":"watch"' in line]


@pytest.fixture(scope="module")
def daemon():
    d = Daemon(policies={"50-test.conf": POLICY}).start()
    yield d
    d.cleanup()


@pytest.fixture(scope="module")
def cockpit():
    c = Cockpit().start()
    yield c
    c.stop()


@pytest.fixture(scope="module")
def relay():
    return Relay()


@pytest.fixture(scope="module")
def page(browser, cockpit, daemon, relay):
    context = browser.new_context()
    context.route_web_socket(re.compile(r".*/cockpit/socket$"), relay.handle)
    page = context.new_page()
    page.goto(cockpit.url(daemon.socket))
    expect(page.get_by_role("switch", name="Wi-Fi")).to_be_visible(timeout=30000)
    yield page
    context.close()


def switch(page, label):
    return page.get_by_role("switch", name=label, exact=True)


def wait_daemon(page, daemon, key, what, check):
    """Polls the daemon until `check(switch)`, keeping the page's events flowing."""
    def current():
        s = daemon.get(key)
        return s if check(s) else None
    return wait_until(f"{key}: {what}", current, pause=page.wait_for_timeout)


def round_trip(page, label):
    """Opens and closes the row's "why" panel: its `history` call is answered
    after every request the page sent before it (answers come in order)."""
    why = page.get_by_role("button", name=f"Why? History of {label}", exact=True)
    why.click()
    panel = page.get_by_role("region", name=f"Why: {label}", exact=True)
    expect(panel.get_by_text(re.compile(r"^It is (on|off)"))).to_be_visible()
    why.click()
    expect(panel).to_be_hidden()


def expect_drawn_as_daemon(page, daemon, key, label):
    """The switch drawn as the daemon holds it, from the daemon's answer: while
    its `set` is out the page shows where the click goes (and is aria-busy,
    taking no further activation), which can look the same."""
    held = daemon.get(key)
    expect(switch(page, label)).not_to_have_attribute("aria-busy", "true")
    expect(switch(page, label)).to_have_attribute("aria-checked", "true" if held["checked"] else "false")
    return held


def test_first_draw_matches_the_daemon(page, daemon):
    listed = daemon.call("list")["switches"]
    assert len(listed) == 6
    for s in listed:
        control = switch(page, s["label"])
        expect(control).to_have_attribute("aria-checked", "true" if s["checked"] else "false")
        if s["description"]:
            expect(control).to_have_accessible_description(re.compile(re.escape(s["description"])))
    # Sections in schema order (the shipped Config names its groups), rows
    # in schema order inside them.
    expect(page.get_by_role("heading", level=2)).to_have_text(["Connectivity", "Notifications", "Email"])
    by_order = sorted(listed, key=lambda s: s["order"])
    expect(page.get_by_role("switch")).to_have_count(len(by_order))
    for index, s in enumerate(by_order):
        expect(page.get_by_role("switch").nth(index)).to_have_accessible_name(s["label"])
    connectivity = page.get_by_role("region", name="Connectivity")
    expect(connectivity.get_by_role("switch")).to_have_count(3)


def test_a_click_switches_it_at_once(page, daemon):
    before = daemon.get("wifi")
    switch(page, "Wi-Fi").click()
    after = wait_daemon(page, daemon, "wifi", "flipped", lambda s: s["checked"] != before["checked"])
    assert after["revision"] > before["revision"]
    expect_drawn_as_daemon(page, daemon, "wifi", "Wi-Fi")


def test_a_click_on_the_label_switches_it(page, daemon):
    before = daemon.get("bluetooth")
    page.locator("label", has_text=re.compile("^Bluetooth$")).click()
    wait_daemon(page, daemon, "bluetooth", "flipped", lambda s: s["checked"] != before["checked"])
    expect_drawn_as_daemon(page, daemon, "bluetooth", "Bluetooth")


def test_space_switches_it_and_enter_does_not(page, daemon):
    control = switch(page, "Chat notifications")
    before = daemon.get("notifications.chat")
    control.focus()
    page.keyboard.press("Enter")
    round_trip(page, "Chat notifications")
    assert daemon.get("notifications.chat")["revision"] == before["revision"], "Enter switched it"
    control.focus()
    page.keyboard.press("Space")
    after = wait_daemon(page, daemon, "notifications.chat", "flipped by Space",
                        lambda s: s["checked"] != before["checked"])
    entries = daemon.call("history", {"key": "notifications.chat"})["entries"]
    assert [e["revision"] for e in entries if e["revision"] > before["revision"]] == [after["revision"]]
    expect_drawn_as_daemon(page, daemon, "notifications.chat", "Chat notifications")
    # The keyboard user is where they were, and can go on: Space again.
    expect(control).to_be_focused()
    page.keyboard.press("Space")
    wait_daemon(page, daemon, "notifications.chat", "flipped back", lambda s: s["checked"] == before["checked"])
    expect(control).to_be_focused()


def test_a_change_made_elsewhere_appears_and_its_dependents_follow(page, daemon):
    assert not daemon.get("airplane-mode")["checked"]
    switch(page, "Chat notifications").focus()
    result = daemon.ctl("on", "airplane-mode")
    assert result.returncode == 0, result.stderr
    expect(switch(page, "Airplane mode")).to_have_attribute("aria-checked", "true")
    # Wi-Fi and Bluetooth conflict with airplane mode (the shipped Config):
    # drawn disabled, saying why, their own values kept.
    for label in ("Wi-Fi", "Bluetooth"):
        expect(switch(page, label)).to_have_attribute("aria-disabled", "true")
        expect(switch(page, label)).to_have_accessible_description(re.compile("Airplane mode is on"))
    expect(switch(page, "Chat notifications")).to_be_focused()  # a redraw does not take the focus
    # Back off, so that the tests after this one find the radios as they were.
    result = daemon.ctl("off", "airplane-mode")
    assert result.returncode == 0, result.stderr
    for label in ("Wi-Fi", "Bluetooth"):
        expect(switch(page, label)).not_to_have_attribute("aria-disabled", "true")
    expect(switch(page, "Chat notifications")).to_be_focused()


def test_read_only_stays_focusable_says_why_and_ignores_activation(page, daemon):
    result = daemon.ctl("lock", "bluetooth", "--reason", "Held for the test.")
    assert result.returncode == 0, result.stderr
    control = switch(page, "Bluetooth")
    expect(control).to_have_attribute("aria-readonly", "true")
    expect(control).to_have_accessible_description(re.compile("Held for the test."))
    expect(page.get_by_text("Held for the test.")).to_be_visible()
    before = daemon.get("bluetooth")
    control.focus()
    expect(control).to_be_focused()
    page.keyboard.press("Space")
    control.click()
    page.locator("label", has_text=re.compile("^Bluetooth$")).click()
    round_trip(page, "Bluetooth")
    assert daemon.get("bluetooth")["revision"] == before["revision"]
    expect_drawn_as_daemon(page, daemon, "bluetooth", "Bluetooth")


def test_disabled_leaves_the_focus_order_says_why_and_wins(page, daemon):
    result = daemon.ctl("disable", "bluetooth", "--reason", "Not on this desk.")
    assert result.returncode == 0, result.stderr
    control = switch(page, "Bluetooth")
    expect(control).to_have_attribute("aria-disabled", "true")
    expect(control).not_to_have_attribute("aria-readonly", "true")  # disabled wins
    expect(control).to_have_accessible_description(re.compile("Not on this desk."))
    expect(control).not_to_have_accessible_description(re.compile("Held for the test."))
    # Tab from the last control of the row above goes past the switch to its "why" button.
    page.locator("li.row", has=switch(page, "Wi-Fi")).get_by_role("button").last.focus()
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Why? History of Bluetooth", exact=True)).to_be_focused()
    before = daemon.get("bluetooth")
    control.click(force=True)
    round_trip(page, "Bluetooth")
    assert daemon.get("bluetooth")["revision"] == before["revision"]
    # Ignored by the page itself: no call, so no refusal to show.
    row = page.locator("li.row", has=control)
    expect(row.get_by_role("alert", include_hidden=True)).to_have_text("")
    for command in (["enable", "bluetooth"], ["unlock", "bluetooth"]):
        assert daemon.ctl(*command).returncode == 0
    expect(control).not_to_have_attribute("aria-disabled", "true")
    expect(control).not_to_have_attribute("aria-readonly", "true")


def test_a_click_on_a_disabled_switchs_label_does_not_reach_it(page, daemon):
    """SWT-2: a disabled switch is not focusable and ignores clicks on its
    label; a label's click would otherwise focus it (tabindex -1 or not)."""
    assert daemon.ctl("disable", "wifi", "--reason", "No radios.").returncode == 0
    control = switch(page, "Wi-Fi")
    expect(control).to_have_attribute("aria-disabled", "true")
    before = daemon.get("wifi")
    # force: Playwright would wait for the control a label names to be enabled.
    page.locator("label", has_text=re.compile("^Wi-Fi$")).click(force=True)
    expect(control).not_to_be_focused()
    round_trip(page, "Wi-Fi")
    assert daemon.get("wifi")["revision"] == before["revision"]
    assert daemon.ctl("enable", "wifi").returncode == 0
    expect(control).not_to_have_attribute("aria-disabled", "true")
    # Enabled again, its label reaches it again.
    page.locator("label", has_text=re.compile("^Wi-Fi$")).click()
    wait_daemon(page, daemon, "wifi", "flipped", lambda s: s["checked"] != before["checked"])
    expect(control).to_be_focused()
    assert daemon.ctl("set", "wifi", "on" if before["checked"] else "off").returncode == 0
    expect(control).to_have_attribute("aria-checked", "true" if before["checked"] else "false")


def test_a_focused_switch_disabled_by_a_change_elsewhere_hands_the_focus_on(page, daemon):
    """Disabled while it has the keyboard focus, the switch leaves the focus
    order (SWT-2): the focus goes to its row's "Why?", not to nowhere, and
    not left on a switch Tab can no longer reach."""
    control = switch(page, "Wi-Fi")
    control.focus()
    assert daemon.ctl("on", "airplane-mode").returncode == 0
    expect(control).to_have_attribute("aria-disabled", "true")
    why = page.get_by_role("button", name="Why? History of Wi-Fi", exact=True)
    expect(why).to_be_focused()
    # …and says why there, as the switch did (the focus moved without a word).
    expect(why).to_have_accessible_description(re.compile(r"airplane|Airplane"))
    assert daemon.ctl("off", "airplane-mode").returncode == 0
    expect(why).not_to_have_attribute("aria-describedby", re.compile(".+"))
    expect(control).not_to_have_attribute("aria-disabled", "true")


def test_a_conflict_redraws_the_switch_from_the_daemon(page, daemon, relay):
    control = switch(page, "Mail notifications")
    # notifications.mail is held by policy; use email.marketing instead.
    control = switch(page, "Marketing emails")
    drawn = daemon.get("email.marketing")
    relay.holding = True
    try:
        # Switched off and on again elsewhere: the same value, a newer revision.
        assert daemon.ctl("toggle", "email.marketing").returncode == 0
        assert daemon.ctl("toggle", "email.marketing").returncode == 0
        moved = daemon.get("email.marketing")
        assert moved["checked"] == drawn["checked"] and moved["revision"] > drawn["revision"]
        # The page still draws the old revision; its click (the switch moves
        # at once) is refused as a Conflict, and the switch goes back to
        # what the daemon holds, which nothing overwrote.
        expect(control).to_have_attribute("aria-checked", "true" if drawn["checked"] else "false")
        control.click()
        row = page.locator("li.row", has=control)
        # Said in the page's words, not the daemon's revisions.
        expect(row.get_by_role("alert")).to_have_text(
            "Not changed: it was changed elsewhere since this page showed it. It shows what it is now.")
        expect(control).to_have_attribute("aria-checked", "true" if moved["checked"] else "false")
        assert daemon.get("email.marketing")["revision"] == moved["revision"]
    finally:
        relay.release()
    # The held event arrives late and is not applied twice.
    round_trip(page, "Marketing emails")
    expect_drawn_as_daemon(page, daemon, "email.marketing", "Marketing emails")
    # The refusal (role="alert") is not written again by the events of
    # other switches: a screen reader announced it again on each (an audit).
    alert = page.locator("li.row", has=control).locator(".alert")
    page.evaluate("""node => {
        window.alertWrites = 0;
        new MutationObserver(m => { window.alertWrites += m.length; })
            .observe(node, { childList: true, characterData: true, subtree: true });
    }""", alert.element_handle())
    wifi = switch(page, "Wi-Fi")
    was = daemon.get("wifi")["checked"]
    assert daemon.ctl("toggle", "wifi").returncode == 0
    expect(wifi).to_have_attribute("aria-checked", "false" if was else "true")
    assert daemon.ctl("toggle", "wifi").returncode == 0
    expect(wifi).to_have_attribute("aria-checked", "true" if was else "false")
    assert page.evaluate("window.alertWrites") == 0
    expect(alert).to_be_visible()
    # A change of this switch made since: what was said of the older
    # revision is no longer true, and goes.
    assert daemon.ctl("toggle", "email.marketing").returncode == 0
    expect(alert).to_be_hidden()
    assert daemon.ctl("toggle", "email.marketing").returncode == 0
    expect_drawn_as_daemon(page, daemon, "email.marketing", "Marketing emails")


def test_playwrights_check_and_uncheck_work_on_the_switch(page, daemon):
    control = switch(page, "Airplane mode")
    control.check()
    wait_daemon(page, daemon, "airplane-mode", "on", lambda s: s["checked"])
    expect_drawn_as_daemon(page, daemon, "airplane-mode", "Airplane mode")
    expect(control).to_be_checked()
    control.uncheck()
    wait_daemon(page, daemon, "airplane-mode", "off", lambda s: not s["checked"])
    expect(control).not_to_be_checked()


def test_an_administrator_locks_and_disables_from_the_page(page, daemon):
    row = page.locator("li.row", has=switch(page, "Wi-Fi"))
    row.get_by_role("button", name="Lock… Wi-Fi", exact=True).click()
    panel = page.get_by_role("region", name="Why: Wi-Fi", exact=True)
    expect(panel.get_by_label("Reason for the lock")).to_be_focused()
    panel.get_by_label("Reason for the lock").fill("Kept on for the demo.")
    panel.get_by_label("Fixed value").select_option("on")
    panel.get_by_role("button", name="Lock", exact=True).click()
    held = wait_daemon(page, daemon, "wifi", "locked", lambda s: s["readOnly"])
    assert held["checked"] is True and held["readOnlyReason"] == "Kept on for the demo."
    assert held["heldBy"] == "admin"
    expect(switch(page, "Wi-Fi")).to_have_attribute("aria-readonly", "true")
    expect(panel.get_by_text(re.compile("Held read-only by an administrator"))).to_be_visible()
    row.get_by_role("button", name="Unlock Wi-Fi", exact=True).click()
    wait_daemon(page, daemon, "wifi", "unlocked", lambda s: not s["readOnly"])
    row.get_by_role("button", name="Disable… Wi-Fi", exact=True).click()
    expect(panel.get_by_label("Reason for disabling")).to_be_focused()
    panel.get_by_label("Reason for disabling").fill("No radios today.")
    panel.get_by_role("button", name="Disable", exact=True).click()
    held = wait_daemon(page, daemon, "wifi", "disabled", lambda s: s["disabled"])
    assert held["disabledReason"] == "No radios today."
    expect(switch(page, "Wi-Fi")).to_have_attribute("aria-disabled", "true")
    row.get_by_role("button", name="Enable Wi-Fi", exact=True).click()
    wait_daemon(page, daemon, "wifi", "enabled", lambda s: not s["disabled"])
    expect(switch(page, "Wi-Fi")).not_to_have_attribute("aria-disabled", "true")
    expect(panel.get_by_role("listitem").first).to_contain_text("enable")


def test_a_late_answer_leaves_the_administrator_typing(page, daemon, relay):
    """The answer to Unlock (and its event) comes after the administrator
    has gone on to Disable… and started typing, as on a loaded machine: the
    redraw it brings leaves them in their field, with what they typed."""
    row = page.locator("li.row", has=switch(page, "Wi-Fi"))
    panel = page.get_by_role("region", name="Why: Wi-Fi", exact=True)
    assert daemon.ctl("lock", "wifi", "--reason", "Held for the test.").returncode == 0
    expect(row.get_by_role("button", name="Unlock Wi-Fi", exact=True)).to_be_visible()
    field = panel.get_by_label("Reason for disabling")
    relay.holding_everything = True
    try:
        row.get_by_role("button", name="Unlock Wi-Fi", exact=True).click()
        wait_daemon(page, daemon, "wifi", "unlocked", lambda s: not s["readOnly"])
        # Still drawn held: its Disable… (a held switch may be disabled too).
        expect(row.get_by_role("button", name="Unlock Wi-Fi", exact=True)).to_be_visible()
        row.get_by_role("button", name="Disable… Wi-Fi", exact=True).click()
        expect(field).to_be_focused()
        page.keyboard.type("No radios ")
    finally:
        relay.release()
    expect(row.get_by_role("button", name="Lock… Wi-Fi", exact=True)).to_be_visible()  # the unlock is drawn
    expect(switch(page, "Wi-Fi")).not_to_have_attribute("aria-readonly", "true")
    expect(field).to_be_focused()
    page.keyboard.type("this afternoon.")
    expect(field).to_have_value("No radios this afternoon.")
    page.keyboard.press("Enter")
    held = wait_daemon(page, daemon, "wifi", "disabled", lambda s: s["disabled"])
    assert held["disabledReason"] == "No radios this afternoon."
    # The form goes with the disable; its focus goes to Enable, which took its place.
    enable = row.get_by_role("button", name="Enable Wi-Fi", exact=True)
    expect(enable).to_be_focused()
    page.keyboard.press("Enter")
    wait_daemon(page, daemon, "wifi", "enabled", lambda s: not s["disabled"])
    expect(row.get_by_role("button", name="Disable… Wi-Fi", exact=True)).to_be_focused()
    expect(field).to_have_value("")  # emptied once it was done


def test_each_administrators_button_names_its_switch(page, daemon):
    """Lock…, Disable…, Unlock and Enable are in every row: each is named
    with its switch, as Keep and Undo are ("Unlock Wi-Fi"), so that a list of
    the page's buttons tells them apart; and each name starts with the text
    shown on it ("Lock… Wi-Fi" for "Lock…": WCAG 2.5.3, label in name), so
    that saying what is seen reaches it."""
    assert daemon.ctl("lock", "bluetooth", "--reason", "Held for the test.").returncode == 0
    assert daemon.ctl("disable", "airplane-mode", "--reason", "Not today.").returncode == 0
    try:
        expect(page.get_by_role("button", name="Unlock Bluetooth", exact=True)).to_be_visible()
        expect(page.get_by_role("button", name="Enable Airplane mode", exact=True)).to_be_visible()
        expect(page.get_by_role("button", name="Lock… Wi-Fi", exact=True)).to_be_visible()
        expect(page.get_by_role("button", name="Disable… Wi-Fi", exact=True)).to_be_visible()
        expect(page.get_by_role("button", name="Disable… Bluetooth", exact=True)).to_be_visible()
        for s in daemon.call("list")["switches"]:
            if not s["readOnly"] and not s["disabled"]:
                expect(page.get_by_role("button", name=f"Lock… {s['label']}", exact=True)).to_have_count(1)
        quick = page.locator(".admin-quick button:visible")
        assert quick.count() >= 4
        for i in range(quick.count()):
            button = quick.nth(i)
            # The text drawn: not in an element clipped to nothing.
            shown = button.evaluate("""b => {
                const walker = document.createTreeWalker(b, NodeFilter.SHOW_TEXT);
                let text = "";
                for (let n = walker.nextNode(); n; n = walker.nextNode()) {
                    const box = n.parentElement.getBoundingClientRect();
                    if (box.width > 1 && box.height > 1)
                        text += n.textContent;
                }
                return text.trim();
            }""")
            assert shown in ("Lock…", "Disable…", "Unlock", "Enable"), shown
            expect(button).to_have_accessible_name(re.compile("^" + re.escape(shown) + r" \S"))
        for name in ("Lock…", "Disable…", "Unlock", "Enable"):
            expect(page.get_by_role("button", name=name, exact=True)).to_have_count(0)
        page.get_by_role("button", name="Unlock Bluetooth", exact=True).click()
        wait_daemon(page, daemon, "bluetooth", "unlocked", lambda s: not s["readOnly"])
        page.get_by_role("button", name="Enable Airplane mode", exact=True).click()
        wait_daemon(page, daemon, "airplane-mode", "enabled", lambda s: not s["disabled"])
    finally:
        daemon.ctl("unlock", "bluetooth")
        daemon.ctl("enable", "airplane-mode")
    expect(page.get_by_role("button", name="Lock… Bluetooth", exact=True)).to_be_visible()


def test_a_refusal_shows_the_daemons_sentence_near_the_switch(page, daemon):
    control = switch(page, "Mail notifications")
    expect(control).to_have_attribute("aria-readonly", "true")
    expect(page.get_by_text("Mail notifications are off on this machine.")).to_be_visible()
    page.get_by_role("button", name="Why? History of Mail notifications", exact=True).click()
    panel = page.get_by_role("region", name="Why: Mail notifications", exact=True)
    panel.get_by_role("button", name="Lock again", exact=True).click()
    try:
        daemon.call("lock", {"key": "notifications.mail"})
        raise AssertionError("the daemon let root lock a policy-held switch")
    except Exception as refusal:  # noqa: BLE001 - the daemon's own sentence
        sentence = str(refusal)
    row = page.locator("li.row", has=control)
    expect(row.get_by_role("alert")).to_have_text(sentence)
    expect(control).to_have_accessible_description(re.compile(re.escape(sentence)))
    expect_drawn_as_daemon(page, daemon, "notifications.mail", "Mail notifications")


def test_a_missing_socket_is_a_clear_message(browser, cockpit, daemon):
    context = browser.new_context()
    try:
        other = context.new_page()
        other.goto(cockpit.url(str(daemon.directory / "no-such.sock")))
        expect(other.get_by_role("status")).to_contain_text("no socket at")
    finally:
        context.close()


def test_the_why_panel_names_the_policy_line_that_holds_it_and_no_other(page, daemon):
    """policySource is not in events: the page asks the daemon for the switch
    when its holder changes, so "Why?" names the policy line that holds it,
    and no line once a policy no longer does."""
    policy = daemon.config / "policy.d" / "60-held.conf"
    policy.write_text("[bluetooth]\nReadOnly=yes\nReason=Held by a policy for the test.\n")
    try:
        assert daemon.ctl("reload").returncode == 0
        control = switch(page, "Bluetooth")
        expect(control).to_have_attribute("aria-readonly", "true")
        page.get_by_role("button", name="Why? History of Bluetooth", exact=True).click()
        panel = page.get_by_role("region", name="Why: Bluetooth", exact=True)
        expect(panel.get_by_text(re.compile(r"^Held read-only by a policy \(60-held\.conf:1\)"))).to_be_visible()
    finally:
        policy.unlink()
    assert daemon.ctl("reload").returncode == 0
    expect(control).not_to_have_attribute("aria-readonly", "true")
    assert daemon.ctl("lock", "bluetooth", "--reason", "Held by an administrator.").returncode == 0
    held = panel.get_by_text(re.compile("^Held read-only by an administrator"))
    expect(held).to_be_visible()
    expect(held).not_to_contain_text(".conf")
    assert daemon.ctl("unlock", "bluetooth").returncode == 0
    expect(control).not_to_have_attribute("aria-readonly", "true")
    page.get_by_role("button", name="Why? History of Bluetooth", exact=True).click()
    expect(panel).to_be_hidden()


def test_a_reload_that_moves_the_focused_switch_keeps_the_focus(page, daemon):
    """A reload moves a row to another section: the one it leaves may go
    (now empty), the one it joins may be new. A redraw never takes the focus."""
    email = daemon.config / "switches.d" / "30-email.conf"
    text = email.read_text()
    control = switch(page, "Marketing emails")
    control.focus()
    try:
        # Into Notifications: Email, left empty, goes.
        email.write_text(text.replace("Group=Email", "Group=Notifications"))
        assert daemon.ctl("reload").returncode == 0
        expect(page.get_by_role("region", name="Notifications").get_by_role("switch")).to_have_count(3)
        expect(page.get_by_role("region", name="Email")).to_have_count(0)
        expect(control).to_be_focused()
        # Into a section the page has not drawn yet.
        email.write_text(text.replace("Group=Email", "Group=Offers"))
        assert daemon.ctl("reload").returncode == 0
        expect(page.get_by_role("region", name="Offers").get_by_role("switch")).to_have_count(1)
        expect(page.get_by_role("region", name="Notifications").get_by_role("switch")).to_have_count(2)
        expect(control).to_be_focused()
    finally:
        email.write_text(text)
        assert daemon.ctl("reload").returncode == 0
    expect(page.get_by_role("region", name="Email").get_by_role("switch")).to_have_count(1)
    expect(page.get_by_role("region", name="Offers")).to_have_count(0)
    expect(control).to_be_focused()
    expect(page.get_by_role("heading", level=2)).to_have_text(["Connectivity", "Notifications", "Email"])


def test_a_reload_that_changes_the_schema_redraws_the_page(page, daemon):
    notifications = daemon.config / "switches.d" / "20-notifications.conf"
    text = notifications.read_text()
    text = text.replace("Label=Chat notifications", "Label=Chat messages")
    text = text[:text.index("[notifications.mail]")]  # removed
    notifications.write_text(text)
    (daemon.config / "switches.d" / "40-news.conf").write_text(
        "[email.news]\nLabel=Newsletter\nGroup=Email\nDescription=A letter a month.\nDefault=off\n")
    result = daemon.ctl("reload")
    assert result.returncode == 0, result.stderr
    expect(switch(page, "Chat messages")).to_be_visible()
    expect(switch(page, "Chat notifications")).to_have_count(0)
    expect(switch(page, "Mail notifications")).to_have_count(0)
    email = page.get_by_role("region", name="Email")
    expect(email.get_by_role("switch")).to_have_count(2)
    expect(email.get_by_role("switch").nth(1)).to_have_accessible_name("Newsletter")
    expect(switch(page, "Newsletter")).to_have_attribute("aria-checked", "false")


def test_a_restart_greys_the_page_and_it_resumes_with_since(page, daemon, relay):
    drawn = switch(page, "Wi-Fi")
    watches_before = len(relay.watch_requests())
    daemon.stop()
    expect(page.get_by_role("status")).to_contain_text("reconnects by itself")
    expect(page.locator("body.offline")).to_have_count(1)
    expect(drawn).to_be_visible()  # what was drawn stays
    # A click meanwhile changes nothing, and says so beside the switch
    # (it was ignored without a word; an audit) until the page is back.
    drawn.click()
    offline_note = page.locator("li.row", has=drawn).locator(".alert")
    expect(offline_note).to_contain_text("not connected to switchd")
    # The live region says it once, not again at every try to reconnect
    # (it was rewritten about once a second; an audit): once a try has
    # found no socket, two more tries, seen as the channels they open,
    # write nothing. (Read before the start, checked after it.)
    expect(page.get_by_role("status")).to_contain_text("no socket at")
    page.evaluate("""() => {
        window.statusWrites = 0;
        new MutationObserver(m => { window.statusWrites += m.length; })
            .observe(document.getElementById("connection"),
                     { childList: true, characterData: true, subtree: true });
    }""")
    def opens():
        return sum('"command":"open"' in line and '"unix":' in line for line in relay.sent)
    tried = opens()
    wait_until("two more tries to reconnect", lambda: opens() >= tried + 2, pause=page.wait_for_timeout)
    rewrites = page.evaluate("window.statusWrites")
    daemon.start()
    assert rewrites == 0
    # A change right after the restart: by replay or live, drawn once.
    before = daemon.get("wifi")
    assert daemon.ctl("toggle", "wifi").returncode == 0
    expect(page.locator("body.offline")).to_have_count(0)
    expect(page.get_by_role("status")).to_be_hidden()
    expect(offline_note).to_be_hidden()
    expect(drawn).to_have_attribute("aria-checked", "false" if before["checked"] else "true")
    resumed = relay.watch_requests()[watches_before:]
    assert resumed and all('"since":' in line for line in resumed), resumed
    # …and the page works on the new connection.
    drawn.click()
    wait_daemon(page, daemon, "wifi", "flipped back", lambda s: s["checked"] == before["checked"])


def test_on_and_off_differ_in_forced_colours(page, daemon):
    """Windows contrast themes (forced colours) drop background colours,
    which alone told on from off: both were an empty outlined pill (an
    audit). The handle and the on track keep system colours."""
    # Reduced motion too: no transition leaves a colour half-way when read.
    page.emulate_media(forced_colors="active", reduced_motion="reduce")
    try:
        def colours(label):
            return switch(page, label).evaluate("""node => {
                const style = part => getComputedStyle(node.querySelector(part));
                return [style(".track").backgroundColor, style(".handle").backgroundColor];
            }""")
        for key, label in [("wifi", "Wi-Fi"), ("email.marketing", "Marketing emails")]:
            on = daemon.get(key)["checked"]
            track, handle = colours(label)
            assert handle != track, (label, track, handle)
            assert daemon.ctl("toggle", key).returncode == 0
            expect(switch(page, label)).to_have_attribute("aria-checked", "false" if on else "true")
            after = colours(label)
            assert after != [track, handle], (label, after)
            assert after[1] != after[0], (label, after)
            assert daemon.ctl("toggle", key).returncode == 0
            expect(switch(page, label)).to_have_attribute("aria-checked", "true" if on else "false")
    finally:
        page.emulate_media(forced_colors="none", reduced_motion="no-preference")


def test_the_page_follows_cockpits_own_light_or_dark_choice(browser, cockpit, daemon):
    """Cockpit's style menu (localStorage "shell:style": auto, light, dark)
    decides, "auto" leaving it to the system, as Cockpit's own pages do; the
    page followed only the system's and disagreed with the shell (an audit)."""
    def background(system, chosen):
        context = browser.new_context(color_scheme=system)
        try:
            if chosen is not None:
                context.add_init_script(f"localStorage.setItem('shell:style', '{chosen}')")
            shown = context.new_page()
            shown.goto(cockpit.url(daemon.socket))
            expect(shown.get_by_role("switch", name="Wi-Fi")).to_be_visible(timeout=30000)
            return shown.evaluate("getComputedStyle(document.body).backgroundColor")
        finally:
            context.close()
    light, dark = "rgb(255, 255, 255)", "rgb(27, 29, 33)"
    assert background("light", None) == light
    assert background("dark", None) == dark
    assert background("dark", "auto") == dark
    assert background("light", "dark") == dark
    assert background("dark", "light") == light
    # A choice made in the shell (another window of the same origin) reaches
    # the page as a `storage` event, as a page in the shell's frame learns it.
    context = browser.new_context(color_scheme="light")
    try:
        shown = context.new_page()
        shown.goto(cockpit.url(daemon.socket))
        expect(shown.get_by_role("switch", name="Wi-Fi")).to_be_visible(timeout=30000)
        shell = context.new_page()
        shell.goto(cockpit.url(daemon.socket))
        shell.evaluate("localStorage.setItem('shell:style', 'dark')")
        expect(shown.locator("html.theme-dark")).to_have_count(1)
        assert shown.evaluate("getComputedStyle(document.body).backgroundColor") == dark
    finally:
        context.close()
