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

// Run fires the scheduled drills until ctx ends; a drill that is running
// then runs to its end first. Drills due at the same time run one after
// another, in name order.
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
		if hist, err := History(hctx, s.Topo, HistoryOptions{JournalDir: s.Options.JournalDir}); err == nil || len(hist) > 0 {
			s.Metrics.Seed(hist)
		}
		cancel()
	}
	now := s.now()
	next := make([]time.Time, len(entries))
	for i, e := range entries {
		next[i] = nextSlot(e.schedule, now)
	}
	for {
		at := next[0]
		for _, t := range next[1:] {
			if t.Before(at) {
				at = t
			}
		}
		wait := time.Until(at)
		if s.Now != nil {
			wait = at.Sub(s.now())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(max(wait, 0)):
		}
		for i, e := range entries {
			if next[i].After(at) {
				continue
			}
			if ctx.Err() != nil {
				return nil //nolint:nilerr // the scheduler is stopping: that is no error
			}
			s.RunSlot(ctx, e.drill, next[i])
			next[i] = nextSlot(e.schedule, maxTime(at, s.now()))
		}
	}
}

// RunSlot runs drill d for the scheduled time slot, if this scheduler's
// claim on the slot wins, and returns the record (nil when another
// scheduler has the slot or the drill could not run).
func (s *Scheduler) RunSlot(ctx context.Context, d *topology.NamedDrill, slot time.Time) *Record {
	if s.Holder == "" {
		s.Holder = NewHolder()
	}
	key := "slot/" + d.Name + "/" + strconv.FormatInt(slot.Unix(), 10)
	if _, err := Acquire(ctx, s.Topo, key, s.Holder, 365*24*time.Hour); err != nil {
		s.log(slog.LevelInfo, "slot taken by another scheduler", d, slot, "reason", err.Error())
		return nil
	}
	o := s.Options
	o.Holder, o.Slot, o.Yes = s.Holder, slot, true
	// A drill runs to its end even when the scheduler is asked to stop: a
	// failover drill cut short would leave the roles moved.
	rec, err := Run(context.WithoutCancel(ctx), s.Topo, d, o)
	if s.Metrics != nil {
		s.Metrics.Observe(d, rec, err)
	}
	if err != nil {
		if errors.Is(err, ErrBusy) {
			// Expected beside a failover, failback or reseed: the slot
			// is skipped (and counted in drctl_drill_busy_total).
			s.log(slog.LevelInfo, "drill skipped: another run is in progress", d, slot, "reason", err.Error())
		} else {
			s.log(slog.LevelError, "drill did not run", d, slot, "error", err.Error())
		}
		if rec == nil {
			return nil
		}
	}
	level := slog.LevelInfo
	if !rec.Passed() {
		level = slog.LevelWarn
	}
	s.log(level, "drill "+verdictWord(rec.Verdict), d, slot, "id", rec.ID, "kind", string(d.Kind), "reasons", strings.Join(rec.Reasons, "; "))
	return rec
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

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
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
