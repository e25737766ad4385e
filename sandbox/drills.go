package sandbox

import (
	"context"

	"github.com/drctl/drctl/drill"
)

// drillsYAML is the sandbox topology's drills: section: a canary drill
// every minute, so that a newcomer sees a history, and disruptive drills
// allowed (drctl drill run --kind failover --yes rehearses a failover).
const drillsYAML = `drills:
  allow_disruptive: true    # a sandbox is for rehearsals; never set this on production
  stale_after: 10m          # drctl status: a problem when no drill passed for 10 minutes
  named:
    canary-every-minute:
      kind: canary
      schedule: "* * * * *"
      params: {records: 20, rate: 10}
      objectives: {max_canary_latency: 10s, rpo_seconds: 60}
`

// startDrills runs the drill scheduler in-process, as `drctl drill
// schedule` would, until the returned stop is called. It needs the mirror.
func (s *Sandbox) startDrills() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sch := &drill.Scheduler{Topo: s.Topology, Log: s.log.component("drill")}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := sch.Run(ctx); err != nil {
			s.log.printf("drill scheduler stopped: %v", err)
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
