# Developer tasks. CI runs .ci/run (lint, test, the README tour, deploy,
# e2e); these are the same steps one at a time. See CONTRIBUTING.md.

GO       ?= go
FUZZTIME ?= 30s
# e2e and bench: the real-Kafka clusters of e2e/kafka.sh. Set
# DRCTL_E2E_EAST_PORT, DRCTL_E2E_WEST_PORT and DRCTL_E2E_HOME to run a pair
# of your own beside someone else's.
E2E_TIMEOUT ?= 45m
E2E_RUN     ?= .

.PHONY: docs test lint e2e e2e-stop bench fuzz fuzz-seeds

# docs regenerates the command reference and the man page from the command
# definitions (TestDocsCurrent fails when they are not current).
docs:
	$(GO) run ./cmd/drctl docs --dir docs

# test runs the unit and kfake integration tiers, and every fuzz test's
# seed corpus.
test:
	$(GO) test ./...

# lint runs golangci-lint with .golangci.yml (installed on first use into
# ~/.cache/drctl-ci/tools by .ci/lint). ARGS are passed on, e.g.
# make lint ARGS=--fix, or ARGS=./failover/...
lint:
	.ci/lint $(ARGS)

# e2e runs the end-to-end tier against two real Apache Kafka clusters on
# loopback: it fetches the jars once, starts the clusters if they are not
# running and leaves them running for the next run (make e2e-stop stops
# them). E2E_RUN selects tests: make e2e E2E_RUN=TestMirrorFaithful.
e2e:
	e2e/kafka.sh fetch
	e2e/kafka.sh start all
	eval "$$(e2e/kafka.sh env)" && $(GO) test -tags e2e -count=1 -timeout $(E2E_TIMEOUT) -run '$(E2E_RUN)' ./e2e/...

e2e-stop:
	e2e/kafka.sh stop all

# bench runs the replication benchmark (drctl against MirrorMaker 2, side
# by side, on the e2e clusters): see bench/README.md for its knobs, e.g.
# make bench BENCH_RECORDS=200000. The report goes to bench/results/.
bench:
	bench/run.sh

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
	./inspect:FuzzDecodeRunRecord \
	./linkstate:FuzzDecodeObservedRecord \
	./mirror/groupsync:FuzzDecodeGroupSnapshot \
	./linkstate:FuzzDecodeTopicRecord \
	./linkstate:FuzzDecodePause \
	./drill:FuzzDecodeRecord \
	./internal/drilllease:FuzzFoldClaims \
	./inspect:FuzzDecodeDrillStatus

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
