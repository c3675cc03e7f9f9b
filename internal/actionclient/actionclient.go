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

// Package actionclient wraps helm-operator-plugins' Helm action client:
//   - reconciling an unchanged release sends no write to the API server;
//   - a release left pending by an operator that stopped in the middle of an install, upgrade or
//     rollback is recovered, instead of failing every reconcile with "another operation
//     (install/upgrade/rollback) is in progress".
//
// The library reconciles a release by patching each of its objects with a strategic merge patch
// computed from the rendered manifest. For fields whose patch strategy is "replace" (a
// PodDisruptionBudget's selector, for one) that patch is never empty, so every periodic
// reconcile sent a PATCH that changed nothing. The wrapper first checks, on the objects it reads
// anyway, whether applying the rendered objects would change any of them; only then does it let
// the library reconcile. The fix belongs upstream in createPatch; until then this wraps it
// without forking.
package actionclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	jsonpatch "github.com/evanphx/json-patch/v5"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NewGetter returns an ActionClientGetter whose clients skip reconciles that would only send no-op
// patches and recover pending releases, recording an Event on the CR when they do. opts are the
// library's own client options.
func NewGetter(configs helmclient.ActionConfigGetter, recorder record.EventRecorder, opts ...helmclient.ActionClientGetterOption) helmclient.ActionClientGetter {
	return helmclient.ActionClientGetterFunc(func(ctx context.Context, obj client.Object) (helmclient.ActionInterface, error) {
		conf, err := configs.ActionConfigFor(ctx, obj)
		if err != nil {
			return nil, err
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
		return &actionClient{ActionInterface: ac, conf: conf, owner: obj, recorder: recorder}, nil
	})
}

type fixedConfig struct{ conf *action.Configuration }

func (f fixedConfig) ActionConfigFor(context.Context, client.Object) (*action.Configuration, error) {
	return f.conf, nil
}

type actionClient struct {
	helmclient.ActionInterface
	conf     *action.Configuration
	owner    client.Object // the CR of the release
	recorder record.EventRecorder
}

// Get returns a release; one left pending is recovered first. Only the leader reconciles (leader
// for life) and a CR is never reconciled twice at once, so a pending release seen at the start of a
// reconcile belongs to an operation that was cut off (the operator's pod was killed), not to one in
// progress.
func (c *actionClient) Get(name string, opts ...helmclient.GetOption) (*release.Release, error) {
	rel, err := c.ActionInterface.Get(name, opts...)
	if err != nil || rel.Info == nil || !rel.Info.Status.IsPending() {
		return rel, err
	}
	return c.recoverPending(rel)
}

func (c *actionClient) recoverPending(rel *release.Release) (*release.Release, error) {
	was := rel.Info.Status
	if was == release.StatusPendingInstall && rel.Version == 1 {
		// Nothing was ever deployed: forget the record; the next install adopts what the cut-off
		// install created (its objects carry the release's annotations).
		if _, err := c.conf.Releases.Delete(rel.Name, rel.Version); err != nil {
			return nil, fmt.Errorf("remove release %s left %s: %w", rel.Name, was, err)
		}
		c.recorder.Eventf(c.owner, corev1.EventTypeWarning, "ReleaseRecovered",
			"Release %s was left %s by an interrupted install; its record is removed and it is installed again", rel.Name, was)
		return nil, driver.ErrReleaseNotFound
	}
	rel.SetStatus(release.StatusFailed, fmt.Sprintf("left %s by an interrupted operation; marked failed by the operator", was))
	if err := c.conf.Releases.Update(rel); err != nil {
		return nil, fmt.Errorf("mark release %s revision %d (left %s) failed: %w", rel.Name, rel.Version, was, err)
	}
	c.recorder.Eventf(c.owner, corev1.EventTypeWarning, "ReleaseRecovered",
		"Release %s revision %d was left %s by an interrupted operation; it is marked failed and upgraded again", rel.Name, rel.Version, was)
	return rel, nil
}

// Reconcile repairs drift of the release's objects, and does nothing when there is none.
func (c *actionClient) Reconcile(rel *release.Release) error {
	inSync, err := InSync(c.conf.KubeClient, rel.Manifest)
	if err != nil {
		return err
	}
	if inSync {
		return nil
	}
	return c.ActionInterface.Reconcile(rel)
}

var errDrift = errors.New("drift")

// InSync reports whether every object of a manifest exists and already holds every field the
// manifest sets for it.
func InSync(kc kube.Interface, manifest string) (bool, error) {
	infos, err := kc.Build(bytes.NewBufferString(manifest), false)
	if err != nil {
		return false, fmt.Errorf("build release objects: %w", err)
	}
	err = infos.Visit(func(expected *resource.Info, err error) error {
		if err != nil {
			return err
		}
		existing, err := resource.NewHelper(expected.Client, expected.Mapping).Get(expected.Namespace, expected.Name)
		if err != nil {
			return errDrift // missing, or unreadable: the library's reconcile handles and reports it
		}
		same, err := holds(existing, expected)
		if err != nil {
			return err
		}
		if !same {
			return errDrift
		}
		return nil
	})
	if errors.Is(err, errDrift) {
		return false, nil
	}
	return err == nil, err
}

// holds reports whether applying expected to existing, with the patch semantics the library
// uses for its kind, leaves existing unchanged.
func holds(existing runtime.Object, expected *resource.Info) (bool, error) {
	existingJSON, err := json.Marshal(existing)
	if err != nil {
		return false, err
	}
	expectedJSON, err := json.Marshal(expected.Object)
	if err != nil {
		return false, err
	}
	var merged []byte
	versioned := kube.AsVersioned(expected)
	_, unstructured := versioned.(runtime.Unstructured)
	_, crd := versioned.(*apiextensionsv1.CustomResourceDefinition)
	if unstructured || crd {
		merged, err = jsonpatch.MergePatch(existingJSON, expectedJSON)
	} else {
		merged, err = strategicpatch.StrategicMergePatch(existingJSON, expectedJSON, versioned)
	}
	if err != nil {
		return false, fmt.Errorf("merge %s %s: %w", expected.Mapping.GroupVersionKind.Kind, expected.Name, err)
	}
	var before, after any
	if err := json.Unmarshal(existingJSON, &before); err != nil {
		return false, err
	}
	if err := json.Unmarshal(merged, &after); err != nil {
		return false, err
	}
	return reflect.DeepEqual(before, after), nil
}
