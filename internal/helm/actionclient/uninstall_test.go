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
	"strings"
	"testing"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	oplabels "github.com/example/memcached-operator/internal/labels"
)

// laggingCache is the manager's cache before it shows a record: it lists none.
type laggingCache struct{ client.Reader }

func (laggingCache) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

// notFoundUninstall is the library's uninstall of a release its reads (the store's) do not show.
type notFoundUninstall struct{ helmclient.ActionInterface }

func (notFoundUninstall) Uninstall(string, ...helmclient.UninstallOption) (*release.UninstallReleaseResponse, error) {
	return nil, driver.ErrReleaseNotFound
}

// When the uninstall finds no release, the library removes the CR's finalizer, and nothing
// uninstalls the release after that. So "not found" must hold on the API server, not only in the
// cache: a record of the release that the cache does not show yet (one of an earlier version,
// sealed at start-up a moment before the first reconcile) holds the uninstall until it does. On
// the API server, a record that is not this CR's own (sealed for another CR of that name, or
// forged) is not its release: the live look does not hold the uninstall for it.
func TestUninstallFindsWhatTheCacheDoesNotShowYet(t *testing.T) {
	ours := sealedRecord(t, unitSeal, unitOwner)
	ours.Name, ours.Namespace, ours.Labels["name"] = "sh.helm.release.v1.m.v1", "ns", "m"
	unitSeal.sign(ours, unitOwner)
	another := ours.DeepCopy()
	unitSeal.sign(another, "an-earlier-cr-of-that-name")
	forged := ours.DeepCopy()
	forged.Data["release"] = append([]byte(nil), forged.Data["release"]...)
	forged.Data["release"][0] ^= 1

	for _, tc := range []struct {
		name      string
		live      []runtime.Object
		wantFound bool
	}{
		{"no record", nil, false},
		{"the CR's own record, which the cache does not show yet", []runtime.Object{ours}, true},
		{"a record sealed for another CR of that name", []runtime.Object{another}, false},
		{"a forged record", []runtime.Object{forged}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset(tc.live...)
			d := &storeDriver{Secrets: driver.NewSecrets(cs.CoreV1().Secrets("ns")), store: NewReleaseStore(laggingCache{}, nil, unitSeal),
				namespace: "ns", owner: unitOwner, anyones: cs.CoreV1().Secrets("ns")}
			cr := &unstructured.Unstructured{}
			cr.SetNamespace("ns")
			cr.SetName("m")
			cr.SetUID(unitOwner)
			c := &actionClient{ActionInterface: notFoundUninstall{}, conf: &action.Configuration{Releases: storage.Init(d)}, owner: cr, ctx: context.Background()}

			_, err := c.Uninstall("m")
			if tc.wantFound {
				if err == nil || errors.Is(err, driver.ErrReleaseNotFound) || !strings.Contains(err.Error(), ours.Name) {
					t.Fatalf("Uninstall: %v, want an error naming record %s (the finalizer stays, the uninstall is tried again)", err, ours.Name)
				}
				return
			}
			if !errors.Is(err, driver.ErrReleaseNotFound) {
				t.Fatalf("Uninstall: %v, want %v (the finalizer goes)", err, driver.ErrReleaseNotFound)
			}
		})
	}
	// The check reads only this release's records of this operator, one LIST.
	cs := fake.NewClientset()
	d := &storeDriver{store: NewReleaseStore(laggingCache{}, nil, unitSeal), namespace: "ns", owner: unitOwner, anyones: cs.CoreV1().Secrets("ns")}
	if err := d.unseenRecord(context.Background(), "m"); err != nil {
		t.Fatalf("unseenRecord: %v", err)
	}
	if n := len(cs.Actions()); n != 1 {
		t.Fatalf("%d requests, want one LIST", n)
	}
	list, ok := cs.Actions()[0].(k8stesting.ListAction)
	if want := "cache.my.domain/operator=" + oplabels.Operator + ",name=m,owner=helm"; !ok || list.GetListRestrictions().Labels.String() != want {
		t.Errorf("request %v, want a LIST of %s", cs.Actions()[0], want)
	}
}
