package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCompletionInShells types into real interactive zsh and fish shells
// (in tmux, as a user would) with drctl's completion loaded, presses TAB and
// reads the screen: commands and subcommands complete, flags complete, -o
// offers its formats, and fish offers file names only where drctl takes a
// file. CI installs zsh, fish and tmux; elsewhere a missing shell skips.
func TestCompletionInShells(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts shells")
	}
	for _, tool := range []string{"tmux", "zsh", "fish"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is not installed; .ci/run installs it", tool)
			}
			t.Skipf("%s is not installed", tool)
		}
	}
	bin := drctlBinary(t)
	// Not t.TempDir: fish keeps writing its generated completions under
	// HOME in the background after the shell is gone, and TempDir's
	// strict clean-up would fail the test.
	home, err := os.MkdirTemp("", "drctl-completion-") //nolint:usetesting // see above: fish writes after the test
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(home) })
	if err := os.WriteFile(filepath.Join(home, "plan-x.json"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".zshrc"), []byte("PS1='$ '\nautoload -U compinit; compinit -u\nsource <(drctl completion zsh)\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, "config", "fish"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "config", "fish", "config.fish"),
		[]byte("function fish_prompt; echo '$ '; end\nset -g fish_greeting ''\ndrctl completion fish | source\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"env", "-i", "HOME=" + home, "ZDOTDIR=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, "config"),
		"PATH=" + filepath.Dir(bin) + ":/usr/bin:/bin", "TERM=xterm"}

	type tab struct {
		typed string
		want  []string // all on the screen after TAB
		not   []string // none on the screen after TAB
	}
	common := []tab{
		{typed: "drctl sta", want: []string{"$ drctl status"}},
		{typed: "drctl mirror ", want: []string{"lag", "reseed-topic", "run"}, not: []string{"plan-x.json"}},
		{typed: "drctl failover --t", want: []string{"$ drctl failover --to"}},
		{typed: "drctl apply plan-", want: []string{"$ drctl apply plan-x.json"}},
	}
	shells := map[string][]tab{
		"zsh":  common,
		"fish": append(common, tab{typed: "drctl status -o ", want: []string{"json", "table", "yaml"}, not: []string{"plan-x.json"}}),
	}
	for shell, tabs := range shells {
		t.Run(shell, func(t *testing.T) {
			socket := fmt.Sprintf("drctl-compl-%d-%s", os.Getpid(), shell)
			tmux := func(args ...string) string {
				t.Helper()
				out, err := exec.Command("tmux", append([]string{"-L", socket}, args...)...).CombinedOutput()
				if err != nil {
					t.Fatalf("tmux %v: %v: %s", args, err, out)
				}
				return string(out)
			}
			tmux(append([]string{"new-session", "-d", "-s", "c", "-x", "150", "-y", "30", "-c", home}, append(env, shell, "-i")...)...)
			t.Cleanup(func() { _ = exec.Command("tmux", "-L", socket, "kill-server").Run() })
			screen := func() string { return tmux("capture-pane", "-p", "-t", "c") }
			waitFor := func(what string, ok func(string) bool) string {
				t.Helper()
				deadline := time.Now().Add(20 * time.Second)
				for {
					s := screen()
					if ok(s) {
						return s
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s: %s never showed:\n%s", shell, what, s)
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
			waitFor("the prompt", func(s string) bool { return strings.HasPrefix(strings.TrimSpace(s), "$") })
			for _, c := range tabs {
				tmux("send-keys", "-t", "c", "C-u", "C-l")
				waitFor("a clear line", func(s string) bool { return strings.TrimSpace(s) == "$" })
				tmux("send-keys", "-t", "c", "-l", c.typed)
				waitFor(fmt.Sprintf("%q typed", c.typed), func(s string) bool { return strings.Contains(s, strings.TrimRight(c.typed, " ")) })
				tmux("send-keys", "-t", "c", "Tab")
				s := waitFor(fmt.Sprintf("completion of %q (%v)", c.typed, c.want), func(s string) bool {
					for _, w := range c.want {
						if !strings.Contains(s, w) {
							return false
						}
					}
					return true
				})
				for _, n := range c.not {
					if strings.Contains(s, n) {
						t.Errorf("%s: %q<TAB> offers %q:\n%s", shell, c.typed, n, s)
					}
				}
			}
		})
	}
}
