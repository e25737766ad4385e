package topology

import (
	"errors"
	"os"
	"path/filepath"
)

// ErrNoTopology means no topology file was named or found.
var ErrNoTopology = errors.New("no topology file: pass -c FILE, set DRCTL_CONFIG, or create ./drctl.yaml (drctl sandbox writes one)")

// Discover picks the topology file: the flag if given, then $DRCTL_CONFIG,
// then ./drctl.yaml, then $XDG_CONFIG_HOME/drctl/drctl.yaml (or
// ~/.config/drctl/drctl.yaml). Only the flag and the variable are taken as
// given; the fallbacks count only if the file exists.
func Discover(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if env := os.Getenv("DRCTL_CONFIG"); env != "" {
		return env, nil
	}
	candidates := []string{"drctl.yaml"}
	if dir, err := os.UserConfigDir(); err == nil {
		candidates = append(candidates, filepath.Join(dir, "drctl", "drctl.yaml"))
	}
	for _, c := range candidates {
		if _, err := os.Stat(c); err == nil {
			return c, nil
		}
	}
	return "", ErrNoTopology
}
