package fuzzseed

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// Add adds each input to f as a seed and writes it as a seed of f's corpus
// (see Write).
func Add(f *testing.F, inputs ...[]byte) {
	f.Helper()
	for _, in := range inputs {
		f.Add(in)
	}
	Write(f, f.Name(), inputs...)
}

// Write writes each input to testdata/fuzz/<fuzzName>/ in go's corpus
// format when DRCTL_WRITE_FUZZ_SEEDS=1, and does nothing otherwise. The
// fuzz test must take one []byte argument.
func Write(tb testing.TB, fuzzName string, inputs ...[]byte) {
	tb.Helper()
	if os.Getenv("DRCTL_WRITE_FUZZ_SEEDS") != "1" {
		return
	}
	dir := filepath.Join("testdata", "fuzz", fuzzName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	for _, in := range inputs {
		sum := sha256.Sum256(in)
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%s)\n", strconv.Quote(string(in)))
		if err := os.WriteFile(filepath.Join(dir, "seed-"+hex.EncodeToString(sum[:8])), []byte(body), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}
