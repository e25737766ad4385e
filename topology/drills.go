package topology

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"time"
	_ "time/tzdata" // schedules name IANA zones; do not depend on the machine's zoneinfo

	"github.com/robfig/cron/v3"
	"gopkg.in/yaml.v3"
)

// DrillKind is what a drill exercises.
type DrillKind string

const (
	// DrillCanary writes canary records through the mirror and checks
	// replication, group sync and failover readiness. Changes nothing else.
	DrillCanary DrillKind = "canary"
	// DrillFailover runs a real planned failover and, after a hold, a
	// failback. Disruptive.
	DrillFailover DrillKind = "failover"
	// DrillUnplanned rehearses the loss of the active cluster. Disruptive.
	DrillUnplanned DrillKind = "unplanned"
)

// Disruptive reports whether the kind moves the active role.
func (k DrillKind) Disruptive() bool { return k == DrillFailover || k == DrillUnplanned }

// DrillKinds lists every kind.
var DrillKinds = []DrillKind{DrillCanary, DrillFailover, DrillUnplanned}

// Drill defaults.
const (
	DefaultCanaryRecords   = 100
	DefaultCanaryRate      = 50 // records per second
	DefaultDrillHold       = time.Minute
	DefaultCanaryRetention = 6 * time.Hour
)

// Drills is the drills: section: settings for every drill and the named,
// optionally scheduled, drills.
type Drills struct {
	// AllowDisruptive permits failover and unplanned drills against this
	// topology. Off by default: a production topology never allows them.
	AllowDisruptive bool
	// StaleAfter makes `drctl status` report a problem when no drill has
	// passed within it (0: never).
	StaleAfter time.Duration
	// CanaryRetention is the retention of the canary topic.
	CanaryRetention time.Duration
	// CanaryUser, if set, is a principal that is not a super user: a
	// failover drill writes as it to the old active before and while it is
	// fenced, to prove the fence refuses writes. Its mechanism is the
	// cluster's.
	CanaryUser *SASL
	// Named holds the named drills, by name.
	Named map[string]*NamedDrill
	// Evidence says how drill records are sealed (drills.evidence).
	Evidence Evidence
}

// NamedDrill is one drill of the drills: section.
type NamedDrill struct {
	Name string
	Kind DrillKind
	// Schedule is a five-field cron expression ("" = run by hand only),
	// evaluated in Location.
	Schedule string
	Location *time.Location
	Params   DrillParams
	// Objectives are what the verdict is judged against (zero: not judged).
	Objectives DrillObjectives
}

// DrillParams tune a drill.
type DrillParams struct {
	// Records is the number of canary records written.
	Records int
	// Rate is the canary's records per second.
	Rate int
	// Hold is how long a failover drill stays failed over before failing
	// back.
	Hold time.Duration
}

// DrillObjectives are the targets a drill is judged against.
type DrillObjectives struct {
	RPOSeconds       float64
	RTOSeconds       float64
	MaxCanaryLatency time.Duration
}

// DefaultDrill is the drill of a kind when none is named: default
// parameters, no schedule, no objectives.
func DefaultDrill(kind DrillKind) *NamedDrill {
	return &NamedDrill{Name: string(kind), Kind: kind, Location: time.UTC,
		Params: DrillParams{Records: DefaultCanaryRecords, Rate: DefaultCanaryRate, Hold: DefaultDrillHold}}
}

// DrillNames returns the named drills' names, sorted.
func (d Drills) DrillNames() []string {
	return slices.Sorted(maps.Keys(d.Named))
}

// addCanaryToSelections makes the mirror copy the canary topic and sync
// the canary group whatever the user's includes say (an exclude that names
// them still wins).
func addCanaryToSelections(t *Topology) {
	t.Mirror.Topics.include = append(t.Mirror.Topics.include, regexp.MustCompile("^"+regexp.QuoteMeta(t.CanaryTopic())+"$"))
	t.Mirror.Groups.include = append(t.Mirror.Groups.include, regexp.MustCompile("^"+regexp.QuoteMeta(t.CanaryGroup())+"$"))
}

type rawDrills struct {
	AllowDisruptive bool                      `yaml:"allow_disruptive"`
	StaleAfter      *duration                 `yaml:"stale_after"`
	CanaryRetention *duration                 `yaml:"canary_retention"`
	CanaryUser      *rawCanaryUser            `yaml:"canary_user"`
	Named           map[string]*rawNamedDrill `yaml:"named"`
	Evidence        *rawEvidence              `yaml:"evidence"`
}

type rawCanaryUser struct {
	Username string `yaml:"username"`
	Password string `yaml:"password"`
}

type rawNamedDrill struct {
	Kind       string             `yaml:"kind"`
	Schedule   string             `yaml:"schedule"`
	TimeZone   string             `yaml:"time_zone"`
	Params     rawDrillParams     `yaml:"params"`
	Objectives rawDrillObjectives `yaml:"objectives"`
}

type rawDrillParams struct {
	Records *int      `yaml:"records"`
	Rate    *int      `yaml:"rate"`
	Hold    *duration `yaml:"hold"`
}

type rawDrillObjectives struct {
	RPOSeconds       *float64  `yaml:"rpo_seconds"`
	RTOSeconds       *float64  `yaml:"rto_seconds"`
	MaxCanaryLatency *duration `yaml:"max_canary_latency"`
}

// cronParser reads the five standard fields and the @-descriptors.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseSchedule parses a drill's cron expression in loc.
func ParseSchedule(expr string, loc *time.Location) (cron.Schedule, error) {
	s, err := cronParser.Parse(expr)
	if err != nil {
		return nil, err
	}
	if spec, ok := s.(*cron.SpecSchedule); ok {
		spec.Location = loc
	}
	return s, nil
}

// buildDrills validates the drills: section.
func buildDrills(t *Topology, raw *rawDrills, root *yaml.Node) error {
	t.Drills = Drills{CanaryRetention: DefaultCanaryRetention, Named: map[string]*NamedDrill{}}
	if raw == nil {
		return nil
	}
	at := func(msg string, keys ...string) error {
		return &Error{Line: lineOf(root, append([]string{"drills"}, keys...)...), Msg: msg}
	}
	t.Drills.AllowDisruptive = raw.AllowDisruptive
	t.Drills.StaleAfter = raw.StaleAfter.or(0)
	t.Drills.CanaryRetention = raw.CanaryRetention.or(DefaultCanaryRetention)
	if t.Drills.CanaryRetention < time.Minute {
		return at("drills.canary_retention must be at least 1m (the canary reads its records back)", "canary_retention")
	}
	if u := raw.CanaryUser; u != nil {
		if u.Username == "" || u.Password == "" {
			return at("drills.canary_user needs username and password (a principal that is not a super user)", "canary_user")
		}
		t.Drills.CanaryUser = &SASL{Username: u.Username, Password: u.Password}
	}
	for name, rd := range raw.Named {
		where := "drills.named." + name
		if !nameRE.MatchString(name) {
			return at(fmt.Sprintf("drill name %q may hold only letters, digits, '.', '_' and '-'", name), "named", name)
		}
		if rd == nil {
			return at(where+" is empty; give it at least kind: canary", "named", name)
		}
		d := DefaultDrill(DrillCanary)
		d.Name = name
		switch k := DrillKind(rd.Kind); k {
		case "":
		case DrillCanary, DrillFailover, DrillUnplanned:
			d.Kind = k
		default:
			return at(fmt.Sprintf("%s.kind %q is not known; use canary, failover or unplanned", where, rd.Kind), "named", name, "kind")
		}
		if rd.TimeZone != "" {
			loc, err := time.LoadLocation(rd.TimeZone)
			if err != nil {
				return at(fmt.Sprintf("%s.time_zone %q is not a time zone; use an IANA name such as UTC or Europe/Berlin", where, rd.TimeZone), "named", name, "time_zone")
			}
			d.Location = loc
		}
		if rd.Schedule != "" {
			if _, err := ParseSchedule(rd.Schedule, d.Location); err != nil {
				return at(fmt.Sprintf("%s.schedule %q is not a cron expression (%v); write five fields, e.g. \"0 3 * * *\" for 03:00 daily", where, rd.Schedule, err), "named", name, "schedule")
			}
			d.Schedule = rd.Schedule
		}
		if p := rd.Params.Records; p != nil {
			if *p < 1 || *p > 100000 {
				return at(fmt.Sprintf("%s.params.records must be between 1 and 100000", where), "named", name, "params", "records")
			}
			d.Params.Records = *p
		}
		if p := rd.Params.Rate; p != nil {
			if *p < 1 || *p > 10000 {
				return at(fmt.Sprintf("%s.params.rate must be between 1 and 10000 records per second", where), "named", name, "params", "rate")
			}
			d.Params.Rate = *p
		}
		d.Params.Hold = rd.Params.Hold.or(d.Params.Hold)
		o := rd.Objectives
		for _, v := range []struct {
			key string
			val *float64
			dst *float64
		}{{"rpo_seconds", o.RPOSeconds, &d.Objectives.RPOSeconds}, {"rto_seconds", o.RTOSeconds, &d.Objectives.RTOSeconds}} {
			if v.val == nil {
				continue
			}
			if *v.val < 0 {
				return at(fmt.Sprintf("%s.objectives.%s must not be negative", where, v.key), "named", name, "objectives", v.key)
			}
			*v.dst = *v.val
		}
		d.Objectives.MaxCanaryLatency = o.MaxCanaryLatency.or(0)
		if d.Kind.Disruptive() && !raw.AllowDisruptive {
			return at(fmt.Sprintf("%s is a %s drill, which moves the active role; set drills.allow_disruptive: true (staging or a maintenance window only) or use kind: canary", where, d.Kind), "named", name, "kind")
		}
		t.Drills.Named[name] = d
	}
	return nil
}
