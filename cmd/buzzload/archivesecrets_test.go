package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/buzzload/buzzload/engine/archive"
)

// --include-system-env-vars packs the environment but not the variables
// known to be secrets, and says which it left out; one named with -e is
// packed (reliability.md F8: the operator key and Prometheus credentials
// were packed silently). Fails without withoutSecrets.
func TestArchiveLeavesSecretsOut(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "s.js"), []byte("export default function () {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"BUZZLOAD_OPERATOR_KEY=opkey-0123", "K6_PROMETHEUS_RW_PASSWORD=pw-0123", "K6_PROMETHEUS_RW_BEARER_TOKEN=tok-0123",
		"K6_CLOUD_TOKEN=cloud-0123", "BUZZ_OPERATOR_SECRET=bsec-0123",
		"K6_OTEL_HEADERS=Authorization=Bearer%20otel-0123", "OTEL_EXPORTER_OTLP_HEADERS=x-key=hdr-0123", "PLAIN_SETTING=kept", "MY_TOKEN=mine-0123"}
	code, _, errs := runBin(t, dir, env, "archive", "--include-system-env-vars", "-e", "MY_TOKEN=named", "s.js", "-O", "a.tar")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	f, err := os.Open(filepath.Join(dir, "a.tar"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, err := archive.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"BUZZLOAD_OPERATOR_KEY", "K6_PROMETHEUS_RW_PASSWORD", "K6_PROMETHEUS_RW_BEARER_TOKEN", "K6_CLOUD_TOKEN", "BUZZ_OPERATOR_SECRET",
		"K6_OTEL_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"} {
		if _, ok := a.Metadata.Env[k]; ok {
			t.Errorf("%s was packed", k)
		}
		if !strings.Contains(errs, k) {
			t.Errorf("stderr does not name %s as left out:\n%s", k, errs)
		}
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "a.tar"))
	if strings.Contains(string(raw), "-0123") || strings.Contains(errs, "-0123") {
		t.Error("a secret value reached the archive or stderr")
	}
	if a.Metadata.Env["PLAIN_SETTING"] != "kept" || a.Metadata.Env["MY_TOKEN"] != "named" {
		t.Errorf("packed env lacks the plain variable or the -e one: %v", a.Metadata.Env["PLAIN_SETTING"])
	}
}
