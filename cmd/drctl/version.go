package main

import (
	"fmt"
	"io"
	"regexp"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/urfave/cli/v2"
)

// Build information, set by the release build with
//
//	go build -ldflags "-X main.version=v1.2.3 -X main.commit=abc123 -X main.date=2026-01-02T03:04:05Z"
//
// Left empty (or "dev"), they fall back to what the Go toolchain recorded in
// the binary: the module version when installed with `go install ...@v1.2.3`,
// and the VCS revision and time when built from a git checkout.
var (
	version = "dev"
	commit  = ""
	date    = ""
)

// BuildInfo is what `drctl version -o json` prints; its keys are a stable schema.
type BuildInfo struct {
	Version   string `json:"version" yaml:"version"`
	Commit    string `json:"commit" yaml:"commit"`
	Date      string `json:"date" yaml:"date"`
	GoVersion string `json:"go_version" yaml:"go_version"`
}

// buildInfo merges the link-time variables with the toolchain's record;
// the link-time values win.
// pseudoVersion matches the tail of a Go module pseudo-version
// (v0.0.0-20261201112703-50d970bbae2b and its pre-release forms): the
// commit time (UTC) and the 12-hex-digit commit prefix.
var pseudoVersion = regexp.MustCompile(`[-.](\d{14})-([0-9a-f]{12})$`)

func buildInfo() BuildInfo {
	b := BuildInfo{Version: version, Commit: commit, Date: date, GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if (b.Version == "" || b.Version == "dev") && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		b.Version = bi.Main.Version
	}
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			if b.Commit == "" {
				b.Commit = s.Value
			}
		case "vcs.time":
			if b.Date == "" {
				b.Date = s.Value
			}
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified && commit == "" && b.Commit != "" {
		b.Commit += "-dirty"
	}
	b.fromPseudoVersion()
	if b.Version == "" {
		b.Version = "dev"
	}
	return b
}

// fromPseudoVersion fills an unknown commit and date from a pseudo-version:
// go install ...@version builds from a module zip, without VCS stamps, but
// the pseudo-version still names the commit and its time.
func (b *BuildInfo) fromPseudoVersion() {
	m := pseudoVersion.FindStringSubmatch(b.Version)
	if m == nil {
		return
	}
	if b.Commit == "" {
		b.Commit = m[2]
	}
	if t, err := time.Parse("20060102150405", m[1]); err == nil && b.Date == "" {
		b.Date = t.UTC().Format(time.RFC3339)
	}
}

func (b BuildInfo) String() string {
	return fmt.Sprintf("drctl %s\ncommit: %s\ndate: %s\ngo: %s\n", b.Version, orUnknown(b.Commit), orUnknown(b.Date), b.GoVersion)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print drctl's version, commit, build date and Go version",
		Description: "version prints the build information of this binary: the release version (or \"dev\"), the git\n" +
			"commit and its date, and the Go version it was built with. With -o json or -o yaml it prints\n" +
			"{version, commit, date, go_version}. `drctl --version` prints the same text.",
		Action: func(c *cli.Context) error {
			b := buildInfo()
			return render(c, b, func(w io.Writer) error { _, err := io.WriteString(w, b.String()); return err })
		},
	}
}

// rootAction runs when no command is named: --version prints the build
// information, anything else shows the help.
func rootAction(c *cli.Context) error {
	if c.Bool("version") {
		b := buildInfo()
		return render(c, b, func(w io.Writer) error { _, err := io.WriteString(w, b.String()); return err })
	}
	return cli.ShowAppHelp(c)
}
