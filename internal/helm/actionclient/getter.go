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
	"slices"
	"time"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/release"
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

// NewGetter returns an ActionClientGetter whose clients add the behaviour this package describes,
// recording an Event on the CR for each case. opts are the library's own client options.
func NewGetter(configs helmclient.ActionConfigGetter, clients Clients, recorder events.EventRecorder, capabilitiesTTL time.Duration, opts ...helmclient.ActionClientGetterOption) helmclient.ActionClientGetter {
	caps := newCapabilities(capabilitiesTTL)
	opts = append(slices.Clip(opts), skipOpenAPIValidation...)
	return helmclient.ActionClientGetterFunc(func(ctx context.Context, obj client.Object) (helmclient.ActionInterface, error) {
		conf, err := configs.ActionConfigFor(ctx, obj)
		if err != nil {
			return nil, err
		}
		capsNow, generation, err := caps.get(conf.RESTClientGetter)
		if err != nil {
			return nil, err
		}
		conf.Capabilities = capsNow
		if kc, ok := conf.KubeClient.(*kube.Client); ok {
			conf.KubeClient = reachableClient{Client: kc, caps: caps}
		}
		// One action configuration serves both the library's client and the in-sync check.
		getter, err := helmclient.NewActionClientGetter(fixedConfig{conf}, opts...)
		if err != nil {
			return nil, err
		}
		ac, err := getter.ActionClientFor(ctx, obj)
		if err != nil {
			return nil, err
		}
		return &actionClient{ActionInterface: ac, conf: conf, caps: caps, generation: generation,
			client: clients.Live, cached: clients.Cached, owner: obj, recorder: recorder}, nil
	})
}

type fixedConfig struct{ conf *action.Configuration }

func (f fixedConfig) ActionConfigFor(context.Context, client.Object) (*action.Configuration, error) {
	return f.conf, nil
}

type actionClient struct {
	helmclient.ActionInterface
	conf *action.Configuration
	// caps are the capabilities the action renders with, of this generation.
	caps       *capabilities
	generation int
	client     client.Client
	cached     client.Client
	// current is the release Get last returned: the reconcile's next step (a dry-run upgrade)
	// compares against it.
	current  *release.Release
	owner    client.Object // the CR of the release
	recorder events.EventRecorder
}
