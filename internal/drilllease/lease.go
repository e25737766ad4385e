package drilllease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/IBM/sarama"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/topology"
)

// topic (topology.DrillLocksTopic) holds the drills' claims and leases: one
// partition, so that its log is a total order every reader agrees on.
const topic = topology.DrillLocksTopic

// RunningKey is the lease every drill holds while it runs.
const RunningKey = "running"

// Claim is one record of the locks topic.
type Claim struct {
	Key    string `json:"key"`
	Holder string `json:"holder"`
	// Drill names what holds the lease ("drill NAME (ID)"); empty for the
	// scheduler's claims.
	Drill   string    `json:"drill,omitempty"`
	Release bool      `json:"release,omitempty"`
	At      time.Time `json:"at"`
	Expires time.Time `json:"expires"`
	Offset  int64     `json:"-"`
}

// Owner folds the claims of key up to and including offset upto (upto < 0:
// the whole log) and returns the claim that holds it, or nil. The owner is
// the first claim after the last release or expiry of the owner before it;
// a holder of this host whose process is gone holds nothing. A missing
// topic means no claim.
func Owner(ctx context.Context, c sarama.Client, key string, upto int64) (*Claim, error) {
	info, err := kafkaread.Topic(ctx, c, topic)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", topic, err)
	}
	if !info.Exists {
		return nil, nil
	}
	fold := Fold{Key: key}
	_, err = kafkaread.ReadCommitted(ctx, c, topic, 0, 0, func(r kafkaread.Record) error {
		if upto < 0 || r.Offset <= upto {
			fold.Add(r.Offset, r.Key, r.Value)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", topic, err)
	}
	return fold.Owner, nil
}

// Fold folds the records of the locks topic, in log order, into the owner
// of Key (see Owner).
type Fold struct {
	Key   string
	Owner *Claim
}

// DecodeClaim decodes a record of the locks topic; a claim that names no
// holder is refused (it could neither hold nor release anything).
func DecodeClaim(raw []byte) (Claim, error) {
	var cl Claim
	if err := json.Unmarshal(raw, &cl); err != nil {
		return Claim{}, err
	}
	if cl.Holder == "" {
		return Claim{}, errors.New("claim without a holder")
	}
	return cl, nil
}

// Add folds the record at offset; records of other keys and unreadable
// ones are skipped.
func (f *Fold) Add(offset int64, key, value []byte) {
	if string(key) != f.Key {
		return
	}
	cl, err := DecodeClaim(value)
	if err != nil {
		return
	}
	cl.Key, cl.Offset = f.Key, offset
	owner := f.Owner
	switch {
	case cl.Release:
		if owner != nil && owner.Holder == cl.Holder {
			f.Owner = nil
		}
	case owner == nil || cl.At.After(owner.Expires) || owner.Holder == cl.Holder || DeadHere(owner.Holder):
		f.Owner = &cl
	}
}

// Running returns the live lease of a running drill, or nil: the owner of
// RunningKey whose lease has not expired at now.
func Running(ctx context.Context, c sarama.Client, now time.Time) (*Claim, error) {
	owner, err := Owner(ctx, c, RunningKey, -1)
	if err != nil || owner == nil {
		return nil, err
	}
	if now.After(owner.Expires) || DeadHere(owner.Holder) {
		return nil, nil
	}
	return owner, nil
}

// ErrDrillRunning means a drill holds its running lease; the message names
// it and how to wait for it or stop it.
var ErrDrillRunning = errors.New("a drill is running")

// Refusal returns an error wrapping ErrDrillRunning when a drill other than
// the one in ctx (see WithHolder) holds the running lease, else nil.
func Refusal(ctx context.Context, c sarama.Client) error {
	cl, err := Running(ctx, c, time.Now())
	if err != nil || cl == nil || cl.Holder == HolderOf(ctx) {
		return err
	}
	what := cl.Drill
	if what == "" {
		what = "a drill"
	}
	return fmt.Errorf("%w: %s holds the drill lease (holder %s, since %s, until %s at the latest); "+
		"wait for it to end (drctl drill history shows it when done), or stop that drctl drill run (Ctrl-C, or kill %s) and try again",
		ErrDrillRunning, what, cl.Holder, cl.At.Format(time.RFC3339), cl.Expires.Format(time.RFC3339), pidOf(cl.Holder))
}

// DeadHere reports whether holder names a process of this host that no
// longer runs: a killed drill's lease is then over at once, not after its
// expiry. (Holders are "host/pid/random".)
func DeadHere(holder string) bool {
	parts := strings.SplitN(holder, "/", 3)
	if len(parts) != 3 {
		return false
	}
	host, _ := os.Hostname()
	pid, err := strconv.Atoi(parts[1])
	if parts[0] != host || err != nil || pid <= 0 {
		return false
	}
	return !processAlive(pid)
}

// pidOf names the process of holder for the operator ("its process" when
// the holder is not of the host/pid/random form).
func pidOf(holder string) string {
	parts := strings.SplitN(holder, "/", 3)
	if len(parts) != 3 {
		return "its process"
	}
	return "process " + parts[1] + " on " + parts[0]
}

type holderKey struct{}

// WithHolder returns ctx saying that this call runs inside the drill whose
// lease is held by holder: that drill's own failovers are not refused.
func WithHolder(ctx context.Context, holder string) context.Context {
	return context.WithValue(ctx, holderKey{}, holder)
}

// HolderOf returns the holder WithHolder put in ctx, or "".
func HolderOf(ctx context.Context) string {
	h, _ := ctx.Value(holderKey{}).(string)
	return h
}
