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

// Package actionclient wraps helm-operator-plugins' Helm action client so that reconciling an
// unchanged release sends no write to the API server.
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
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/cli-runtime/pkg/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NewGetter returns an ActionClientGetter whose clients skip reconciles that would
// only send no-op patches. opts are the library's own client options.
func NewGetter(configs helmclient.ActionConfigGetter, opts ...helmclient.ActionClientGetterOption) helmclient.ActionClientGetter {
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
		return &actionClient{ActionInterface: ac, kube: conf.KubeClient}, nil
	})
}

type fixedConfig struct{ conf *action.Configuration }

func (f fixedConfig) ActionConfigFor(context.Context, client.Object) (*action.Configuration, error) {
	return f.conf, nil
}

type actionClient struct {
	helmclient.ActionInterface
	kube kube.Interface
}

// Reconcile repairs drift of the release's objects, and does nothing when there is none.
func (c *actionClient) Reconcile(rel *release.Release) error {
	inSync, err := InSync(c.kube, rel.Manifest)
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
