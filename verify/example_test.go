package verify_test

import (
	"fmt"
	"time"

	"github.com/drctl/drctl/internal/kafkaread"
	"github.com/drctl/drctl/offsettranslate"
	"github.com/drctl/drctl/verify"
)

// A partition whose source holds records at 0, 1, 2 and 7, 8 (3 to 6 are
// transaction markers and an aborted transaction: holes). The mirror
// copied 0-2 to standby offsets 0-2 and 7-8 to 4-5 (its commit marker
// took 3). Someone deleted the standby record at 5 and wrote one at 6.
func ExampleCompare() {
	at := time.UnixMilli(1_700_000_000_000)
	record := func(offset int64, value string) kafkaread.Record {
		return kafkaread.Record{Offset: offset, Value: []byte(value), Timestamp: at}
	}
	stream := func(rs ...kafkaread.Record) verify.Records {
		return func(yield func(kafkaread.Record, error) bool) {
			for _, r := range rs {
				if !yield(r, nil) {
					return
				}
			}
		}
	}
	runs := []offsettranslate.Run{{Source: 0, Target: 0, Count: 3}, {Source: 7, Target: 4, Count: 2}}
	source := stream(record(0, "a"), record(1, "b"), record(2, "c"), record(7, "d"), record(8, "e"))
	standby := stream(record(0, "a"), record(1, "b"), record(2, "c"), record(4, "d"), record(6, "x"))

	pr, err := verify.Compare(runs, source, standby, verify.Range{SourceTo: 9, TargetTo: 7, Details: 10})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s: %d of %d records compared; proven source [0, %d) = standby [0, %d)\n",
		pr.Status, pr.Compared, pr.SourceRecords, pr.ProvenSourceTo, pr.ProvenTargetTo)
	for _, d := range pr.Details {
		fmt.Printf("%s: source %d, standby %d\n", d.Kind, d.SourceOffset, d.TargetOffset)
	}
	// Output:
	// differs: 4 of 5 records compared; proven source [0, 8) = standby [0, 5)
	// missing: source 8, standby 5
	// unexpected: source -1, standby 6
}
