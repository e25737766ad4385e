# Developer tasks. CI runs .ci/run; these are shortcuts.

GO       ?= go
FUZZTIME ?= 30s

.PHONY: docs test fuzz fuzz-seeds

# docs regenerates the command reference and the man page from the command
# definitions (TestDocsCurrent fails when they are not current).
docs:
	$(GO) run ./cmd/drctl docs --dir docs

# test runs the unit and kfake integration tiers, and every fuzz test's
# seed corpus.
test:
	$(GO) test ./...

# fuzz runs each fuzz test in turn for FUZZTIME (go test takes one -fuzz
# target per run). A crasher is written to the package's
# testdata/fuzz/<FuzzX>/ and fails the target: fix it and keep the file as a
# regression seed.
FUZZ_TARGETS = \
	./topology:FuzzParse \
	./plans:FuzzParsePlan \
	./plans:FuzzParseJournal \
	./offsettranslate:FuzzDecodeBatch \
	./internal/rolestate:FuzzDecodeState \
	./internal/aclfence:FuzzDecodeFenceRecord \
	./failover:FuzzDecodeRunRecord \
	./mirror:FuzzDecodeObservedRecord \
	./mirror:FuzzDecodeGroupSnapshot \
	./mirror:FuzzDecodeTopicRecord

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "== $$name in $$pkg for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

# fuzz-seeds rewrites the seed corpora (seed-* files; crashers stay) from
# the seeds the fuzz tests add, or a Test...Seeds test of the package
# writes: valid encodings from the real encoders, and edge cases.
fuzz-seeds:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		rm -f $$pkg/testdata/fuzz/$$name/seed-*; \
		DRCTL_WRITE_FUZZ_SEEDS=1 $(GO) test -count=1 -run "^$$name\$$|Seeds\$$" $$pkg; \
	done
