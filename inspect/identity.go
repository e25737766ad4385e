package inspect

import "fmt"

// IdentityChange is a cluster that answers with another cluster id than
// the one recorded for it: it was rebuilt or replaced, and what only it
// held is lost.
type IdentityChange struct {
	Cluster  string `json:"cluster" yaml:"cluster"`
	Recorded string `json:"recorded_cluster_id" yaml:"recorded_cluster_id"`
	Now      string `json:"cluster_id" yaml:"cluster_id"`
	// LostRecords is the RPO of the run that left it stale, when known:
	// the records only it held, now gone (-1 when unknown).
	LostRecords int64 `json:"lost_records" yaml:"lost_records"`
}

func (c IdentityChange) String() string {
	s := fmt.Sprintf("cluster %s answers with cluster id %s, but %s was recorded: it was rebuilt or replaced", c.Cluster, c.Now, c.Recorded)
	if c.LostRecords >= 0 {
		s += fmt.Sprintf("; the %d record(s) of the RPO that only it held are lost", c.LostRecords)
	}
	return s
}
