// Package sandboxtui drives `drctl tui` in a real terminal (tmux) against
// `drctl sandbox`: two embedded clusters in one process, so these tests
// need no real Kafka, and killing that process kills both clusters under
// a running console. The tests carry the build tags "e2e" and "tmux":
//
//	go test -tags e2e,tmux -count=1 ./e2e/sandboxtui/
package sandboxtui
