package deploy

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

// The image is read here with nothing but encoding/json and archive/tar:
// what the OCI image layout spec says, independent of the library that
// wrote it.

type ociDescriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Platform  *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform"`
}

type ociConfig struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Config       struct {
		User         string              `json:"User"`
		Entrypoint   []string            `json:"Entrypoint"`
		Cmd          []string            `json:"Cmd"`
		Env          []string            `json:"Env"`
		WorkingDir   string              `json:"WorkingDir"`
		ExposedPorts map[string]struct{} `json:"ExposedPorts"`
		Labels       map[string]string   `json:"Labels"`
	} `json:"config"`
}

func blob(t *testing.T, dir, digest string) []byte {
	t.Helper()
	algo, hex, _ := strings.Cut(digest, ":")
	raw, err := os.ReadFile(filepath.Join(dir, "blobs", algo, hex))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestImage: the OCI layout in $DRCTL_IMAGE_LAYOUT holds a linux/amd64 and
// a linux/arm64 image; the amd64 one runs as 65532:65532 with drctl as its
// entrypoint and OCI labels naming $DRCTL_IMAGE_VERSION; unpacked, its
// rootfs has no shell, and its entrypoint, run in that rootfs (chroot) as
// user 65532, prints the version: `drctl version` works in the image.
func TestImage(t *testing.T) {
	dir := os.Getenv("DRCTL_IMAGE_LAYOUT")
	if dir == "" {
		t.Skip("DRCTL_IMAGE_LAYOUT is not set: deploy/ci.sh builds the image and sets it")
	}
	wantVersion := os.Getenv("DRCTL_IMAGE_VERSION")
	var index struct {
		Manifests []ociDescriptor `json:"manifests"`
	}
	if err := json.Unmarshal(mustRead(t, filepath.Join(dir, "index.json")), &index); err != nil {
		t.Fatal(err)
	}
	plats := map[string]ociDescriptor{}
	for _, m := range index.Manifests {
		if m.Platform != nil {
			plats[m.Platform.OS+"/"+m.Platform.Architecture] = m
		}
	}
	for _, p := range []string{"linux/amd64", "linux/arm64"} {
		if _, ok := plats[p]; !ok {
			t.Errorf("the image index has no %s image: %v", p, index.Manifests)
		}
	}
	desc, ok := plats["linux/amd64"]
	if !ok {
		t.FailNow()
	}
	var manifest struct {
		Config ociDescriptor   `json:"config"`
		Layers []ociDescriptor `json:"layers"`
	}
	if err := json.Unmarshal(blob(t, dir, desc.Digest), &manifest); err != nil {
		t.Fatal(err)
	}
	var cfg ociConfig
	if err := json.Unmarshal(blob(t, dir, manifest.Config.Digest), &cfg); err != nil {
		t.Fatal(err)
	}
	c := cfg.Config
	if c.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532 (non-root)", c.User)
	}
	if !reflect.DeepEqual(c.Entrypoint, []string{"/usr/local/bin/drctl"}) {
		t.Errorf("entrypoint %q, want [/usr/local/bin/drctl]", c.Entrypoint)
	}
	for _, l := range []string{"org.opencontainers.image.title", "org.opencontainers.image.version", "org.opencontainers.image.revision",
		"org.opencontainers.image.created", "org.opencontainers.image.source"} {
		if c.Labels[l] == "" {
			t.Errorf("label %s is missing: %v", l, c.Labels)
		}
	}
	if wantVersion != "" && c.Labels["org.opencontainers.image.version"] != wantVersion {
		t.Errorf("version label %q, want %q", c.Labels["org.opencontainers.image.version"], wantVersion)
	}
	if _, ok := c.ExposedPorts["7483/tcp"]; !ok {
		t.Errorf("the metrics port 7483/tcp is not exposed: %v", c.ExposedPorts)
	}

	root := t.TempDir()
	for _, l := range manifest.Layers {
		unpack(t, dir, l, root)
	}
	for _, shell := range []string{"bin/sh", "bin/bash", "usr/bin/sh"} {
		if _, err := os.Lstat(filepath.Join(root, shell)); err == nil {
			t.Errorf("the image has a shell: /%s", shell)
		}
	}
	if !strings.Contains(string(mustRead(t, filepath.Join(root, "etc/passwd"))), ":65532:65532:") {
		t.Error("/etc/passwd has no user 65532")
	}
	if os.Geteuid() != 0 {
		t.Skip("not root: cannot chroot into the image to run its entrypoint")
	}
	cmd := exec.Command(c.Entrypoint[0], "version", "-o", "json")
	cmd.Dir = "/"
	cmd.Env = c.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root, Credential: &syscall.Credential{Uid: 65532, Gid: 65532}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("drctl version in the image: %v\n%s", err, out)
	}
	var v struct {
		Version, Commit string
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("drctl version -o json in the image: %v\n%s", err, out)
	}
	if v.Version != c.Labels["org.opencontainers.image.version"] || v.Commit != c.Labels["org.opencontainers.image.revision"] {
		t.Errorf("the binary says %s at %s, the labels %s at %s", v.Version, v.Commit,
			c.Labels["org.opencontainers.image.version"], c.Labels["org.opencontainers.image.revision"])
	}
	t.Logf("in the image, as 65532: %s", out)
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// unpack extracts one gzip'ed layer into root, keeping modes.
func unpack(t *testing.T, dir string, l ociDescriptor, root string) {
	t.Helper()
	algo, hex, _ := strings.Cut(l.Digest, ":")
	f, err := os.Open(filepath.Join(dir, "blobs", algo, hex))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("layer %s (%s): %v", l.Digest, l.MediaType, err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(root, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, os.FileMode(h.Mode).Perm()|os.ModeDir); err != nil {
				t.Fatal(err)
			}
			_ = os.Chmod(p, os.FileMode(h.Mode).Perm())
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			w, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode).Perm())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(w, tr); err != nil {
				t.Fatal(err)
			}
			w.Close()
		default:
			t.Errorf("unexpected entry %s of type %c in layer %s", h.Name, h.Typeflag, l.Digest)
		}
		_ = os.Lchown(p, h.Uid, h.Gid)
	}
}
