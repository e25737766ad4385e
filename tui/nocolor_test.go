package tui

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// colorChildEnv names the file the colour child writes its screen to.
const colorChildEnv = "DRCTL_TUI_COLOR_CHILD"

// TestNoColor renders the overview in a fresh test process whose colour
// profile comes from the environment (CLICOLOR_FORCE forces colour into
// the pipe): with NO_COLOR set the screen holds no ANSI escape at all;
// without it, the same screen is coloured (so the check can fail).
func TestNoColor(t *testing.T) {
	if out := os.Getenv(colorChildEnv); out != "" {
		m := fixtureModel(80, 24, false)
		m.Update(snapshotMsg{scenarioClusterDown()})
		if err := os.WriteFile(out, []byte(m.View()), 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}
	render := func(noColor bool) string {
		t.Helper()
		out := filepath.Join(t.TempDir(), "screen")
		cmd := exec.Command(os.Args[0], "-test.run=^TestNoColor$", "-test.count=1")
		env := []string{colorChildEnv + "=" + out, "CLICOLOR_FORCE=1", "TERM=xterm-256color"}
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "NO_COLOR=") && !strings.HasPrefix(kv, "CLICOLOR") && !strings.HasPrefix(kv, "TERM=") {
				env = append(env, kv)
			}
		}
		if noColor {
			env = append(env, "NO_COLOR=1")
		}
		cmd.Env = env
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("colour child: %v\n%s", err, b)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatalf("colour child wrote no screen: %v", err)
		}
		return string(b)
	}
	if coloured := render(false); !strings.Contains(coloured, "\x1b[") {
		t.Fatalf("without NO_COLOR the forced-colour screen has no escapes; the check below proves nothing:\n%s", coloured)
	}
	plain := render(true)
	if i := strings.Index(plain, "\x1b"); i >= 0 {
		t.Errorf("with NO_COLOR the screen holds an escape at byte %d: %q", i, plain[max(0, i-20):min(len(plain), i+20)])
	}
	if !strings.Contains(plain, "DOWN") {
		t.Errorf("the NO_COLOR screen lost its words:\n%s", plain)
	}
}
