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
WORKDIR /
COPY --from=builder /workspace/manager /manager
COPY watches.yaml /watches.yaml
COPY helm-charts/ /helm-charts/
USER 65532:65532
ENTRYPOINT ["/manager"]
