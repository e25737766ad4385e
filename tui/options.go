package tui

import (
	"time"

	"github.com/drctl/drctl/topology"
)

// Options configure a console.
type Options struct {
	Topology *topology.Topology
	// ReadOnly disables every action (for observers).
	ReadOnly bool
	// Interval is the time between refreshes; default 2s.
	Interval time.Duration
	// Timeout bounds one refresh, as `drctl status --timeout`; default 14s.
	Timeout time.Duration
	// JournalDir is where runs are journaled (default failover.JournalDir()).
	JournalDir string
	// Now is the clock; default time.Now. Golden tests fix it.
	Now func() time.Time
	// NoRefresh starts the console without its first refresh and ticks
	// (tests feed snapshots as messages).
	NoRefresh bool
}

// Refresh intervals that + and - step through.
var intervals = []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute}

func (o Options) withDefaults() Options {
	if o.Interval <= 0 {
		o.Interval = 2 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 14 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}
