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
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/go-multierror"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
)

// failingInstall records a failed release, as Helm does when creating an object fails.
type failingInstall struct {
	helmclient.ActionInterface
	conf *action.Configuration
	err  error
}

func (f failingInstall) Install(name, namespace string, _ *chart.Chart, _ map[string]any, _ ...helmclient.InstallOption) (*release.Release, error) {
	rel := &release.Release{Name: name, Namespace: namespace, Version: 1, Manifest: "kind: Service\nmetadata: {name: theirs}\n",
		Info: &release.Info{Status: release.StatusFailed}}
	if err := f.conf.Releases.Create(rel); err != nil {
		return nil, err
	}
	return rel, f.err
}

// An install whose create met an object that exists (made by someone else after Helm found it
// absent) leaves no record that names that object: an uninstall of the record would delete it.
// Other failures keep their record, for inspection.
func TestInstallDropsTheRecordOfAnObjectMadeMeanwhile(t *testing.T) {
	exists := apierrors.NewAlreadyExists(schema.GroupResource{Resource: "services"}, "theirs")
	for _, tc := range []struct {
		name       string
		err        error
		wantRecord bool
	}{
		// Helm's kube client returns the create errors of all objects as a multierror.
		{"an object made meanwhile", multierror.Append(nil, exists), false},
		{"another failure", errors.New("admission webhook denied the request"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conf := &action.Configuration{Releases: storage.Init(driver.NewMemory())}
			c := &actionClient{ActionInterface: failingInstall{conf: conf, err: tc.err}, conf: conf}
			if _, err := c.Install("m", "ns", nil, nil); err == nil {
				t.Fatal("the install must fail")
			}
			_, err := conf.Releases.Get("m", 1)
			if got := err == nil; got != tc.wantRecord {
				t.Errorf("record kept: %v, want %v (%v)", got, tc.wantRecord, err)
			}
		})
	}
}

// succeedingInstall reports an install done, as Helm does when only its record's write failed.
type succeedingInstall struct{ helmclient.ActionInterface }

func (succeedingInstall) Install(name, namespace string, _ *chart.Chart, _ map[string]any, _ ...helmclient.InstallOption) (*release.Release, error) {
	return &release.Release{Name: name, Namespace: namespace, Version: 1, Info: &release.Info{Status: release.StatusDeployed}}, nil
}

// An install whose record could not be written (Helm only logs that) is not reported done: the
// next attempt adopts what it made, or finds whose record took the name.
func TestInstallSaysWhenItsRecordWasNotWritten(t *testing.T) {
	conf := &action.Configuration{Releases: storage.Init(&storeDriver{unrecorded: errors.New("etcdserver: request timed out"),
		anyones: fake.NewClientset().CoreV1().Secrets("ns")})}
	c := &actionClient{ActionInterface: succeedingInstall{}, conf: conf}
	_, err := c.Install("m", "ns", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "its record could not be written: etcdserver: request timed out") {
		t.Fatalf("Install: %v", err)
	}
}
