// Package k8s holds Strata's Kubernetes manifests (base/, overlays/,
// components/: kustomize layouts, applied with `kubectl apply -k`) and
// renders them for tests: Render reads a kustomization as kubectl would for
// the features these manifests use (resources, components, strategic-merge
// patches, images, labels), decoding every document strictly into its
// Kubernetes API type, so an unknown or misspelt field fails the test
// instead of being dropped by the API server. The tests next to it check
// the wiring; cmd/pd, cmd/storenode and cmd/sqlnode parse the rendered
// command lines and configuration files with their real flag parsers.
package k8s

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/yaml"
)

// Object is one rendered manifest document.
type Object struct {
	APIVersion, Kind, Name string
	// Obj is a pointer to the document's API type: *corev1.ConfigMap,
	// *corev1.Service, *appsv1.StatefulSet, *appsv1.Deployment,
	// *policyv1.PodDisruptionBudget or *ServiceMonitor.
	Obj  any
	File string // where it was read
	raw  []byte // the document as JSON (a patch is applied as written)
}

// ServiceMonitor is the part of the Prometheus Operator's
// monitoring.coreos.com/v1 ServiceMonitor these manifests use (decoded
// strictly too: a field outside it is an error here).
type ServiceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port     string `json:"port"`
			Path     string `json:"path,omitempty"`
			Interval string `json:"interval,omitempty"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// Kustomization is the part of kustomize's Kustomization and Component
// these manifests use.
type Kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources,omitempty"`
	Components []string `json:"components,omitempty"`
	Patches    []struct {
		Path string `json:"path"`
	} `json:"patches,omitempty"`
	Images []struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag,omitempty"`
	} `json:"images,omitempty"`
	Labels []struct {
		Pairs            map[string]string `json:"pairs"`
		IncludeSelectors bool              `json:"includeSelectors"`
	} `json:"labels,omitempty"`
}

// newObject returns a pointer to the API type of apiVersion/kind.
func newObject(apiVersion, kind string) (any, error) {
	switch apiVersion + "/" + kind {
	case "v1/ConfigMap":
		return &corev1.ConfigMap{}, nil
	case "v1/Service":
		return &corev1.Service{}, nil
	case "apps/v1/StatefulSet":
		return &appsv1.StatefulSet{}, nil
	case "apps/v1/Deployment":
		return &appsv1.Deployment{}, nil
	case "policy/v1/PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}, nil
	case "monitoring.coreos.com/v1/ServiceMonitor":
		return &ServiceMonitor{}, nil
	}
	return nil, fmt.Errorf("k8s: unexpected kind %s %s", apiVersion, kind)
}

var (
	docSep = regexp.MustCompile(`(?m)^---[ \t]*$`)
	// envRef is a $(VAR) reference in a container's command or args.
	envRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
)

// readDocs decodes every document of a YAML file strictly.
func readDocs(path string) ([]Object, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []Object
	for _, doc := range docSep.Split(string(b), -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var head struct {
			metav1.TypeMeta   `json:",inline"`
			metav1.ObjectMeta `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		obj, err := newObject(head.APIVersion, head.Kind)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			return nil, fmt.Errorf("%s: %s %s: %w", path, head.Kind, head.Name, err)
		}
		raw, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, Object{APIVersion: head.APIVersion, Kind: head.Kind, Name: head.Name, Obj: obj, File: path, raw: raw})
	}
	return out, nil
}

func readKustomization(dir string) (*Kustomization, error) {
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	var k Kustomization
	if err := yaml.UnmarshalStrict(b, &k); err != nil {
		return nil, fmt.Errorf("%s/kustomization.yaml: %w", dir, err)
	}
	return &k, nil
}

// Render returns the objects the kustomization in dir produces.
func Render(dir string) ([]Object, error) {
	k, err := readKustomization(dir)
	if err != nil {
		return nil, err
	}
	var objs []Object
	for _, r := range append(append([]string{}, k.Resources...), k.Components...) {
		p := filepath.Join(dir, r)
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("%s: resource %s: %w", dir, r, err)
		}
		var got []Object
		if st.IsDir() {
			got, err = Render(p)
		} else {
			got, err = readDocs(p)
		}
		if err != nil {
			return nil, err
		}
		objs = append(objs, got...)
	}
	for _, p := range k.Patches {
		patches, err := readDocs(filepath.Join(dir, p.Path))
		if err != nil {
			return nil, err
		}
		for _, pt := range patches {
			if err := applyPatch(objs, pt); err != nil {
				return nil, fmt.Errorf("%s: %w", filepath.Join(dir, p.Path), err)
			}
		}
	}
	for _, img := range k.Images {
		for _, o := range objs {
			for _, c := range Containers(o) {
				if name, _, _ := strings.Cut(c.Image, ":"); name == img.Name {
					c.Image = img.NewName + ":" + img.NewTag
				}
			}
		}
	}
	for _, l := range k.Labels {
		for _, o := range objs {
			m := meta(o)
			if m.Labels == nil {
				m.Labels = map[string]string{}
			}
			for key, v := range l.Pairs {
				m.Labels[key] = v
			}
		}
	}
	return objs, nil
}

// applyPatch merges patch into the object of its kind and name as kubectl
// does (strategic merge: lists merged by their keys, e.g. containers by
// name).
func applyPatch(objs []Object, patch Object) error {
	for i, o := range objs {
		if o.Kind != patch.Kind || o.Name != patch.Name {
			continue
		}
		orig, err := json.Marshal(o.Obj)
		if err != nil {
			return err
		}
		// The patch as written: its typed form would carry the zero values
		// of fields it does not set (a null selector deletes the selector).
		merged, err := strategicpatch.StrategicMergePatch(orig, patch.raw, o.Obj)
		if err != nil {
			return fmt.Errorf("patch %s %s: %w", patch.Kind, patch.Name, err)
		}
		obj, _ := newObject(o.APIVersion, o.Kind)
		dec := json.NewDecoder(bytes.NewReader(merged))
		dec.DisallowUnknownFields()
		if err := dec.Decode(obj); err != nil {
			return fmt.Errorf("patch %s %s: %w", patch.Kind, patch.Name, err)
		}
		objs[i].Obj = obj
		return nil
	}
	return fmt.Errorf("patch %s %s: no such object", patch.Kind, patch.Name)
}

// meta returns the object's metadata.
func meta(o Object) *metav1.ObjectMeta {
	switch v := o.Obj.(type) {
	case *corev1.ConfigMap:
		return &v.ObjectMeta
	case *corev1.Service:
		return &v.ObjectMeta
	case *appsv1.StatefulSet:
		return &v.ObjectMeta
	case *appsv1.Deployment:
		return &v.ObjectMeta
	case *policyv1.PodDisruptionBudget:
		return &v.ObjectMeta
	case *ServiceMonitor:
		return &v.ObjectMeta
	}
	panic(fmt.Sprintf("k8s: no metadata for %T", o.Obj))
}

// PodTemplate returns a workload's pod template, or nil for other kinds.
func PodTemplate(o Object) *corev1.PodTemplateSpec {
	switch v := o.Obj.(type) {
	case *appsv1.StatefulSet:
		return &v.Spec.Template
	case *appsv1.Deployment:
		return &v.Spec.Template
	}
	return nil
}

// Containers returns a workload's containers (pointers into it).
func Containers(o Object) []*corev1.Container {
	t := PodTemplate(o)
	if t == nil {
		return nil
	}
	out := make([]*corev1.Container, len(t.Spec.Containers))
	for i := range t.Spec.Containers {
		out[i] = &t.Spec.Containers[i]
	}
	return out
}

// Find returns the object of kind and name.
func Find(objs []Object, kind, name string) (Object, bool) {
	for _, o := range objs {
		if o.Kind == kind && o.Name == name {
			return o, true
		}
	}
	return Object{}, false
}

// CommandLine returns the arguments the container of workload kind/name
// runs with on pod podName (the binary name first), $(VAR) references to
// its env resolved as the kubelet resolves them (only the pod name is
// supported), and the ConfigMap files mounted into it by path.
func CommandLine(objs []Object, kind, name, podName string) (args []string, files map[string]string, err error) {
	o, ok := Find(objs, kind, name)
	if !ok {
		return nil, nil, fmt.Errorf("k8s: no %s %s", kind, name)
	}
	t := PodTemplate(o)
	if t == nil || len(t.Spec.Containers) != 1 {
		return nil, nil, fmt.Errorf("k8s: %s %s has no single container", kind, name)
	}
	c := t.Spec.Containers[0]
	vars := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			vars[e.Name] = podName
		case e.ValueFrom == nil:
			vars[e.Name] = e.Value
		}
	}
	for _, a := range append(append([]string{}, c.Command...), c.Args...) {
		var bad error
		args = append(args, envRef.ReplaceAllStringFunc(a, func(m string) string {
			v, ok := vars[m[2:len(m)-1]]
			if !ok {
				bad = fmt.Errorf("k8s: %s %s: %s is not set", kind, name, m)
			}
			return v
		}))
		if bad != nil {
			return nil, nil, bad
		}
	}
	files = map[string]string{}
	for _, m := range c.VolumeMounts {
		for _, v := range t.Spec.Volumes {
			if v.Name != m.Name || v.ConfigMap == nil {
				continue
			}
			cm, ok := Find(objs, "ConfigMap", v.ConfigMap.Name)
			if !ok {
				return nil, nil, fmt.Errorf("k8s: %s %s mounts ConfigMap %s, which does not exist", kind, name, v.ConfigMap.Name)
			}
			for key, data := range cm.Obj.(*corev1.ConfigMap).Data {
				files[filepath.Join(m.MountPath, key)] = data
			}
		}
	}
	return args, files, nil
}

// LocalFiles writes the mounted files that args name with --config into
// dir and returns args naming the copies, so a binary's flag parser can
// read them in a test.
func LocalFiles(dir string, args []string, files map[string]string) ([]string, error) {
	out := slices.Clone(args)
	for i, a := range out {
		path, ok := strings.CutPrefix(a, "--config=")
		if !ok {
			continue
		}
		data, ok := files[path]
		if !ok {
			return nil, fmt.Errorf("k8s: --config=%s is not a mounted ConfigMap file", path)
		}
		local := filepath.Join(dir, filepath.Base(path))
		if err := os.WriteFile(local, []byte(data), 0o600); err != nil {
			return nil, err
		}
		out[i] = "--config=" + local
	}
	return out, nil
}

// Command renders layout and returns the binary and flags the container of
// kind/name runs on pod podName, its --config files written to dir: what a
// main's test hands its flag parser.
func Command(layout, kind, name, podName, dir string) (binary string, args []string, err error) {
	objs, err := Render(layout)
	if err != nil {
		return "", nil, err
	}
	args, files, err := CommandLine(objs, kind, name, podName)
	if err != nil {
		return "", nil, err
	}
	if len(args) == 0 {
		return "", nil, fmt.Errorf("k8s: %s %s runs no command", kind, name)
	}
	binary = args[0]
	args, err = LocalFiles(dir, args[1:], files)
	return binary, args, err
}
