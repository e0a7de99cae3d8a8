package k8s

import (
	"bytes"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// manifests reads the YAML documents of an example with ${VAR}s filled
// in, as `envsubst` would.
func manifests(t *testing.T, file string, vars map[string]string) []map[string]any {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range vars {
		raw = bytes.ReplaceAll(raw, []byte("${"+k+"}"), []byte(v))
	}
	for n, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") && strings.Contains(line, "${") {
			t.Fatalf("%s:%d: an unfilled variable: %s", file, n+1, line)
		}
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	var docs []map[string]any
	for {
		var d map[string]any
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		docs = append(docs, d)
	}
}

func keys(m any) []string {
	mm, _ := m.(map[string]any)
	var out []string
	for k := range mm {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// The PrivateLoadZone example uses only the fields of k6-operator's
// PrivateLoadZoneSpec (api/v1alpha1, v0.0.19+: token, resources,
// serviceAccountName, nodeSelector, image, imagePullSecrets, config with
// secrets of configMapRef/secretRef), names its token Secret, and puts the
// operator key into the runners through a Secret, never in the manifest.
func TestPrivateLoadZoneExample(t *testing.T) {
	docs := manifests(t, "privateloadzone.yaml", map[string]string{"IMAGE": "registry.example/buzzload:test"})
	if len(docs) != 1 || docs[0]["apiVersion"] != "k6.io/v1alpha1" || docs[0]["kind"] != "PrivateLoadZone" {
		t.Fatalf("documents: %v", docs)
	}
	spec, _ := docs[0]["spec"].(map[string]any)
	known := []string{"config", "image", "imagePullSecrets", "nodeSelector", "resources", "serviceAccountName", "token"}
	for _, k := range keys(spec) {
		if !slices.Contains(known, k) {
			t.Errorf("spec.%s is not a PrivateLoadZoneSpec field", k)
		}
	}
	if tok, _ := spec["token"].(string); tok == "" || strings.ContainsAny(tok, " :") {
		t.Errorf("spec.token must name a Secret: %q", spec["token"])
	}
	if spec["image"] != "registry.example/buzzload:test" {
		t.Errorf("spec.image %v", spec["image"])
	}
	for _, k := range keys(spec["resources"]) {
		if k != "requests" && k != "limits" {
			t.Errorf("spec.resources.%s: resources are ResourceRequirements (requests, limits)", k)
		}
	}
	cfg, _ := spec["config"].(map[string]any)
	secrets, _ := cfg["secrets"].([]any)
	if len(keys(cfg)) != 1 || len(secrets) == 0 {
		t.Fatalf("spec.config: %v", cfg)
	}
	for _, s := range secrets {
		for _, k := range keys(s) {
			if k != "secretRef" && k != "configMapRef" {
				t.Errorf("spec.config.secrets[].%s is not an env source", k)
			}
		}
	}
	raw, _ := os.ReadFile("privateloadzone.yaml")
	for _, secret := range []string{"BUZZLOAD_OPERATOR_KEY", "K6_CLOUD_TOKEN"} {
		for _, line := range strings.Split(string(raw), "\n") {
			if strings.Contains(line, secret+":") && !strings.HasPrefix(strings.TrimSpace(line), "#") {
				t.Errorf("%s is set in the manifest: %q", secret, line)
			}
		}
	}
}

// testrun.yaml and buzzload-job.yaml parse once their variables are filled.
func TestTestRunExamplesParse(t *testing.T) {
	vars := map[string]string{"RUN_NAME": "buzz-test", "INSTANCES": "3", "IMAGE": "registry.example/buzzload:test"}
	docs := manifests(t, "testrun.yaml", vars)
	if len(docs) < 2 || docs[0]["kind"] != "TestRun" || docs[0]["apiVersion"] != "k6.io/v1alpha1" {
		t.Fatalf("testrun.yaml: %v", docs)
	}
	spec, _ := docs[0]["spec"].(map[string]any)
	if spec["parallelism"] != 3 {
		t.Errorf("parallelism %v", spec["parallelism"])
	}
}
