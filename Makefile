# memcached-operator: a hybrid Helm + Go operator (Operator SDK hybrid Helm tutorial, as a product).

# The version of the operator, its bundle and its chart: set here and only here.
VERSION ?= 1.3.0
# When VERSION was released (the CSV's createdAt); set with VERSION, so bundles are reproducible.
CREATED_AT ?= 2026-11-28T00:00:00Z
# Channels of the bundle, and the default one. Channel names follow OLM's conventions.
CHANNELS ?= candidate,stable
DEFAULT_CHANNEL ?= stable
# Where released images live.
IMAGE_TAG_BASE ?= quay.io/example/memcached-operator
# Image of the operator for `make deploy`, `make image-build image-push` and `make docker-build`;
# the bundle's CSV names its repository with image-build's digest.
IMG ?= $(IMAGE_TAG_BASE):v$(VERSION)
BUNDLE_IMG ?= $(IMAGE_TAG_BASE)-bundle:v$(VERSION)
CATALOG_IMG ?= $(IMAGE_TAG_BASE)-catalog:v$(VERSION)
# The project's own scorecard tests (tests/scorecard).
SCORECARD_IMG ?= $(IMAGE_TAG_BASE)-scorecard-tests:v$(VERSION)
# Images built without a Docker daemon are written here by the *-build targets.
IMAGES_DIR ?= $(CURDIR)/bin/images
# The operator image that the bundle pins by digest is image-build's, an index of linux/amd64 and
# linux/arm64: with no VCS stamp, no paths and no settings of the environment in the manager
# binaries, its digest depends only on the source and the Go version (go.mod's toolchain).
# Every setting is explicit, so that none of the environment's (GOARCH included) reaches them.
MANAGER_GO = CGO_ENABLED=0 GOFLAGS= GOWORK=off GOEXPERIMENT= GOTOOLCHAIN=$(GO_TOOLCHAIN) GOOS=linux
MANAGER_BUILD = $(MANAGER_GO) GOARCH=amd64 GOAMD64=v1 go build -trimpath -buildvcs=false
MANAGER_BUILD_ARM64 = $(MANAGER_GO) GOARCH=arm64 GOARM64=v8.0 go build -trimpath -buildvcs=false
GO_TOOLCHAIN := $(shell sed -n 's/^toolchain //p' $(CURDIR)/go.mod)
OPERATOR_DIGEST_FILE = $(IMAGES_DIR)/operator.digest
# The bundle's CSV, below a tree.
CSV = bundle/manifests/memcached-operator.clusterserviceversion.yaml
# Succeeds when the CSV of the tree DIR names IMAGE_TAG_BASE at the digest in DIGEST_FILE:
# $(call pins_operator,DIR,DIGEST_FILE).
pins_operator = grep -q "image: $(IMAGE_TAG_BASE)@$$(cat $(2))" $(1)/$(CSV)
# IMG's repository: IMG without its tag or digest.
OPERATOR_REPO = $(shell echo '$(IMG)' | sed -E 's/@sha256:[a-f0-9]+$$//; s/:[^:/]+$$//')

# Tools and cluster binaries are built from Go modules into bin/ (no prebuilt downloads).
LOCALBIN ?= $(CURDIR)/bin
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen
KUSTOMIZE ?= $(LOCALBIN)/kustomize
HELM ?= $(LOCALBIN)/helm
STATICCHECK ?= $(LOCALBIN)/staticcheck
# The Ginkgo CLI, at go.mod's Ginkgo version: it runs the envtest suite in parallel processes.
GINKGO ?= $(LOCALBIN)/ginkgo
# promtool and Prometheus, from Prometheus's Go module (hack/prometheus/go.mod): promtool tests the
# shipped alert rules in make test; the e2e's Prometheus scrapes the operator and the exporters.
PROMTOOL ?= $(LOCALBIN)/promtool
PROMETHEUS ?= $(LOCALBIN)/prometheus

# The Kubernetes version is pinned in hack/kube/go.mod, and only there.
KUBE_VERSION := $(shell cd hack/kube && go list -m -f '{{.Version}}' k8s.io/kubernetes)
KUBE_BIN ?= $(LOCALBIN)/k8s/$(KUBE_VERSION)
# The local cluster tool, and kube-router and the storage provisioner beside it (the tool runs
# them from there).
CLUSTER_TOOL ?= $(LOCALBIN)/cluster/cluster
KUBE_ROUTER := $(dir $(CLUSTER_TOOL))kube-router
LOCAL_STORAGE := $(dir $(CLUSTER_TOOL))local-storage
# The version the binaries report (discovery, --version): $(call kube_ldflags,v1.X.Y).
kube_ldflags = -X k8s.io/component-base/version.gitVersion=$(1) \
	-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(1))) \
	-X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z \
	-X k8s.io/client-go/pkg/version.gitVersion=$(1)
KUBE_LDFLAGS := $(call kube_ldflags,$(KUBE_VERSION))
# The oldest Kubernetes the bundle installs on (the CSV's minKubeVersion): make test runs the envtest
# suites against its kube-apiserver too, pinned in hack/kube-floor/go.mod.
FLOOR_KUBE_VERSION := $(shell cd hack/kube-floor && go list -m -f '{{.Version}}' k8s.io/kubernetes)
FLOOR_KUBE_BIN ?= $(LOCALBIN)/k8s/$(FLOOR_KUBE_VERSION)

# operator-sdk, opm and OLM are pinned in hack/operator-sdk/go.mod and hack/olm/go.mod. Tool
# variables come before the rules that name them: make expands prerequisites as it reads.
OPERATOR_SDK ?= $(LOCALBIN)/operator-sdk
SCORECARD_TEST ?= $(LOCALBIN)/olm/scorecard-test
OPM ?= $(LOCALBIN)/olm/opm
OPM_ARM64 ?= $(LOCALBIN)/olm/arm64/opm
# The catalog image's linux/arm64 health probe.
PROBE_ARM64 ?= $(LOCALBIN)/cluster/arm64/grpc-health-probe
# syft, the SBOM tool, pinned in hack/sbom/go.mod.
SYFT ?= $(LOCALBIN)/syft
OPERATOR_SDK_VERSION := $(shell cd hack/operator-sdk && go list -m -f '{{.Version}}' github.com/operator-framework/operator-sdk)
OLM_VERSION := $(shell cd hack/olm && go list -m -f '{{.Version}}' github.com/operator-framework/operator-lifecycle-manager)
SDK_VERSION_PKG := github.com/operator-framework/operator-sdk/internal/version
SDK_LDFLAGS := -X $(SDK_VERSION_PKG).Version=$(OPERATOR_SDK_VERSION) -X $(SDK_VERSION_PKG).GitVersion=$(OPERATOR_SDK_VERSION) \
	-X $(SDK_VERSION_PKG).GitCommit=none -X $(SDK_VERSION_PKG).KubernetesVersion=$(KUBE_VERSION) \
	-X $(SDK_VERSION_PKG).ImageVersion=$(OPERATOR_SDK_VERSION)
# OLM's commands (one go build) and cpb (without the build tags).
OLM_CMD_BINARIES := olm catalog package-server copy-content
OLM_BINARIES := $(OLM_CMD_BINARIES) cpb
OPM_VERSION := $(shell cd hack/olm && go list -m -f '{{.Version}}' github.com/operator-framework/operator-registry)
# OLM v1 (operator-controller with catalogd) is pinned in hack/olmv1/go.mod.
OLMV1_MODULE := github.com/operator-framework/operator-controller
OLMV1_BINARIES := operator-controller catalogd
OLMV1_VERSION := $(shell cd hack/olmv1 && go list -m -f '{{.Version}}' $(OLMV1_MODULE))

# Setting SHELL to bash allows bash commands to be executed by recipes.
SHELL = /usr/bin/env bash -o pipefail
.SHELLFLAGS = -ec

.PHONY: all
all: build

##@ General

# What `make help` shows, by what a newcomer does (each target's own `##` text, cut to a line);
# `make help-all` lists every target by section.
HELP_GROUPS = Try it:demo demo-down cluster-up cluster-down;Test it:test test-artifacts test-e2e test-floor bench chaos;Release it:release bundle catalog image-build image-push bundle-build bundle-push catalog-build catalog-push scorecard;Develop:manifests generate lint run install uninstall deploy undeploy

.PHONY: help
help: ## What a newcomer runs, by what they do (make help-all: every target).
	@awk -v groups='$(HELP_GROUPS)' 'BEGIN {FS = ":.*##"} /^[a-zA-Z_0-9-]+:.*?##/ { d = $$2; sub(/^ +/, "", d); if (length(d) > 78) d = substr(d, 1, 77) "…"; desc[$$1] = d } \
	  END { printf "Usage: make \033[36m<target>\033[0m   (make help-all: every target)\n"; n = split(groups, g, ";"); \
	    for (i = 1; i <= n; i++) { split(g[i], kv, ":"); printf "\n\033[1m%s\033[0m\n", kv[1]; m = split(kv[2], t, " "); \
	      for (j = 1; j <= m; j++) printf "  \033[36m%-15s\033[0m %s\n", t[j], desc[t[j]] } }' $(MAKEFILE_LIST)

.PHONY: help-all
help-all: ## Every target, by section.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-20s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

# The manifests are generated into MANIFESTS_OUT, then moved into the tree where they changed, a
# file at a time: `make deploy` rewrites nothing that is up to date, and what reads them meanwhile
# (make test-floor, which CI runs beside the e2e suite's deploys) never meets a file half written,
# or a CRD without its name rules.
MANIFESTS_OUT = $(CURDIR)/bin/manifests
# $(call move_changed,FILE,INTO_FOLDER): FILE replaces its namesake in INTO_FOLDER if they differ.
move_changed = cmp -s $(1) $(2)/$$(basename $(1)) || mv $(1) $(2)/
# controller-gen reads only the folders with markers: with "./..." it walks every folder,
# nested modules and the local cluster's state folder too, which containerd changes under it.
.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate the CRDs (with the name rules of api/v1/names.go), the RBAC role and the chart's values.schema.json.
	rm -rf $(MANIFESTS_OUT)
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd paths="./api/...;./controllers/..." \
	  output:crd:artifacts:config=$(MANIFESTS_OUT)/crd output:rbac:artifacts:config=$(MANIFESTS_OUT)/rbac
	go run ./hack/crdnames -dir $(MANIFESTS_OUT)/crd
	go run ./hack/chartschema -crd $(MANIFESTS_OUT)/crd/cache.my.domain_memcacheds.yaml -out $(MANIFESTS_OUT)/values.schema.json
	@for f in $(MANIFESTS_OUT)/crd/*.yaml; do $(call move_changed,$$f,config/crd/bases); done
	@$(call move_changed,$(MANIFESTS_OUT)/rbac/role.yaml,config/rbac)
	@$(call move_changed,$(MANIFESTS_OUT)/values.schema.json,helm-charts/memcached)
	@rm -rf $(MANIFESTS_OUT)

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate DeepCopy methods.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."

.PHONY: fmt
fmt: ## Run go fmt.
	go fmt ./...
	cd hack/cluster && go fmt ./...
	cd hack/storage && go fmt ./...
	cd bench && go fmt ./...

.PHONY: vet
vet: ## Run go vet (the operator, the e2e suite and the cluster tool).
	go vet ./...
	go vet -tags e2e ./tests/e2e/...
	cd hack/cluster && go vet ./...
	cd hack/storage && go vet ./...
	cd bench && go vet ./...

.PHONY: lint
lint: $(STATICCHECK) ## gofmt and staticcheck on the operator, the e2e suite and the hack tools (deprecated APIs fail too).
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); test -z "$$unformatted" || { echo "not gofmt'ed: $$unformatted" >&2; exit 1; }
	$(STATICCHECK) ./...
	$(STATICCHECK) -tags e2e ./tests/e2e/...
	cd hack/cluster && $(STATICCHECK) ./...
	cd hack/storage && $(STATICCHECK) ./...
	cd bench && $(STATICCHECK) ./...

.PHONY: lint-chart
lint-chart: $(HELM) ## Lint the memcached chart (strict: warnings fail).
	$(HELM) lint --strict helm-charts/memcached

.PHONY: verify-generated
verify-generated: $(CONTROLLER_GEN) ## Fail if generated code is stale (CRDs, RBAC, deepcopy, values.schema.json).
	hack/verify-generated.sh code

.PHONY: verify-bundle
verify-bundle: $(CONTROLLER_GEN) $(KUSTOMIZE) $(OPERATOR_SDK) $(OPM) ## Fail if the bundle or catalog is stale; validate both.
	hack/verify-generated.sh bundle

.PHONY: test
test: test-packages verify-generated vet lint lint-chart envtest $(GINKGO) ## Unit and envtest tests, staticcheck, chart lint, stale generated code.
	KUBEBUILDER_ASSETS="$(KUBE_BIN)" go test $(TEST_PACKAGES) -skip '^$(SUITE_TEST)$$' -coverprofile cover.out -timeout $(ENVTEST_TIMEOUT)
	$(call run_suite,$(KUBE_BIN),controllers,--timeout=$(ENVTEST_TIMEOUT) --coverprofile=cover.controllers.out --coverpkg=github.com/example/memcached-operator/controllers/...)
	# -count=1: its tests read the README and bench/results, which go test's cache does not watch.
	cd hack/cluster && go test -count=1 ./... -timeout 5m
	cd bench && go test ./... -timeout 5m

# What one package's tests may take: the controllers' envtest suite takes about 4 minutes on 2
# cores as ENVTEST_PROCS processes, 7 as one.
ENVTEST_TIMEOUT ?= 20m

# make test's packages: all but those make test-artifacts runs (tests/monitoring with promtool,
# tests/sbom and tests/arm64 with the images it builds). The controllers' envtest suite
# (SUITE_TEST of SUITE_PACKAGES) runs apart, in the Ginkgo CLI's parallel processes, and only it:
# the package's plain Go tests run once, with go test, which shows a failing one's output.
TEST_PACKAGES = $(shell go list ./... | grep -Ev '/tests/(monitoring|sbom|image|arm64)$$')
SUITE_PACKAGES = ./controllers
SUITE_TEST = TestControllers
# The controllers' suite waits on API servers, memcacheds and clocks more than it computes: run as
# one process it leaves the 2 cores about 60% idle. Ginkgo's parallel processes each start their own
# kube-apiserver, etcd and operator, and take their own loopback addresses for memcached; the specs
# marked Serial (those that count requests or time one another) run alone at the end.
ENVTEST_PROCS ?= 3
# Like go test, it prints the output of failing specs only, and on a failure hack/failures prints
# each failed spec's reason last (CI keeps the end of the log): what the processes write to stdout
# themselves (the Helm library's diffs) is not captured into every spec's report.
GINKGO_SUITE = $(GINKGO) run -p --procs=$(ENVTEST_PROCS) --require-suite --output-interceptor-mode=none
# run_suite runs SUITE_PACKAGES on the Kubernetes binaries of $(1) with Ginkgo flags $(3), its
# report in bin/$(2).report.json, and prints hack/failures' digest of it when a spec fails.
run_suite = rm -f bin/$(2).report.json; \
	KUBEBUILDER_ASSETS="$(1)" $(GINKGO_SUITE) $(3) --output-dir=$(CURDIR) --json-report=bin/$(2).report.json $(SUITE_PACKAGES) -- '-test.run=^$(SUITE_TEST)$$' || \
	  { go run ./hack/failures bin/$(2).report.json; exit 1; }

.PHONY: test-artifacts
test-artifacts: test-packages artifacts-packages verify-bundle $(PROMTOOL) envtest image-build sbom-operator ## What a release ships beside the code: bundle and catalog regenerated and validated (operator-sdk, opm), the operator image's SBOMs (syft), certification labels and licenses, the chart under Helm 4 beside Helm 3, and its arm64 manager run under QEMU, alert rules and dashboard tested (promtool); CI runs it after make test.
	PROMTOOL="$(PROMTOOL)" go test ./tests/monitoring/ -timeout 5m
	IMAGES_DIR="$(IMAGES_DIR)" go test ./tests/sbom/ ./tests/image/ -timeout 5m
	cd tests/helm4 && KUBEBUILDER_ASSETS="$(KUBE_BIN)" go test ./... -timeout 5m
	KUBEBUILDER_ASSETS="$(KUBE_BIN)" MANAGER_ARM64="$(IMAGES_DIR)/manager-arm64" go test ./tests/arm64/ -timeout 20m

# The Debian packages of make test-artifacts beside make test's (hack/packages.txt, scope artifacts).
.PHONY: artifacts-packages
artifacts-packages:
	@hack/host-packages.sh artifacts

# The Debian packages make test needs (hack/packages.txt, scope test): installed as root, else
# named, before anything is built.
.PHONY: test-packages
test-packages:
	@hack/host-packages.sh test

.PHONY: test-floor
test-floor: test-packages envtest-floor $(GINKGO) ## make test's packages again under the race detector, the envtest suites on the oldest supported Kubernetes (its kube-apiserver is built first); CI runs it after make test.
	KUBEBUILDER_ASSETS="$(FLOOR_KUBE_BIN)" go test -race $(TEST_PACKAGES) -skip '^$(SUITE_TEST)$$' -timeout $(RACE_TIMEOUT)
	$(call run_suite,$(FLOOR_KUBE_BIN),floor,--race --timeout=$(RACE_TIMEOUT))

# The race detector makes the controllers' envtest suite slower: about 4.5 minutes on 2 cores as
# ENVTEST_PROCS processes, compile included (10.5 as one).
RACE_TIMEOUT ?= 30m

# The e2e suite's processes. The tutorial's specs share one operator and run across them, each in
# namespaces of its own: they wait on a real cluster, and as one process left the 2 cores about two
# thirds idle. The OLM, upgrade and OKD specs, and those that stop or move the operator, run after
# them on one process (Serial).
E2E_PROCS ?= 2

# The last e2e run's output; on failure, `make test-e2e` ends with what failed, read from it.
E2E_LOG ?= $(LOCALBIN)/e2e.log

# What the e2e suite is told of the local cluster and the images (make test-e2e, bench-rollout).
E2E_ENV = KUBECONFIG=$(CLUSTER_KUBECONFIG) KUBECACHEDIR=$(CLUSTER_STATE)/kubectl-cache PATH="$(KUBE_BIN):$$PATH" \
	SSL_CERT_FILE=$(CLUSTER_STATE)/pki/ca-bundle.crt \
	E2E_IMG=$(E2E_IMG) E2E_PROBE_IMG=$(E2E_PROBE_IMG) E2E_CLIENT_IMG=$(E2E_CLIENT_IMG) E2E_MEMCACHED_IMG=$$(cat $(CLUSTER_STATE)/memcached-image) E2E_MEMCACHED_RETAGGED_IMG=$$(cat $(CLUSTER_STATE)/memcached-image)-b \
	E2E_BUNDLE_IMG=$(E2E_BUNDLE_IMG) E2E_CATALOG_IMG=$(E2E_CATALOG_IMG) \
	E2E_VERSION=$(VERSION) E2E_OLDEST_VERSION=$(OLDEST_VERSION) E2E_PREVIOUS_VERSION=$(PREVIOUS_VERSION) E2E_PREVIOUS_BUNDLE_IMG=$(E2E_IMAGE_TAG_BASE)-bundle:v$(PREVIOUS_VERSION) \
	E2E_INDEX_IMG=localhost:5000/opm:$(OPM_VERSION) E2E_BUSYBOX_IMG=localhost:5000/busybox:stable E2E_PROMETHEUS=$(PROMETHEUS)

.PHONY: test-e2e
test-e2e: host-packages cluster-binaries cluster-tool $(KUBE_ROUTER) $(LOCAL_STORAGE) olm-binaries olmv1-binaries $(OPM) $(OPERATOR_SDK) $(SCORECARD_TEST) $(HELM) $(PROMETHEUS) $(GINKGO) ## End-to-end suites on the local cluster with OLM v0 and v1 and a real Prometheus (root); always tears the cluster down. E2E_ARGS='--focus=...' picks specs.
	status=0; rm -f $(E2E_LOG); \
	  $(CLUSTER_TOOL) up $(CLUSTER_FLAGS) && $(CLUSTER_TOOL) storage-on $(CLUSTER_FLAGS) && \
	  $(MAKE) --no-print-directory olm-install olmv1-install e2e-olm-images e2e-release-images && \
	  $(E2E_ENV) $(GINKGO) run -p --procs=$(E2E_PROCS) --tags=e2e --timeout=60m -v --label-filter='!bench' $(E2E_ARGS) ./tests/e2e 2>&1 | tee $(E2E_LOG) || status=$$?; \
	  $(CLUSTER_TOOL) down $(CLUSTER_FLAGS) || status=1; \
	  if [ $$status -ne 0 ]; then \
	    echo "--- what failed (the whole run: $(E2E_LOG)) ---"; \
	    sed 's/\x1b\[[0-9;]*m//g' $(E2E_LOG) 2>/dev/null | awk '/Random Seed/ && !seed {print; seed=1} \
	      /^ *\[FAILED\] / && !/\[FAILED\] in \[/ {p=1} p && n < 120 {print; n++} /^ *In \[/ {p=0}' || true; \
	  fi; \
	  exit $$status

##@ Build

.PHONY: build
build: generate fmt vet ## Build the manager binary.
	go build -o $(LOCALBIN)/manager .

.PHONY: run
run: manifests generate fmt vet ## Run the operator against the current kube context.
	go run . --metrics-secure=false --metrics-bind-address=:8080

# SBOMs (SPDX JSON, made by syft from the Go modules and Debian packages in each image) of the
# images the *-build targets made, one per image and architecture:
# bin/images/<image>.linux-<arch>.spdx.json, made again whenever its image is newer. The push
# targets attach each to its image as an OCI artifact that refers to it (the registry's referrers
# API lists it); publish them with a release too. $(call sbom_of,SOURCE,PREFIX,ARCHES)
sbom_of = for arch in $(3); do SYFT_CHECK_FOR_APP_UPDATE=false $(SYFT) scan -q $(1) --platform linux/$$arch \
	  -o spdx-json=$(2).linux-$$arch.spdx.json || exit 1; done
sbom_files = $(foreach arch,$(2),$(IMAGES_DIR)/$(1).linux-$(arch).spdx.json)
SBOM_OPERATOR = $(call sbom_files,operator,amd64 arm64)
SBOM_BUNDLE = $(call sbom_files,bundle,amd64)
SBOM_CATALOG = $(call sbom_files,catalog,amd64 arm64)
SBOM_SCORECARD = $(call sbom_files,scorecard-tests,amd64 arm64)
# Whether the push targets attach the SBOMs (the end-to-end tests push without).
ATTACH_SBOM ?= true
attach_sbom = $(if $(filter true,$(ATTACH_SBOM)),--sbom=$(IMAGES_DIR)/$(1))
sboms_of = $(if $(filter true,$(ATTACH_SBOM)),$(1))

.PHONY: sbom
sbom: $(SBOM_OPERATOR) $(SBOM_BUNDLE) $(SBOM_CATALOG) $(SBOM_SCORECARD) ## SBOMs of the images that image-build, bundle-build, catalog-build and scorecard-image-build made (bin/images/*.spdx.json).

.PHONY: sbom-operator
sbom-operator: $(SBOM_OPERATOR) ## The operator image's SBOMs (after image-build).

$(SBOM_OPERATOR) &: $(IMAGES_DIR)/operator/index.json $(SYFT)
	$(call sbom_of,oci-dir:$(IMAGES_DIR)/operator,$(IMAGES_DIR)/operator,amd64 arm64)
$(SBOM_BUNDLE) &: $(IMAGES_DIR)/bundle.tar $(SYFT)
	$(call sbom_of,docker-archive:$(IMAGES_DIR)/bundle.tar,$(IMAGES_DIR)/bundle,amd64)
$(SBOM_CATALOG) &: $(IMAGES_DIR)/catalog/index.json $(SYFT)
	$(call sbom_of,oci-dir:$(IMAGES_DIR)/catalog,$(IMAGES_DIR)/catalog,amd64 arm64)
$(SBOM_SCORECARD) &: $(IMAGES_DIR)/scorecard-tests/index.json $(SYFT)
	$(call sbom_of,oci-dir:$(IMAGES_DIR)/scorecard-tests,$(IMAGES_DIR)/scorecard-tests,amd64 arm64)
# The images are made by their *-build targets, which always build: an SBOM only waits for one.
$(IMAGES_DIR)/operator/index.json $(IMAGES_DIR)/bundle.tar $(IMAGES_DIR)/catalog/index.json $(IMAGES_DIR)/scorecard-tests/index.json:
	@echo "$@ does not exist: build the image first (make image-build, bundle-build, catalog-build or scorecard-image-build)" >&2; exit 1

# The container tool of docker-build and docker-push: docker or podman.
CONTAINER_TOOL ?= docker

.PHONY: image-build
image-build: manifests cluster-tool ## Build the operator image, an index of linux/amd64 and linux/arm64, reproducibly without a container daemon (bin/images/operator, an OCI layout); the bundle pins its digest.
	$(MANAGER_BUILD) -o $(IMAGES_DIR)/manager .
	$(MANAGER_BUILD_ARM64) -o $(IMAGES_DIR)/manager-arm64 .
	$(CLUSTER_TOOL) image operator --repo=$(CURDIR) --version=$(VERSION) --manager=$(IMAGES_DIR)/manager --manager-arm64=$(IMAGES_DIR)/manager-arm64 --ref=$(IMG) \
	  --out=$(IMAGES_DIR)/operator --digest-file=$(OPERATOR_DIGEST_FILE)

.PHONY: image-push
image-push: cluster-tool $(call sboms_of,$(SBOM_OPERATOR)) ## Push the image that image-build made to IMG (the Docker config's credentials): the image the bundle pins.
	$(CLUSTER_TOOL) image push --state-dir=$(CLUSTER_STATE) --layout=$(IMAGES_DIR)/operator --ref=$(IMG) $(call attach_sbom,operator) $(IMAGE_PUSH_FLAGS)

# docker-build builds from the Dockerfile (a distroless base): the same operator, another digest.
.PHONY: docker-build
docker-build: ## Build the operator image with CONTAINER_TOOL (docker or podman; needs its daemon or service).
	$(CONTAINER_TOOL) build --build-arg VERSION=$(VERSION) -t $(IMG) .

.PHONY: docker-push
docker-push: ## Push the operator image with CONTAINER_TOOL.
	$(CONTAINER_TOOL) push $(IMG)

##@ Bundle (OLM)

.PHONY: bundle
bundle: manifests image-build $(KUSTOMIZE) $(OPERATOR_SDK) ## Generate bundle/ for VERSION (CSV, CRDs, metadata, scorecard config), the operator pinned by image-build's digest, and validate it.
	$(OPERATOR_SDK) generate kustomize manifests --interactive=false -q
	cd config/manager && $(KUSTOMIZE) edit set image controller=$(OPERATOR_REPO)@$$(cat $(OPERATOR_DIGEST_FILE))
	cd config/scorecard && $(KUSTOMIZE) edit set image memcached-operator-scorecard-tests=$(SCORECARD_IMG)
	$(KUSTOMIZE) build config/manifests | $(OPERATOR_SDK) generate bundle -q --overwrite --version $(VERSION) \
		--channels=$(CHANNELS) --default-channel=$(DEFAULT_CHANNEL)
	go run ./hack/csvpatch -csv $(CSV) -image $(OPERATOR_REPO)@$$(cat $(OPERATOR_DIGEST_FILE)) -created-at $(CREATED_AT) \
		-annotations bundle/metadata/annotations.yaml -dockerfile bundle.Dockerfile
	$(MAKE) --no-print-directory bundle-validate

# operator-sdk checks the bundle's format and runs the default validators; the operatorframework
# suite runs from the operator-framework/api of go.mod (hack/bundlevalidate says why).
.PHONY: bundle-validate
bundle-validate: $(OPERATOR_SDK) ## Validate bundle/ with operator-sdk and the operatorframework suite; warnings fail too.
	$(OPERATOR_SDK) bundle validate ./bundle 2>&1 | tee $(LOCALBIN)/bundle-validate.log
	! grep -Eq 'level=(warning|error)' $(LOCALBIN)/bundle-validate.log
	go run ./hack/bundlevalidate -dir bundle

.PHONY: bundle-build
bundle-build: cluster-tool ## Build the bundle image from bundle.Dockerfile without a Docker daemon (into bin/images/bundle.tar).
	$(CLUSTER_TOOL) image dockerfile --state-dir=$(CLUSTER_STATE) --repo=$(CURDIR) --dockerfile=bundle.Dockerfile --ref=$(BUNDLE_IMG) --out=$(IMAGES_DIR)/bundle.tar

.PHONY: bundle-push
bundle-push: cluster-tool $(call sboms_of,$(SBOM_BUNDLE)) ## Push the bundle image that bundle-build made to BUNDLE_IMG.
	$(CLUSTER_TOOL) image push --state-dir=$(CLUSTER_STATE) --tarball=$(IMAGES_DIR)/bundle.tar --ref=$(BUNDLE_IMG) $(call attach_sbom,bundle)

##@ Scorecard

# The namespace of the kube context where the operator runs, for `make scorecard`.
SCORECARD_NAMESPACE ?=
SCORECARD_FLAGS ?=

.PHONY: scorecard
scorecard: $(OPERATOR_SDK) ## Run every scorecard test (basic, olm, the project's own) against the operator installed in SCORECARD_NAMESPACE of the current kube context.
	@test -n "$(SCORECARD_NAMESPACE)" || { echo "scorecard: set SCORECARD_NAMESPACE to the namespace where the operator is installed" >&2; exit 1; }
	kubectl -n $(SCORECARD_NAMESPACE) apply -f tests/scorecard/rbac.yaml
	$(OPERATOR_SDK) scorecard ./bundle -n $(SCORECARD_NAMESPACE) -s memcached-scorecard --pod-security=restricted $(SCORECARD_FLAGS)

.PHONY: scorecard-image-build
scorecard-image-build: cluster-tool ## Build the project's scorecard test image (tests/scorecard), an index of linux/amd64 and linux/arm64, without a container daemon (into bin/images/scorecard-tests).
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -o $(IMAGES_DIR)/memcached-scorecard-tests ./tests/scorecard
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -trimpath -o $(IMAGES_DIR)/arm64/memcached-scorecard-tests ./tests/scorecard
	$(CLUSTER_TOOL) image binary --state-dir=$(CLUSTER_STATE) --bin=$(IMAGES_DIR)/memcached-scorecard-tests --bin-arm64=$(IMAGES_DIR)/arm64/memcached-scorecard-tests \
	  --ref=$(SCORECARD_IMG) --out=$(IMAGES_DIR)/scorecard-tests

# IMAGE_PUSH_FLAGS=--mirror pushes to the local cluster's registry instead.
.PHONY: scorecard-image-push
scorecard-image-push: cluster-tool $(call sboms_of,$(SBOM_SCORECARD)) ## Push the image scorecard-image-build made to SCORECARD_IMG (the Docker config's credentials), as the bundle's scorecard config names it.
	$(CLUSTER_TOOL) image push --state-dir=$(CLUSTER_STATE) --layout=$(IMAGES_DIR)/scorecard-tests --ref=$(SCORECARD_IMG) $(call attach_sbom,scorecard-tests) $(IMAGE_PUSH_FLAGS)

##@ Catalog (file-based, OLM)

# CATALOG_ROOT is the catalog folder; IMAGE_TAG_BASE names the bundle images it points at.
CATALOG_ROOT ?= catalog

.PHONY: catalog
catalog: cluster-tool $(OPM) ## Write catalog/ from catalog-template.yaml, releases.yaml and the bundles of every release (by digest); validate it.
	go run ./hack/release catalog -opm $(OPM) -cluster-tool $(CLUSTER_TOOL) -version $(VERSION) -out $(CATALOG_ROOT) \
		-image-template '$(IMAGE_TAG_BASE)-bundle@{{.Digest}}'
	rm -f $(CATALOG_ROOT).Dockerfile && $(OPM) generate dockerfile $(CATALOG_ROOT) \
		--base-image quay.io/operator-framework/opm:$(OPM_VERSION) --builder-image quay.io/operator-framework/opm:$(OPM_VERSION)
	$(if $(filter catalog,$(CATALOG_ROOT)),$(MAKE) --no-print-directory olmv1-manifests)

# OLM v1's installer may install or upgrade to any bundle of the catalog: its rights are read from
# the catalog (and the bundle), so `make catalog` writes them after the catalog (only the project's
# own catalog/, not the e2e copy).
.PHONY: olmv1-manifests
olmv1-manifests: ## Write config/olmv1 (ClusterCatalog, ClusterExtension, the installer's RBAC) from bundle/ and catalog/.
	go run ./hack/olmv1manifests -bundle bundle -catalog catalog -catalog-image $(CATALOG_IMG) -out config/olmv1

.PHONY: catalog-validate
catalog-validate: $(OPM) ## Validate catalog/ (opm validate).
	$(OPM) validate $(CATALOG_ROOT)

.PHONY: catalog-build
catalog-build: cluster-tool $(OPM) $(OPM_ARM64) $(PROBE_ARM64) ## Build the catalog image (opm serving catalog/, cache built in), an index of linux/amd64 and linux/arm64, without a Docker daemon.
	$(CLUSTER_TOOL) image catalog --state-dir=$(CLUSTER_STATE) --opm=$(OPM) --opm-arm64=$(OPM_ARM64) --probe-arm64=$(PROBE_ARM64) \
	  --configs=$(CATALOG_ROOT) --ref=$(CATALOG_IMG) --out=$(IMAGES_DIR)/catalog

.PHONY: catalog-push
catalog-push: cluster-tool $(call sboms_of,$(SBOM_CATALOG)) ## Push the catalog image that catalog-build made to CATALOG_IMG.
	$(CLUSTER_TOOL) image push --state-dir=$(CLUSTER_STATE) --layout=$(IMAGES_DIR)/catalog --ref=$(CATALOG_IMG) $(call attach_sbom,catalog)

##@ Benchmarks

BENCH_FLAGS ?=
HELM_OPERATOR_PLUGINS_VERSION = $(shell go list -m -f '{{.Version}}' github.com/operator-framework/helm-operator-plugins)

.PHONY: bench
bench: bench-warm bench-noisy bench-tls bench-rollout envtest $(KUBE_BIN)/kube-controller-manager $(HELM) bench-manager ## Measure this operator against the stock helm-operator and the raw-create limit into bench/results/ (quick: BENCH_FLAGS="-n 100 -reps 1 -once '' -large '' -extras ''"); memcached's warm restart (bench-warm), the noisy neighbour (bench-noisy), what TLS costs (bench-tls) and how soon status says a change of the servers is done on the local cluster (bench-rollout, root).
	CGO_ENABLED=0 go build -o $(LOCALBIN)/bench/helm-operator github.com/operator-framework/helm-operator-plugins
	cd bench && go run . -repo $(CURDIR) -bin-dir $(LOCALBIN)/bench -kube-bin $(KUBE_BIN) -kube-version $(KUBE_VERSION) -helm $(HELM) -out $(CURDIR)/bench/results \
		-versions "Kubernetes $(KUBE_VERSION) (kube-apiserver, etcd, kube-controller-manager), helm-operator-plugins $(HELM_OPERATOR_PLUGINS_VERSION)" $(BENCH_FLAGS)

.PHONY: bench-rollout
bench-rollout: host-packages cluster-binaries cluster-tool $(GINKGO) ## How soon status says a change of the servers is done, beside when the cluster made it, on the local cluster (root), into bench/results/rollout-latency.md.
	status=0; $(CLUSTER_TOOL) up $(CLUSTER_FLAGS) && $(MAKE) --no-print-directory e2e-images && \
	  $(E2E_ENV) E2E_ROLLOUT_REPORT=$(CURDIR)/bench/results/rollout-latency.md \
	  $(GINKGO) run --tags=e2e --timeout=30m -v --label-filter=bench ./tests/e2e || status=$$?; \
	  $(CLUSTER_TOOL) down $(CLUSTER_FLAGS) || status=1; \
	  exit $$status

.PHONY: bench-noisy
bench-noisy: test-packages envtest ## Measure a tenant's install, availability and in-place memory change beside another tenant's servers, refusing at once and then stalling (an envtest spec) into bench/results/noisy-neighbour.md.
	KUBEBUILDER_ASSETS="$(KUBE_BIN)" NOISY_NEIGHBOUR_REPORT=$(CURDIR)/bench/results/noisy-neighbour.md go test ./controllers/ -count=1 -timeout 10m -ginkgo.focus "stalling servers"

.PHONY: bench-tls
bench-tls: test-packages ## Measure what spec.tls costs on memcached's data path: requests per second and latency in plain text and with the chart's TLS options (mutual TLS), connections kept open and one per request, into bench/results/tls-cost.md.
	go run ./hack/tlscost -out $(CURDIR)/bench/results

.PHONY: bench-warm
bench-warm: test-packages $(HELM) ## Measure memcached's warm restart (keepCacheAcross Restarts) and a pod replaced with persistence at 64 MiB and 1 GiB of items: stop to serving again, items kept, the grace period needed, memory, into bench/results/warm-restart.md.
	cd bench && go run . warm -out $(CURDIR)/bench/results -helm $(HELM) -chart $(CURDIR)/helm-charts/memcached -kube-version $(KUBE_VERSION)

CHAOS_FLAGS ?=

# The manager that make bench and make chaos run: built as the image's is (MANAGER_BUILD), so that
# its packages come from the build cache that image-build filled, not from a third compile of the
# whole graph with other settings.
.PHONY: bench-manager
bench-manager:
	$(MANAGER_BUILD) -o $(LOCALBIN)/bench/manager .

.PHONY: chaos
chaos: envtest $(KUBE_BIN)/kube-controller-manager bench-manager ## Fault scenarios at scale (operator killed, spec churn, API server and etcd outages) into bench/results/chaos.md; fails on any leftover (quick: CHAOS_FLAGS="-n 100").
	cd bench && go run . chaos -repo $(CURDIR) -bin-dir $(LOCALBIN)/bench -kube-bin $(KUBE_BIN) -out $(CURDIR)/bench/results $(CHAOS_FLAGS)

##@ Release

# The release date written into the CSV by `make release` (createdAt); today unless given.
RELEASE_DATE ?= $(shell date -u +%Y-%m-%dT00:00:00Z)

.PHONY: release
release: ## Release VERSION=x.y.z (RELEASE_NOTES=file: the release commit's message body): bump the version, regenerate bundle and catalog, commit, and record the commit in releases.yaml.
	@test -z "$$(git status --porcelain)" || { echo "release: the tree has uncommitted changes" >&2; exit 1; }
	go run ./hack/release bump -version $(VERSION) -created-at $(RELEASE_DATE) -channels $(CHANNELS)
	$(MAKE) --no-print-directory bundle catalog VERSION=$(VERSION) CREATED_AT=$$(sed -n 's/^CREATED_AT ?= //p' Makefile)
	git add -A && { git diff --cached --quiet || git commit -q -F <(printf 'Release %s\n\n' $(VERSION); cat $(or $(RELEASE_NOTES),/dev/null)); }
	go run ./hack/release record -version $(VERSION) -commit HEAD
	git add releases.yaml && git commit -q -m "releases.yaml: $(VERSION) is built from commit $$(git rev-parse --short HEAD)"

##@ Deployment

ifndef ignore-not-found
  ignore-not-found = false
endif

.PHONY: install
install: manifests $(KUSTOMIZE) ## Install the CRDs into the current cluster.
	$(KUSTOMIZE) build config/crd | kubectl apply --server-side -f -

.PHONY: uninstall
uninstall: manifests $(KUSTOMIZE) ## Remove the CRDs (and every CR) from the current cluster.
	$(KUSTOMIZE) build config/crd | kubectl delete --ignore-not-found=$(ignore-not-found) -f -

# MEMCACHED_IMG (optional) replaces the operand image the chart pins, e.g. with a mirror.
.PHONY: deploy
deploy: manifests $(KUSTOMIZE) ## Deploy the operator (IMG=..., optional MEMCACHED_IMG=...) into the current cluster.
	cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	$(if $(MEMCACHED_IMG),cd config/manager && $(KUSTOMIZE) edit set image docker.io/library/memcached=$(MEMCACHED_IMG))
	$(KUSTOMIZE) build config/default | kubectl apply --server-side -f -

# The CRDs go first, and with them every CR, while the operator still runs to uninstall their
# releases and remove their finalizers; deleted together, the CRs would hold the CRDs forever.
.PHONY: undeploy
undeploy: $(KUSTOMIZE) ## Remove every CR (their releases uninstalled), then the operator, from the current cluster.
	$(KUSTOMIZE) build config/crd | kubectl delete --ignore-not-found --timeout=$(UNDEPLOY_TIMEOUT) -f - || { \
	  echo "undeploy: CRs still hold the CRDs after $(UNDEPLOY_TIMEOUT); the operator is left running to uninstall their releases. Is it running? See docs/troubleshooting.md" >&2; \
	  kubectl get memcached,memcachedbackup -A >&2 || true; exit 1; }
	$(KUSTOMIZE) build config/default | kubectl delete --ignore-not-found -f -
UNDEPLOY_TIMEOUT ?= 5m

##@ Local cluster (a real single-node cluster without Docker; needs root)

CLUSTER_STATE ?= $(CURDIR)/.cluster
CLUSTER_FLAGS = --state-dir=$(CLUSTER_STATE) --bin-dir=$(KUBE_BIN)
CLUSTER_KUBECONFIG = $(CLUSTER_STATE)/kubeconfig
# Images built without a Docker daemon and pushed to the cluster's registry.
E2E_IMG ?= localhost:5000/memcached-operator:dev
E2E_PROBE_IMG ?= localhost:5000/memcache-probe:dev
# An application's sharding client (gomemcache) over a Memcached's server list.
E2E_CLIENT_IMG ?= localhost:5000/memcache-client:dev

.PHONY: demo
# Its first phase is here: the Debian packages make and Go need, and the tool, which runs the rest,
# installs the cluster's packages beside the compiles, and counts its times from this one's start.
demo: ## Run the product: deploy it and both samples on the current context, else on the local cluster (root).
	@since=$$(date +%s) && echo "==> $(DEMO_FIRST_PHASE)" && hack/host-packages.sh test && \
	  $(MAKE) --no-print-directory -s cluster-tool && \
	  $(CLUSTER_TOOL) demo $(CLUSTER_FLAGS) --since=$$since --repo=$(CURDIR) --img=$(if $(filter command line environment,$(origin IMG)),$(IMG)) --local-img=$(E2E_IMG)
DEMO_FIRST_PHASE = [1] Debian packages make needs, and the demo's cluster tool

# With nothing up these say so in one line, without building anything.
.PHONY: demo-down
demo-down: ## Undo make demo (samples, operator, and the local cluster if it runs).
	@if [ -d $(CLUSTER_STATE) ] || [ -x $(KUBE_BIN)/kubectl ]; then \
	  $(MAKE) --no-print-directory -s cluster-tool && $(CLUSTER_TOOL) demo-down $(CLUSTER_FLAGS) --repo=$(CURDIR); \
	else echo "demo-down: nothing to remove: no local cluster runs and kubectl was never built"; fi

.PHONY: cluster-up
cluster-up: host-packages cluster-binaries cluster-tool ## Bring up the local cluster (idempotent; root).
	$(CLUSTER_TOOL) up $(CLUSTER_FLAGS)

.PHONY: cluster-netpol-on cluster-netpol-off
cluster-netpol-on: cluster-tool $(KUBE_ROUTER) ## Make the running local cluster enforce NetworkPolicy (kube-router's firewall; root).
	$(CLUSTER_TOOL) netpol-on $(CLUSTER_FLAGS)

cluster-netpol-off: cluster-tool ## Stop enforcing NetworkPolicy on the local cluster (kube-router and its rules removed).
	$(CLUSTER_TOOL) netpol-off $(CLUSTER_FLAGS)

.PHONY: cluster-storage-on cluster-storage-off
cluster-storage-on: cluster-tool $(LOCAL_STORAGE) ## Give the running local cluster a default StorageClass of node-local volumes (a provisioner on the node; root).
	$(CLUSTER_TOOL) storage-on $(CLUSTER_FLAGS)

cluster-storage-off: cluster-tool ## Stop the local cluster's storage provisioner (its volumes stay until their claims go).
	$(CLUSTER_TOOL) storage-off $(CLUSTER_FLAGS)

.PHONY: cluster-down
cluster-down: ## Stop the local cluster and undo its changes to the machine.
	@if [ -d $(CLUSTER_STATE) ]; then \
	  $(MAKE) --no-print-directory -s cluster-tool && $(CLUSTER_TOOL) down $(CLUSTER_FLAGS); \
	else echo "cluster-down: nothing to do: no local cluster state in $(CLUSTER_STATE)"; fi

.PHONY: host-packages
host-packages: ## Install the Debian packages of hack/packages.txt that are missing (root), or say which.
	@hack/host-packages.sh

.PHONY: cluster-status
cluster-status: cluster-tool ## Say what of the local cluster runs.
	$(CLUSTER_TOOL) status $(CLUSTER_FLAGS)

.PHONY: demo-images
demo-images: cluster-tool # The images make demo runs: the operator, memcached and a sharding memcached client.
	$(MANAGER_BUILD) -o $(IMAGES_DIR)/manager .
	$(CLUSTER_TOOL) image operator --state-dir=$(CLUSTER_STATE) --repo=$(CURDIR) --version=$(VERSION) --manager=$(IMAGES_DIR)/manager --ref=$(E2E_IMG)
	$(CLUSTER_TOOL) image memcached --state-dir=$(CLUSTER_STATE) > $(CLUSTER_STATE)/memcached-image
	CGO_ENABLED=0 go build -trimpath -o $(IMAGES_DIR)/memcache-client ./tests/e2e/memcache-client
	$(CLUSTER_TOOL) image binary --state-dir=$(CLUSTER_STATE) --bin=$(IMAGES_DIR)/memcache-client --ref=$(E2E_CLIENT_IMG)

.PHONY: e2e-images
e2e-images: demo-images ## Build the images of make demo and those only the end-to-end tests run, and push them to the local registry.
	# The same memcached under a second tag: a new image that memcached restores its file in (warm restarts).
	$(CLUSTER_TOOL) image memcached --state-dir=$(CLUSTER_STATE) --ref=$$(cat $(CLUSTER_STATE)/memcached-image)-b > /dev/null
	CGO_ENABLED=0 go build -trimpath -o $(IMAGES_DIR)/memcache-probe ./tests/e2e/memcache-probe
	$(CLUSTER_TOOL) image binary --state-dir=$(CLUSTER_STATE) --bin=$(IMAGES_DIR)/memcache-probe --ref=$(E2E_PROBE_IMG)
	cd hack/exporter && CGO_ENABLED=0 go build -trimpath -o $(IMAGES_DIR)/memcached-exporter github.com/prometheus/memcached_exporter/cmd/memcached_exporter
	$(CLUSTER_TOOL) image binary --state-dir=$(CLUSTER_STATE) --bin=$(IMAGES_DIR)/memcached-exporter --mirror \
	  --ref=$$($(call image_of,docker.io/prom/memcached-exporter) config/manager/manager.yaml)

# The OLM end-to-end tests install the committed bundle unchanged: its images are pushed to the
# local registry, which the node uses as a mirror of quay.io (as a disconnected cluster does), the
# operator by digest alone (no tag names it); the bundle and a catalog of it are there too.
E2E_IMAGE_TAG_BASE ?= localhost:5000/memcached-operator
E2E_BUNDLE_IMG ?= $(E2E_IMAGE_TAG_BASE)-bundle:v$(VERSION)
E2E_CATALOG_IMG ?= $(E2E_IMAGE_TAG_BASE)-catalog:v$(VERSION)

.PHONY: e2e-olm-images
e2e-olm-images: cluster-tool $(OPERATOR_SDK) $(SCORECARD_TEST) $(OPM) e2e-images ## Images of the bundle, catalog and scorecard tests for the OLM end-to-end tests.
	$(MANAGER_BUILD_ARM64) -o $(IMAGES_DIR)/manager-arm64 .
	$(CLUSTER_TOOL) image operator --state-dir=$(CLUSTER_STATE) --repo=$(CURDIR) --version=$(VERSION) --manager=$(IMAGES_DIR)/manager --manager-arm64=$(IMAGES_DIR)/manager-arm64 \
	  --ref=$(IMAGE_TAG_BASE) --by-digest --mirror --digest-file=$(IMAGES_DIR)/e2e-operator.digest
	@$(call pins_operator,.,$(IMAGES_DIR)/e2e-operator.digest) || \
	  { echo "the bundle pins another operator image than this tree builds: run 'make bundle catalog'" >&2; exit 1; }
	$(MAKE) --no-print-directory scorecard-image-build scorecard-image-push IMAGE_PUSH_FLAGS=--mirror ATTACH_SBOM=false
	$(CLUSTER_TOOL) image binary --state-dir=$(CLUSTER_STATE) --bin=$(SCORECARD_TEST) --ref=quay.io/operator-framework/scorecard-test:$(OPERATOR_SDK_VERSION) --mirror
	$(CLUSTER_TOOL) image dockerfile --state-dir=$(CLUSTER_STATE) --repo=$(CURDIR) --dockerfile=bundle.Dockerfile --ref=$(E2E_BUNDLE_IMG)
	$(MAKE) --no-print-directory catalog CATALOG_ROOT=$(CLUSTER_STATE)/catalog IMAGE_TAG_BASE=$(E2E_IMAGE_TAG_BASE)
	$(CLUSTER_TOOL) image catalog --state-dir=$(CLUSTER_STATE) --opm=$(OPM) --configs=$(CLUSTER_STATE)/catalog --ref=$(E2E_CATALOG_IMG)

# The release before VERSION and the first release, whose images e2e-release-images rebuilds (the
# upgrade tests start there; the catalog's skipRange leads from the oldest to VERSION, so OLM
# never pulls the images of a release between).
PREVIOUS_VERSION = $(shell go run ./hack/release versions -except $(VERSION) | tail -n 1)
OLDEST_VERSION = $(shell go run ./hack/release versions -except $(VERSION) | head -n 1)
# Prints the image of a repository that a manager.yaml names (its RELATED_IMAGE_* value):
# $(call image_of,REPOSITORY) FILE.
image_of = sed -n 's|^ *value: \($(1):.*\)|\1|p'
MEMCACHED_IMAGE_OF = $(call image_of,docker.io/library/memcached)


.PHONY: e2e-release-images
e2e-release-images: cluster-tool ## Rebuild the operator and bundle images of the releases the upgrade specs start from (the oldest and the previous) from their commits (releases.yaml), and stand-ins for their memcached images and this tree's.
	for v in $$(echo $(OLDEST_VERSION) $(PREVIOUS_VERSION) | tr ' ' '\n' | sort -u); do \
	  dir=$(CLUSTER_STATE)/releases/$$v; \
	  go run ./hack/release checkout -version $$v -dir $$dir && \
	  (cd $$dir && $(MANAGER_BUILD) -o $(IMAGES_DIR)/manager-$$v .) && \
	  arm64=; if grep -q 'operatorframework.io/arch.arm64: supported' $$dir/$(CSV); then \
	    (cd $$dir && $(MANAGER_BUILD_ARM64) -o $(IMAGES_DIR)/manager-arm64-$$v .) && arm64=--manager-arm64=$(IMAGES_DIR)/manager-arm64-$$v; fi && \
	  $(CLUSTER_TOOL) image operator --state-dir=$(CLUSTER_STATE) --repo=$$dir --version=$$v --manager=$(IMAGES_DIR)/manager-$$v $$arm64 --ref=$(IMAGE_TAG_BASE):v$$v --mirror \
	    --digest-file=$(IMAGES_DIR)/operator-$$v.digest && \
	  { ! grep -q "image: $(IMAGE_TAG_BASE)@sha256:" $$dir/$(CSV) || $(call pins_operator,$$dir,$(IMAGES_DIR)/operator-$$v.digest) || \
	    { echo "release $$v's operator image no longer builds to the digest its bundle pins (another Go version?)" >&2; exit 1; }; } && \
	  $(CLUSTER_TOOL) image dockerfile --state-dir=$(CLUSTER_STATE) --repo=$$dir --dockerfile=$$dir/bundle.Dockerfile --ref=$(E2E_IMAGE_TAG_BASE)-bundle:v$$v && \
	  $(CLUSTER_TOOL) image memcached --state-dir=$(CLUSTER_STATE) --mirror \
	    --ref=$$($(MEMCACHED_IMAGE_OF) $$dir/config/manager/manager.yaml) || exit 1; \
	done
	$(CLUSTER_TOOL) image memcached --state-dir=$(CLUSTER_STATE) --mirror --ref=$$($(MEMCACHED_IMAGE_OF) config/manager/manager.yaml)

.PHONY: cluster-tool
cluster-tool: $(CLUSTER_TOOL) ## Build the local cluster tool and the pause, CoreDNS and probe binaries it packs or runs.

$(CLUSTER_TOOL): $(wildcard hack/cluster/*.go hack/cluster/*/*.go) hack/cluster/go.mod
	cd hack/cluster && CGO_ENABLED=0 go build -o $(dir $@) . ./pause ./coredns ./grpc-health-probe

# kube-router's firewall, beside the cluster tool, only for NetworkPolicy enforcement (the demo
# runs without it).
$(KUBE_ROUTER): hack/netpol/go.mod
	cd hack/netpol && CGO_ENABLED=0 go build -o $(dir $@) github.com/cloudnativelabs/kube-router/v2/cmd/kube-router

# The local cluster's provisioner of node-local volumes, built as the manager is: the Kubernetes
# libraries it shares with the operator (at the operator's versions, tests/modules) come from the
# build cache.
$(LOCAL_STORAGE): $(wildcard hack/storage/*.go) hack/storage/go.mod
	cd hack/storage && $(MANAGER_BUILD) -o $@ .

$(PROBE_ARM64): $(wildcard hack/cluster/grpc-health-probe/*.go) hack/cluster/go.mod
	cd hack/cluster && CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -o $@ ./grpc-health-probe

# Binaries of one module that share most packages are built by one go build (a grouped target):
# it compiles each package once and links them side by side on the cores.
# (Defined before the rules that name it: a rule's prerequisites expand where it is read.)
CLUSTER_KUBE_BINARIES = kube-controller-manager kube-scheduler kubelet kube-proxy
.PHONY: cluster-binaries
cluster-binaries: envtest $(KUBE_BIN)/kubectl $(addprefix $(KUBE_BIN)/,$(CLUSTER_KUBE_BINARIES)) ## Build the Kubernetes binaries of the local cluster.

$(addprefix $(KUBE_BIN)/,$(CLUSTER_KUBE_BINARIES)) &: hack/kube/go.mod
	cd hack/kube && go build -ldflags "$(KUBE_LDFLAGS)" -o $(KUBE_BIN)/ $(addprefix k8s.io/kubernetes/cmd/,$(CLUSTER_KUBE_BINARIES))
# Apart from the others: make demo on a reachable context needs only it.
$(KUBE_BIN)/kubectl: hack/kube/go.mod
	cd hack/kube && go build -ldflags "$(KUBE_LDFLAGS)" -o $@ k8s.io/kubernetes/cmd/kubectl

##@ Operator Framework tools (built from hack/operator-sdk/go.mod and hack/olm/go.mod into bin/)


.PHONY: operator-sdk
operator-sdk: $(OPERATOR_SDK) $(SCORECARD_TEST) ## Build operator-sdk and its scorecard-test image binary.

$(OPERATOR_SDK): hack/operator-sdk/go.mod
	cd hack/operator-sdk && CGO_ENABLED=0 go build -tags containers_image_openpgp -ldflags "$(SDK_LDFLAGS)" -o $@ github.com/operator-framework/operator-sdk/cmd/operator-sdk
$(SCORECARD_TEST): hack/operator-sdk/go.mod
	cd hack/operator-sdk && CGO_ENABLED=0 go build -tags containers_image_openpgp -o $@ github.com/operator-framework/operator-sdk/images/scorecard-test

.PHONY: opm
opm: $(OPM) ## Build opm (needs cgo for sqlite).
$(OPM): hack/olm/go.mod
	cd hack/olm && CGO_ENABLED=1 go build -tags json1,containers_image_openpgp -o $@ github.com/operator-framework/operator-registry/cmd/opm

# opm for the catalog image's linux/arm64 variant: static (serving a file-based catalog needs no
# sqlite, which is opm's only cgo).
$(OPM_ARM64): hack/olm/go.mod
	cd hack/olm && CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -tags json1,containers_image_openpgp -o $@ github.com/operator-framework/operator-registry/cmd/opm

OLM_DEPLOY_DIR = $(shell cd hack/olm && go list -m -f '{{.Dir}}' github.com/operator-framework/operator-lifecycle-manager)/deploy

.PHONY: olm-install
olm-install: olm-binaries $(OPM) cluster-tool $(HELM) ## Install OLM, built from source, into the local cluster.
	$(CLUSTER_TOOL) olm-install $(CLUSTER_FLAGS) --olm-bin-dir=$(LOCALBIN)/olm --olm-deploy-dir=$(OLM_DEPLOY_DIR) \
		--helm=$(HELM) --olm-version=$(OLM_VERSION) --opm-version=$(OPM_VERSION)

.PHONY: olm-uninstall
olm-uninstall: cluster-tool ## Remove OLM from the local cluster (idempotent: nothing installed, nothing to do).
	$(CLUSTER_TOOL) olm-uninstall $(CLUSTER_FLAGS)

.PHONY: olm-binaries
olm-binaries: $(addprefix $(LOCALBIN)/olm/,$(OLM_BINARIES)) ## Build OLM's binaries for the local cluster's OLM image.
$(addprefix $(LOCALBIN)/olm/,$(OLM_CMD_BINARIES)) &: hack/olm/go.mod
	cd hack/olm && CGO_ENABLED=0 go build -tags json1,containers_image_openpgp -o $(LOCALBIN)/olm/ \
		$(addprefix github.com/operator-framework/operator-lifecycle-manager/cmd/,$(OLM_CMD_BINARIES))
$(LOCALBIN)/olm/cpb: hack/olm/go.mod
	cd hack/olm && CGO_ENABLED=0 go build -o $@ github.com/operator-framework/operator-lifecycle-manager/util/cpb

OLMV1_MANIFEST = $(shell cd hack/olmv1 && go list -m -f '{{.Dir}}' $(OLMV1_MODULE))/manifests/standard.yaml

.PHONY: olmv1-install
olmv1-install: olmv1-binaries cluster-tool ## Install OLM v1 (operator-controller, catalogd), built from source, into the local cluster.
	$(CLUSTER_TOOL) olmv1-install $(CLUSTER_FLAGS) --olmv1-bin-dir=$(LOCALBIN)/olmv1 --olmv1-manifest=$(OLMV1_MANIFEST) --olmv1-version=$(OLMV1_VERSION)

.PHONY: olmv1-uninstall
olmv1-uninstall: cluster-tool ## Remove OLM v1 (and the extensions it installed) from the local cluster (idempotent).
	$(CLUSTER_TOOL) olmv1-uninstall $(CLUSTER_FLAGS)

.PHONY: olmv1-binaries
olmv1-binaries: $(addprefix $(LOCALBIN)/olmv1/,$(OLMV1_BINARIES)) ## Build OLM v1's binaries for the local cluster's OLM v1 images.
$(addprefix $(LOCALBIN)/olmv1/,$(OLMV1_BINARIES)) &: hack/olmv1/go.mod
	cd hack/olmv1 && CGO_ENABLED=0 go build -tags containers_image_openpgp -o $(LOCALBIN)/olmv1/ $(addprefix $(OLMV1_MODULE)/cmd/,$(OLMV1_BINARIES))

##@ Tools (built from hack/tools/go.mod and hack/kube/go.mod into bin/)

.PHONY: tools
tools: $(CONTROLLER_GEN) $(KUSTOMIZE) $(HELM) $(STATICCHECK) $(PROMTOOL) ## Build the developer tools.

$(CONTROLLER_GEN): hack/tools/go.mod
	cd hack/tools && go build -o $@ sigs.k8s.io/controller-tools/cmd/controller-gen
$(KUSTOMIZE): hack/tools/go.mod
	cd hack/tools && go build -o $@ sigs.k8s.io/kustomize/kustomize/v5
$(SYFT): hack/sbom/go.mod
	cd hack/sbom && CGO_ENABLED=0 go build -ldflags "-X main.version=$$(go list -m -f '{{.Version}}' github.com/anchore/syft)" \
	  -o $@ github.com/anchore/syft/cmd/syft
$(HELM): hack/tools/go.mod
	cd hack/tools && go build -o $@ helm.sh/helm/v3/cmd/helm
$(GINKGO): go.mod
	go build -o $@ github.com/onsi/ginkgo/v2/ginkgo
$(STATICCHECK): hack/tools/go.mod
	cd hack/tools && go build -o $@ honnef.co/go/tools/cmd/staticcheck
$(PROMTOOL): hack/prometheus/go.mod
	cd hack/prometheus && CGO_ENABLED=0 go build -o $@ github.com/prometheus/prometheus/cmd/promtool
$(PROMETHEUS): hack/prometheus/go.mod
	cd hack/prometheus && CGO_ENABLED=0 go build -o $@ github.com/prometheus/prometheus/cmd/prometheus

.PHONY: envtest
envtest: $(KUBE_BIN)/kube-apiserver $(KUBE_BIN)/etcd ## Build kube-apiserver and etcd for envtest into bin/k8s/<version>.

$(KUBE_BIN)/kube-apiserver: hack/kube/go.mod
	cd hack/kube && go build -ldflags "$(KUBE_LDFLAGS)" -o $@ k8s.io/kubernetes/cmd/kube-apiserver
$(KUBE_BIN)/etcd: hack/kube/go.mod
	cd hack/kube && go build -o $@ go.etcd.io/etcd/server/v3

.PHONY: envtest-floor
envtest-floor: $(FLOOR_KUBE_BIN)/kube-apiserver $(FLOOR_KUBE_BIN)/etcd ## Build the kube-apiserver of the oldest supported Kubernetes into bin/k8s/<version> (with hack/kube's etcd).

$(FLOOR_KUBE_BIN)/kube-apiserver: hack/kube-floor/go.mod
	cd hack/kube-floor && go build -ldflags "$(call kube_ldflags,$(FLOOR_KUBE_VERSION))" -o $@ k8s.io/kubernetes/cmd/kube-apiserver
$(FLOOR_KUBE_BIN)/etcd: $(KUBE_BIN)/etcd
	mkdir -p $(dir $@) && cp $< $@
