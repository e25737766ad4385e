package inspect_test

import (
	"context"
	"fmt"
	"time"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/kafkaconn"
	"github.com/drctl/drctl/topology"
)

// What a front-end does with the package: validate a topology without a
// network, then ask for the status snapshot. Here nothing listens at the
// clusters' addresses: the snapshot still comes back, within the deadline,
// saying which clusters did not answer and that the live roles are
// unknown (never the file's home roles).
func Example() {
	topo, err := topology.Parse("drctl.yaml", []byte(`name: payments
clusters:
  east: {bootstrap: ["127.0.0.1:1"], timeout: 1s}
  west: {bootstrap: ["127.0.0.1:2"], timeout: 1s}
active: east
standby: west
mirror:
  topics: {include: ["orders"]}
`), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	v := inspect.ValidateOffline(topo)
	fmt.Println("offline checks failed:", v.Failed())

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	clusters := kafkaconn.Open(ctx, topo)
	defer clusters.Close()
	st, _ := inspect.CollectStatus(ctx, clusters)
	fmt.Println("unreachable:", st.Unreachable())
	fmt.Println("active:", st.Roles.Active, "epoch:", st.Roles.Epoch)
	// Output:
	// offline checks failed: false
	// unreachable: [east west]
	// active: unknown epoch: -1
}
