package actionclient

import (
	"fmt"
	"io"
	"reflect"
	"testing"

	"helm.sh/helm/v3/pkg/kube"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// countingBuild is a kube.Interface whose Build makes one ConfigMap and counts its calls.
type countingBuild struct {
	kube.Interface
	builds int
}

func (k *countingBuild) Build(r io.Reader, _ bool) (kube.ResourceList, error) {
	k.builds++
	manifest, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: string(manifest), Namespace: "ns"}}
	return kube.ResourceList{{Name: cm.Name, Namespace: cm.Namespace, Object: cm,
		Mapping: &meta.RESTMapping{GroupVersionKind: corev1.SchemeGroupVersion.WithKind("ConfigMap")}}}, nil
}

// Every release's manifest stays parsed however many releases there are (a pool of 4096
// manifests was parsed again on nearly every reconcile at 10000 releases), a new manifest of a
// release replaces its old one, and an uninstall forgets it.
func TestManifestsStayParsedPerRelease(t *testing.T) {
	kc := &countingBuild{}
	const releases = 10000
	key := func(i int) types.NamespacedName {
		return types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("r%d", i)}
	}
	t.Cleanup(func() {
		for i := range releases {
			forgetManifest(key(i))
		}
	})
	for round := range 2 {
		for i := range releases {
			if _, err := parsed(kc, key(i), fmt.Sprintf("manifest-%d", i)); err != nil {
				t.Fatal(err)
			}
		}
		if kc.builds != releases {
			t.Fatalf("after round %d: %d parses of %d releases' manifests, want each parsed once", round+1, kc.builds, releases)
		}
	}

	objs, err := parsed(kc, key(0), "manifest-0-upgraded")
	if err != nil {
		t.Fatal(err)
	}
	if kc.builds != releases+1 || objs[0].key.Name != "manifest-0-upgraded" {
		t.Fatalf("an upgraded manifest was not parsed: %d parses, objects %v", kc.builds, objs)
	}

	forgetManifest(key(1))
	manifests.Lock()
	_, kept := manifests.byRelease[key(1)]
	manifests.Unlock()
	if kept {
		t.Fatal("an uninstalled release's manifest is still held")
	}
}

// The patch type of a typed kind is one zero object shared by all releases' memos, not one per
// object and release (35 MB of the heap at 10000 releases); it stays a zero object of that kind.
func TestPatchTypesShared(t *testing.T) {
	kc := &countingBuild{}
	a, b := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}
	t.Cleanup(func() { forgetManifest(a); forgetManifest(b) })
	objsA, err := parsed(kc, a, "cm-a")
	if err != nil {
		t.Fatal(err)
	}
	objsB, err := parsed(kc, b, "cm-b")
	if err != nil {
		t.Fatal(err)
	}
	pa, ok := objsA[0].patchType.(*corev1.ConfigMap)
	if !ok {
		t.Fatalf("a ConfigMap's patch type is %T, want *v1.ConfigMap", objsA[0].patchType)
	}
	if pb, _ := objsB[0].patchType.(*corev1.ConfigMap); pa != pb {
		t.Fatal("two releases' ConfigMaps hold two patch-type objects, want one shared")
	}
	if !reflect.DeepEqual(pa, &corev1.ConfigMap{}) {
		t.Fatalf("the shared patch type is not a zero ConfigMap: %+v", pa)
	}
}
