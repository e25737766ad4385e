package aclfence

import (
	"context"

	"github.com/IBM/sarama"
)

// Held reports whether the cluster behind client holds a drctl fence for
// topology topo: the ACLs drctl added to fence it are recorded and not yet
// removed by unfence. It only reads.
func Held(ctx context.Context, client sarama.Client, topo string) (bool, error) {
	rec, err := readFence(ctx, client, topo)
	if err != nil {
		return false, err
	}
	return len(rec.Added) > 0 || len(rec.Existing) > 0, nil
}
