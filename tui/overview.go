package tui

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/linkstate"
)

// overview is view 1: both clusters, the mirror, group sync, the verdict
// and the problems.
type overview struct {
	snap    *Snapshot
	history *lagHistory
	rates   rates
}

// rates are records per second measured between two refreshes from the
// lag reports: written to the active (source ends) and copied by the
// mirror (its progress); and MB/s from the growth of the same partitions'
// logs on the active and on the standby (retention shrinking a log counts
// as 0).
type rates struct {
	In, Copied     float64
	Known          bool
	InMB, CopiedMB float64
	BytesKnown     bool
}

func measureRates(prev, cur *Snapshot) rates {
	if prev == nil || cur == nil || prev.Lag == nil || cur.Lag == nil || prev.Lag.Link != cur.Lag.Link {
		return rates{}
	}
	dt := cur.Lag.MeasuredAt.Sub(prev.Lag.MeasuredAt).Seconds()
	if dt <= 0 {
		return rates{}
	}
	sum := func(s *Snapshot) (end, mirrored int64) {
		for _, p := range s.Lag.Partitions {
			end += p.SourceEnd
			if p.Mirrored >= 0 {
				mirrored += p.Mirrored
			}
		}
		return
	}
	e0, m0 := sum(prev)
	e1, m1 := sum(cur)
	r := rates{In: max(0, float64(e1-e0)/dt), Copied: max(0, float64(m1-m0)/dt), Known: true}
	if prev.Bytes != nil && cur.Bytes != nil {
		r.InMB = max(0, float64(cur.Bytes.Source-prev.Bytes.Source)/dt/1e6)
		r.CopiedMB = max(0, float64(cur.Bytes.Target-prev.Bytes.Target)/dt/1e6)
		r.BytesKnown = true
	}
	return r
}

// lagHistory keeps the mirror's lag in records over the last refreshes,
// for the sparkline.
type lagHistory struct{ points []int64 }

func (h *lagHistory) add(v int64) {
	h.points = append(h.points, v)
	if len(h.points) > 240 {
		h.points = h.points[len(h.points)-240:]
	}
}

// sparkline renders the last width points, scaled to the largest.
func (h *lagHistory) sparkline(width int) string {
	bars := []rune("▁▂▃▄▅▆▇█")
	pts := h.points
	if len(pts) > width {
		pts = pts[len(pts)-width:]
	}
	var top int64
	for _, p := range pts {
		top = max(top, p)
	}
	var b strings.Builder
	for _, p := range pts {
		i := 0
		if top > 0 {
			i = int(p * int64(len(bars)-1) / top)
		}
		b.WriteRune(bars[i])
	}
	return b.String()
}

func (o *overview) View(width, height int, st styles, now time.Time) string {
	if o.snap == nil || o.snap.Status == nil {
		return st.dim.Render("waiting for the first refresh ...")
	}
	s := o.snap.Status
	var parts []string
	cardW := (width - 1) / 2
	var cards []string
	for _, c := range s.Clusters {
		cards = append(cards, clusterCard(c, cardW, st))
	}
	parts = append(parts, lipgloss.JoinHorizontal(lipgloss.Top, interleave(cards, " ")...))
	parts = append(parts, o.mirrorBlock(width, st)...)
	parts = append(parts, groupSyncLine(s, st), topicsLine(o.snap, width, st))
	if l := aclLine(s, st); l != "" {
		parts = append(parts, truncateANSI(l, width))
	}
	v := assess(o.snap)
	vs := st.ok
	switch v.Level {
	case inspect.ReadyWarn, inspect.UnplannedOnly:
		vs = st.warn
	case inspect.NotReady, inspect.Unknown:
		vs = st.bad
	}
	parts = append(parts, st.title.Render("READY TO FAIL OVER? ")+vs.Render(string(v.Level)))
	for _, r := range v.Reasons {
		parts = append(parts, wrapIndent("  - ", r, width)...)
	}
	if len(s.Problems) > 0 {
		parts = append(parts, st.bad.Render(fmt.Sprintf("PROBLEMS (%d)", len(s.Problems))))
		for _, p := range s.Problems {
			parts = append(parts, wrapIndent(st.bad.Render("  ! "), p, width)...)
		}
	} else {
		parts = append(parts, st.ok.Render("no problems"))
	}
	return strings.Join(parts, "\n")
}

// assess is the overview's verdict: the one readiness function of
// inspect, or Unknown before the first refresh.
func assess(snap *Snapshot) inspect.Verdict {
	if snap == nil || snap.Status == nil {
		return inspect.Verdict{Level: inspect.Unknown, Reasons: []string{"waiting for the first refresh"}}
	}
	return inspect.Assess(snap.Status)
}

func interleave(xs []string, sep string) []string {
	var out []string
	for i, x := range xs {
		if i > 0 {
			out = append(out, sep)
		}
		out = append(out, x)
	}
	return out
}

// clusterCard is one cluster: role, reachability, brokers, release, epoch
// and, with fence: acl, whether drctl's fence is in place.
func clusterCard(c inspect.ClusterStatus, width int, st styles) string {
	inner := max(10, width-4)
	role := strings.ToUpper(c.Role)
	var lines []string
	lines = append(lines, st.title.Render(c.Name)+"  "+role)
	if !c.Reachable {
		lines = append(lines, st.bad.Render("DOWN")+" (unreachable)")
		errLines := wrap(c.Error, inner)
		if len(errLines) > 3 {
			errLines = append(errLines[:2], truncateANSI(errLines[2]+" …", inner))
		}
		lines = append(lines, errLines...)
	} else {
		lines = append(lines, st.ok.Render("up")+"  id "+c.ClusterID)
		ctrl := fmt.Sprint(c.Controller)
		lines = append(lines, fmt.Sprintf("brokers %d, controller %s", len(c.Brokers), ctrl))
		lines = append(lines, "kafka "+orDash(c.KafkaVersion))
	}
	epoch := "no role state stored"
	switch {
	case !c.Reachable:
		epoch = "role state not read"
	case c.StateEpoch >= 0:
		epoch = fmt.Sprintf("state epoch %d", c.StateEpoch)
	}
	if c.Stale {
		epoch += " " + st.bad.Render("STALE")
	}
	lines = append(lines, epoch)
	if c.Fenced != nil {
		if *c.Fenced {
			lines = append(lines, st.warn.Render("fence in place"))
		} else {
			lines = append(lines, "no fence")
		}
	}
	for len(lines) < 6 {
		lines = append(lines, "")
	}
	for i, l := range lines {
		lines[i] = truncateANSI(l, inner)
	}
	style := st.card
	if !c.Reachable || c.Stale {
		style = st.cardBad
	}
	return style.Width(width - 2).Render(strings.Join(lines, "\n"))
}

func (o *overview) mirrorBlock(width int, st styles) []string {
	m := o.snap.Status.Mirror
	if m == nil {
		return wrapIndent(st.title.Render("MIRROR")+"  ", st.warn.Render(notRead(o.snap.Status)), width)
	}
	state := st.bad.Render("not running")
	if m.Running {
		state = st.ok.Render(fmt.Sprintf("running, %d process(es)", m.Workers))
	}
	lag := fmt.Sprintf("lag %d records, %.1fs", m.LagRecords, m.LagSeconds)
	switch {
	case m.Error != "":
		lag = st.bad.Render("lag unknown")
	case m.LagSeconds > inspect.LagWarnSeconds:
		lag = st.warn.Render(lag)
	}
	first := st.title.Render("MIRROR "+m.Link) + "  " + state + "  " + lag
	if m.LostRecords > 0 {
		first += "  " + st.bad.Render(fmt.Sprintf("lost %d", m.LostRecords))
	}
	rate := "rate: measuring"
	if o.rates.Known {
		rate = fmt.Sprintf("in %.1f rec/s, copied %.1f rec/s", o.rates.In, o.rates.Copied)
		if o.rates.BytesKnown {
			rate = fmt.Sprintf("in %.1f rec/s %.2f MB/s, copied %.1f rec/s %.2f MB/s", o.rates.In, o.rates.InMB, o.rates.Copied, o.rates.CopiedMB)
		}
	}
	if o.snap.LagError != "" {
		rate = st.bad.Render("lag: " + o.snap.LagError)
	}
	if m.Error != "" {
		rate = st.bad.Render(m.Error)
	}
	second := "  " + rate
	if o.history != nil && len(o.history.points) > 1 {
		room := width - lipgloss.Width(second) - 8
		if room > 8 {
			second += "  lag " + o.history.sparkline(room)
		}
	}
	lines := []string{first, second}
	if l := proofLine(m.Proof, st); l != "" {
		lines = append(lines, truncateANSI(l, width))
	}
	return lines
}

// proofLine is what the mirror's verifier recorded on the standby ("" when
// it recorded nothing: no verifier runs, or it has not finished a round).
func proofLine(p *linkstate.ProofSummary, st styles) string {
	switch {
	case p == nil:
		return ""
	case p.Error != "":
		return "  proof: " + st.bad.Render(p.Error)
	case p.Differences > 0:
		d := p.Differing[0]
		return "  proof: " + st.bad.Render(fmt.Sprintf("STANDBY DIFFERS: %d difference(s) on %d partition(s), first %s", p.Differences, len(p.Differing), d.TopicPartition())) +
			fmt.Sprintf(" (drctl verify --topic %s --partition %d)", d.Topic, d.Partition)
	}
	return "  proof: " + st.ok.Render(fmt.Sprintf("no difference in %d records compared on %d partition(s)", p.Records, p.Partitions))
}

// aclLine summarises the standby's ACL parity with the active and its
// write fence (mirror/aclsync); "" when status has no ACL view (a cluster
// down, the roles moving, or no authorizer).
func aclLine(s *inspect.Status, st styles) string {
	a := s.ACLs
	if a == nil || a.Error != "" {
		return ""
	}
	drifted := a.Drifted()
	line := st.title.Render("ACLS") + "  "
	switch {
	case len(a.Principals) == 0:
		line += "no application ACLs"
	case len(drifted) == 0:
		line += st.ok.Render(fmt.Sprintf("%d principal(s) in parity on %s", len(a.Principals), a.Standby))
	default:
		var names []string
		for _, p := range drifted {
			names = append(names, p.Principal)
		}
		line += st.warn.Render(fmt.Sprintf("%d of %d principal(s) differ on %s: %s", len(drifted), len(a.Principals), a.Standby, strings.Join(names, ", ")))
	}
	if !a.Enabled {
		line += "  (sync off)"
	}
	if len(a.FenceGaps) > 0 {
		line += "  " + st.bad.Render(fmt.Sprintf("standby fence: %d ACL(s) missing", len(a.FenceGaps)))
	}
	return line
}

// notRead says why the link's state (lag, group sync) is absent from s.
func notRead(s *inspect.Status) string {
	if s.MirrorNotRead != "" {
		return s.MirrorNotRead
	}
	if s.Roles.Active == inspect.RoleUnknown {
		return "not read: no cluster answered, so the link between them is not known"
	}
	return "not read: the link's state could not be read"
}

// noneAnswered reports whether no cluster answered: the topics and groups
// lists are then unknown, not empty.
func noneAnswered(s *inspect.Status) bool {
	for _, c := range s.Clusters {
		if c.Reachable {
			return false
		}
	}
	return true
}

// groupSyncLine summarises group translation on the standby.
func groupSyncLine(s *inspect.Status, st styles) string {
	head := st.title.Render(fmt.Sprintf("GROUPS (%d)", len(s.Groups)))
	switch {
	case noneAnswered(s):
		return st.title.Render("GROUPS") + "  " + st.warn.Render("unknown: no cluster answered")
	case s.Mirror == nil:
		return head + "  " + st.warn.Render("sync unknown: the link was not read")
	}
	var inSync, behind, unmapped int
	oldest := -1.0
	for _, g := range s.Groups {
		switch {
		case g.Sync == nil:
			if g.Active.Exists {
				unmapped++
			}
		case g.Sync.InSync:
			inSync++
			oldest = max(oldest, g.Sync.BehindSeconds)
		default:
			behind++
		}
	}
	line := fmt.Sprintf("%d in sync, %d behind, %d never synced", inSync, behind, unmapped)
	if oldest >= 0 {
		line += fmt.Sprintf(", oldest sync %.1fs", oldest)
	}
	if behind > 0 {
		line = st.warn.Render(line)
	}
	return head + "  " + line
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// wrapIndent wraps text after prefix and indents the lines that follow
// under the text.
func wrapIndent(prefix, text string, width int) []string {
	pw := lipgloss.Width(prefix)
	lines := wrap(text, width-pw)
	for i := range lines {
		if i == 0 {
			lines[i] = prefix + lines[i]
		} else {
			lines[i] = strings.Repeat(" ", pw) + lines[i]
		}
	}
	return lines
}

// wrap breaks s into lines of at most width cells, at spaces where it can.
func wrap(s string, width int) []string {
	if width < 10 {
		width = 10
	}
	lines := strings.Split(lipgloss.NewStyle().Width(width).Render(s), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return lines
}

// topicsLine summarises the topics: parity and where the lag is.
func topicsLine(snap *Snapshot, width int, st styles) string {
	s := snap.Status
	if noneAnswered(s) {
		return truncateANSI(st.title.Render("TOPICS")+"  "+st.warn.Render("unknown: no cluster answered"), width)
	}
	parity, missing, unknown := 0, 0, 0
	for _, t := range s.Topics {
		switch {
		case t.Active.Unknown || t.Standby.Unknown:
			unknown++
		case t.InParity:
			parity++
		case !t.Standby.Exists:
			missing++
		}
	}
	line := fmt.Sprintf("%d in parity", parity)
	if unknown > 0 {
		line = fmt.Sprintf("%d of %d in parity", parity, len(s.Topics)) + st.warn.Render(fmt.Sprintf(", %d unknown (a cluster did not answer)", unknown))
	}
	if missing > 0 {
		line += st.warn.Render(fmt.Sprintf(", %d missing on the standby", missing))
	}
	if snap.Lag != nil {
		type tl struct {
			name string
			lag  int64
		}
		var lags []tl
		for name, l := range lagByTopic(snap.Lag) {
			if l.records > 0 {
				lags = append(lags, tl{name, l.records})
			}
		}
		slices.SortFunc(lags, func(a, b tl) int {
			if c := cmp.Compare(b.lag, a.lag); c != 0 {
				return c
			}
			return strings.Compare(a.name, b.name)
		})
		if len(lags) > 0 {
			var most []string
			for _, l := range lags[:min(3, len(lags))] {
				most = append(most, fmt.Sprintf("%s %d", l.name, l.lag))
			}
			line += "; most lag: " + strings.Join(most, ", ")
		}
	}
	return truncateANSI(st.title.Render(fmt.Sprintf("TOPICS (%d)", len(s.Topics)))+"  "+line, width)
}
