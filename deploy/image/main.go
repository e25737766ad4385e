// Command image builds drctl's OCI image from static drctl binaries, with
// no Docker engine and no base image: the image is built FROM scratch
// (github.com/google/go-containerregistry) and written as an OCI image
// layout (a directory any OCI tool reads: skopeo, crane, podman, containerd)
// and, for `docker load`, as a tarball of one platform.
//
// The image has two layers: a base (/etc/passwd and /etc/group with the
// non-root user 65532 "nonroot", CA certificates, /tmp, /home/nonroot,
// /etc/drctl) and the binary at /usr/local/bin/drctl. It runs as 65532:65532
// with drctl as its entrypoint; no shell, no package manager. Every file
// time is -created, so the same inputs give the same digests.
//
//	go run ./image -binary linux/amd64=../dist/drctl_linux_amd64_v1/drctl \
//	    -binary linux/arm64=../dist/drctl_linux_arm64_v8.0/drctl \
//	    -version 1.2.3 -revision $(git rev-parse HEAD) -layout ../dist/image -tar ../dist/drctl-image.tar
//
// The Dockerfile at the repository root produces the same layout with
// Docker; deploy's TestDockerfileMatchesImage keeps the two in step.
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// What the image is; the Dockerfile states the same (a test compares).
const (
	BinaryPath = "/usr/local/bin/drctl"
	User       = "65532:65532"
	ConfigPath = "/etc/drctl/drctl.yaml"
	MetricsTCP = "7483/tcp"
	Source     = "https://github.com/drctl/drctl"
)

// binaries is the repeatable -binary os/arch=path flag.
type binaries map[string]string

func (b binaries) String() string { return fmt.Sprint(map[string]string(b)) }

func (b binaries) Set(v string) error {
	plat, path, ok := strings.Cut(v, "=")
	if !ok || strings.Count(plat, "/") != 1 {
		return fmt.Errorf("-binary %q: want os/arch=path, e.g. linux/amd64=dist/drctl", v)
	}
	b[plat] = path
	return nil
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	bins := binaries{}
	fs.Var(bins, "binary", "os/arch=path of a static drctl binary (repeat per platform)")
	version := fs.String("version", "", "image version label (required)")
	revision := fs.String("revision", "", "git commit of the build (required)")
	created := fs.String("created", "", "creation time, RFC 3339 (default: $SOURCE_DATE_EPOCH, else the Unix epoch)")
	caCerts := fs.String("ca-certs", "/etc/ssl/certs/ca-certificates.crt", "CA bundle to ship at /etc/ssl/certs/ca-certificates.crt (empty: none)")
	layoutDir := fs.String("layout", "", "write an OCI image layout (all platforms) into this directory")
	tarPath := fs.String("tar", "", "write a `docker load` tarball of the linux/amd64 image here")
	tag := fs.String("tag", "drctl", "repository of the tarball's tag (the tag is -version)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case len(bins) == 0:
		return errors.New("no -binary given: pass -binary linux/amd64=PATH to a static drctl binary")
	case *version == "" || *revision == "":
		return errors.New("-version and -revision are required (they become the image's OCI labels)")
	case *layoutDir == "" && *tarPath == "":
		return errors.New("nothing to write: pass -layout DIR and/or -tar FILE")
	}
	when, err := creationTime(*created)
	if err != nil {
		return err
	}
	var certs []byte
	if *caCerts != "" {
		if certs, err = os.ReadFile(*caCerts); err != nil {
			return fmt.Errorf("CA bundle: %w (pass -ca-certs \"\" to ship none)", err)
		}
	}
	base, err := layer(baseFiles(certs), when)
	if err != nil {
		return fmt.Errorf("base layer: %w", err)
	}
	labels := Labels(*version, *revision, when)
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	images := map[string]v1.Image{}
	plats := make([]string, 0, len(bins))
	for p := range bins {
		plats = append(plats, p)
	}
	sort.Strings(plats)
	for _, p := range plats {
		osName, arch, _ := strings.Cut(p, "/")
		img, err := platformImage(bins[p], osName, arch, base, labels, when)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		images[p] = img
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: osName, Architecture: arch}}})
		d, _ := img.Digest()
		fmt.Fprintf(out, "image %s %s\n", p, d)
	}
	if *layoutDir != "" {
		if err := os.RemoveAll(*layoutDir); err != nil {
			return err
		}
		if _, err := layout.Write(*layoutDir, idx); err != nil {
			return fmt.Errorf("write OCI layout %s: %w", *layoutDir, err)
		}
		d, _ := idx.Digest()
		fmt.Fprintf(out, "OCI layout %s (index %s)\n", *layoutDir, d)
	}
	if *tarPath != "" {
		img, ok := images["linux/amd64"]
		if !ok {
			return errors.New("-tar needs a linux/amd64 -binary")
		}
		ref, err := name.NewTag(*tag + ":" + strings.ReplaceAll(*version, "+", "-"))
		if err != nil {
			return fmt.Errorf("tag: %w", err)
		}
		if err := tarball.WriteToFile(*tarPath, ref, img); err != nil {
			return fmt.Errorf("write %s: %w", *tarPath, err)
		}
		fmt.Fprintf(out, "docker load tarball %s (%s)\n", *tarPath, ref)
	}
	return nil
}

// Labels are the image's OCI annotations as config labels.
func Labels(version, revision string, created time.Time) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       "drctl",
		"org.opencontainers.image.description": "Kafka disaster recovery: mirror, failover, failback, drills",
		"org.opencontainers.image.version":     version,
		"org.opencontainers.image.revision":    revision,
		"org.opencontainers.image.created":     created.UTC().Format(time.RFC3339),
		"org.opencontainers.image.source":      Source,
		"org.opencontainers.image.url":         Source,
	}
}

func creationTime(flagValue string) (time.Time, error) {
	if flagValue != "" {
		t, err := time.Parse(time.RFC3339, flagValue)
		if err != nil {
			return time.Time{}, fmt.Errorf("-created %q: want RFC 3339, e.g. 2026-01-02T03:04:05Z", flagValue)
		}
		return t.UTC(), nil
	}
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q is not a number of seconds", s)
		}
		return time.Unix(n, 0).UTC(), nil
	}
	return time.Unix(0, 0).UTC(), nil
}

func platformImage(binPath, osName, arch string, base v1.Layer, labels map[string]string, when time.Time) (v1.Image, error) {
	bin, err := os.ReadFile(binPath)
	if err != nil {
		return nil, err
	}
	if err := checkStatic(bin); err != nil {
		return nil, fmt.Errorf("%s: %w", binPath, err)
	}
	top, err := layer([]file{{path: strings.TrimPrefix(BinaryPath, "/"), mode: 0o755, data: bin}}, when)
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(mutate.ConfigMediaType(empty.Image, types.OCIConfigJSON), types.OCIManifestSchema1), base, top)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Created = osName, arch, v1.Time{Time: when}
	cfg.Config = v1.Config{
		User:         User,
		Entrypoint:   []string{BinaryPath},
		Cmd:          []string{"--help"},
		WorkingDir:   "/home/nonroot",
		Env:          []string{"PATH=/usr/local/bin", "DRCTL_CONFIG=" + ConfigPath, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
		ExposedPorts: map[string]struct{}{MetricsTCP: {}},
		Labels:       labels,
	}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, err
	}
	return mutate.CreatedAt(img, v1.Time{Time: when})
}

// checkStatic refuses an ELF binary that asks for a dynamic loader: on an
// image without libc it would not start ("no such file or directory").
func checkStatic(bin []byte) error {
	if !bytes.HasPrefix(bin, []byte("\x7fELF")) {
		return errors.New("not an ELF binary (build it with GOOS=linux)")
	}
	if bytes.Contains(bin, []byte("/lib64/ld-linux")) || bytes.Contains(bin, []byte("/lib/ld-linux")) || bytes.Contains(bin, []byte("/lib/ld-musl")) {
		return errors.New("dynamically linked (names a dynamic loader): build it with CGO_ENABLED=0")
	}
	return nil
}

type file struct {
	path     string
	mode     int64
	uid, gid int
	dir      bool
	data     []byte
}

func baseFiles(certs []byte) []file {
	passwd := "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group := "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n"
	fs := []file{
		{path: "etc/", dir: true, mode: 0o755},
		{path: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{path: "etc/group", mode: 0o644, data: []byte(group)},
		{path: "etc/drctl/", dir: true, mode: 0o755},
		{path: "home/", dir: true, mode: 0o755},
		{path: "home/nonroot/", dir: true, mode: 0o700, uid: 65532, gid: 65532},
		{path: "tmp/", dir: true, mode: 0o1777},
		{path: "usr/", dir: true, mode: 0o755},
		{path: "usr/local/", dir: true, mode: 0o755},
		{path: "usr/local/bin/", dir: true, mode: 0o755},
	}
	if certs != nil {
		fs = append(fs, file{path: "etc/ssl/", dir: true, mode: 0o755}, file{path: "etc/ssl/certs/", dir: true, mode: 0o755},
			file{path: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: certs})
	}
	return fs
}

// layer packs files into a gzip-compressed OCI layer with fixed times.
func layer(files []file, when time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.path, Mode: f.mode, Uid: f.uid, Gid: f.gid, ModTime: when, Format: tar.FormatPAX}
		if f.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	raw := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithMediaType(types.OCILayer))
}
