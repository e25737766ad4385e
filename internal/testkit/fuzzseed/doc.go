// Package fuzzseed gives drctl's fuzz tests their seeds: the inputs a test
// adds with f.Add are also its seed corpus under testdata/fuzz/<FuzzName>/,
// written there when DRCTL_WRITE_FUZZ_SEEDS=1 (`make fuzz-seeds`). The
// files let `go test -fuzz` start from valid encodings of the real encoders
// and edge cases; crashers that go writes into the same directory stay
// there as regression inputs. It is used by tests only.
//
// # Contracts
//
//   - Write writes only seed-<hash of the input> files, so a seed is written
//     once and a crasher go wrote stays; `make fuzz-seeds` removes the old
//     seed-* files first.
//   - Without DRCTL_WRITE_FUZZ_SEEDS=1 nothing is written.
package fuzzseed
