package k8s

import (
	"os"
	"testing"

	"github.com/buzzload/buzzload/modules/scenario"
)

// The example's scenario is a valid file aimed at a relay of its own (not
// the embedded one: runners of one test must share the relay they seed).
func TestExampleScenarioParses(t *testing.T) {
	raw, err := os.ReadFile("buzz-test.toml")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.Parse("buzz-test.toml", raw)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Embedded() || sc.Target.CommunityHostTemplate == "" || sc.Target.OperatorKeyEnv != "BUZZLOAD_OPERATOR_KEY" {
		t.Fatalf("target %+v", sc.Target)
	}
}
