package topology

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// cost runs f and returns the bytes it allocated and the time it took.
func cost(f func()) (alloc uint64, took time.Duration) {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	f()
	took = time.Since(start)
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, took
}

// Bounds that every hostile input of the size-limit tests must stay
// under: a parse of MaxFileSize bytes of YAML allocates ~85 MiB in all,
// and the time bound is generous for a loaded two-core machine.
const (
	maxHostileAlloc = 160 << 20
	maxHostileTime  = 20 * time.Second
)

func TestFileSizeLimit(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	huge := filepath.Join(dir, "huge.yaml") // 37 MB, as in issue 8, sparse
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(37 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	atLimit := []byte(good + strings.Repeat("#\n", (MaxFileSize-len(good))/2))
	cases := []struct {
		name, path string
		want       string // "" means it loads
	}{
		{"37 MB file", huge, "the file is 37.0 MiB; a topology file may be at most 1 MiB"},
		{"one byte over", write("over.yaml", append(atLimit, strings.Repeat("#", MaxFileSize-len(atLimit)+1)...)), "the file is 1.0 MiB; a topology file may be at most 1 MiB"},
		{"at the limit", write("limit.yaml", atLimit), ""},
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		cases = append(cases, struct{ name, path, want string }{"endless device", "/dev/zero", "the file is more than 1 MiB"})
	}
	t.Setenv("EAST_PASSWORD", "s3cret")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error
			alloc, took := cost(func() { _, err = Load(c.path) })
			t.Logf("allocated %d KiB in %v", alloc>>10, took)
			if c.want == "" {
				if err != nil {
					t.Fatalf("a file of %d bytes should load: %v", MaxFileSize, err)
				}
				return
			}
			var te *Error
			if !errors.As(err, &te) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "check that -c or DRCTL_CONFIG names the topology YAML") {
				t.Fatalf("error %v: want an *Error containing %q and the fix", err, c.want)
			}
			if !strings.HasPrefix(err.Error(), c.path+": ") {
				t.Errorf("error %q does not start with the file", err)
			}
			// Refused before reading: at most the limit itself is read.
			if alloc > 3*MaxFileSize || took > maxHostileTime {
				t.Errorf("refusing took %d bytes and %v", alloc, took)
			}
		})
	}
	if _, err := Parse("big.yaml", make([]byte, MaxFileSize+1), env(nil)); err == nil || !strings.Contains(err.Error(), "at most 1 MiB") {
		t.Errorf("Parse of too many bytes: %v", err)
	}
}

// laughs returns a billion-laughs chain: anchor a0 is a list of ten
// strings, each further anchor a list of ten aliases to the one before.
func laughs(levels int, indent string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%sa0: &a0 [%s]\n", indent, strings.TrimSuffix(strings.Repeat("lol, ", 10), ", "))
	for i := 1; i < levels; i++ {
		fmt.Fprintf(&b, "%sa%d: &a%d [%s]\n", indent, i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 10), ", "))
	}
	return b.String()
}

// TestHostileInputs feeds inputs that cost a naive loader much more than
// their size (alias bombs, long lists, huge patterns, deep nesting): each
// is refused (or loads) with bounded memory and time.
func TestHostileInputs(t *testing.T) {
	withTopics := func(include string) string {
		return strings.Replace(good, `include: ["orders", "payments\\..*"]`, "include: "+include, 1)
	}
	list := func(item string, n int) string {
		return "[" + strings.TrimSuffix(strings.Repeat(item+", ", n), ", ") + "]"
	}
	fill := func(prefix, item, suffix string) string {
		return prefix + strings.Repeat(item, (MaxFileSize-len(prefix)-len(suffix))/len(item)) + suffix
	}
	// The same cluster mapping under many names, each with the longest
	// bootstrap list: walking the aliases naively multiplies the two.
	var manyClusters strings.Builder
	manyClusters.WriteString("name: t\nclusters:\n  east: &c {bootstrap: " + list("k:1", MaxListItems) + "}\n")
	for i := range MaxListItems {
		fmt.Fprintf(&manyClusters, "  c%d: *c\n", i)
	}
	cases := []struct {
		name, doc, want string
	}{
		{"billion laughs at the top level", laughs(9, "") + good, `unknown key "a0" at the top level`},
		{"billion laughs in known slots", strings.Replace(good, "failover:\n  drain_timeout: 2m\n  fence: acl\n  hooks: {after: [\"./switch-dns.sh {{.Active}}\"]}\n",
			"failover:\n  producer_principals: &a0 "+list("lol", 10)+"\n  hooks:\n    before: &a1 "+list("*a0", 10)+"\n    after: &a2 "+list("*a1", 10)+"\n", 1), "wrong type"},
		{"many clusters sharing one alias", manyClusters.String(), "aliases (*name) expand to too much"},
		{"list over the limit", withTopics(list(`"o"`, MaxListItems+1)), fmt.Sprintf("mirror.topics.include lists %d items; at most %d", MaxListItems+1, MaxListItems)},
		{"list at the limit", withTopics(list(`"o"`, MaxListItems)), ""},
		{"1 MiB list", fill("name: t\nmirror:\n  topics:\n    include: [", `"o",`, "]\n"), "at most 10000 are allowed"},
		{"huge pattern", withTopics(`["` + strings.Repeat("(a|b)*c{1,9}", 70000) + `"]`), "the patterns add up to 840013 bytes; at most 32768"},
		{"many complex patterns", withTopics(list(`"`+strings.Repeat("(a|b)*c{1,9}", 7)+`"`, 9000)), "the patterns add up to"},
		{"1 MiB flow mapping", fill("x: {", "b: c, ", "}"), `unknown key "x"`},
		{"1 MiB of aliases", fill("name: &a x\nfailover:\n  hooks:\n    before: [", "*a,", "]\n"), "at most 10000 are allowed"},
		{"deep nesting", fill("x: ", "[", ""), "exceeded max depth"},
	}
	vars := env(map[string]string{"EAST_PASSWORD": "s3cret"})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if len(c.doc) > MaxFileSize {
				t.Fatalf("test input of %d bytes is over the limit", len(c.doc))
			}
			var err error
			alloc, took := cost(func() { _, err = Parse("h.yaml", []byte(c.doc), vars) })
			t.Logf("%d KiB of input: allocated %d MiB in %v", len(c.doc)>>10, alloc>>20, took)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("should load: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
			if alloc > maxHostileAlloc || took > maxHostileTime {
				t.Errorf("allocated %d MiB in %v; want at most %d MiB and %v", alloc>>20, took, maxHostileAlloc>>20, maxHostileTime)
			}
		})
	}
}

func TestPasswordFileLimit(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(big, make([]byte, maxPasswordFile+1), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{big, "/dev/zero"} {
		if _, err := os.Stat(path); err != nil {
			continue
		}
		src := strings.Replace(good, `password: "${EAST_PASSWORD}"`, "password_file: "+path, 1)
		_, err := Parse("t.yaml", []byte(src), env(nil))
		if err == nil || !strings.Contains(err.Error(), "t.yaml:5: cluster east: sasl.password_file \""+path+"\" cannot be read: it holds more than 64 KiB") {
			t.Errorf("password_file %s: %v", path, err)
		}
	}
}
