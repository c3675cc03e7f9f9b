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

package servers

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1 "github.com/example/memcached-operator/api/v1"
	"github.com/example/memcached-operator/controllers/internal/serverset"
	"github.com/example/memcached-operator/internal/labels"
)

// Operator 1.3.0 kept the record of a change of the servers on their StatefulSet, in annotations
// (ResizeHold, StartedEmpty), which a namespace editor can write. The first reconcile of a newer
// operator takes a change still in flight into status.rollout, then removes both annotations; a
// change done is in the conditions already.

// record13 is what 1.3.0's ResizeHold annotation holds that a change in flight goes on from.
type record13 struct {
	Release  int32       `json:"release"`
	Revision string      `json:"revision"`
	FromMB   int32       `json:"fromMB"`
	ToMB     int32       `json:"toMB"`
	Since    metav1.Time `json:"since"`
	Outcome  string      `json:"outcome"`
	Way      string      `json:"way"`
	Change   string      `json:"change"`
	Memory   bool        `json:"memory"`
	Restart  *struct {
		Server   string      `json:"server"`
		Items    int64       `json:"items"`
		Restarts int32       `json:"restarts"`
		At       metav1.Time `json:"at"`
	} `json:"restart"`
}

// adoptRecord takes the record of a change 1.3.0 left in flight on the StatefulSet into rs (the
// release it names must be one of the Memcached's sealed records), writes it, and removes 1.3.0's
// annotations; true when it wrote (the caller looks again).
func (r *Reconciler) adoptRecord(ctx context.Context, mc *cachev1.Memcached, servers *appsv1.StatefulSet) (bool, error) {
	v, held := servers.Annotations[labels.ResizeHold]
	_, empty := servers.Annotations[labels.StartedEmpty]
	if !held && !empty {
		return false, nil
	}
	rs := mc.Status.Rollout.DeepCopy()
	if rs == nil {
		rs = &cachev1.RolloutStatus{}
	}
	rec := &record13{}
	ran := (*corev1.PodTemplateSpec)(nil)
	if held && json.Unmarshal([]byte(v), rec) == nil && rec.Outcome == "" && serverset.PartitionOf(servers) > 0 && rs.Change == nil {
		var err error
		if ran, err = r.templateOf(ctx, mc, rec.Release); err != nil {
			return false, err
		}
	}
	// (A record that names no release of ours is only removed: the hold, with no change in
	// flight, is let go next.)
	if ran != nil {
		way := rec.Way
		if way == "" {
			way = cachev1.WayInPlace // 1.2.0's memory change
		}
		c := &cachev1.ServersChange{What: rec.Change, Way: way, Phase: cachev1.RolloutChanging, FromRelease: rec.Release, Revision: rec.Revision,
			Held: serverset.PartitionOf(servers), Since: rec.Since, UpgradeFrom: rec.Release, UpgradeTime: ptr.To(rec.Since)}
		if c.What == "" {
			c.What = "the servers' memory"
		}
		if rec.Memory || rec.Way == "" {
			c.Memory = &cachev1.MemoryChange{FromMB: rec.FromMB, ToMB: rec.ToMB}
		}
		rs.Change = c
		for i := range rs.Servers {
			e := &rs.Servers[i]
			e.Release = c.FromRelease
			if rec.Restart != nil && rec.Restart.Server == e.Name {
				e.Restarts, e.Restart = rec.Restart.Restarts, &cachev1.ServerRestart{Items: rec.Restart.Items, Time: rec.Restart.At}
			}
		}
		if err := r.writeRollout(ctx, mc, rs); err != nil {
			return false, err
		}
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{labels.ResizeHold: nil, labels.StartedEmpty: nil}}})
	if err != nil {
		return false, err
	}
	if err := r.Live.Patch(ctx, servers, client.RawPatch(types.MergePatchType, body)); err != nil {
		return false, client.IgnoreNotFound(fmt.Errorf("remove 1.3.0's records from StatefulSet %s: %w", servers.Name, err))
	}
	return true, nil
}
