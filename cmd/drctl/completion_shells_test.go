package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drctl/drctl/drill"
	"github.com/drctl/drctl/plans"
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
	fx := writeCompletionFixtures(t, home)
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
		"XDG_STATE_HOME=" + fx.state, "PATH=" + filepath.Dir(bin) + ":/usr/bin:/bin", "TERM=xterm"}

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
		// Values from the topology file and this machine's journal.
		{typed: "drctl failover --to ", want: []string{"east-dc", "west-dc"}, not: []string{"plan-x.json"}},
		{typed: "drctl resume ", want: []string{"$ drctl resume " + fx.unfinished}, not: []string{fx.finished}},
		{typed: "drctl drill report ", want: []string{fx.drill}},
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

// completionFixtures are a topology (drctl.yaml in home, clusters east-dc
// and west-dc, never contacted) and a journal directory with an unfinished
// run, a finished one and a drill record of it.
type completionFixtures struct {
	state, unfinished, finished, drill string
}

func writeCompletionFixtures(t *testing.T, home string) completionFixtures {
	t.Helper()
	fx := completionFixtures{state: filepath.Join(home, "state"), unfinished: "failover-20261207T120000-0a1b2c",
		finished: "failover-20261207T110000-ffffff", drill: "drill-canary-20261207T120000-c0ffee"}
	yaml := "name: compl\nclusters:\n  east-dc:\n    bootstrap: [127.0.0.1:1]\n  west-dc:\n    bootstrap: [127.0.0.1:2]\n" +
		"active: east-dc\nstandby: west-dc\nmirror:\n  topics: {include: [orders]}\n"
	if err := os.WriteFile(filepath.Join(home, "drctl.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(fx.state, "drctl", "runs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for id, fail := range map[string]bool{fx.unfinished: true, fx.finished: false} {
		p := plans.New(id, "failover")
		if err := p.SetInputs(map[string]any{"topology": "compl"}); err != nil {
			t.Fatal(err)
		}
		if err := p.Add(plans.StepSpec{Name: "step", Title: "A step"}); err != nil {
			t.Fatal(err)
		}
		reg := plans.NewRegistry()
		_ = reg.Register("step", plans.ActionFunc(func(context.Context, plans.Step, *plans.RunContext) (plans.Result, error) {
			if fail {
				return plans.Result{}, errors.New("boom")
			}
			return plans.NewResult("done", nil)
		}))
		j, err := plans.CreateJournal(filepath.Join(dir, id+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		_ = (&plans.Executor{Registry: reg, Hooks: []plans.Hook{j}}).Run(context.Background(), p)
		j.Close()
	}
	raw, err := json.Marshal(drill.Record{ID: fx.drill, Drill: "canary", Kind: "canary", Topology: "compl", StartedAt: time.Now().UTC(), Verdict: drill.Pass})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, fx.drill+".drill.json"), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return fx
}

// TestCompletionValues: what the scripts get back for a value: the
// topology's clusters after --to, the runs resume can finish (not a
// finished one), the recorded drills for drill report; and for "--to"
// itself, being typed, no cluster.
func TestCompletionValues(t *testing.T) {
	bin := drctlBinary(t)
	home := t.TempDir()
	fx := writeCompletionFixtures(t, home)
	complete := func(cur string, words ...string) []string {
		t.Helper()
		cmd := exec.Command(bin, append(words, "--generate-bash-completion")...)
		cmd.Dir = home
		cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+fx.state, "DRCTL_CONFIG=", completeCurEnv+"="+cur)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: %v", words, err)
		}
		return strings.Fields(string(out))
	}
	for _, tc := range []struct {
		cur   string
		words []string
		want  []string
	}{
		{"", []string{"failover", "--to"}, []string{"east-dc", "west-dc"}},
		{"we", []string{"plan", "failover", "--to"}, []string{"east-dc", "west-dc"}},
		{"", []string{"reseed"}, []string{"east-dc", "west-dc"}},
		{"", []string{"resume"}, []string{fx.unfinished}},
		{"", []string{"abort"}, []string{fx.unfinished}},
		{"", []string{"drill", "report"}, []string{fx.drill}},
		{"", []string{"resume", fx.unfinished}, nil},
	} {
		if got := complete(tc.cur, tc.words...); !slices.Equal(got, tc.want) {
			t.Errorf("%v <TAB>: %q, want %q", tc.words, got, tc.want)
		}
	}
	if got := complete("--to", "failover", "--to"); slices.Contains(got, "east-dc") {
		t.Errorf("--to<TAB> (the flag being typed) offers clusters: %q", got)
	}
}
