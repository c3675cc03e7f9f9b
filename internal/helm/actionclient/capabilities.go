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
	"fmt"
	"slices"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/kube"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
)

// DefaultCapabilitiesTTL is how long the cluster's capabilities (its Kubernetes version and API
// versions, which charts test with .Capabilities) are reused before they are read again, unless
// NewGetter is given another: a chart sees an API installed in the cluster at most this late.
const DefaultCapabilitiesTTL = 30 * time.Second

// capabilities serves the cluster's capabilities to every Helm action. Helm reads them anew for
// each install, upgrade and render, dropping the discovery cache first (three discovery requests
// and their parsing), and asks the server for its version before each action to check that it is
// reachable (one more).
type capabilities struct {
	mu      sync.Mutex
	ttl     time.Duration
	current *chartutil.Capabilities
	fetched time.Time
	// generation counts the changes of current; renders made under an older one are stale.
	generation int
	// rendered is, per release, the generation under which its chart was last rendered.
	rendered map[types.NamespacedName]int
}

func newCapabilities(ttl time.Duration) *capabilities {
	return &capabilities{ttl: ttl, rendered: map[types.NamespacedName]int{}}
}

// get returns the capabilities, read again through getter when older than their TTL, and
// their generation. Each caller gets its own copy: Helm adds an action's extra API versions to
// them in place.
func (c *capabilities) get(getter action.RESTClientGetter) (*chartutil.Capabilities, int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.current == nil || time.Since(c.fetched) >= c.ttl {
		caps, err := readCapabilities(getter)
		if err != nil {
			return nil, 0, err
		}
		if c.current == nil || !sameCapabilities(c.current, caps) {
			c.generation++
		}
		c.current, c.fetched = caps, time.Now()
	}
	caps := *c.current
	caps.APIVersions = slices.Clone(c.current.APIVersions)
	return &caps, c.generation, nil
}

// readCapabilities reads what Helm's own Configuration.getCapabilities reads.
func readCapabilities(getter action.RESTClientGetter) (*chartutil.Capabilities, error) {
	dc, err := getter.ToDiscoveryClient()
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	dc.Invalidate() // the API versions as they are now
	version, err := dc.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("kubernetes cluster unreachable: %w", err)
	}
	apis, err := action.GetVersionSet(dc)
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) { // as Helm: an orphaned APIService is skipped
		return nil, fmt.Errorf("read the API versions of the cluster: %w", err)
	}
	return &chartutil.Capabilities{
		APIVersions: apis,
		KubeVersion: chartutil.KubeVersion{Version: version.GitVersion, Major: version.Major, Minor: version.Minor},
		HelmVersion: chartutil.DefaultCapabilities.HelmVersion,
	}, nil
}

func sameCapabilities(a, b *chartutil.Capabilities) bool {
	if a.KubeVersion != b.KubeVersion || len(a.APIVersions) != len(b.APIVersions) {
		return false
	}
	x, y := slices.Clone(a.APIVersions), slices.Clone(b.APIVersions)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// reachable reports whether the API server answered the last read of the capabilities, within
// their TTL.
func (c *capabilities) reachable() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.current != nil && time.Since(c.fetched) < c.ttl
}

// renderedUnder records that a release's chart was rendered under a generation of the
// capabilities.
func (c *capabilities) renderedUnder(release types.NamespacedName, generation int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rendered[release] = generation
}

// forget drops what is recorded of a release that is gone.
func (c *capabilities) forget(release types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.rendered, release)
}

// renderedAt is the generation under which a release's chart was last rendered (0: never).
func (c *capabilities) renderedAt(release types.NamespacedName) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rendered[release]
}

// kubeClient is Helm's Kubernetes client whose reachability check (a GET /version before
// every action) is answered by the last read of the capabilities, and which creates an install's
// objects in two rounds (create.go), and which does not parse again the manifest the owner
// renderer parsed (postrender.go). It embeds the concrete client,
// so Helm still finds the optional interfaces it checks for (waiting, deletion propagation, ...).
type kubeClient struct {
	*kube.Client
	caps  *capabilities
	built *builtManifest // the manifest the owner renderer parsed (postrender.go)
}

func (c kubeClient) IsReachable() error {
	if c.caps.reachable() {
		return nil
	}
	return c.Client.IsReachable()
}
