package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/drctl/drctl/plans"
)

// The two parts of a planned failover: until the groups are on the new
// active (applications can move), and the reseed of the old active.
const (
	firstStep     = "preflight"
	flipRolesStep = "flip-roles"
	lastFlipStep  = "translate-groups"
	firstTailStep = "unfence-new-active"
	waitStep      = "wait-reseeded"
	lastStep      = "finish"
)

// span sums the elapsed time of the done steps from first to last, in
// plan order, and returns when the last of them was done, counted from the
// start of the drctl process.
func (r *result) span(first, last string) (sum, at time.Duration) {
	in := false
	for _, e := range r.events {
		if e.Type != plans.EventStepDone {
			continue
		}
		if e.Name == first {
			in = true
		}
		if in {
			sum += time.Duration(e.ElapsedMS) * time.Millisecond
		}
		if e.Name == last {
			return sum, e.Time.Sub(r.start)
		}
	}
	return sum, 0
}

// report renders the run as a markdown fragment.
func (r *result) report(o options, records, positions int, initialCopy time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n%d topics x %d partitions (%d records of %d B), %d groups (%d committed positions), quiet_period %v, group_sync_interval %v, %d shards; initial copy %.1fs\n\n",
		o.topics, o.partitions, records, o.valueSize, o.groups, positions, o.quietPeriod, o.groupSync, o.shards, initialCopy.Seconds())
	b.WriteString("| step | seconds | summary |\n| --- | ---: | --- |\n")
	for _, e := range r.events {
		switch e.Type {
		case plans.EventStepDone:
			fmt.Fprintf(&b, "| `%s` | %.3f | %s |\n", e.Name, float64(e.ElapsedMS)/1000, e.Summary)
		case plans.EventStepFailed:
			fmt.Fprintf(&b, "| `%s` | %.3f | FAILED: %s |\n", e.Name, float64(e.ElapsedMS)/1000, strings.ReplaceAll(e.Error, "\n", " "))
		}
	}
	flip, flipAt := r.span(firstStep, lastFlipStep)
	_, rolesAt := r.span(firstStep, flipRolesStep)
	tail, _ := r.span(firstTailStep, lastStep)
	fmt.Fprintf(&b, "\n- to the flip (%s .. %s): **%.1fs** of steps, done %.1fs after `drctl failover` started (planning and the checks between steps included); the roles flipped (%s done) %.1fs after it started\n",
		firstStep, lastFlipStep, flip.Seconds(), flipAt.Seconds(), flipRolesStep, rolesAt.Seconds())
	fmt.Fprintf(&b, "- reseed tail (%s .. %s): **%.1fs**\n", firstTailStep, lastStep, tail.Seconds())
	if limit := r.limitCreate + r.limitWrite; limit > 0 {
		wait, _ := r.span(waitStep, waitStep)
		fmt.Fprintf(&b, "- the reseed's copy limit (the same topics created afresh on east, 16 requests at a time, and the same records written there by a plain producer, after the failover): **%.1fs** (create %.1fs, write %.1fs); `%s` took %.1fs, %.2fx the limit\n",
			limit.Seconds(), r.limitCreate.Seconds(), r.limitWrite.Seconds(), waitStep, wait.Seconds(), wait.Seconds()/limit.Seconds())
	}
	fmt.Fprintf(&b, "- whole `drctl failover --to west --yes`: **%.1fs** wall, exit %d\n", r.wall.Seconds(), r.code)
	return b.String()
}
