# agentbox: build, install, test.
#
#   make                          build ./agentbox
#   make install                  install under /usr/local (PREFIX, DESTDIR)
#   make install PREFIX=~/.local  install for one user, no root needed
#   make test                     the whole test suite (scripts/test.sh)
#   make bench                    launch-speed report, one line per goal (scripts/bench.sh)
#   make docs                     regenerate the man page and completions
#   make release-check            goreleaser check and a snapshot build
#
# Go 1.26 or later is needed (go.mod). The go found on PATH is used, or the
# one the official tarball installs in /usr/local/go.

PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
DATADIR ?= $(PREFIX)/share
MANDIR  ?= $(DATADIR)/man
GO      ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
# fish looks in $(PREFIX)/share only when XDG_DATA_DIRS names it, which a
# default environment does not: under /usr/local its completion goes to
# fish's system-wide folder. bash-completion and zsh look in /usr/local.
ifeq ($(PREFIX),/usr/local)
FISHDIR ?= /etc/fish/completions
else
FISHDIR ?= $(DATADIR)/fish/vendor_completions.d
endif
# BIN is the binary that install installs; set it to install one built
# elsewhere without building.
BIN     ?= agentbox

# Static (the binary runs again as the init inside each box); the urfave/cli
# doc generator left out (start-up time on every run); -buildvcs=auto so the
# commit is stamped from git even where GOFLAGS turns it off.
GOBUILD = CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=auto -tags urfave_cli_no_docs

SOURCES := $(shell find . -name '*.go' -not -name '*_test.go' -not -path './dist/*') go.mod go.sum

.PHONY: all build install uninstall test bench docs release-check clean

all: build

build: agentbox

agentbox: $(SOURCES)
	$(GOBUILD) -o $@ .

install: $(BIN)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(DATADIR)/bash-completion/completions \
		$(DESTDIR)$(DATADIR)/zsh/site-functions \
		$(DESTDIR)$(FISHDIR)
	install -m 755 $(BIN) $(DESTDIR)$(BINDIR)/agentbox
	install -m 644 docs/agentbox.1 $(DESTDIR)$(MANDIR)/man1/agentbox.1
	install -m 644 docs/completion/agentbox.bash $(DESTDIR)$(DATADIR)/bash-completion/completions/agentbox
	install -m 644 docs/completion/_agentbox $(DESTDIR)$(DATADIR)/zsh/site-functions/_agentbox
	install -m 644 docs/completion/agentbox.fish $(DESTDIR)$(FISHDIR)/agentbox.fish

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/agentbox $(DESTDIR)$(MANDIR)/man1/agentbox.1 \
		$(DESTDIR)$(DATADIR)/bash-completion/completions/agentbox \
		$(DESTDIR)$(DATADIR)/zsh/site-functions/_agentbox \
		$(DESTDIR)$(FISHDIR)/agentbox.fish

test:
	scripts/test.sh

# A report, not a test: it exits 0 whatever the figures.
bench:
	scripts/bench.sh

# The man page and completion scripts are made from the command definitions
# by TestDocs; the same test fails in CI when they are stale.
docs:
	$(GO) test -run '^TestDocs$$' -update .

release-check:
	scripts/release-check.sh

clean:
	rm -rf agentbox dist
