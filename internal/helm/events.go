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

package helm

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"
)

// The operator records Events with the events.k8s.io API (controller-runtime's GetEventRecorder).
// helm-operator-plugins still takes the old core API's recorder (reconciler.WithEventRecorder);
// libraryEvents gives it the new one in that shape, with the Event's reason as its action. The
// upstream home of this: an option of the library that takes an events.EventRecorder.
type libraryEvents struct{ events.EventRecorder }

var _ record.EventRecorder = libraryEvents{}

func (l libraryEvents) Event(obj runtime.Object, eventtype, reason, message string) {
	l.EventRecorder.Eventf(obj, nil, eventtype, reason, reason, "%s", message)
}

func (l libraryEvents) Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	l.EventRecorder.Eventf(obj, nil, eventtype, reason, reason, "%s", fmt.Sprintf(messageFmt, args...))
}

func (l libraryEvents) AnnotatedEventf(obj runtime.Object, _ map[string]string, eventtype, reason, messageFmt string, args ...any) {
	l.Eventf(obj, eventtype, reason, messageFmt, args...)
}
