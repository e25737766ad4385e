package sandbox

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
)

// Instructions is the text printed when the sandbox starts: where the
// clusters listen, where the topology is, and the commands to try next,
// spelled as Options.Command says so that they work when pasted.
// Features that add commands add their lines here.
func (s *Sandbox) Instructions() string {
	drctl := s.opts.Command
	if !s.defaultTopologyFile() {
		drctl += " -c " + shellQuote(s.TopologyPath)
	}
	data := "in memory (gone when the sandbox stops)"
	if s.opts.DataDir != "" {
		data = s.opts.DataDir + " (kept across restarts)"
	}
	var topics []string
	for _, t := range demoTopics {
		topics = append(topics, t.name)
	}
	var groups []string
	for _, g := range demoGroups {
		groups = append(groups, g.id)
	}

	var b strings.Builder
	b.WriteString("\ndrctl sandbox is running: two Kafka clusters with demo traffic.\n\n")
	fmt.Fprintf(&b, "  east      %-22s active: demo topics and traffic\n", strings.Join(s.Addrs(East), ","))
	if s.opts.Mirror {
		fmt.Fprintf(&b, "  west      %-22s standby: the built-in mirror copies east's selected topics here\n", strings.Join(s.Addrs(West), ","))
		if s.mirrorAddr != "" {
			fmt.Fprintf(&b, "  mirror    http://%s/metrics  (and /healthz, /readyz)\n", s.mirrorAddr)
		}
	} else {
		fmt.Fprintf(&b, "  west      %-22s standby: empty (the mirror is off)\n", strings.Join(s.Addrs(West), ","))
	}
	fmt.Fprintf(&b, "  topology  %s\n", s.TopologyPath)
	if s.topologyNote != "" {
		fmt.Fprintf(&b, "            (%s)\n", s.topologyNote)
	}
	fmt.Fprintf(&b, "  data      %s\n\n", data)
	fmt.Fprintf(&b, "Traffic: %d records/s into %s (scratch is not mirrored);\n", s.opts.Rate, strings.Join(topics, ", "))
	fmt.Fprintf(&b, "some payments are written in transactions, some of those aborted;\n")
	fmt.Fprintf(&b, "consumer groups %s read committed records.\n\n", strings.Join(groups, " and "))
	where := "in another terminal"
	if strings.HasPrefix(s.opts.Command, "go run ") {
		where += ", in this directory"
	}
	fmt.Fprintf(&b, "Try next, %s:\n", where)
	lines := [][2]string{
		{"validate --online", "check the file and reach both clusters"},
		{"status", "roles, reachability, lag, groups"},
		{"mirror lag", "per-partition lag in records and seconds"},
		{"offsets translate --group billing", "the group's exact position on west"},
	}
	if s.opts.Mirror {
		lines = append(lines,
			[2]string{"plan failover --to west", "the steps of a failover; changes nothing"},
			[2]string{"failover --to west --yes", "west becomes active; the traffic follows"},
			[2]string{"failback --yes", "east active again"},
			[2]string{"drill history", "a canary drill runs every minute"},
			[2]string{"drill run --kind failover --yes", "rehearse a failover and failback"})
	}
	width := 0
	for _, l := range lines {
		width = max(width, len(drctl)+1+len(l[0]))
	}
	for _, l := range lines {
		fmt.Fprintf(&b, "  %-*s  # %s\n", width, drctl+" "+l[0], l[1])
	}
	if strings.HasPrefix(s.opts.Command, "go run ") {
		b.WriteString("(go run builds drctl before each command; `go install ./cmd/drctl` once, then type drctl.)\n")
	}
	b.WriteString("\nPress Ctrl-C to stop.\n\n")
	return b.String()
}

// defaultTopologyFile reports whether the topology is ./drctl.yaml, which
// drctl reads without -c.
func (s *Sandbox) defaultTopologyFile() bool {
	abs, err := filepath.Abs(s.TopologyPath)
	if err != nil {
		return false
	}
	cwd, err := filepath.Abs(TopologyFile)
	return err == nil && abs == cwd
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./:=+-]+$`)

// shellQuote quotes s for a POSIX shell when it needs it, so a printed
// command can be pasted as is.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
