package kfaketest

import (
	"bytes"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// HideACLs makes c list no ACL for hide after the first CreateAcls request
// it answers, as a broker still applying other metadata first does (one
// creating thousands of partitions), and returns how many listings it
// answered so.
func HideACLs(c *kfake.Cluster, hide time.Duration) (hidden func() int) {
	var mu sync.Mutex
	var created time.Time
	n := 0
	c.ControlKey(int16(kmsg.CreateACLs), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		mu.Lock()
		defer mu.Unlock()
		if created.IsZero() {
			created = time.Now()
		}
		return nil, nil, false
	})
	c.ControlKey(int16(kmsg.DescribeACLs), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		mu.Lock()
		defer mu.Unlock()
		if created.IsZero() || time.Since(created) >= hide {
			return nil, nil, false
		}
		n++
		resp := r.(*kmsg.DescribeACLsRequest).ResponseKind().(*kmsg.DescribeACLsResponse)
		resp.Version = r.GetVersion()
		return resp, nil, true
	})
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}

// LogBuffer collects a log written from many goroutines (slog's handlers
// write each record whole) for a test to read.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is what was written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
