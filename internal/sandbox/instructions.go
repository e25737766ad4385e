package sandbox

import (
	"fmt"
	"regexp"
	"strings"
)

// Instructions is the text printed when the sandbox starts: where the
// clusters listen, where the topology is, and the commands to try next.
// Features that add commands add their lines here.
func (s *Sandbox) Instructions() string {
	cfg := "drctl -c " + shellQuote(s.TopologyPath)
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
	fmt.Fprintf(&b, "  data      %s\n\n", data)
	fmt.Fprintf(&b, "Traffic: %d records/s into %s (scratch is not mirrored);\n", s.opts.Rate, strings.Join(topics, ", "))
	fmt.Fprintf(&b, "some payments are written in transactions, some of those aborted;\n")
	fmt.Fprintf(&b, "consumer groups %s read committed records.\n\n", strings.Join(groups, " and "))
	b.WriteString("Try next, in another terminal:\n")
	try := []string{
		"validate --online        # check the file and reach both clusters",
		"status                   # roles, reachability, lag, groups",
		"status -o json           # the same, for scripts",
		"mirror lag               # per-partition lag in records and seconds",
	}
	if s.opts.Mirror {
		try = append(try,
			"drill history            # a canary drill runs every minute",
			"drill run --kind failover --yes   # rehearse a failover and failback")
	}
	for _, cmd := range try {
		fmt.Fprintf(&b, "  %s %s\n", cfg, cmd)
	}
	b.WriteString("\nPress Ctrl-C to stop.\n\n")
	return b.String()
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
