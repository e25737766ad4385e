package drill

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/topology"
)

// Scheduler runs the topology's scheduled drills. Several schedulers may
// run at once (for availability): each slot of each drill is claimed in the
// locks topic and runs once, by the scheduler whose claim came first; and
// every drill holds the running lease, so no two drills overlap.
type Scheduler struct {
	Topo *topology.Topology
	// Holder names this scheduler in claims and leases (default:
	// NewHolder()).
	Holder string
	// Options are passed to every Run; Holder and Slot are set per run.
	Options Options
	Metrics *Metrics
	// Log receives one entry per slot: the drill, the slot, and either
	// the record's id, verdict and reasons or why it did not run (nil:
	// none).
	Log *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// entry is one scheduled drill and its parsed schedule.
type entry struct {
	drill    *topology.NamedDrill
	schedule cron.Schedule
}

// queued is a slot waiting to run late: it found another run in progress
// (busy: tried again every busyRetry until the drill's next slot is due),
// or it came while this scheduler ran other drills (run at once).
type queued struct {
	slot, at time.Time
	busy     bool
}

// busyRetry is how often a slot that found a failover, failback, reseed or
// another drill in progress is tried again.
var busyRetry = 15 * time.Second

// Run fires the scheduled drills until ctx ends; a drill that is running
// then runs to its end first, and the stop is logged with its cause. Drills
// due at the same time run one after another, in name order. A slot is not
// dropped silently: one that finds another run in progress is queued and
// tried again until the drill's next slot is due, then skipped (logged, and
// counted in drctl_drill_busy_total); one that comes while this scheduler
// runs another drill runs late, and of several such slots of one drill the
// latest runs and the others are logged and counted as missed
// (drctl_drill_slots_missed_total).
func (s *Scheduler) Run(ctx context.Context) error {
	entries, err := s.entries()
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		return fmt.Errorf("%w: %s schedules no drill; give a drill in drills.named a schedule, e.g. schedule: \"0 3 * * *\"", ErrBadInput, s.Topo.Path)
	}
	if s.Holder == "" {
		s.Holder = NewHolder()
	}
	if s.Metrics != nil {
		hctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		clusters := kafkaconn.Open(hctx, s.Topo)
		if hist, err := History(hctx, clusters, HistoryOptions{JournalDir: s.Options.JournalDir}); err == nil || len(hist) > 0 {
			s.Metrics.Seed(hist)
		}
		clusters.Close()
		cancel()
	}
	now := s.now()
	next := make([]time.Time, len(entries))
	waiting := make([]*queued, len(entries))
	for i, e := range entries {
		next[i] = nextSlot(e.schedule, now)
	}
	for {
		at := next[0]
		for i, t := range next {
			if t.Before(at) {
				at = t
			}
			if q := waiting[i]; q != nil && q.at.Before(at) {
				at = q.at
			}
		}
		wait := time.Until(at)
		if s.Now != nil {
			wait = at.Sub(s.now())
		}
		select {
		case <-ctx.Done():
			return s.stopping(ctx, entries, waiting)
		case <-time.After(max(wait, 0)):
		}
		for i, e := range entries {
			if ctx.Err() != nil {
				return s.stopping(ctx, entries, waiting)
			}
			d := e.drill
			if q := waiting[i]; q != nil && !q.at.After(at) {
				switch {
				case q.busy && !next[i].After(s.now()):
					// The next slot is due: it supersedes the one queued.
					s.log(slog.LevelInfo, "drill skipped: another run was in progress until its next slot", d, q.slot, "next_slot", next[i].UTC().Format(time.RFC3339))
					if s.Metrics != nil {
						s.Metrics.Observe(d, nil, ErrBusy)
					}
					waiting[i] = nil
				default:
					waiting[i] = s.runQueued(ctx, d, q)
				}
			}
			if next[i].After(at) || ctx.Err() != nil {
				continue
			}
			slot := next[i]
			if _, err := s.runSlot(ctx, d, slot, false); errors.Is(err, ErrBusy) && waiting[i] == nil {
				waiting[i] = s.queueBusy(d, slot, err)
			}
			var late *queued
			next[i], late = s.advance(e, slot, waiting[i] != nil)
			if late != nil {
				waiting[i] = late
			}
		}
	}
}

// runQueued runs a queued slot; it returns the slot again, to be retried,
// when it is still busy.
func (s *Scheduler) runQueued(ctx context.Context, d *topology.NamedDrill, q *queued) *queued {
	_, err := s.runSlot(ctx, d, q.slot, true)
	if errors.Is(err, ErrBusy) {
		return &queued{slot: q.slot, at: s.now().Add(busyRetry), busy: true}
	}
	return nil
}

// queueBusy queues a slot that found another run in progress.
func (s *Scheduler) queueBusy(d *topology.NamedDrill, slot time.Time, err error) *queued {
	s.log(slog.LevelInfo, "drill queued: another run is in progress; it is tried again until its next slot", d, slot,
		"retry_every", busyRetry.String(), "reason", err.Error())
	return &queued{slot: slot, at: s.now().Add(busyRetry), busy: true}
}

// advance returns the drill's next slot after slot that is still to come.
// Slots that came and went meanwhile (while this scheduler ran drills) are
// not dropped silently: the latest is returned to run late at once (unless
// another slot of the drill is queued already), the others are logged and
// counted as missed.
func (s *Scheduler) advance(e entry, slot time.Time, busy bool) (time.Time, *queued) {
	now := s.now()
	var missed []time.Time
	n := nextSlot(e.schedule, slot)
	for !n.After(now) {
		missed = append(missed, n)
		n = nextSlot(e.schedule, n)
	}
	if len(missed) == 0 {
		return n, nil
	}
	var late *queued
	if !busy {
		late = &queued{slot: missed[len(missed)-1], at: now}
		missed = missed[:len(missed)-1]
	}
	if len(missed) > 0 {
		s.log(slog.LevelInfo, "drill slots missed: they came while drills ran", e.drill, missed[0], "missed", len(missed),
			"last_missed", missed[len(missed)-1].UTC().Format(time.RFC3339))
		if s.Metrics != nil {
			s.Metrics.Missed(e.drill, len(missed))
		}
	}
	return n, late
}

// stopping logs why the scheduler stops, and the queued slots that will not
// run.
func (s *Scheduler) stopping(ctx context.Context, entries []entry, waiting []*queued) error {
	if s.Log == nil {
		return nil
	}
	attrs := []any{"reason", context.Cause(ctx).Error()}
	var dropped []string
	for i, q := range waiting {
		if q != nil {
			dropped = append(dropped, entries[i].drill.Name+" "+q.slot.UTC().Format(time.RFC3339))
		}
	}
	if len(dropped) > 0 {
		attrs = append(attrs, "queued_not_run", strings.Join(dropped, ", "))
	}
	s.Log.Info("drill scheduler stopping", attrs...)
	return nil
}

// RunSlot runs drill d for the scheduled time slot, if this scheduler's
// claim on the slot wins, and returns the record (nil when another
// scheduler has the slot or the drill could not run).
func (s *Scheduler) RunSlot(ctx context.Context, d *topology.NamedDrill, slot time.Time) *Record {
	rec, err := s.runSlot(ctx, d, slot, false)
	if errors.Is(err, ErrBusy) && s.Metrics != nil {
		s.Metrics.Observe(d, nil, err)
	}
	return rec
}

// runSlot is RunSlot that returns the error a drill could not run with;
// ErrBusy is neither logged as a skip nor counted: the caller queues the
// slot or gives it up. late says the slot runs after its time (queued).
func (s *Scheduler) runSlot(ctx context.Context, d *topology.NamedDrill, slot time.Time, late bool) (*Record, error) {
	if s.Holder == "" {
		s.Holder = NewHolder()
	}
	// The slot's session, the drill's too: the scheduler is a front-end.
	clusters := kafkaconn.Open(context.WithoutCancel(ctx), s.Topo)
	defer clusters.Close()
	key := "slot/" + d.Name + "/" + strconv.FormatInt(slot.Unix(), 10)
	if _, err := Acquire(ctx, clusters, key, s.Holder, 365*24*time.Hour); err != nil {
		s.log(slog.LevelInfo, "slot taken by another scheduler", d, slot, "reason", err.Error())
		return nil, nil
	}
	o := s.Options
	o.Holder, o.Slot, o.Yes = s.Holder, slot, true
	// A drill runs to its end even when the scheduler is asked to stop: a
	// failover drill cut short would leave the roles moved. The stop is
	// logged as it comes, so that nobody waits in the dark.
	running := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			s.log(slog.LevelInfo, "stop requested: the running drill finishes first", d, slot, "reason", context.Cause(ctx).Error())
		case <-running:
		}
	}()
	rec, err := Run(context.WithoutCancel(ctx), clusters, d, o)
	close(running)
	if errors.Is(err, ErrBusy) && rec == nil {
		return nil, err
	}
	if late {
		s.log(slog.LevelInfo, "drill ran late", d, slot, "late", s.now().Sub(slot).Round(time.Second).String())
	}
	if s.Metrics != nil {
		s.Metrics.Observe(d, rec, err)
	}
	if err != nil {
		s.log(slog.LevelError, "drill did not run", d, slot, "error", err.Error())
		if rec == nil {
			return nil, err
		}
	}
	level := slog.LevelInfo
	if !rec.Passed() {
		level = slog.LevelWarn
	}
	s.log(level, "drill "+verdictWord(rec.Verdict), d, slot, "id", rec.ID, "kind", string(d.Kind), "reasons", strings.Join(rec.Reasons, "; "))
	return rec, err
}

func (s *Scheduler) entries() ([]entry, error) {
	var out []entry
	for _, name := range s.Topo.Drills.DrillNames() {
		d := s.Topo.Drills.Named[name]
		if d.Schedule == "" {
			continue
		}
		if d.Kind.Disruptive() && !s.Topo.Drills.AllowDisruptive {
			return nil, fmt.Errorf("%w: drill %s is %s; set drills.allow_disruptive: true", ErrBadInput, name, d.Kind)
		}
		sch, err := topology.ParseSchedule(d.Schedule, d.Location)
		if err != nil {
			return nil, fmt.Errorf("%w: drill %s: %v", ErrBadInput, name, err)
		}
		out = append(out, entry{drill: d, schedule: sch})
	}
	slices.SortFunc(out, func(a, b entry) int { return strings.Compare(a.drill.Name, b.drill.Name) })
	return out, nil
}

// nextSlot is the schedule's next time after now. A constant "@every"
// schedule is aligned to multiples of its period since the Unix epoch, so
// that every scheduler names the same slots.
func nextSlot(s cron.Schedule, now time.Time) time.Time {
	if c, ok := s.(cron.ConstantDelaySchedule); ok {
		d := c.Delay
		return now.Truncate(d).Add(d)
	}
	return s.Next(now)
}

func (s *Scheduler) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Scheduler) log(level slog.Level, msg string, d *topology.NamedDrill, slot time.Time, attrs ...any) {
	if s.Log == nil {
		return
	}
	s.Log.Log(context.Background(), level, msg, append([]any{"drill", d.Name, "slot", slot.UTC().Format(time.RFC3339)}, attrs...)...)
}

// errIsBusy reports whether err means the drill did not run because
// something else was running.
func errIsBusy(err error) bool { return errors.Is(err, ErrBusy) }

// verdictWord is the past tense of a verdict, for log messages.
func verdictWord(v Verdict) string {
	if v == Pass {
		return "passed"
	}
	return "failed"
}
