# receiptdash: one self-contained binary (Swift's runtime and Foundation linked in, the demo
# receipts, Apple's roots and the themes compiled in), installed with shell completions, a man
# page and the theme files.
#
#   make install [PREFIX=~/.local]    build (release, in .build-install) and install
#   make uninstall [PREFIX=…]         remove exactly what install wrote
#   make dist                         dist/receiptdash-VERSION-linux-ARCH.tar.gz and its .sha256
#   make binary                       only build it: .build-install/stage/bin/receiptdash
#
# The development build (.build, `swift build`) is never touched: this one has its own folder.
# CONFIGURATION=debug SCRATCH=.build builds the same stand-alone binary from a debug build
# (CI's stand-alone test, which has no time for a release build; .ci/standalone.sh first removes
# the executable module compiled for the dynamic link, which the static link cannot use).

PREFIX ?= $(HOME)/.local
DESTDIR ?=
CONFIGURATION ?= release
SCRATCH ?= .build-install
SWIFT ?= swift
PYTHON ?= python3

VERSION := $(shell sed -n 's/^ *static let version = "\(.*\)"/\1/p' Sources/receiptdash/BuildInfo.swift)
ARCH := $(shell uname -m)
COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$(shell git diff --quiet HEAD -- 2>/dev/null || echo +dirty)
STAGE := $(SCRATCH)/stage
BIN := $(STAGE)/bin/receiptdash
DIST := receiptdash-$(VERSION)-linux-$(ARCH)

# What install writes, relative to PREFIX: uninstall removes exactly these.
THEMES := $(notdir $(wildcard Themes/*.theme))
INSTALLED := bin/receiptdash \
	share/bash-completion/completions/receiptdash \
	share/zsh/site-functions/_receiptdash \
	share/fish/vendor_completions.d/receiptdash.fish \
	share/man/man1/receiptdash.1 \
	$(addprefix share/receiptdash/themes/,$(THEMES) README.md)

.PHONY: all binary stage install uninstall dist clean-install
all: binary

# The toolchain's static Foundation ICU library: its 34 MB of locale data is swapped for the
# root and English locales (.ci/trim-icu-data.py; 5 MB), linked through --wrap. Identical code
# is folded (--icf=safe). No symbol is exported (--no-export-dynamic): the driver exports all
# 65,000, and at every start the loader looked symbols up among them and the Swift runtime's
# dladdr scanned them (--version: 6.4 ms, now under 5; the binary 4 MB smaller). Nothing is
# recompiled for any of these: all are link options.
SWIFT_STATIC := $(abspath $(dir $(realpath $(shell command -v $(SWIFT))))/../lib/swift_static/linux)
ICU_LIB := $(SWIFT_STATIC)/lib_FoundationICU.a
ICU_DIR := $(SCRATCH)/icu-data

# The binary: Swift's standard library and Foundation linked statically, stripped, stamped
# with the commit (`receiptdash --version`).
binary:
	@if [ -f "$(ICU_LIB)" ]; then \
		$(PYTHON) .ci/trim-icu-data.py "$(ICU_LIB)" $(ICU_DIR) && as -o $(ICU_DIR)/icudata.o $(ICU_DIR)/icudata.s; \
	else echo "note: $(ICU_LIB) not found: the full ICU data is linked"; rm -rf $(ICU_DIR); fi
	icu=""; if [ -f $(ICU_DIR)/icudata.o ]; then \
		icu="-Xlinker --wrap=$$(cat $(ICU_DIR)/symbol) -Xlinker $(abspath $(ICU_DIR))/icudata.o"; fi; \
	$(SWIFT) build -c $(CONFIGURATION) --scratch-path $(SCRATCH) --product receiptdash --static-swift-stdlib \
		-Xlinker --icf=safe -Xlinker --no-export-dynamic $$icu
	mkdir -p $(STAGE)/bin
	cp "$$($(SWIFT) build -c $(CONFIGURATION) --scratch-path $(SCRATCH) --static-swift-stdlib --show-bin-path)/receiptdash" $(BIN).tmp
	strip $(BIN).tmp
	$(PYTHON) .ci/stamp-commit.py $(BIN).tmp $(COMMIT)
	mv $(BIN).tmp $(BIN)
	@echo "built $(BIN): $$(du -h $(BIN) | cut -f1), $$($(BIN) --version)"

# Everything install copies, laid out under $(STAGE) as under PREFIX.
stage: binary
	mkdir -p $(STAGE)/share/bash-completion/completions $(STAGE)/share/zsh/site-functions \
		$(STAGE)/share/fish/vendor_completions.d $(STAGE)/share/man/man1 $(STAGE)/share/receiptdash/themes
	$(BIN) --generate-completion-script bash > $(STAGE)/share/bash-completion/completions/receiptdash
	$(BIN) --generate-completion-script zsh > $(STAGE)/share/zsh/site-functions/_receiptdash
	$(BIN) --generate-completion-script fish > $(STAGE)/share/fish/vendor_completions.d/receiptdash.fish
	$(MAKE) --no-print-directory man
	cp Themes/*.theme Themes/README.md $(STAGE)/share/receiptdash/themes/

# The man page, from swift-argument-parser's generate-manual (built from the checkout SwiftPM
# already fetched, in its own folder).
.PHONY: man
man:
	$(SWIFT) build -c $(CONFIGURATION) --package-path $(SCRATCH)/checkouts/swift-argument-parser \
		--scratch-path $(SCRATCH)/generate-manual --product generate-manual
	$(SCRATCH)/generate-manual/$(CONFIGURATION)/generate-manual $(BIN) --output-directory $(STAGE)/share/man/man1 \
		--date "$$(git log -1 --format=%cs 2>/dev/null || date +%F)" --section 1 --authors "the receiptdash developers"
	test -s $(STAGE)/share/man/man1/receiptdash.1

install: stage
	@for f in $(INSTALLED); do \
		mode=644; case $$f in bin/*) mode=755;; esac; \
		install -D -m $$mode $(STAGE)/$$f "$(DESTDIR)$(PREFIX)/$$f" || exit 1; \
	done
	@echo "installed receiptdash $(VERSION) in $(DESTDIR)$(PREFIX) ($(words $(INSTALLED)) files)"
	@case ":$$PATH:" in *":$(PREFIX)/bin:"*) ;; *) echo "note: $(PREFIX)/bin is not on PATH: add it, e.g. export PATH=\"$(PREFIX)/bin:\$$PATH\"";; esac

uninstall:
	@for f in $(INSTALLED); do rm -f "$(DESTDIR)$(PREFIX)/$$f"; done
	@rmdir "$(DESTDIR)$(PREFIX)/share/receiptdash/themes" "$(DESTDIR)$(PREFIX)/share/receiptdash" 2>/dev/null || true
	@echo "removed receiptdash from $(DESTDIR)$(PREFIX)"

dist: stage
	rm -rf dist/$(DIST) && mkdir -p dist/$(DIST)
	for f in $(INSTALLED); do install -D -m 644 $(STAGE)/$$f dist/$(DIST)/$$f; done
	chmod 755 dist/$(DIST)/bin/receiptdash
	cp README.md dist/$(DIST)/
	cp -R docs dist/$(DIST)/
	tar -C dist -czf dist/$(DIST).tar.gz --owner=0 --group=0 --sort=name $(DIST)
	cd dist && sha256sum $(DIST).tar.gz > $(DIST).tar.gz.sha256
	rm -rf dist/$(DIST)
	@echo "wrote dist/$(DIST).tar.gz ($$(du -h dist/$(DIST).tar.gz | cut -f1)) and dist/$(DIST).tar.gz.sha256"

clean-install:
	rm -rf $(SCRATCH) dist
