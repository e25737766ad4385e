# Developer tasks. CI runs .ci/run; these are shortcuts.

.PHONY: docs
# docs regenerates the command reference and the man page from the command
# definitions (TestDocsCurrent fails when they are not current).
docs:
	go run ./cmd/drctl docs --dir docs
