"""The page in an ordinary account's Cockpit session with administrative
access turned on (Cockpit's "superuser"): the page's channel to switchd is
root's, so switchd sees uid 0, while "Your own setting." is still the
logged-in person's (SEMANTICS rule 11): the page names them with `user`."""

import re

import pytest
from playwright.sync_api import expect

from harness import Cockpit, Daemon, ensure_user, start_superuser, wait_until

USER = "switchd-cockpit-test"


@pytest.fixture(scope="module")
def account():
    return ensure_user(USER)


@pytest.fixture(scope="module")
def daemon():
    # The person is not a Writer: root is, and writes for them here.
    d = Daemon(settings="Writers=root\n").start()
    # root's own values differ from the person's (who never set them: on).
    d.call("set", {"key": "notifications.chat", "checked": False})
    d.call("set", {"key": "email.marketing", "checked": False})
    yield d
    d.cleanup()


@pytest.fixture(scope="module")
def sent():
    """What the page sends to switchd, frame by frame."""
    return []


@pytest.fixture(scope="module")
def page(browser, account, daemon, sent):
    cockpit = Cockpit(user=USER, superuser=True).start()
    context = browser.new_context()

    def carry(route):
        server = route.connect_to_server()

        def to_server(message):
            sent.append(message if isinstance(message, str) else message.decode("utf-8", "replace"))
            server.send(message)
        route.on_message(to_server)
        server.on_message(route.send)

    context.route_web_socket(re.compile(r".*/cockpit/socket$"), carry)
    page = context.new_page()
    page.goto(cockpit.url(daemon.socket))
    expect(page.get_by_role("switch", name="Wi-Fi")).to_be_visible(timeout=30000)
    sent.clear()  # what the page sent as the person alone: no `user`
    start_superuser(page)
    # root's channel: an administrator's controls.
    expect(page.get_by_role("button", name="Lock… Wi-Fi", exact=True)).to_be_visible(timeout=30000)
    yield page
    context.close()
    cockpit.stop()


def switch(page, label):
    return page.get_by_role("switch", name=label, exact=True)


def value(daemon, key, uid):
    return daemon.call("get", {"key": key, "user": uid})


def test_your_own_setting_is_the_persons_not_roots(page, daemon, account, sent):
    uid = account.pw_uid
    control = switch(page, "Chat notifications")
    expect(control).to_have_accessible_description(re.compile("Your own setting."))
    expect(control).to_have_attribute("aria-checked", "true")
    expect(switch(page, "Marketing emails")).to_have_attribute("aria-checked", "true")
    watches = [line for line in sent if '"method":"watch"' in line]
    assert watches and all(f'"user":{uid}' in line for line in watches), watches
    # "Turn off for 1 hour": the person's timer, on the person's value.
    control.focus()
    page.keyboard.press("Tab")
    offer = page.get_by_role("button", name="Turn off for 1 hour: Chat notifications", exact=True)
    expect(offer).to_be_focused()
    page.keyboard.press("Enter")
    theirs = wait_until("the person's value timed off",
                        lambda: (lambda s: s if s["expiresAt"] else None)(value(daemon, "notifications.chat", uid)),
                        pause=page.wait_for_timeout)
    assert theirs["checked"] is False and theirs["user"] == uid
    roots = value(daemon, "notifications.chat", 0)
    assert roots["checked"] is False and roots["expiresAt"] is None
    entries = daemon.call("history", {"key": "notifications.chat", "user": "*", "limit": 1})["entries"]
    assert entries[0]["user"] == uid, entries[0]
    expect(page.locator('li[data-key="notifications.chat"]')
           .get_by_text(re.compile(r"^Off for (59|60) more minutes\.$"))).to_be_visible()
    # A click: the person's value, not root's.
    switch(page, "Marketing emails").click()
    wait_until("the person's marketing emails off",
               lambda: value(daemon, "email.marketing", uid)["checked"] is False, pause=page.wait_for_timeout)
    assert value(daemon, "email.marketing", 0)["checked"] is False
    expect(switch(page, "Marketing emails")).to_have_attribute("aria-checked", "false")
    # The "why" panel: the person's history.
    page.get_by_role("button", name="Why? History of Marketing emails", exact=True).click()
    panel = page.get_by_role("region", name="Why: Marketing emails", exact=True)
    expect(panel.get_by_role("listitem")).to_have_count(1)  # root's own change is not theirs
    for method in ("set", "history"):
        calls = [line for line in sent if f'"method":"{method}"' in line and
                 ('"key":"notifications.chat"' in line or '"key":"email.marketing"' in line)]
        assert calls and all(f'"user":{uid}' in line for line in calls), (method, calls)


def test_what_may_be_switched_is_roots_right_not_the_persons(page, daemon, account):
    """The watch names the person, and switchd computes its snapshot's
    `writable` for them (not a Writer here); the page writes as root, who
    may: the system switches stay switchable."""
    refused = daemon.ctl("toggle", "wifi", user=USER)
    assert refused.returncode == 6, refused.stderr
    control = switch(page, "Wi-Fi")
    expect(control).not_to_have_attribute("aria-readonly", "true")
    expect(control).not_to_have_accessible_description(re.compile("You may not change"))
    before = daemon.get("wifi")
    control.click()
    after = wait_until("wifi flipped", lambda: (lambda s: s if s["checked"] != before["checked"] else None)(
        daemon.get("wifi")), pause=page.wait_for_timeout)
    expect(control).not_to_have_attribute("aria-busy", "true")
    expect(control).to_have_attribute("aria-checked", "true" if after["checked"] else "false")


def test_an_administrators_lock_keeps_the_persons_value(page, daemon, account):
    """`lock` takes no `user`: its answer is root's view of a user-scope
    switch (root's value), at the same revision as the person's. The page
    asks for the person's (`get` with `user`) and never draws root's."""
    uid = account.pw_uid
    daemon.call("set", {"key": "email.marketing", "checked": False, "user": uid})
    daemon.call("set", {"key": "email.marketing", "checked": True})  # root's own
    control = switch(page, "Marketing emails")
    expect(control).to_have_attribute("aria-checked", "false")
    try:
        page.get_by_role("button", name="Lock… Marketing emails", exact=True).click()
        panel = page.get_by_role("region", name="Why: Marketing emails", exact=True)
        reason = panel.get_by_label("Reason for the lock", exact=True)
        for text, button in (("First lock.", "Lock"), ("Second lock.", "Lock again")):
            reason.fill(text)
            panel.get_by_role("button", name=button, exact=True).click()
            wait_until(f"the daemon's {text!r}", lambda: value(daemon, "email.marketing", uid)
                       ["readOnlyReason"] == text, pause=page.wait_for_timeout)
            # The form is emptied as the answer is taken: whatever the
            # answer did to the switch is drawn by now.
            expect(reason).to_have_value("")
            expect(control).to_have_attribute("aria-readonly", "true")
            expect(control).to_have_accessible_description(re.compile(re.escape(text)))
            expect(control).to_have_attribute("aria-checked", "false")
        assert value(daemon, "email.marketing", uid)["checked"] is False
        assert value(daemon, "email.marketing", 0)["checked"] is True
    finally:
        daemon.ctl("unlock", "email.marketing")
