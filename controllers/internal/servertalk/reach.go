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

package servertalk

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/memcached-operator/controllers/internal/serverset"
	"github.com/example/memcached-operator/internal/memcache"
	"github.com/example/memcached-operator/internal/rollout"
)

// ServesTLS reports whether a memcached pod was started to serve TLS (its arguments hold -Z): while
// TLS is turned on or off, the servers of a rollout's two sides speak differently.
func ServesTLS(p *corev1.Pod) bool {
	c := rollout.MemcachedContainer(&p.Spec)
	return c != nil && slices.Contains(c.Args, "-Z")
}

// Reach is how the operator reaches the memcached servers: memcached's port in each pod and,
// for a server that serves TLS, the client side of it, with the client certificate the operator
// made for its cache (Secret <servers>-client-tls), which the cache's CA signed.
type Reach struct {
	// Port is memcached's port in each pod (the chart's; 0: 11211).
	Port int32
	// Secrets reads the TLS Secrets the operator made (servertls.SecretsCache); nil: no server serves
	// TLS (a test's operator without them).
	Secrets client.Reader

	mu sync.Mutex
	// configs are the parsed client Secrets, by Secret and resourceVersion.
	configs map[types.NamespacedName]clientConfig
}

type clientConfig struct {
	resourceVersion string
	config          *tls.Config
}

// Server is pod p's memcached as the operator talks to it.
func (r *Reach) Server(ctx context.Context, p *corev1.Pod) (memcache.Server, error) {
	port := r.Port
	if port == 0 {
		port = serverset.Port
	}
	srv := memcache.Server{Addr: net.JoinHostPort(p.Status.PodIP, strconv.Itoa(int(port)))}
	if !ServesTLS(p) {
		return srv, nil
	}
	servers := controllingStatefulSet(p)
	if servers == "" || p.Spec.Hostname == "" || p.Spec.Subdomain == "" {
		return srv, errors.New("it serves TLS but is not a server of a cache's StatefulSet")
	}
	base, err := r.clientConfig(ctx, types.NamespacedName{Namespace: p.Namespace, Name: serverset.ClientTLSSecretName(servers)})
	if err != nil {
		return srv, err
	}
	srv.TLS = base.Clone()
	// The server's stable name, which its certificate holds (the address is an IP).
	srv.TLS.ServerName = p.Spec.Hostname + "." + serverset.Domain(p.Spec.Subdomain, p.Namespace)
	return srv, nil
}

// clientConfig is the client side of the cache's TLS, from its client Secret: the CA the
// servers' certificate must be signed by, and the certificate the operator presents.
func (r *Reach) clientConfig(ctx context.Context, key types.NamespacedName) (*tls.Config, error) {
	if r.Secrets == nil {
		return nil, errors.New("the operator reads no TLS Secrets")
	}
	secret := &corev1.Secret{}
	if err := r.Secrets.Get(ctx, key, secret); err != nil {
		return nil, fmt.Errorf("the client certificate (Secret %s): %w", key.Name, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.configs[key]; ok && c.resourceVersion == secret.ResourceVersion {
		return c.config, nil
	}
	pair, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, fmt.Errorf("the client certificate (Secret %s): %w", key.Name, err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(secret.Data[serverset.CACertKey]) {
		return nil, fmt.Errorf("the client certificate (Secret %s) has no CA certificate (%s)", key.Name, serverset.CACertKey)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: roots, MinVersion: tls.VersionTLS12}
	if r.configs == nil {
		r.configs = map[types.NamespacedName]clientConfig{}
	}
	r.configs[key] = clientConfig{resourceVersion: secret.ResourceVersion, config: cfg}
	return cfg, nil
}

// Forget drops what the reach keeps of a cache's client Secret.
func (r *Reach) Forget(namespace, servers string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.configs, types.NamespacedName{Namespace: namespace, Name: serverset.ClientTLSSecretName(servers)})
}

// controllingStatefulSet names the StatefulSet that controls pod p ("" when none does).
func controllingStatefulSet(p *corev1.Pod) string {
	if owner := metav1.GetControllerOf(p); owner != nil && owner.Kind == "StatefulSet" && owner.APIVersion == appsv1.SchemeGroupVersion.String() {
		return owner.Name
	}
	return ""
}

// Pinning is the reach with client Secret s as given rather than as Secrets shows it: a reconcile
// that has just written s speaks with what it wrote.
func (r *Reach) Pinning(s *corev1.Secret) *Reach {
	return &Reach{Port: r.Port, Secrets: pinnedSecret{Reader: r.Secrets, secret: s}}
}

// pinnedSecret reads one Secret as given and the others through Reader.
type pinnedSecret struct {
	client.Reader
	secret *corev1.Secret
}

func (p pinnedSecret) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if out, ok := obj.(*corev1.Secret); ok && p.secret != nil && key == client.ObjectKeyFromObject(p.secret) {
		p.secret.DeepCopyInto(out)
		return nil
	}
	if p.Reader == nil {
		return errors.New("the operator reads no TLS Secrets")
	}
	return p.Reader.Get(ctx, key, obj, opts...)
}
