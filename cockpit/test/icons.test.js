// Unit tests of icons.js with Node's own runner (a DOM of the few calls it makes).
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");
const vm = require("node:vm");

function loadIcons() {
    const node = () => ({ attributes: {}, children: [], setAttribute(name, value) { this.attributes[name] = value; },
                          append(...nodes) { this.children.push(...nodes); } });
    const window = {};
    const document = { createElementNS: () => node() };
    vm.runInNewContext(fs.readFileSync(path.join(__dirname, "..", "icons.js"), "utf8"), { window, document });
    return window.SwitchdIcons;
}

test("a name the set has draws its glyph; an _off name is the glyph crossed out", () => {
    const icons = loadIcons();
    assert.equal(icons.svg("wifi").children.length, 1);
    assert.equal(icons.svg("wifi_off").children.length, 2);
});

test("a name the set does not have draws nothing, an Object member's name too (SWT-17)", () => {
    const icons = loadIcons();
    for (const name of ["", "no_such_glyph", "__proto__", "constructor", "toString", "hasOwnProperty",
                        "constructor_off", "__proto___disabled"])
        assert.equal(icons.svg(name), null, name);
});
