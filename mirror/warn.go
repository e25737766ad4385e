package mirror

import (
	"context"
	"log/slog"
)

// warn logs a warning about an operation that ran under ctx, unless ctx has
// ended by then: an operation cut short because its link or shard is
// stopping (a failover moves the link, the shard is rebalanced away, the
// process exits) fails with "context canceled" as part of that stop, which
// is not trouble, so it is logged at debug level instead.
func warn(ctx context.Context, log *slog.Logger, msg string, args ...any) {
	level := slog.LevelWarn
	if ctx.Err() != nil {
		level = slog.LevelDebug
	}
	log.Log(context.WithoutCancel(ctx), level, msg, args...)
}
