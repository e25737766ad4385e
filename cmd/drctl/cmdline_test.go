package main

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// leafCommand is a runnable command and its path from drctl.
type leafCommand struct {
	path []string
	cmd  *cli.Command
}

// leafCommands lists every command that runs (has no subcommands), so the
// tests below cover commands added later without being told.
func leafCommands() []leafCommand {
	var out []leafCommand
	var walk func(prefix []string, cmds []*cli.Command)
	walk = func(prefix []string, cmds []*cli.Command) {
		for _, c := range cmds {
			p := append(append([]string(nil), prefix...), c.Name)
			if len(c.Subcommands) > 0 {
				walk(p, c.Subcommands)
				continue
			}
			out = append(out, leafCommand{p, c})
		}
	}
	walk(nil, newApp().Commands)
	return out
}

// requiredFlags returns "--name value" for each required flag of c, so that
// a test reaches the command's own work.
func requiredFlags(c *cli.Command) []string {
	var out []string
	for _, f := range c.Flags {
		if r, ok := f.(cli.RequiredFlag); ok && r.IsRequired() {
			out = append(out, "--"+f.Names()[0], "west")
		}
	}
	return out
}

// TestFlagsAfterArguments runs every command that takes a positional
// argument with the global -c given after that argument and checks the
// command read it: it reports the (missing) file it was given, exit 2.
func TestFlagsAfterArguments(t *testing.T) {
	noTopology := map[string]bool{"completion": true, "drill verify-report": true} // a report is checked without the topology (an auditor has only the public key)
	missing := filepath.Join(t.TempDir(), "flags-after-args.yaml")
	n := 0
	for _, lc := range leafCommands() {
		name := strings.Join(lc.path, " ")
		if lc.cmd.ArgsUsage == "" || noTopology[name] || lc.cmd.Hidden {
			continue
		}
		n++
		t.Run(name, func(t *testing.T) {
			args := append(append(append([]string(nil), lc.path...), "east"), requiredFlags(lc.cmd)...)
			args = append(args, "-c", missing, "--yes=false")
			if !hasFlag(lc.cmd.Flags, "yes") {
				args = args[:len(args)-1]
			}
			_, stderr, code := drctl(t, args...)
			if code != exitBadInput || !strings.Contains(stderr, missing) {
				t.Errorf("drctl %v: exit %d, stderr %q: want exit 2 naming %s", args, code, stderr, missing)
			}
		})
	}
	if n < 5 {
		t.Errorf("only %d commands take an argument; the walk is broken", n)
	}
	// A flag after the argument is parsed, not taken as a second argument.
	_, stderr, code := drctl(t, "fence", "east", "--no-such-flag")
	if code != exitBadInput || !strings.Contains(stderr, "unknown flag --no-such-flag") {
		t.Errorf("fence east --no-such-flag: exit %d, %q", code, stderr)
	}
}

func TestNormalizeArgs(t *testing.T) {
	app := newApp()
	cases := []struct {
		in, want []string
	}{
		{[]string{"apply", "plan.json", "--yes", "-c", "x.yaml"}, []string{"-c", "x.yaml", "apply", "--yes", "plan.json"}},
		{[]string{"apply", "-o", "json", "plan.json"}, []string{"apply", "-o", "json", "plan.json"}},
		{[]string{"-o", "json", "fence", "east"}, []string{"fence", "-o", "json", "east"}},
		{[]string{"mirror", "lag", "-c", "x", "--timeout=3s"}, []string{"-c", "x", "mirror", "lag", "--timeout=3s"}},
		{[]string{"status", "--config=x"}, []string{"--config=x", "status"}},
		{[]string{"plan", "failover", "--out", "p.json", "--to", "west"}, []string{"plan", "failover", "--out", "p.json", "--to", "west"}},
		// "--" ends the flags: what follows is an argument even if it looks like a flag.
		{[]string{"apply", "--yes", "--", "--odd-name.json"}, []string{"apply", "--yes", "--", "--odd-name.json"}},
		{[]string{"reseed", "--", "west", "--yes"}, []string{"reseed", "--", "west", "--yes"}},
		// A flag's value may look like a command or a flag.
		{[]string{"-c", "status", "status"}, []string{"-c", "status", "status"}},
		{[]string{"help", "status"}, []string{"help", "status"}},
		{[]string{"mirror", "help", "lag"}, []string{"mirror", "help", "lag"}},
	}
	for _, c := range cases {
		got, err := normalizeArgs(app, append([]string{"drctl"}, c.in...))
		if err != nil {
			t.Errorf("%v: %v", c.in, err)
			continue
		}
		if want := append([]string{"drctl"}, c.want...); !reflect.DeepEqual(got, want) {
			t.Errorf("%v:\n got %q\nwant %q", c.in, got, want)
		}
	}
}

// TestUsageExitCodes: what cannot run is bad input (exit 2), with a
// suggestion where one is close, and nothing is contacted (no topology is
// even read: -c names a file that does not exist).
func TestUsageExitCodes(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.yaml")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"stauts"}, `unknown command "stauts"; did you mean "status"?`},
		{[]string{"xyzzy"}, `unknown command "xyzzy"`},
		{[]string{"mirror", "lga"}, `mirror: unknown command "lga"; did you mean "lag"?`},
		{[]string{"failover", "--yes"}, "failover: --to is required"},
		{[]string{"plan", "failover"}, "plan failover: --to is required"},
		{[]string{"status", "--timout", "3s"}, "status: unknown flag --timout; did you mean --timeout?"},
		{[]string{"status", "--timeout", "soon"}, `status: invalid value "soon"`},
		{[]string{"mirror", "lag", "--timeout=soon"}, `mirror lag: invalid value "soon"`},
		{[]string{"-o", "xml", "status"}, `-o "xml" is not a format`},
		{[]string{"sandbox", "-o", "json"}, "sandbox has no -o json"},
		{[]string{"mirror", "run", "-o", "yaml"}, "mirror run has no -o yaml"},
		{[]string{"mirror", "run", "--log-format", "xml"}, `--log-format "xml": use text or json`},
		{[]string{"mirror", "run", "--log-level", "loud"}, `--log-level "loud": use debug, info, warn or error`},
		{[]string{"mirror", "run", "--shards", "0"}, "--shards 0: use 1 to 1024, or leave it out to keep the link's count"},
		{[]string{"mirror", "run", "--shards", "8", "--txn-concurrency", "9"}, "--txn-concurrency 9: use 1 to the shard count (8), or 0 for no limit"},
		{[]string{"mirror", "run", "--txn-concurrency", "1025"}, "--txn-concurrency 1025: use 1 to 1024"},
		{[]string{"mirror", "reshard"}, "mirror reshard: --shards is required"},
		{[]string{"mirror", "reshard", "--shards", "0"}, "--shards 0: use 1 to 1024"},
		{[]string{"mirror", "run", "--shards", "2", "--txn-concurrency", "-1"}, "--txn-concurrency -1: use 1 to the shard count (2)"},
		{[]string{"sandbox", "--log-format", "logfmt"}, `--log-format "logfmt": use text or json`},
		{[]string{"sandbox", "--log-level", "verbose"}, `--log-level "verbose"`},
		{[]string{"drill", "schedule", "--log-format", "xml"}, `--log-format "xml": use text or json`},
		{[]string{"drill", "schedule", "--log-level", "chatty"}, `--log-level "chatty"`},
		{[]string{"drill", "schedule", "-o", "json"}, "drill schedule has no -o json"},
	}
	for _, c := range cases {
		_, stderr, code := drctl(t, append(c.args, "-c", missing)...)
		if code != exitBadInput || !strings.Contains(stderr, c.want) || strings.Contains(stderr, missing) {
			t.Errorf("drctl %v: exit %d, stderr %q: want exit 2 with %q, before reading -c", c.args, code, stderr, c.want)
		}
		if n := strings.Count(strings.TrimSpace(stderr), "\n"); n != 0 {
			t.Errorf("drctl %v: %d lines on stderr, want one: %q", c.args, n+1, stderr)
		}
	}
	// --help needs no required flag.
	out, stderr, code := drctl(t, "failover", "--help")
	if code != exitOK || !strings.Contains(out, "--to") {
		t.Errorf("failover --help: exit %d, %q %q", code, out, stderr)
	}
}
