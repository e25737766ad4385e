// Package e2e holds drctl's end-to-end tests against real Apache Kafka: two
// single-node KRaft clusters on loopback, run by kafka.sh in this folder.
// The tests carry the build tag "e2e", so `go test ./...` does not run them;
// see README.md here for how to run them by hand and what CI does.
package e2e
