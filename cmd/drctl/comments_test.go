package main

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestNoTrackerCitations: production comments state the behaviour and its
// reason, and point at docs/ or bench/ for figures; they never cite an
// issue number ("issue 14", "#8"), which means nothing to a reader
// without the tracker.
func TestNoTrackerCitations(t *testing.T) {
	root := filepath.Join("..", "..")
	citation := regexp.MustCompile(`//.*([\s(]#[0-9]+\b|[Ii]ssue [0-9]+)`)
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != root || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for n := 1; sc.Scan(); n++ {
			if citation.MatchString(sc.Text()) {
				rel, _ := filepath.Rel(root, path)
				found = append(found, rel+":"+strconv.Itoa(n)+": "+strings.TrimSpace(sc.Text()))
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		t.Errorf("%d production comment(s) cite a tracker; say the behaviour and point at docs/ instead:\n%s", len(found), strings.Join(found, "\n"))
	}
}

// TestProducersStartFromThePreset: every producer drctl opens starts from
// kafkaconn's idempotent preset (one retry budget, acks from all in-sync
// replicas); no package outside kafkaconn sets those by hand. The
// benchmark's load generator, which measures a plain producer, and test
// code are exempt.
func TestProducersStartFromThePreset(t *testing.T) {
	root := filepath.Join("..", "..")
	byHand := regexp.MustCompile(`Producer\.(Idempotent = true|Retry\.Max = )`)
	allowed := []string{"internal/kafkaconn/", "internal/testkit/", "bench/", "mirror/engine.go"}
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != root || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		for _, a := range allowed {
			if strings.HasPrefix(rel, a) {
				return nil
			}
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for n, line := range strings.Split(string(raw), "\n") {
			if byHand.MatchString(line) {
				found = append(found, rel+":"+strconv.Itoa(n+1)+": "+strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		t.Errorf("%d producer setting(s) made by hand; start from kafkaconn.IdempotentProducer (or kafkaconn.NewSyncProducer):\n%s", len(found), strings.Join(found, "\n"))
	}
}
