# The operator image, for users with Docker (`make docker-build IMG=...`). Without a Docker daemon,
# the project's own image build gives the same content.
FROM golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH

WORKDIR /workspace
COPY go.mod go.sum ./
RUN go mod download

COPY main.go main.go
COPY api/ api/
COPY controllers/ controllers/
COPY internal/ internal/
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} go build -trimpath -o manager .

FROM gcr.io/distroless/static:nonroot
# The labels and the license Red Hat's certification (preflight) asks of an operator image; the
# project's own image build reads them from here. VERSION is the Makefile's.
ARG VERSION
LABEL name="memcached-operator" vendor="Example" version="${VERSION}" release="${VERSION}"
LABEL summary="Memcached operator: memcached clusters from a Helm chart, and memcached backups"
LABEL description="Runs memcached clusters from a Helm chart and memcached backups in Go, with warm restarts, in-place resizes, TLS and an autopilot, installed through OLM."
LABEL maintainer="memcached-operator maintainers <memcached-operator@example.com>"
WORKDIR /
COPY LICENSE /licenses/LICENSE
COPY --from=builder /workspace/manager /manager
COPY watches.yaml /watches.yaml
COPY helm-charts/ /helm-charts/
USER 65532:65532
ENTRYPOINT ["/manager"]
