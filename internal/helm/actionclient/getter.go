/*
Copyright 2026 The memcached-operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package actionclient

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Clients are the Kubernetes clients of the wrapper.
type Clients struct {
	// Live reads and deletes what upgrades replace. Uncached: ReplicaSets are not otherwise
	// watched.
	Live client.Client
	// Cached reads a release's objects for the in-sync check: the manager's cache, which the
	// Helm reconciler's watches of those objects keep current.
	Cached client.Client
}

// Config is what the wrapper needs beyond the library's options.
type Config struct {
	Clients
	// Recorder records an Event on the CR for each case the wrapper handles.
	Recorder events.EventRecorder
	// CapabilitiesTTL is how long the cluster's capabilities are reused (capabilities.go).
	CapabilitiesTTL time.Duration
	// MayRecoverPending returns nil if a release left pending may be recovered now, or why not
	// (another process may still be working on it); nil: always (pending.go).
	MayRecoverPending func(context.Context) error
	// BeforeUpgrade, if set, runs before each upgrade is applied, with the CR, the release as it
	// is (its last revision) and the release the upgrade makes (rendered, not yet applied): the
	// kind's own preparation of its objects. An error fails the upgrade, which is tried again.
	BeforeUpgrade BeforeUpgrade
}

// BeforeUpgrade prepares a release's objects for an upgrade from last to target (Config.BeforeUpgrade).
type BeforeUpgrade func(ctx context.Context, cr client.Object, last, target *Rendered) error

// Rendered is what the kind's own code reads of a release: its revision, whether it is the
// deployed one, and the manifest it renders. Helm's release type stays inside this package and
// internal/helm, so a move to another Helm touches them alone.
type Rendered struct {
	Version  int32
	Deployed bool
	Manifest string
}

// RenderedOf is rel as the kind's own code reads it (nil for none).
func RenderedOf(rel *release.Release) *Rendered {
	if rel == nil {
		return nil
	}
	return &Rendered{Version: int32(rel.Version), Deployed: rel.Info != nil && rel.Info.Status == release.StatusDeployed, Manifest: rel.Manifest}
}

// NewGetter returns an ActionClientGetter whose clients add the behaviour this package describes.
// opts are the library's own client options. The library's getter is built once; each client it
// makes gets the shared capabilities (sharedCaps).
func NewGetter(configs helmclient.ActionConfigGetter, cfg Config, opts ...helmclient.ActionClientGetterOption) (helmclient.ActionClientGetter, error) {
	caps := newCapabilities(cfg.CapabilitiesTTL)
	replacePostRenderer()
	library, err := helmclient.NewActionClientGetter(sharedCaps{configs: configs, caps: caps}, slices.Concat(opts, skipOpenAPIValidation, skipSchemaValidation)...)
	if err != nil {
		return nil, err
	}
	return helmclient.ActionClientGetterFunc(func(ctx context.Context, obj client.Object) (helmclient.ActionInterface, error) {
		// One action configuration serves both the library's client and the wrapper.
		made := &madeConfig{}
		ac, err := library.ActionClientFor(context.WithValue(ctx, madeConfigKey{}, made), obj)
		if err != nil {
			return nil, err
		}
		if made.conf == nil {
			return nil, fmt.Errorf("the library made a client for %s without asking for its configuration", client.ObjectKeyFromObject(obj))
		}
		return &actionClient{ActionInterface: ac, conf: made.conf, caps: caps, generation: made.generation,
			client: cfg.Live, cached: cfg.Cached, owner: obj, recorder: cfg.Recorder, mayRecover: cfg.MayRecoverPending,
			beforeUpgrade: cfg.BeforeUpgrade, ctx: ctx}, nil
	}), nil
}

// sharedCaps gives each action configuration the cluster's capabilities of caps, and the
// reachability check answered from them, and leaves the configuration in the caller's
// madeConfig (in the context the library passes on), for the wrapper to use the same one.
type sharedCaps struct {
	configs helmclient.ActionConfigGetter
	caps    *capabilities
}

type madeConfigKey struct{}

type madeConfig struct {
	conf       *action.Configuration
	generation int // of the capabilities conf holds
}

func (s sharedCaps) ActionConfigFor(ctx context.Context, obj client.Object) (*action.Configuration, error) {
	conf, err := s.configs.ActionConfigFor(ctx, obj)
	if err != nil {
		return nil, err
	}
	capsNow, generation, err := s.caps.get(conf.RESTClientGetter)
	if err != nil {
		return nil, err
	}
	conf.Capabilities = capsNow
	if kc, ok := conf.KubeClient.(*kube.Client); ok {
		conf.KubeClient = kubeClient{Client: kc, caps: s.caps, built: &builtManifest{}}
	}
	if made, ok := ctx.Value(madeConfigKey{}).(*madeConfig); ok {
		made.conf, made.generation = conf, generation
	}
	return conf, nil
}

type actionClient struct {
	helmclient.ActionInterface
	conf *action.Configuration
	// caps are the capabilities the action renders with, of this generation.
	caps       *capabilities
	generation int
	client     client.Client
	cached     client.Client
	// current is the release Get last returned, which lastRelease serves to the reconcile's
	// next steps (a dry-run upgrade, an upgrade) without reading it again.
	current  *release.Release
	owner    client.Object // the CR of the release
	recorder events.EventRecorder
	// mayRecover: see Config.MayRecoverPending.
	mayRecover func(context.Context) error
	// beforeUpgrade: see Config.BeforeUpgrade.
	beforeUpgrade BeforeUpgrade
	// ctx is the reconcile's: the library's client interface passes none to Get.
	ctx context.Context
}

// reportRefused records a Warning Event on the CR that names a refused release record, when err
// is (or wraps) a RecordRefusedError, and returns err.
func (c *actionClient) reportRefused(err error, action string) error {
	var refused *RecordRefusedError
	if errors.As(err, &refused) {
		// The record is the Event's related object: Events of one reason on one CR are otherwise
		// merged into one series, which shows only the first record's.
		record := &corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: refused.Namespace, Name: refused.Name}
		c.recorder.Eventf(c.owner, record, corev1.EventTypeWarning, ReasonRecordRefused, action, "%s", refused.Error())
	}
	return err
}
