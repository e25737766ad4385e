package deploy

import (
	"os"
	"strings"
	"testing"
)

// TestDockerfileMatchesImage: the Dockerfile (for users who build with
// Docker) states what deploy/image builds: the same user, entrypoint, path,
// port, environment and labels. No Docker engine is needed to check it.
func TestDockerfileMatchesImage(t *testing.T) {
	df := string(mustRead(t, "../Dockerfile"))
	img := string(mustRead(t, "image/main.go"))
	for _, want := range []struct{ dockerfile, image string }{
		{"FROM scratch", "empty.Image"},
		{"USER 65532:65532", `User       = "65532:65532"`},
		{`ENTRYPOINT ["/usr/local/bin/drctl"]`, `BinaryPath = "/usr/local/bin/drctl"`},
		{"EXPOSE 7483/tcp", `MetricsTCP = "7483/tcp"`},
		{"DRCTL_CONFIG=/etc/drctl/drctl.yaml", `ConfigPath = "/etc/drctl/drctl.yaml"`},
		{"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt", `"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"`},
		{"WORKDIR /home/nonroot", `WorkingDir:   "/home/nonroot"`},
		{`CMD ["--help"]`, `Cmd:          []string{"--help"}`},
		{"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin", "nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin"},
		{"-X main.version=${VERSION} -X main.commit=${COMMIT} -X main.date=${DATE}", ""},
		{"CGO_ENABLED=0", ""},
	} {
		if !strings.Contains(df, want.dockerfile) {
			t.Errorf("Dockerfile lacks %q", want.dockerfile)
		}
		if want.image != "" && !strings.Contains(img, want.image) {
			t.Errorf("deploy/image lacks %q (the Dockerfile has %q)", want.image, want.dockerfile)
		}
	}
	for _, label := range []string{"title", "description", "version", "revision", "created", "source", "url"} {
		key := "org.opencontainers.image." + label
		if !strings.Contains(df, key+"=") || !strings.Contains(img, `"`+key+`"`) {
			t.Errorf("label %s is not in both the Dockerfile and deploy/image", key)
		}
	}
	gr := string(mustRead(t, "../.goreleaser.yaml"))
	if !strings.Contains(gr, "-X main.version={{ .Version }} -X main.commit={{ .FullCommit }} -X main.date={{ .CommitDate }}") {
		t.Error(".goreleaser.yaml does not stamp main.version, main.commit and main.date")
	}
	if _, err := os.Stat("../cmd/drctl/version.go"); err != nil {
		t.Errorf("cmd/drctl/version.go (the -X targets) is gone: %v", err)
	}
}
