package failover

import (
	"context"
	"fmt"

	"github.com/drctl/drctl/inspect"
	"github.com/drctl/drctl/internal/kafkaconn"

	"github.com/drctl/drctl/plans"
)

// reportRPO is the action of the RPO step.
func reportRPO(ctx context.Context, clusters *kafkaconn.Clusters, p linkParams) (plans.Result, error) {
	rep, err := inspect.MeasureRPO(ctx, clusters, p.Source, p.Target)
	if err != nil {
		return plans.Result{}, err
	}
	lost := ""
	switch {
	case rep.LostError != "":
		lost = "; " + rep.LostError
	case rep.LostRecords > 0:
		lost = fmt.Sprintf("; besides, %d record(s) were lost to source retention before they were mirrored (%d range(s), on record until drctl mirror ack-lost): they are in neither cluster", rep.LostRecords, len(rep.LostToRetention))
	}
	res, err := rpoResult(rep, p)
	res.Summary += lost
	return res, err
}

func rpoResult(rep *inspect.RPOReport, p linkParams) (plans.Result, error) {
	if rep.Live {
		return plans.NewResult(fmt.Sprintf("RPO: %d record(s) over %d partition(s), up to %.1fs, never reached %s (%s answered: its end offsets were read after the fence); they are salvaged from it before it is wiped",
			rep.Records, rep.Lagging(), rep.MaxSeconds, p.Target, p.Source), rep)
	}
	return plans.NewResult(fmt.Sprintf("RPO: %d record(s) over %d partition(s), up to %.1fs, never reached %s; they are salvaged when %s comes back",
		rep.Records, rep.Lagging(), rep.MaxSeconds, p.Target, p.Source), rep)
}
