package sandbox

import (
	"fmt"
	"strconv"
	"time"

	"github.com/IBM/sarama"
)

// Header keys of demo records. Every record carries source and seq;
// records written in a transaction also carry txn ("committed" or
// "aborted"), so a reader can tell if it was handed an aborted record.
const (
	headerSource = "source"
	headerRun    = "sandbox.run"
	headerSeq    = "sandbox.seq"
	headerTxn    = "sandbox.txn"
)

// mix picks the kind of each record from its sequence number: of every ten
// records four are orders, three payments, two customer updates and one
// scratch note.
var mix = [10]string{"orders", "payments", "customers", "orders", "payments", "scratch", "orders", "payments", "customers", "orders"}

// isPayment reports whether record seq goes to a payments.* topic.
func isPayment(seq int64) bool { return mix[seq%10] == "payments" }

// demoMessage builds record seq of a sandbox run. Keys repeat where the
// domain does: orders and payments are keyed by order (order-<seq>), customer
// updates by one of 50 customers (customer-<k>), so compaction has work.
func demoMessage(run string, seq int64, now time.Time) *sarama.ProducerMessage {
	customer := fmt.Sprintf("customer-%d", (seq/5)%50)
	amount := (seq*7919)%100000 + 100
	at := now.UTC().Format(time.RFC3339Nano)
	var topic, key, value string
	switch mix[seq%10] {
	case "orders":
		topic, key = "orders", fmt.Sprintf("order-%d", seq)
		value = fmt.Sprintf(`{"seq":%d,"order":%q,"customer":%q,"amount_cents":%d,"at":%q}`, seq, key, customer, amount, at)
	case "payments":
		region := [2]string{"eu", "us"}[(seq/10)%2]
		topic, key = "payments."+region, fmt.Sprintf("order-%d", seq)
		value = fmt.Sprintf(`{"seq":%d,"order":%q,"region":%q,"amount_cents":%d,"at":%q}`, seq, key, region, amount, at)
	case "customers":
		tier := [3]string{"bronze", "silver", "gold"}[seq%3]
		topic, key = "customers", customer
		value = fmt.Sprintf(`{"seq":%d,"customer":%q,"tier":%q,"at":%q}`, seq, customer, tier, at)
	default:
		topic, key = "scratch", fmt.Sprintf("note-%d", seq)
		value = fmt.Sprintf(`{"seq":%d,"note":"not mirrored: the topology does not select scratch","at":%q}`, seq, at)
	}
	return &sarama.ProducerMessage{
		Topic:     topic,
		Key:       sarama.StringEncoder(key),
		Value:     sarama.StringEncoder(value),
		Timestamp: now,
		Headers: []sarama.RecordHeader{
			{Key: []byte(headerSource), Value: []byte("sandbox")},
			{Key: []byte(headerRun), Value: []byte(run)},
			{Key: []byte(headerSeq), Value: []byte(strconv.FormatInt(seq, 10))},
		},
	}
}

// markTxn tags a transactional record with its transaction's fate.
func markTxn(m *sarama.ProducerMessage, aborted bool) {
	fate := "committed"
	if aborted {
		fate = "aborted"
	}
	m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(headerTxn), Value: []byte(fate)})
}

// wasAborted reports whether a consumed record says it was written in an
// aborted transaction.
func wasAborted(m *sarama.ConsumerMessage) bool {
	for _, h := range m.Headers {
		if h != nil && string(h.Key) == headerTxn {
			return string(h.Value) == "aborted"
		}
	}
	return false
}
