# switchd: build, install and uninstall.
#
#   make                                   swift build -c release
#   sudo make install                      binaries, apply commands, units, configuration,
#                                          man pages, ... (PREFIX=/usr, the default)
#   make install DESTDIR=/tmp/stage PREFIX=/usr
#   sudo make uninstall                    keeps configuration you changed (the same
#                                          PREFIX as install)
#   make check-units                       .ci/check-units.sh on the built switchd
#   make man                               docs/man/*.scd -> $(MANBUILD) (needs scdoc)
#   make install-man DESTDIR=... PREFIX=/usr   only the man pages (install does it too)
#   make deb                               dpkg-buildpackage -us -uc -b (see debian/)
#
# `install` builds only when the binaries are missing, so `make && sudo make
# install` does not rebuild as root. SKIP_BUILD=1 never builds (the binaries
# must exist); SWITCHD_BIN= and SWITCHCTL_BIN= install other binaries. The man
# pages are built (with Debian's scdoc: apt-get install scdoc) when a source
# is newer than its page; `make man` first keeps that out of `sudo make install`.
# A build elsewhere: make SCRATCH_PATH=/tmp/build (passed to --scratch-path).

SWIFT ?= swift
SWIFT_BUILD_FLAGS ?=
SCRATCH_PATH ?= .build
SWIFT_BIN_PATH ?= $(SCRATCH_PATH)/release
SWITCHD_BIN ?= $(SWIFT_BIN_PATH)/switchd
SWITCHCTL_BIN ?= $(SWIFT_BIN_PATH)/switchctl

# /usr by default, as the Debian package: the shipped configuration names the
# adapters as /usr/libexec/switchd/NAME. Another prefix (PREFIX=/usr/local)
# moves the binaries, adapters, units and data; the installed configuration
# then names the adapters there (install-config), and the polkit files stay
# where polkitd reads them (POLKITRULESDIR, POLKITACTIONSDIR).
PREFIX ?= /usr
DESTDIR ?=
SYSCONFDIR ?= /etc
BINDIR ?= $(PREFIX)/bin
# The daemon is started by systemd or an administrator, not by users.
SBINDIR ?= $(PREFIX)/sbin
LIBDIR ?= $(PREFIX)/lib
# Programs switchd runs, not people: apply commands (ExecApply=) such as
# rfkill-apply go to $(LIBEXECDIR)/switchd/.
LIBEXECDIR ?= $(PREFIX)/libexec
DATADIR ?= $(PREFIX)/share
UNITDIR ?= $(LIBDIR)/systemd/system
SYSUSERSDIR ?= $(LIBDIR)/sysusers.d
# Only for uninstall: older versions installed a tmpfiles.d entry here. None
# is installed now (systemd's units make /var/lib/switchd and /run/switchd;
# a tmpfiles.d line, applied by a systemd-tmpfiles without systemd as PID 1,
# made them the user switchd's, which switchd run by hand as root refuses).
TMPFILESDIR ?= $(LIBDIR)/tmpfiles.d
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
MANDIR ?= $(DATADIR)/man
# The polkit rule that lets the user switchd switch NetworkManager's radios
# (nm-radio), and switchd's own actions (Authorization=polkit). Not below
# PREFIX: polkitd (Debian 12's 122) reads rules only from
# /etc/polkit-1/rules.d and /usr/share/polkit-1/rules.d, and actions only from
# /usr/share/polkit-1/actions, so under /usr/local they would never be read.
POLKITRULESDIR ?= /usr/share/polkit-1/rules.d
POLKITACTIONSDIR ?= /usr/share/polkit-1/actions
CONFDIR ?= $(SYSCONFDIR)/switchd

INSTALL ?= install

UNITS = switchd.service switchd.socket switchd-varlink.socket
# The varlink interface definition, where varlink tools look for one.
VARLINKDIR ?= $(DATADIR)/varlink
VARLINK_IDL = Sources/SwitchProtocol/io.switchd.Switches.varlink
# The shipped configuration, as Config/-relative names (switchd.conf,
# switches.d/NAME.conf, policy.d/NAME.conf).
CONFIG_FILES = $(patsubst Config/%,%,$(wildcard Config/switchd.conf Config/switches.d/*.conf Config/policy.d/*.conf))

# The shipped configuration names the adapters as /usr/libexec/switchd/NAME;
# installed, it names them where install-libexec puts them (the same path
# under the default PREFIX).
CONFIG_SUBST = sed -e 's|/usr/libexec/switchd/|$(LIBEXECDIR)/switchd/|g'

# The placeholders in systemd/*.service and *.socket (.ci/check-units.sh
# substitutes the same three).
SUBST = sed -e 's|@SBINDIR@|$(SBINDIR)|g' -e 's|@BINDIR@|$(BINDIR)|g' \
	-e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g'

# Man pages: docs/man/NAME.SECTION.scd, built with scdoc into $(MANBUILD).
SCDOC ?= scdoc
MANBUILD ?= $(SCRATCH_PATH)/man
MAN_SOURCES = $(wildcard docs/man/*.scd)
MAN_PAGES = $(patsubst docs/man/%.scd,$(MANBUILD)/%,$(MAN_SOURCES))

.PHONY: all build install install-bin install-libexec install-units install-config install-data \
	uninstall check-units man install-man uninstall-man clean-man deb

all: build

build:
	$(SWIFT) build -c release --scratch-path $(SCRATCH_PATH) $(SWIFT_BUILD_FLAGS)

# Build only if a binary is missing ("unless already built").
ifeq ($(SKIP_BUILD),)
$(SWITCHD_BIN) $(SWITCHCTL_BIN):
	$(SWIFT) build -c release --scratch-path $(SCRATCH_PATH) $(SWIFT_BUILD_FLAGS)
	@test -x $@ || { echo "$@ was not built (SWITCHD_BIN/SWITCHCTL_BIN/SCRATCH_PATH?)" >&2; exit 1; }
else
$(SWITCHD_BIN) $(SWITCHCTL_BIN):
	@echo "$@ is missing and SKIP_BUILD is set: run make build first" >&2; exit 1
endif

install: install-bin install-libexec install-units install-config install-data

install-bin: $(SWITCHD_BIN) $(SWITCHCTL_BIN)
	$(INSTALL) -d -m 0755 $(DESTDIR)$(BINDIR) $(DESTDIR)$(SBINDIR)
	$(INSTALL) -m 0755 $(SWITCHD_BIN) $(DESTDIR)$(SBINDIR)/switchd
	$(INSTALL) -m 0755 $(SWITCHCTL_BIN) $(DESTDIR)$(BINDIR)/switchctl

# The shipped adapters (libexec/): rfkill-apply, rfkill-watch, nm-radio.
LIBEXEC_FILES = $(wildcard libexec/*)

install-libexec:
	$(INSTALL) -d -m 0755 $(DESTDIR)$(LIBEXECDIR)/switchd
	$(INSTALL) -m 0755 $(LIBEXEC_FILES) $(DESTDIR)$(LIBEXECDIR)/switchd/

install-units:
	$(INSTALL) -d -m 0755 $(DESTDIR)$(UNITDIR)
	@set -e; for u in $(UNITS); do \
	  echo "install systemd/$$u -> $(DESTDIR)$(UNITDIR)/$$u"; \
	  $(SUBST) systemd/$$u >$(DESTDIR)$(UNITDIR)/$$u.tmp; \
	  chmod 0644 $(DESTDIR)$(UNITDIR)/$$u.tmp; \
	  mv -f $(DESTDIR)$(UNITDIR)/$$u.tmp $(DESTDIR)$(UNITDIR)/$$u; \
	done

# An administrator's files are never overwritten: a file is installed only if
# it is absent. (To take a newer shipped version, remove yours first.)
install-config:
	$(INSTALL) -d -m 0755 $(DESTDIR)$(CONFDIR) $(DESTDIR)$(CONFDIR)/switches.d $(DESTDIR)$(CONFDIR)/policy.d
	@set -e; for f in $(CONFIG_FILES); do \
	  dest=$(DESTDIR)$(CONFDIR)/$$f; \
	  if [ -e "$$dest" ] || [ -L "$$dest" ]; then \
	    echo "keep    $$dest (exists)"; \
	  else \
	    echo "install Config/$$f -> $$dest"; \
	    $(CONFIG_SUBST) Config/$$f >"$$dest.tmp"; \
	    chmod 0644 "$$dest.tmp"; \
	    mv -f "$$dest.tmp" "$$dest"; \
	  fi; \
	done

install-data:
	$(INSTALL) -D -m 0644 systemd/sysusers.d/switchd.conf $(DESTDIR)$(SYSUSERSDIR)/switchd.conf
	$(INSTALL) -D -m 0644 completion/switchctl.bash $(DESTDIR)$(BASHCOMPDIR)/switchctl
	$(INSTALL) -D -m 0644 polkit/50-switchd-nm-radio.rules $(DESTDIR)$(POLKITRULESDIR)/50-switchd-nm-radio.rules
	$(INSTALL) -D -m 0644 polkit/io.switchd.policy $(DESTDIR)$(POLKITACTIONSDIR)/io.switchd.policy
	$(INSTALL) -D -m 0644 $(VARLINK_IDL) $(DESTDIR)$(VARLINKDIR)/io.switchd.Switches.varlink

# Removes what install added, except configuration files that differ from the
# shipped ones (the administrator changed them) and files the administrator
# added; configuration directories go only when empty. Stop and disable the
# units first: systemctl disable --now switchd.socket switchd-varlink.socket switchd.service
uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/switchd $(DESTDIR)$(BINDIR)/switchctl
	rm -f $(addprefix $(DESTDIR)$(LIBEXECDIR)/switchd/,$(notdir $(LIBEXEC_FILES)))
	-@rmdir $(DESTDIR)$(LIBEXECDIR)/switchd 2>/dev/null || true
	rm -f $(addprefix $(DESTDIR)$(UNITDIR)/,$(UNITS))
	rm -f $(DESTDIR)$(SYSUSERSDIR)/switchd.conf $(DESTDIR)$(TMPFILESDIR)/switchd.conf
	rm -f $(DESTDIR)$(BASHCOMPDIR)/switchctl
	rm -f $(DESTDIR)$(POLKITRULESDIR)/50-switchd-nm-radio.rules
	rm -f $(DESTDIR)$(POLKITACTIONSDIR)/io.switchd.policy
	rm -f $(DESTDIR)$(VARLINKDIR)/io.switchd.Switches.varlink
	@set -e; for f in $(CONFIG_FILES); do \
	  dest=$(DESTDIR)$(CONFDIR)/$$f; \
	  if [ ! -e "$$dest" ]; then :; \
	  elif $(CONFIG_SUBST) Config/$$f | cmp -s - "$$dest"; then \
	    echo "rm -f $$dest"; rm -f "$$dest"; \
	  else \
	    echo "keep  $$dest (changed from the shipped file)"; \
	  fi; \
	done
	-@rmdir $(DESTDIR)$(CONFDIR)/switches.d $(DESTDIR)$(CONFDIR)/policy.d 2>/dev/null || true
	-@rmdir $(DESTDIR)$(CONFDIR) 2>/dev/null || true
	@if [ -d $(DESTDIR)$(CONFDIR) ]; then echo "keep  $(DESTDIR)$(CONFDIR) (not empty)"; fi

# The Cockpit "Switches" page (cockpit/ without its tests), where Cockpit
# looks for packages: $(DATADIR)/cockpit/switchd/.
COCKPITDIR ?= $(DATADIR)/cockpit/switchd
COCKPIT_FILES = $(wildcard cockpit/manifest.json cockpit/*.html cockpit/*.js cockpit/*.css)
.PHONY: install-cockpit uninstall-cockpit
install: install-cockpit
uninstall: uninstall-cockpit

install-cockpit:
	$(INSTALL) -d -m 0755 $(DESTDIR)$(COCKPITDIR)
	$(INSTALL) -m 0644 $(COCKPIT_FILES) $(DESTDIR)$(COCKPITDIR)/

uninstall-cockpit:
	rm -f $(addprefix $(DESTDIR)$(COCKPITDIR)/,$(notdir $(COCKPIT_FILES)))
	-@rmdir $(DESTDIR)$(COCKPITDIR) 2>/dev/null || true

check-units: $(SWITCHD_BIN)
	.ci/check-units.sh $(SWITCHD_BIN)

man: $(MAN_PAGES)

$(MANBUILD)/%: docs/man/%.scd
	@command -v $(SCDOC) >/dev/null || { echo "$(SCDOC) not found: the man pages are built" \
	  "with scdoc (apt-get install scdoc), or SCDOC=PATH" >&2; exit 1; }
	@mkdir -p $(MANBUILD)
	$(SCDOC) <$< >$@.tmp
	mv -f $@.tmp $@

clean-man:
	rm -rf $(MANBUILD)

# The section is the page's suffix: switchd.8 -> man8/switchd.8.
install: install-man
uninstall: uninstall-man

install-man: man
	@set -e; for page in $(MAN_PAGES); do \
	  name=$${page##*/}; section=$${name##*.}; \
	  echo "install $$page -> $(DESTDIR)$(MANDIR)/man$$section/$$name"; \
	  $(INSTALL) -D -m 0644 $$page $(DESTDIR)$(MANDIR)/man$$section/$$name; \
	done

uninstall-man:
	@set -e; for src in $(MAN_SOURCES); do \
	  name=$${src##*/}; name=$${name%.scd}; section=$${name##*.}; \
	  rm -f $(DESTDIR)$(MANDIR)/man$$section/$$name; \
	done

# The Debian package (debian/), written to the parent directory as
# dpkg-buildpackage does: ../switchd_VERSION_ARCH.deb.
deb:
	dpkg-buildpackage -us -uc -b
