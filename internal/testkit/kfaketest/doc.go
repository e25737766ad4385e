// Package kfaketest starts two in-process Kafka clusters (kfake, a real Kafka
// wire-protocol server) for integration tests, and writes a topology file
// that points at them. Clusters are closed with t.Cleanup.
//
// # Contracts
//
//   - Clusters bind loopback only, on ports of their own (Persist: a fixed
//     port per cluster, so that Stop and Restart keep the address).
//   - Everything a helper opens (cluster, client, producer) is closed with
//     t.Cleanup; helpers fail the test with t.Fatal rather than return errors.
//   - It is imported by tests only.
package kfaketest
