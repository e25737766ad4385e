package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestHelpDescribesEveryCommand: each command's --help has a paragraph and
// at least one example, and says which flags are required.
func TestHelpDescribesEveryCommand(t *testing.T) {
	for _, lc := range leafCommands() {
		name := strings.Join(lc.path, " ")
		if lc.cmd.Hidden {
			continue
		}
		out, stderr, code := drctl(t, append(lc.path, "--help")...)
		if code != exitOK {
			t.Errorf("%s --help: exit %d: %s", name, code, stderr)
			continue
		}
		desc, examples := splitExamples(lc.cmd.Description)
		if len(strings.Fields(desc)) < 8 {
			t.Errorf("drctl %s has no description paragraph: give it a Description (or an entry in helpTexts)", name)
		}
		if len(examples) == 0 || !strings.Contains(out, "Examples:") {
			t.Errorf("drctl %s has no example: end its Description with \"Examples:\" and a command per line", name)
		}
		for _, f := range lc.cmd.Flags {
			if r, ok := f.(cli.RequiredFlag); ok && r.IsRequired() && !regexp.MustCompile(`--`+f.Names()[0]+` value\s+\(required\)`).MatchString(out) {
				t.Errorf("drctl %s --help does not say --%s is required:\n%s", name, f.Names()[0], out)
			}
		}
	}
	out, _, _ := drctl(t, "--help")
	if !strings.Contains(out, "~/.config/drctl/drctl.yaml") || !strings.Contains(out, "$DRCTL_CONFIG") {
		t.Errorf("--config help does not name the fallbacks:\n%s", out)
	}
}

// TestDocsCurrent fails when docs/commands.md or docs/drctl.1 differ from
// what the command definitions generate: run `make docs`.
func TestDocsCurrent(t *testing.T) {
	md, man := generateDocs()
	for name, want := range map[string][]byte{"commands.md": md, "drctl.1": man} {
		got, err := os.ReadFile(filepath.Join("..", "..", "docs", name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("docs/%s is not current (%v): run make docs", name, err)
		}
	}
	for _, lc := range leafCommands() {
		if !lc.cmd.Hidden && !bytes.Contains(md, []byte("### drctl "+strings.Join(lc.path, " ")+"\n")) {
			t.Errorf("docs/commands.md lacks drctl %s", strings.Join(lc.path, " "))
		}
	}
}

var (
	buildOnce sync.Once
	builtBin  string
	errBuild  error
)

// drctlBinary builds drctl once per test run into a directory of its own
// (named drctl, as the completion scripts expect).
func drctlBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "drctl-bin-") //nolint:usetesting // shared by every test of the run, not one test's
		if err != nil {
			errBuild = err
			return
		}
		builtBin = filepath.Join(dir, "drctl")
		out, err := exec.Command("go", "build", "-o", builtBin, ".").CombinedOutput()
		if err != nil {
			errBuild = &buildError{err, out}
		}
	})
	if errBuild != nil {
		t.Fatal(errBuild)
	}
	return builtBin
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string { return e.err.Error() + ": " + string(e.out) }

// TestCompletion loads the bash script in bash and completes with it, and
// checks the zsh and fish scripts are produced.
func TestCompletion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	bin := drctlBinary(t)
	complete := func(words ...string) string {
		t.Helper()
		script := `set -e; source <(drctl completion bash); COMP_WORDS=(` + strings.Join(words, " ") + `); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _drctl_complete; echo "${COMPREPLY[*]}"`
		cmd := exec.Command(bash, "-c", script)
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"), "SHELL=/bin/bash")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("bash completion %v: %v: %s", words, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := complete("drctl", "sta"); got != "status" {
		t.Errorf("drctl sta<TAB>: %q, want status", got)
	}
	if got := complete("drctl", "mirror", "''"); !strings.Contains(got, "run") || !strings.Contains(got, "lag") {
		t.Errorf("drctl mirror <TAB>: %q, want run and lag", got)
	}
	if got := complete("drctl", "failover", "--t"); !strings.Contains(got, "--to") {
		t.Errorf("drctl failover --t<TAB>: %q, want --to", got)
	}
	for _, shell := range []string{"zsh", "fish"} {
		out, err := exec.Command(bin, "completion", shell).Output()
		if err != nil || !bytes.Contains(out, []byte("drctl")) || !bytes.Contains(out, []byte("failover")) && shell == "fish" {
			t.Errorf("completion %s: %v: %s", shell, err, out)
		}
	}
	if _, stderr, code := drctl(t, "completion", "tcsh"); code != exitBadInput || !strings.Contains(stderr, "use bash, zsh or fish") {
		t.Errorf("completion tcsh: exit %d, %s", code, stderr)
	}
}
