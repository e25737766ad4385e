package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/IBM/sarama"
)

// errNotExist: `loadgen exists` found no such topic (exit code 1, no message).
var errNotExist = errors.New("topic does not exist")

// partitionCount is the number of partitions of topic, or 0 if it does not exist.
func partitionCount(cl sarama.Client, topic string) (int, error) {
	if err := cl.RefreshMetadata(topic); err != nil {
		if errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
			return 0, nil
		}
		return 0, err
	}
	ps, err := cl.Partitions(topic)
	if errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
		return 0, nil
	}
	return len(ps), err
}

// ensureTopic checks that topic has exactly partitions partitions, creating it
// (replication factor 1) if it is missing and create is set.
func ensureTopic(cl sarama.Client, topic string, partitions int, create bool) error {
	n, err := partitionCount(cl, topic)
	if err != nil {
		return fmt.Errorf("describe %s: %w", topic, err)
	}
	switch {
	case n == partitions:
		return nil
	case n > 0:
		return fmt.Errorf("topic %s exists with %d partitions, not %d: delete it or use another name", topic, n, partitions)
	case !create:
		return fmt.Errorf("topic %s does not exist", topic)
	}
	return createTopic(cl, topic, partitions, 1, nil)
}

// createTopic creates topic and waits until every partition has a leader.
func createTopic(cl sarama.Client, topic string, partitions int, replication int16, configs map[string]*string) error {
	admin, err := sarama.NewClusterAdminFromClient(cl)
	if err != nil {
		return err
	}
	// Not admin.Close(): that would close the caller's client.
	detail := &sarama.TopicDetail{NumPartitions: int32(partitions), ReplicationFactor: replication, ConfigEntries: configs}
	if err := admin.CreateTopic(topic, detail, false); err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := partitionCount(cl, topic)
		if err == nil && n == partitions && allLeaders(cl, topic, partitions) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topic %s: partitions have no leader 30s after creation (%v)", topic, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func allLeaders(cl sarama.Client, topic string, partitions int) bool {
	for p := range partitions {
		if _, err := cl.Leader(topic, int32(p)); err != nil {
			return false
		}
	}
	return true
}

func runCreate(args []string) error {
	fs := newFlags("create")
	var c conn
	connFlags(fs, &c, "", "target", "127.0.0.1:39092")
	topic := fs.String("topic", "", "topic to create (required)")
	partitions := fs.Int("partitions", 12, "partitions")
	replication := fs.Int("replication", 1, "replication factor")
	var configs kvFlag
	fs.Var(&configs, "config", "topic config key=value (repeatable)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *topic == "" {
		logf("create: -topic is required")
		return errUsage
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := createTopic(cl, *topic, *partitions, int16(*replication), configs.m); err != nil {
		return err
	}
	r := newResult("create")
	r.set("topic", *topic)
	r.set("partitions", *partitions)
	r.print()
	return nil
}

type kvFlag struct{ m map[string]*string }

func (f *kvFlag) String() string { return "" }
func (f *kvFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, not %q", s)
	}
	if f.m == nil {
		f.m = map[string]*string{}
	}
	f.m[k] = &v
	return nil
}

// runDelete deletes the named topics (missing ones are fine) and waits until
// the cluster's metadata no longer lists any of them, so that a mirror may
// create a topic of the same name right afterwards.
func runDelete(args []string) error {
	fs := newFlags("delete")
	var c conn
	connFlags(fs, &c, "", "target", "127.0.0.1:39092")
	topics := fs.String("topic", "", "topics to delete, comma-separated (required)")
	wait := fs.Duration("wait", 60*time.Second, "how long to wait until they are gone")
	if err := parse(fs, args); err != nil {
		return err
	}
	names := splitList(*topics)
	if len(names) == 0 {
		logf("delete: -topic is required")
		return errUsage
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	admin, err := sarama.NewClusterAdminFromClient(cl)
	if err != nil {
		return err
	}
	for _, t := range names {
		if err := admin.DeleteTopic(t); err != nil && !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
			return fmt.Errorf("delete topic %s: %w", t, err)
		}
	}
	deadline := time.Now().Add(*wait)
	for {
		if err := cl.RefreshMetadata(); err != nil {
			return err
		}
		all, err := cl.Topics()
		if err != nil {
			return err
		}
		left := slices.DeleteFunc(slices.Clone(names), func(t string) bool { return !slices.Contains(all, t) })
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("still listed %s after deletion: %v", *wait, left)
		}
		time.Sleep(200 * time.Millisecond)
	}
	r := newResult("delete")
	r.set("topics", strings.Join(names, ","))
	r.print()
	return nil
}

func runTopics(args []string) error {
	fs := newFlags("topics")
	var c conn
	connFlags(fs, &c, "", "target", "127.0.0.1:39092")
	prefix := fs.String("prefix", "", "only names with this prefix")
	if err := parse(fs, args); err != nil {
		return err
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := cl.RefreshMetadata(); err != nil {
		return err
	}
	all, err := cl.Topics()
	if err != nil {
		return err
	}
	slices.Sort(all)
	for _, t := range all {
		if strings.HasPrefix(t, *prefix) {
			fmt.Println(t)
		}
	}
	return nil
}

func runExists(args []string) error {
	fs := newFlags("exists")
	var c conn
	connFlags(fs, &c, "", "target", "127.0.0.1:39092")
	topic := fs.String("topic", "", "topic (required)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *topic == "" {
		logf("exists: -topic is required")
		return errUsage
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	n, err := partitionCount(cl, *topic)
	if err != nil {
		return err
	}
	if n == 0 {
		return errNotExist
	}
	fmt.Println(n)
	return nil
}

// selfUsage is this process's peak resident set size (VmHWM, KiB) and the
// CPU time it used so far (user + system, seconds).
func selfUsage() (int64, float64) {
	var hwm int64
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				hwm, _ = strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			}
		}
	}
	var ru syscall.Rusage
	var cpu float64
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		cpu = float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
	}
	return hwm, cpu
}
