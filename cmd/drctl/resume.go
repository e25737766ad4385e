package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/plans"
	"github.com/drctl/drctl/runrecord"
)

// finishedRun says how and when run id ended if it finished every step,
// from this machine's journal or else from the clusters; "" when it did
// not (or neither knows it: resuming it says so). A finished run has
// nothing to resume, and saying nothing would let an operator believe the
// resume did something.
func finishedRun(ctx context.Context, clusters *kafkaconn.Clusters, dir, id string) string {
	if st, err := plans.ReadJournal(filepath.Join(dir, id+".jsonl")); err == nil && st.Finished {
		return fmt.Sprintf("run %s (%s) has already finished: every step succeeded, the last run of it ended at %s (by %s, from this machine's journal); there is nothing to resume: drctl status shows the roles now",
			id, st.Plan.Kind, timeOrUnknown(st.EndedAt), orText(st.Actor, "unknown"))
	}
	rec := runrecord.Load(ctx, clusters, id)
	if rec != nil && rec.Finished {
		return fmt.Sprintf("run %s (%s) has already finished: every step succeeded, recorded in the clusters at %s; there is nothing to resume: drctl status shows the roles now",
			id, rec.Plan.Kind, timeOrUnknown(rec.WrittenAt))
	}
	return ""
}

func timeOrUnknown(t time.Time) string {
	if t.IsZero() {
		return "an unknown time"
	}
	return t.UTC().Format(time.RFC3339)
}

func orText(s, dflt string) string {
	if s == "" {
		return dflt
	}
	return s
}
