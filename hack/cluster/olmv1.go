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

package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// OLM v1 in the cluster: operator-controller and catalogd from operator-controller's own
// release manifest (manifests/standard.yaml of its Go module), with images assembled from the
// binaries built from the module proxy. The manifest gets its TLS from cert-manager; here the
// cluster's CA signs the certificates instead, written into the Secrets the Deployments mount.
// catalogd and operator-controller pull images in their own pods, where localhost:5000 is not the
// node's registry: a registries.conf sends them to the node's address.
type olmv1Settings struct {
	binDir   string // operator-controller, catalogd
	manifest string // <operator-controller module>/manifests/standard.yaml
	version  string
}

const olmv1Namespace = "olmv1-system"

func olmv1ImageRef(name, version string) string {
	return RegistryHost + "/olmv1/" + name + ":" + version
}
func (c *Cluster) olmv1Manifests() string    { return c.path("olmv1", "olmv1.yaml") }
func (c *Cluster) olmv1CRDManifests() string { return c.path("olmv1", "crds.yaml") }

func (c *Cluster) olmv1Install(s olmv1Settings) error {
	for name, inImage := range map[string]string{"catalogd": "/catalogd", "operator-controller": "/operator-controller"} {
		img, err := binaryImage(filepath.Join(s.binDir, name), inImage, "65532", "")
		if err != nil {
			return fmt.Errorf("%w (make olmv1-binaries)", err)
		}
		if err := c.push(img, olmv1ImageRef(name, s.version)); err != nil {
			return err
		}
	}
	p, err := c.ensurePKI()
	if err != nil {
		return err
	}
	caPEM, err := os.ReadFile(p.CA.CertFile)
	if err != nil {
		return err
	}
	if err := mkdirs(c.path("olmv1")); err != nil {
		return err
	}
	raw, err := os.ReadFile(s.manifest)
	if err != nil {
		return err
	}
	objs, err := c.olmv1Objects(string(raw), s.version, caPEM)
	if err != nil {
		return err
	}
	for name, dnsNames := range map[string][]string{
		// The Secret names the Deployments of the manifest mount.
		"catalogd-service-cert-git-version": {"localhost", "catalogd-service." + olmv1Namespace + ".svc", "catalogd-service." + olmv1Namespace + ".svc." + clusterDomain},
		"olmv1-cert":                        {"operator-controller-service." + olmv1Namespace + ".svc", "operator-controller-service." + olmv1Namespace + ".svc." + clusterDomain},
	} {
		kp, err := ensureCert(c.path("pki"), p.CA, certSpec{name: "olmv1-" + name, cn: dnsNames[len(dnsNames)-1], server: true, dnsNames: dnsNames})
		if err != nil {
			return err
		}
		crt, err := os.ReadFile(kp.CertFile)
		if err != nil {
			return err
		}
		key, err := os.ReadFile(kp.KeyFile)
		if err != nil {
			return err
		}
		objs = append(objs, map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
			"metadata": map[string]any{"name": name, "namespace": olmv1Namespace},
			"data":     map[string]any{"tls.crt": b64(crt), "tls.key": b64(key), "ca.crt": b64(caPEM)}})
	}
	objs = append(objs, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "olmv1-registries", "namespace": olmv1Namespace},
		"data":     map[string]any{"registries.conf": registriesConf(fmt.Sprintf("%s:%d", c.NodeIP, RegistryPort))}})

	var crds, rest bytes.Buffer
	for _, o := range objs {
		out, err := yaml.Marshal(o)
		if err != nil {
			return err
		}
		target := &rest
		if o["kind"] == "CustomResourceDefinition" {
			target = &crds
		}
		target.WriteString("---\n")
		target.Write(out)
	}
	if err := os.WriteFile(c.olmv1CRDManifests(), crds.Bytes(), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(c.olmv1Manifests(), rest.Bytes(), 0o644); err != nil {
		return err
	}
	if _, err := c.kubectl("apply", "--server-side", "--force-conflicts", "-f", c.olmv1CRDManifests()); err != nil {
		return err
	}
	if _, err := c.kubectl("wait", "--for=condition=Established", "--timeout=60s", "-f", c.olmv1CRDManifests()); err != nil {
		return err
	}
	if _, err := c.kubectl("apply", "--server-side", "--force-conflicts", "-f", c.olmv1Manifests()); err != nil {
		return err
	}
	for _, d := range []string{"catalogd-controller-manager", "operator-controller-controller-manager"} {
		if _, err := c.kubectl("-n", olmv1Namespace, "rollout", "status", "deployment/"+d, "--timeout=180s"); err != nil {
			return err
		}
	}
	logf("OLM v1 %s is installed (namespace %s)", s.version, olmv1Namespace)
	return nil
}

// olmv1Objects are the objects of the release manifest, as this cluster runs them: no
// cert-manager objects, local images, the registries.conf mounted, the CA in the webhook.
func (c *Cluster) olmv1Objects(manifest, version string, caPEM []byte) ([]map[string]any, error) {
	var objs []map[string]any
	for _, doc := range strings.Split(manifest, "\n---") {
		var o map[string]any
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			return nil, err
		}
		if len(o) == 0 || strings.HasPrefix(fmt.Sprint(o["apiVersion"]), "cert-manager.io/") {
			continue
		}
		switch o["kind"] {
		case "Deployment":
			if err := olmv1Deployment(o, version); err != nil {
				return nil, err
			}
		case "MutatingWebhookConfiguration":
			md := o["metadata"].(map[string]any)
			if a, ok := md["annotations"].(map[string]any); ok {
				delete(a, "cert-manager.io/inject-ca-from-secret")
			}
			for _, w := range o["webhooks"].([]any) {
				w.(map[string]any)["clientConfig"].(map[string]any)["caBundle"] = b64(caPEM)
			}
		}
		objs = append(objs, o)
	}
	return objs, nil
}

// olmv1Deployment points a Deployment of the manifest at the local image of its binary and mounts
// the registries.conf.
func olmv1Deployment(d map[string]any, version string) error {
	pod := dig(d, "spec", "template", "spec").(map[string]any)
	containers := pod["containers"].([]any)
	for _, ct := range containers {
		ct := ct.(map[string]any)
		image := fmt.Sprint(ct["image"])
		switch {
		case strings.Contains(image, "/catalogd:"):
			ct["image"] = olmv1ImageRef("catalogd", version)
		case strings.Contains(image, "/operator-controller:"):
			ct["image"] = olmv1ImageRef("operator-controller", version)
		default:
			return fmt.Errorf("unknown image %s in the OLM v1 manifest", image)
		}
		mounts, _ := ct["volumeMounts"].([]any)
		ct["volumeMounts"] = append(mounts, map[string]any{"name": "registries", "mountPath": "/etc/containers", "readOnly": true})
	}
	vols, _ := pod["volumes"].([]any)
	pod["volumes"] = append(vols, map[string]any{"name": "registries", "configMap": map[string]any{"name": "olmv1-registries"}})
	return nil
}

func (c *Cluster) olmv1Uninstall() error {
	if ok, err := installed(c.olmv1Manifests(), "OLM v1"); !ok {
		return err
	}
	// Extensions first, so OLM v1 removes what it installed while it still runs.
	_, _ = c.kubectl("delete", "clusterextensions.olm.operatorframework.io", "--all", "--ignore-not-found", "--timeout=120s")
	_, _ = c.kubectl("delete", "clustercatalogs.olm.operatorframework.io", "--all", "--ignore-not-found", "--timeout=60s")
	if _, err := c.kubectl("delete", "--ignore-not-found", "--timeout=180s", "-f", c.olmv1Manifests()); err != nil {
		return err
	}
	if _, err := c.kubectl("delete", "--ignore-not-found", "--timeout=120s", "-f", c.olmv1CRDManifests()); err != nil {
		return err
	}
	logf("OLM v1 is uninstalled")
	return os.RemoveAll(c.path("olmv1"))
}

// registriesConf is containers/image's registries.conf for OLM v1's pods: localhost:5000 is the
// node's registry at the node's address, which also mirrors the public registries as it does
// for containerd (registryHostsTOML): quay.io/x/y is pulled from <node>:5000/x/y.
func registriesConf(nodeRegistry string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[[registry]]\nprefix = %q\nlocation = %q\n", RegistryHost, nodeRegistry)
	for _, r := range mirroredRegistries {
		fmt.Fprintf(&b, "\n[[registry]]\nprefix = %q\nlocation = %q\n[[registry.mirror]]\nlocation = %q\n", r, r, nodeRegistry)
	}
	return b.String()
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
