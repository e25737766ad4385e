# drctl's image for those who build with Docker (BuildKit). It produces the
# same layout as deploy/image, which CI uses without a Docker engine: a
# static binary at /usr/local/bin/drctl on an empty base, user 65532:65532,
# CA certificates, no shell. deploy's TestDockerfileMatchesImage keeps the
# two in step.
#
#   docker build --build-arg VERSION=1.2.3 --build-arg COMMIT=$(git rev-parse HEAD) \
#       --build-arg DATE=$(git log -1 --format=%cI) -t drctl:1.2.3 .

FROM golang:1.26 AS build
ARG VERSION=dev
ARG COMMIT=
ARG DATE=
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT} -X main.date=${DATE}" \
      -o /out/usr/local/bin/drctl ./cmd/drctl \
 && mkdir -p /out/etc/drctl /out/etc/ssl/certs /out/home/nonroot /out/tmp \
 && printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > /out/etc/passwd \
 && printf 'root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n' > /out/etc/group \
 && cp /etc/ssl/certs/ca-certificates.crt /out/etc/ssl/certs/ \
 && chown 65532:65532 /out/home/nonroot && chmod 0700 /out/home/nonroot && chmod 1777 /out/tmp

FROM scratch
ARG VERSION=dev
ARG COMMIT=
ARG DATE=
COPY --from=build /out/ /
USER 65532:65532
WORKDIR /home/nonroot
ENV PATH=/usr/local/bin DRCTL_CONFIG=/etc/drctl/drctl.yaml SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
EXPOSE 7483/tcp
LABEL org.opencontainers.image.title="drctl" \
      org.opencontainers.image.description="Kafka disaster recovery: mirror, failover, failback, drills" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}" \
      org.opencontainers.image.created="${DATE}" \
      org.opencontainers.image.source="https://github.com/drctl/drctl" \
      org.opencontainers.image.url="https://github.com/drctl/drctl"
ENTRYPOINT ["/usr/local/bin/drctl"]
CMD ["--help"]
