package linkstate_test

import (
	"fmt"
	"time"

	"github.com/drctl/drctl/linkstate"
	"github.com/drctl/drctl/topology"
)

// A link's recorded losses, as status reports them, and the ranges an
// operator picks to acknowledge.
func ExampleLossesProblem() {
	losses := []linkstate.LostRange{
		{Topic: "orders", Partition: 0, From: 100, To: 249, Records: 150},
		{Topic: "orders", Partition: 3, From: 7, To: 7, Records: 1},
	}
	fmt.Println(linkstate.LossesProblem("east->west", losses))
	picked, unmatched := linkstate.SelectLost(losses, []topology.TopicPartition{{Topic: "orders", Partition: 3}, {Topic: "orders", Partition: 9}})
	fmt.Println(linkstate.TotalLost(picked), "record(s) picked; nothing lost on", unmatched)
	// Output:
	// mirror east->west: 151 source record(s) in 2 range(s) were removed by retention before they were mirrored: orders/0 offsets 100-249 (150 records), orders/3 offsets 7-7 (1 records) (the standby never had them; once they are dealt with, drctl mirror ack-lost)
	// 1 record(s) picked; nothing lost on [orders/9]
}

// A drill's pause stops only its own link, at its own epoch, until it
// expires or is released.
func ExamplePause_Holds() {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	p := linkstate.Pause{Topology: "payments", Source: "east", Target: "west", Epoch: 4, ID: "drill-1", At: at, Until: at.Add(10 * time.Minute)}
	link := topology.Link{Topology: "payments", Source: "east", Target: "west"}
	back := topology.Link{Topology: "payments", Source: "west", Target: "east"}
	fmt.Println(p.Holds(link, 4, at.Add(time.Minute)), p.Holds(back, 4, at.Add(time.Minute)))
	fmt.Println(p.Holds(link, 5, at.Add(time.Minute)), p.Holds(link, 4, at.Add(10*time.Minute)))
	p.Released = true
	fmt.Println(p.Holds(link, 4, at.Add(time.Minute)))
	// Output:
	// true false
	// false false
	// false
}
